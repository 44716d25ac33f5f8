"""SLA benchmark on a real cluster with emulated HDD/SSD speeds.

    python3 -m bench.sla_bench [--quick] [--out docs/benchmarks/results.json]
                               [--hdd-iops 150] [--ssd-iops 500] [--strategy move|copy]

Starts its own mini cluster (8 BlueStore OSDs, 4 hosts of 1 hdd + 1 ssd), caps
every OSD's device I/Os per second by its class (bench/emulation.py), checks the
caps with a calibration run, then runs side by side on that cluster:

- default:  both pools on Ceph's replicated_rule (all OSDs, class-oblivious)
- fixed:    urgent pool on sla_isolated_urgent, normal on sla_isolated_normal
- adaptive: the sla module in auto mode (isolated while urgent is active); the
            normal pool's strategy is --strategy (move: pg_upmap_items, the
            'upmap' design; copy: an extra copy by pool size)

The urgent client writes then reads back its objects with fio's rados engine
(the paper's micro-benchmark: turnaround and every op's latency) while 0..16
normal clients keep a 50/50 read/write load on the normal pool. Normal ops/s is
also measured with the urgent client idle. In adaptive mode the switches are
driven by real load and reported: reaction, time to isolation, replicas and
bytes moved, backfill bytes per client byte. Plots: bench/plot_results.py.
"""
from __future__ import annotations

if __name__ == "__main__" and not __package__:
    import _script  # noqa: F401  (bench/_script.py: runs this as python3 -m bench.<name>)

import argparse
import contextlib
import dataclasses
import json
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench import provenance
from bench.common import (
    RESULTS,
    busy_percent,
    cpu_times,
    fio_json,
    machine,
    missing_tools,
    progress,
    rados_bench,
    throttled_cluster,
    workdir,
    write_json,
)
from bench.emulation import BlkioThrottle, DeviceSpeeds, EmulationError
from harness.cephcluster import Cluster, wait_for

MODES = ("default", "fixed", "adaptive")
RULES = {
    "default": {"urgent": "replicated_rule", "normal": "replicated_rule"},
    "fixed": {"urgent": "sla_isolated_urgent", "normal": "sla_isolated_normal"},
    "adaptive": {"urgent": "sla_isolated_urgent", "normal": "sla_isolated_normal"},
}
# The module in the benchmark: quick to react, short dwell (the defaults are for
# production: docs/policy-simulation.md).
MODULE_CONFIG = {"min_dwell_secs": "20", "interval_secs": "1", "rate_window_secs": "3"}
THRESHOLD = ("30", "10")  # urgent ops/s: isolate above 30, share below 10


@dataclass(frozen=True)
class Plan:
    urgent_n: tuple[int, ...]  # normal clients beside the urgent client
    idle_n: tuple[int, ...]  # normal clients measured with the urgent client idle
    urgent_mb: int  # the urgent client's work: write then read back this much
    normal_secs: int  # each idle throughput measurement
    calibration_secs: int
    back_to_shared: bool  # adaptive: also measure the switch back to shared
    block_kb: int = 16
    pg_num: int = 64
    strategy: str = "move"  # the normal pool's in adaptive mode: move (upmap) or copy


FULL = Plan((0, 1, 2, 4, 8, 16), (1, 4, 16), urgent_mb=8, normal_secs=20,
            calibration_secs=10, back_to_shared=True)
QUICK = Plan((0, 4), (4,), urgent_mb=2, normal_secs=8, calibration_secs=5,
             back_to_shared=False)


# -- pure helpers (unit-tested) ------------------------------------------------

def percentile(values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100) of a non-empty sequence."""
    if not values:
        raise ValueError("percentile of no values")
    ordered = sorted(values)
    rank = max(1, -(-len(ordered) * q // 100))  # ceil(n * q / 100), at least 1
    return float(ordered[int(rank) - 1])


def read_lat_log(lines: Iterable[str]) -> list[float]:
    """Per-op latencies in ms from a fio latency log (time, nsec, dir, bs, ...)."""
    out = []
    for line in lines:
        fields = [f.strip() for f in line.split(",")]
        if len(fields) >= 2 and fields[1].isdigit():
            out.append(int(fields[1]) / 1e6)
    return out


def fio_ops_per_sec(report: dict[str, Any]) -> float:
    """Completed ops per second over all jobs of one fio JSON report."""
    total = 0.0
    for job in report["jobs"]:
        secs = max(job["job_runtime"] / 1000.0, 1e-3)
        total += (job["read"]["total_ios"] + job["write"]["total_ios"]) / secs
    return total


def targets(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The issue's targets from the runs: urgent p99 growth and the idle speedup."""
    out: dict[str, Any] = {}
    for mode in MODES:
        active = {r["normal_clients"]: r for r in runs
                  if r["mode"] == mode and r["urgent_active"]}
        if 0 in active and len(active) > 1:
            most = max(active)
            out[f"{mode}_urgent_p99_growth"] = {
                "normal_clients": most,
                "ratio": round(active[most]["urgent_p99_ms"] / active[0]["urgent_p99_ms"], 2),
                "target": "<= 1.2" if mode != "default" else ">= 2 (degrades)"}
    idle = {(r["mode"], r["normal_clients"]): r["normal_ops_per_sec"] for r in runs
            if not r["urgent_active"]}
    common = sorted({n for (m, n) in idle if m == "fixed"} & {n for (m, n) in idle
                                                              if m == "adaptive"})
    if common:
        n = common[-1]
        out["adaptive_over_fixed_idle"] = {
            "normal_clients": n, "target": ">= 1.5",
            "ratio": round(idle[("adaptive", n)] / max(idle[("fixed", n)], 1e-9), 2)}
    slo = {r["mode"]: r for r in runs if r["mode"] in ("adaptive-mistuned", "adaptive-slo")}
    if len(slo) == 2:
        out["slo_urgent_p99"] = {
            "adaptive_mistuned_ms": slo["adaptive-mistuned"]["urgent_p99_ms"],
            "adaptive_slo_ms": slo["adaptive-slo"]["urgent_p99_ms"],
            "ratio": round(slo["adaptive-slo"]["urgent_p99_ms"]
                           / max(slo["adaptive-mistuned"]["urgent_p99_ms"], 1e-9), 2),
            "target": "< 1 (the objective isolates where the threshold does not)"}
    return out


# -- clients ------------------------------------------------------------------

def fio_base(cluster: Cluster, pool: str, plan: Plan) -> list[str]:
    return ["fio", "--output-format=json", "--ioengine=rados", f"--conf={cluster.conf}",
            "--clientname=admin", f"--pool={pool}", f"--bs={plan.block_kb}k", "--iodepth=2"]


class UrgentClient:
    """Write then read back plan.urgent_mb on the urgent pool (one fio, two jobs)."""

    def __init__(self, cluster: Cluster, plan: Plan, workdir: Path) -> None:
        self.log = workdir / f"urgent-{time.monotonic_ns()}"
        args = fio_base(cluster, "urgent", plan) + [
            "--nrfiles=8", f"--size={plan.urgent_mb}M", "--filename_format=urgent.$filenum",
            f"--write_lat_log={self.log}", "--log_avg_msec=0",
            "--name=write", "--rw=write", "--name=read", "--rw=read", "--stonewall"]
        self.started = time.monotonic()
        self.proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True)

    def result(self, timeout: float = 900) -> dict[str, Any]:
        out, err = self.proc.communicate(timeout=timeout)
        turnaround = time.monotonic() - self.started
        if self.proc.returncode != 0:
            raise RuntimeError(f"urgent fio failed ({self.proc.returncode}): {err.strip()[:400]}")
        fio_json(out)  # a report, or a clear error
        lat: list[float] = []
        for f in sorted(self.log.parent.glob(f"{self.log.name}_lat.*.log")):
            lat += read_lat_log(f.read_text().splitlines())
            f.unlink()
        for f in self.log.parent.glob(f"{self.log.name}_*.log"):
            f.unlink()
        if not lat:
            raise RuntimeError("the urgent client logged no op latencies")
        return {"urgent_turnaround_s": round(turnaround, 2), "urgent_ops": len(lat),
                "urgent_p50_ms": round(percentile(lat, 50), 2),
                "urgent_p99_ms": round(percentile(lat, 99), 2)}

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            self.proc.communicate(timeout=60)


class NormalClients:
    """n fio processes, 50/50 random read/write on 4 MB each of the normal pool."""

    def __init__(self, cluster: Cluster, n: int, plan: Plan, secs: int = 3600) -> None:
        self.procs = [subprocess.Popen(
            fio_base(cluster, "normal", plan) + [
                f"--name=normal{i}", "--nrfiles=8", "--size=4M", "--rw=randrw",
                "--rwmixread=50", "--time_based", f"--runtime={secs}"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for i in range(n)]

    def ops_per_sec(self, stop: bool = True, timeout: float = 900) -> float:
        """Total ops/s; with stop, ends the clients now (SIGINT: fio still reports)."""
        total = 0.0
        for p in self.procs:
            interrupted = stop and p.poll() is None
            if interrupted:
                p.send_signal(signal.SIGINT)
            out, err = p.communicate(timeout=timeout)
            # interrupted, fio exits non-zero (128 here) after writing its report
            if p.returncode != 0 and not interrupted:
                raise RuntimeError(f"normal fio failed ({p.returncode}): {err.strip()[:400]}")
            total += fio_ops_per_sec(fio_json(out))
        return round(total, 1)

    def stop(self) -> None:
        for p in self.procs:
            if p.poll() is None:
                p.send_signal(signal.SIGINT)
        for p in self.procs:
            try:
                p.communicate(timeout=60)
            except subprocess.TimeoutExpired:
                p.kill()
                p.communicate(timeout=10)


# -- the cluster --------------------------------------------------------------

class Bench:
    def __init__(self, cluster: Cluster, throttle: BlkioThrottle, speeds: DeviceSpeeds,
                 plan: Plan, workdir: Path) -> None:
        self.cluster, self.throttle, self.speeds = cluster, throttle, speeds
        self.plan, self.workdir = plan, workdir
        self.classes = {d["id"]: d["class"]
                        for d in cluster.json("osd", "crush", "dump")["devices"]}
        self.pids = cluster.pids()

    def emulate(self) -> None:
        for osd, cls in self.classes.items():
            self.throttle.limit(f"osd.{osd}", self.pids[f"osd.{osd}"], self.speeds.iops(cls))

    def rados_bench(self, pool: str, secs: int) -> float:
        return rados_bench(self.cluster, pool, secs, "write", "-b", "4096", "-t", "16",
                           "--no-cleanup", "--run-name", f"cal{time.monotonic_ns()}")

    def calibrate(self) -> dict[str, Any]:
        """One OSD per class (a size-1 pool of one PG): capped, then uncapped."""
        out: dict[str, Any] = {}
        for cls, rule in (("hdd", "sla_isolated_normal"), ("ssd", "sla_isolated_urgent")):
            pool = f"cal-{cls}"
            self.cluster.create_pool(pool, 1, size=1)
            self.cluster.ceph("osd", "pool", "set", pool, "crush_rule", rule)
            self.cluster.wait_clean(120)
            pool_id = next(int(p["pool_id"]) for p in self.cluster.json(
                "osd", "pool", "ls", "detail") if p["pool_name"] == pool)
            osd = int(self.cluster.json("pg", "map", f"{pool_id}.0")["up"][0])
            name = f"osd.{osd}"
            row: dict[str, Any] = {"osd": osd, "device_iops_cap": self.speeds.iops(cls)}
            for label, cap in (("capped", self.speeds.iops(cls)), ("uncapped", 0)):
                self.throttle.limit(name, self.pids[name], cap)
                io0, cpu0, t0 = self.throttle.serviced(name), cpu_times(), time.monotonic()
                ops = self.rados_bench(pool, self.plan.calibration_secs)
                secs = time.monotonic() - t0
                row[label] = {"client_write_ops_per_sec": round(ops, 1),
                              "device_iops": round((self.throttle.serviced(name) - io0) / secs, 1),
                              "cpu_busy_percent": busy_percent(cpu0, cpu_times())}
            self.throttle.limit(name, self.pids[name], self.speeds.iops(cls))
            out[cls] = row
            self.cluster.ceph("osd", "pool", "rm", pool, pool, "--yes-i-really-really-mean-it")
        out["ssd_over_hdd_client_writes"] = round(
            out["ssd"]["capped"]["client_write_ops_per_sec"]
            / out["hdd"]["capped"]["client_write_ops_per_sec"], 2)
        return out

    # pools and modes

    def pool_id(self, name: str) -> int | None:
        return next((int(p["pool_id"]) for p in self.cluster.json("osd", "pool", "ls", "detail")
                     if p["pool_name"] == name), None)

    def fresh_pools(self, mode: str) -> None:
        """Empty urgent and normal pools on the rules of `mode` (roles for adaptive)."""
        c = self.cluster
        for pool in ("urgent", "normal"):
            if c.ceph_raw("sla", "pool", "rm", pool).returncode not in (0, 2):
                raise RuntimeError(f"sla pool rm {pool} failed")
            if self.pool_id(pool) is not None:
                c.ceph("osd", "pool", "rm", pool, pool, "--yes-i-really-really-mean-it")
        for pool, rule in RULES[mode].items():
            c.create_pool(pool, self.plan.pg_num)
            c.ceph("osd", "pool", "set", pool, "crush_rule", rule)
        if mode == "adaptive":
            # start isolated, as after `ceph mgr module enable sla`; adaptive() unpins
            c.ceph("sla", "mode", "isolated")
            c.ceph("sla", "pool", "set", "urgent", "urgent", timeout=300)
            c.ceph("sla", "pool", "set", "normal", "normal", "--strategy", self.plan.strategy,
                   timeout=300)
        c.wait_clean(600)

    def counters(self) -> dict[str, int]:
        """The normal pool's client bytes written and bytes recovered so far."""
        pid = self.pool_id("normal")
        dump = self.cluster.json("pg", "dump", "pools")
        for e in dump["pool_stats"] if isinstance(dump, dict) else dump:
            if int(e["poolid"]) == pid:
                s = e["stat_sum"]
                return {"client": int(s.get("num_write_kb", 0)) * 1024,
                        "recovered": int(s.get("num_bytes_recovered", 0))}
        return {"client": 0, "recovered": 0}

    def normal_pgs(self) -> list[dict[str, Any]]:
        """The normal pool's PG stats (`pg ls-by-pool` gives them bare or under pg_stats)."""
        dump = self.cluster.json("pg", "ls-by-pool", "normal")
        return list(dump["pg_stats"] if isinstance(dump, dict) else dump)

    def wait_placed(self, mode: str, timeout: float) -> None:
        """Every normal PG active+clean on the OSDs `mode` wants (ssd: shared only).

        Waiting for "all clean" alone can pass before the PGs have seen the
        new rule; the acting sets show that they have."""
        ssd = {osd for osd, cls in self.classes.items() if cls == "ssd"}

        def placed() -> bool:
            pgs = self.normal_pgs()
            unclean = sum(1 for pg in pgs if pg["state"] != "active+clean")
            on_ssd = sum(1 for pg in pgs if ssd & set(pg["acting"]))
            if unclean or (on_ssd == 0 if mode == "shared" else on_ssd > 0):
                # wait_for reports a probe's exception as the last thing seen
                raise RuntimeError(f"{unclean} PGs not clean, {on_ssd} acting on ssd")
            return True
        wait_for(f"normal pool placed for {mode} and clean", placed, timeout)
        self.cluster.wait_clean(timeout)

    def mode(self) -> str:
        return str(self.cluster.sla_status()["mode"])

    def await_switch(self, to: str, started: float, since: dict[str, int],
                     timeout: float = 300) -> dict[str, Any]:
        """Wait for the module to switch to `to` and the data to settle; the record.

        `started` is time.monotonic() when the cause began (load on or off)."""
        wall_start = time.time() - (time.monotonic() - started)
        wait_for(f"mode {to}", lambda: self.mode() == to, timeout, interval=0.25)
        reaction = time.monotonic() - started
        at = self.counters()

        def recorded() -> dict[str, Any] | None:
            # The module writes the record when it decides and fills in the
            # PGs moved on a later tick, once the mgr has the new osdmap; an
            # early read would report them as unknown.
            h = self.cluster.json("sla", "history")[0]
            done = h["pgs_moved"] is not None and (
                to != "isolated" or h["time_to_isolation_secs"] is not None)
            return h if h["to"] == to and h["time"] >= wall_start - 1 and done else None
        record = wait_for(f"the switch to {to} recorded with its PGs moved", recorded, 600)
        self.wait_placed(to, 900)
        settled = time.monotonic() - started - reaction
        end = self.counters()
        return {"to": to, "reaction_secs": round(reaction, 2),
                "time_to_isolation_secs": record["time_to_isolation_secs"],
                "settled_secs": round(settled, 2),
                "pgs_moved": record["pgs_moved"], "replicas_moved": record["replicas_moved"],
                "bytes_moved": end["recovered"] - at["recovered"],
                "client_bytes_before": at["client"] - since["client"],
                "backfill_bytes_per_client_byte": round(
                    (end["recovered"] - at["recovered"]) / max(at["client"] - since["client"], 1),
                    3)}

    # measurements

    def snapshot(self) -> tuple[float, tuple[int, int], dict[int, int]]:
        return time.monotonic(), cpu_times(), {
            osd: self.throttle.serviced(f"osd.{osd}") for osd in self.classes}

    def resources(self, before: tuple[float, tuple[int, int], dict[int, int]]
                  ) -> dict[str, float]:
        """CPU busy and each class's device use (fraction of its cap) since `before`."""
        t0, cpu0, io0 = before
        t1, cpu1, io1 = self.snapshot()
        out: dict[str, float] = {"cpu_busy_percent": busy_percent(cpu0, cpu1)}
        for cls in ("hdd", "ssd"):
            use = [(io1[o] - io0[o]) / max(t1 - t0, 1e-3) / self.speeds.iops(cls)
                   for o, c in self.classes.items() if c == cls]
            out[f"{cls}_device_use"] = round(sum(use) / len(use), 3)
            out[f"{cls}_device_use_max"] = round(max(use), 3)
        return out

    def urgent_run(self, mode: str, n: int) -> dict[str, Any]:
        normals = NormalClients(self.cluster, n, self.plan)
        try:
            if n:
                time.sleep(3)  # normal clients at full load before the urgent client starts
            before = self.snapshot()
            result = UrgentClient(self.cluster, self.plan, self.workdir).result()
            used = self.resources(before)
            normal_ops = normals.ops_per_sec() if n else 0.0
        finally:
            normals.stop()
        run = {"mode": mode, "normal_clients": n, "urgent_active": True,
               "normal_ops_per_sec": normal_ops, **result, **used}
        print(json.dumps(run), flush=True)
        return run

    def idle_run(self, mode: str, n: int) -> dict[str, Any]:
        before = self.snapshot()
        ops = NormalClients(self.cluster, n, self.plan, self.plan.normal_secs).ops_per_sec(
            stop=False)
        run = {"mode": mode, "normal_clients": n, "urgent_active": False,
               "normal_ops_per_sec": ops, **self.resources(before)}
        print(json.dumps(run), flush=True)
        return run

    def static_mode(self, mode: str) -> list[dict[str, Any]]:
        self.fresh_pools(mode)
        runs = [self.urgent_run(mode, n) for n in self.plan.urgent_n]
        return runs + [self.idle_run(mode, n) for n in self.plan.idle_n]

    def adaptive(self) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """Idle -> shared; urgent arrives under load -> isolated; runs; idle -> shared."""
        self.fresh_pools("adaptive")
        switches = [self.share_under_load(lambda: self.cluster.ceph("sla", "mode", "auto"))]
        runs = [self.idle_run("adaptive", n) for n in self.plan.idle_n]
        switches.append(self.isolate_under_load())
        for n in self.plan.urgent_n:
            if self.mode() != "isolated":
                switches.append(self.isolate_again(n))
            runs.append({**self.urgent_run("adaptive", n),
                         "module_urgent_latency_ms": self.module_latency()})
        if self.plan.back_to_shared:
            switches.append(self.share_under_load(lambda: None))
        return runs, switches

    def share_under_load(self, start: Callable[[], Any]) -> dict[str, Any]:
        """The switch to shared that `start()` lets happen (the urgent client
        idle), under the busiest normal load."""
        busiest = max(self.plan.urgent_n)
        since = self.counters()
        normals = NormalClients(self.cluster, busiest, self.plan)
        try:
            started = time.monotonic()
            start()
            switch = {**self.await_switch("shared", started, since), "normal_clients": busiest}
        finally:
            normals.stop()
        print(json.dumps(switch), flush=True)
        return switch

    def isolate_under_load(self) -> dict[str, Any]:
        """The urgent client arrives under the busiest normal load: the switch to
        isolated, with the urgent client's figures during it."""
        busiest = max(self.plan.urgent_n)
        since = self.counters()
        normals = NormalClients(self.cluster, busiest, self.plan)
        try:
            time.sleep(3)  # normal clients at full load before the urgent client starts
            urgent = UrgentClient(self.cluster, self.plan, self.workdir)
            record = self.await_switch("isolated", urgent.started, since)
            during = urgent.result()
        finally:
            normals.stop()
        switch = {**record, "normal_clients": busiest,
                  **{f"{k}_during_switch": v for k, v in during.items()}}
        print(json.dumps(switch), flush=True)
        return switch

    def isolate_again(self, n: int) -> dict[str, Any]:
        """The urgent client was quiet for the dwell between runs, so the module
        shared again: a real switch, reported, then the run with n normal
        clients is measured isolated as the runs are meant to be."""
        last = self.cluster.json("sla", "history")[0]
        print(f"sla-bench: back in {last['to']} before the run with {n} normal "
              f"clients: {last['reason']}", flush=True)
        since = self.counters()
        warmup = UrgentClient(self.cluster, self.plan, self.workdir)
        try:
            return {**self.await_switch("isolated", warmup.started, since),
                    "normal_clients": 0, "cause": last["reason"]}
        finally:
            warmup.stop()

    def module_latency(self) -> float | None:
        """The module's own urgent latency figure (the objective's percentile of
        per-period means, `ceph sla status`), for the urgent pool."""
        status = self.cluster.sla_status()
        pool = next((p for p in status["pools"] if p["name"] == "urgent"), None)
        lat = (pool or {}).get("latency") or {}
        known = [v for v in (lat.get("write_ms"), lat.get("read_ms")) if v is not None]
        return round(max(known), 3) if known else None

    def slo_pair(self, isolated_ms: float | None) -> tuple[list[dict[str, Any]], dict[str, Any]]:
        """The latency objective against a mis-tuned IOPS threshold, side by side.

        The threshold is set far above any load: plain adaptive then stays
        shared under urgent load. Then the objective, set between the module's
        latency figure isolated (from adaptive()) and shared (this run), must
        isolate by itself."""
        c, busiest = self.cluster, max(self.plan.urgent_n)
        self.fresh_pools("adaptive")
        c.ceph("sla", "set-threshold", "1000000", "500000")
        since = self.counters()
        c.ceph("sla", "mode", "auto")
        self.await_switch("shared", time.monotonic(), since)
        mistuned = {**self.urgent_run("adaptive-mistuned", busiest),
                    "module_urgent_latency_ms": self.module_latency(),
                    "mode_after": self.mode()}
        shared_ms = mistuned["module_urgent_latency_ms"] or 10.0
        # Between what isolation gives and what sharing gives under this load,
        # and in any case below the shared figure, so that the same load breaks it.
        slo_ms = round(min((isolated_ms or shared_ms) * shared_ms, (0.8 * shared_ms) ** 2)
                       ** 0.5, 3)
        switch = self.objective_switch(slo_ms)
        slo_run = {**self.urgent_run("adaptive-slo", busiest),
                   "module_urgent_latency_ms": self.module_latency(), "mode_after": self.mode()}
        status = c.sla_status()
        pool = next(p for p in status["pools"] if p["name"] == "urgent")
        slo_run["module_slo_violation_secs"] = pool["latency"]["slo_violation_seconds"]
        c.ceph("sla", "set-slo", "0")
        c.ceph("sla", "set-threshold", *THRESHOLD)
        info = {"slo_ms": slo_ms, "isolated_module_ms": isolated_ms, "shared_module_ms": shared_ms,
                "basis": "geometric mean of the module's urgent latency isolated and shared, "
                         "at most 0.8 x shared", "switch": switch}
        for run in (mistuned, slo_run, info):
            print(json.dumps(run), flush=True)
        return [mistuned, slo_run], info

    def objective_switch(self, slo_ms: float) -> dict[str, Any]:
        """Under the busiest load, the urgent client running, the objective comes
        on: the switch to isolated it makes, with its reason."""
        c, busiest = self.cluster, max(self.plan.urgent_n)
        since = self.counters()
        normals = NormalClients(c, busiest, self.plan)
        try:
            time.sleep(3)
            urgent = UrgentClient(c, self.plan, self.workdir)
            # The objective comes on with the urgent client running: its window
            # also holds the mistuned run's periods, so it may act at once; the
            # switch must come after the client started to be this run's.
            c.ceph("sla", "set-slo", f"{slo_ms:g}")
            switch = self.await_switch("isolated", urgent.started, since)
            urgent.result()
        finally:
            normals.stop()
        return {**switch, "reason": c.json("sla", "history")[0]["reason"]}


@contextlib.contextmanager
def bench_cluster(plan: Plan, speeds: DeviceSpeeds) -> Iterator[Bench]:
    """The benchmark's own cluster: 8 BlueStore OSDs with emulated device speeds,
    the sla module loaded with its rules and the benchmark's settings. Daemons,
    cgroups and the temp dir are gone when the block ends, however it ends."""
    with workdir("sla-bench-") as tmp, throttled_cluster(tmp, "c") as (cluster, throttle):
        bench = Bench(cluster, throttle, speeds, plan, tmp)
        bench.emulate()
        cluster.enable_sla()
        cluster.ceph("sla", "rules", "apply", timeout=300)
        for key, value in MODULE_CONFIG.items():
            cluster.ceph("config", "set", "mgr", f"mgr/sla/{key}", value)
        cluster.ceph("sla", "set-threshold", *THRESHOLD)
        yield bench


def measure(bench: Bench, plan: Plan, progress: Callable[[str], None]
            ) -> tuple[dict[str, Any], list[dict[str, Any]], list[dict[str, Any]],
                       dict[str, Any]]:
    """(calibration, runs, switches, the latency objective's pair) on `bench`."""
    progress("calibrating")
    calibration = bench.calibrate()
    print(json.dumps(calibration), flush=True)
    runs: list[dict[str, Any]] = []
    for mode in ("default", "fixed"):
        progress(f"mode {mode}")
        runs += bench.static_mode(mode)
    progress("mode adaptive")
    adaptive_runs, switches = bench.adaptive()
    runs += adaptive_runs
    progress("latency objective: adaptive-mistuned vs adaptive-slo")
    busiest = max(plan.urgent_n)
    isolated_ms = next((r.get("module_urgent_latency_ms") for r in adaptive_runs
                        if r["urgent_active"] and r["normal_clients"] == busiest), None)
    slo_runs, slo = bench.slo_pair(isolated_ms)
    return calibration, runs + slo_runs, switches, slo


def run(plan: Plan, speeds: DeviceSpeeds, quick: bool, progress: Callable[[str], None]
        ) -> dict[str, Any]:
    started = time.monotonic()
    with bench_cluster(plan, speeds) as bench:
        release = provenance.ceph_release(bench.cluster.tool("ceph", "--version"))
        calibration, runs, switches, slo = measure(bench, plan, progress)
    return {
        "runs": runs, "switches": switches, "targets": targets(runs), "slo": slo,
        "emulation": {
            "mechanism": "cgroup v1 blkio.throttle.{read,write}_iops_device per OSD process "
                         "on the disk holding its BlueStore block file",
            "hdd_device_iops": speeds.hdd_iops, "ssd_device_iops": speeds.ssd_iops,
            "calibration": calibration},
        "machine": machine(),
        "plan": {"quick": quick, "urgent_with_normal_clients": list(plan.urgent_n),
                 "idle_normal_clients": list(plan.idle_n), "urgent_mb": plan.urgent_mb,
                 "block_kb": plan.block_kb, "pg_num": plan.pg_num, "osds": 8,
                 "objectstore": "bluestore", "threshold_iops": list(THRESHOLD),
                 "module": MODULE_CONFIG, "strategy": plan.strategy},
        "elapsed_secs": round(time.monotonic() - started, 1),
        "ceph_release": release,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="smoke run (about 5 minutes)")
    ap.add_argument("--out", type=Path, default=RESULTS / "results.json")
    ap.add_argument("--hdd-iops", type=int, default=DeviceSpeeds.hdd_iops)
    ap.add_argument("--ssd-iops", type=int, default=DeviceSpeeds.ssd_iops)
    ap.add_argument("--strategy", choices=tuple(provenance.DESIGN_OF_STRATEGY), default="move",
                    help="the normal pool's strategy in adaptive mode (default: move)")
    args = ap.parse_args(argv)
    for tool in missing_tools(("fio", "rados", "ceph")):
        print(f"sla-bench: {tool} not found: run deploy/install-deps.sh", file=sys.stderr)
        return 2
    if min(args.hdd_iops, args.ssd_iops) < 1:
        print("sla-bench: --hdd-iops and --ssd-iops must be >= 1", file=sys.stderr)
        return 2
    try:
        plan = dataclasses.replace(QUICK if args.quick else FULL, strategy=args.strategy)
        results = run(plan, DeviceSpeeds(args.hdd_iops, args.ssd_iops), args.quick,
                      progress("sla-bench"))
    except EmulationError as exc:
        print(f"sla-bench: {exc}", file=sys.stderr)
        return 2
    results["provenance"] = provenance.provenance(
        "bench.sla_bench", sys.argv[1:] if argv is None else argv,
        results.pop("ceph_release"), provenance.DESIGN_OF_STRATEGY[args.strategy])
    write_json(args.out, results)
    print(json.dumps(results["targets"], indent=2))
    print(f"sla-bench: results in {args.out} after {results['elapsed_secs']:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
