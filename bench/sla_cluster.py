"""The SLA benchmark's own cluster (bench_cluster) and what it measures on it
(Bench): calibration of the emulated devices, the pools of each mode, runs
with and without the urgent client, and the module's switches under load.
"""
from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from bench.common import busy_percent, cpu_times, rados_bench, throttled_cluster, workdir
from bench.emulation import BlkioThrottle, DeviceSpeeds
from bench.sla_clients import NormalClients, UrgentClient
from bench.sla_plan import MODULE_CONFIG, RULES, THRESHOLD, Plan
from harness.cephcluster import Cluster, wait_for


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
            # start isolated, as after `ceph mgr module enable sla`; adaptive() unpins.
            # The pin switches at the module's next tick: wait for it, or the
            # switch to shared that adaptive() measures would find it already done
            c.ceph("sla", "mode", "isolated")
            wait_for("the module pinned isolated", lambda: self.mode() == "isolated", 120)
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
