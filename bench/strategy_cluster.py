"""The strategy benchmark's cluster (strategy_cluster) and one round on it
(StrategyBench): the normal pool filled, switched to shared and placed, its
throughput measured, the switch to isolated under urgent load read from the
OSD map, and the throughput isolated again.
"""
from __future__ import annotations

import contextlib
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.common import fio_json, throttled_cluster, workdir
from bench.emulation import DeviceSpeeds
from bench.sla_plan import MODULE_CONFIG, THRESHOLD
from bench.strategy_figures import (
    SwitchSeen,
    fio_rates,
    latency_figures,
    model_gain,
    urgent_latencies,
)
from bench.strategy_map import POOL, PoolMap
from harness.cephcluster import Cluster, wait_for

# The module's settings here: sla_bench's, and a shared pool however long isolating
# it again would take (what is measured is the strategy's placement with shared
# mode pinned; the switch-cost gate is policy: an estimate from the round before
# could keep a bigger pool isolated and leave nothing to measure).
STRATEGY_CONFIG = {**MODULE_CONFIG, "max_isolation_secs": "86400"}
LOADS = {"mix70": ["--rw=randrw", "--rwmixread=70"], "write": ["--rw=randwrite"],
         "read": ["--rw=randread"]}
SIZE = 3
EC_PROFILE = "sla-bench-ec"


@dataclass(frozen=True)
class Plan:
    volumes_mb: tuple[int, ...]  # normal data written before each round
    normal_secs: int  # each throughput measurement
    normal_jobs: int = 4  # fio jobs of the normal client
    block_kb: int = 16
    pg_num: int = 32
    settle_secs: float = 5.0  # urgent load kept on after isolation
    switch_secs: float = 300.0  # the switch to isolated under urgent load, at most
    place_secs: float = 900.0  # the shared placement, at most


FULL = Plan((64, 512), normal_secs=12)
SMOKE = Plan((8,), normal_secs=3, settle_secs=2.0)  # one volume: the code, not the scaling


# -- the cluster ------------------------------------------------------------------

class SwitchMissed(Exception):
    """The pool still acts on ssd OSDs at the switch's deadline."""

    def __init__(self, on_ssd: int) -> None:
        super().__init__(f"{on_ssd} PGs still acting on ssd")
        self.on_ssd = on_ssd


class StrategyBench(PoolMap):
    def __init__(self, cluster: Cluster, plan: Plan, workdir: Path) -> None:
        self.plan, self.workdir = plan, workdir
        self.classes = {d["id"]: d["class"]
                        for d in cluster.json("osd", "crush", "dump")["devices"]}
        super().__init__(cluster, {o for o, cls in self.classes.items() if cls == "ssd"})
        self.ec_optimizations: dict[str, Any] = {}  # what the mon said to the flag (ec)

    def wait_clean_pool(self, timeout: float) -> None:
        def clean() -> bool:
            bad = [p["state"] for p in self.pg_stats() if p["state"] != "active+clean"]
            if bad:
                raise RuntimeError(f"{len(bad)} PGs not clean: {sorted(set(bad))[:4]}")
            return True
        wait_for("the normal pool active+clean", clean, timeout)
        self.c.wait_clean(timeout)

    def wait_shared(self, strategy: str, pool_id: int, since: int, timeout: float
                    ) -> dict[str, Any]:
        """Shared placement complete: copy, size N+1 and every PG acting on one
        ssd OSD; move, the module's entries in place and PGs acting on ssd; and
        PG stats reported after epoch `since` (the map before the switch) agree."""
        def placed() -> bool:
            entry = next(p for p in self.c.sla_status()["pools"] if p["name"] == POOL)
            epoch, size, acting = self.acting(pool_id)
            if strategy == "copy":
                ok = size == SIZE + 1 and all(len(a) == SIZE + 1 and len(set(a) & self.ssd) == 1
                                              for a in acting.values())
            else:
                up = entry.get("upmaps") or {}
                ok = (up.get("placement") == "shared" and up.get("pending") == 0
                      and self.on_ssd(acting) > 0)
            if not ok:
                raise RuntimeError(f"size {size}, {self.on_ssd(acting)}/{len(acting)} PGs "
                                   f"acting on ssd, upmaps {entry.get('upmaps')}")
            # the map alone can pass before the primaries have asked for the
            # pg_temp that keeps a backfill target out of the acting set
            if not self.stats_clean_since(since + 1, acting):
                raise RuntimeError(f"PG stats after epoch {since} not yet clean at epoch {epoch}")
            return True
        wait_for(f"{strategy}: shared placement", placed, timeout, interval=1)
        self.wait_clean_pool(timeout)
        _, size, acting = self.acting(pool_id)
        entry = next(p for p in self.c.sla_status()["pools"] if p["name"] == POOL)
        share = (entry.get("upmaps") or {}).get("urgent_replica_share")
        replicas = sum(len(a) for a in acting.values())
        on_ssd = sum(len(set(a) & self.ssd) for a in acting.values())
        return {"size": size, "pgs_acting_on_ssd": self.on_ssd(acting), "pgs": len(acting),
                "replica_share_on_ssd": round(on_ssd / max(replicas, 1), 3),
                "module_urgent_replica_share": share}

    def wait_isolated(self, pool_id: int, since: int, timeout: float) -> None:
        """No PG acting on ssd in the map, and PG stats reported after epoch
        `since` (the map before the switch) agree. A PG reports again only when
        it changes, so `since` must not be the current epoch."""
        def isolated() -> bool:
            _, size, acting = self.acting(pool_id)
            if size != SIZE or self.on_ssd(acting) or not self.stats_isolated(since + 1):
                raise RuntimeError(f"size {size}, {self.on_ssd(acting)} PGs acting on ssd")
            return True
        wait_for("isolated placement", isolated, timeout, interval=1)
        self.wait_clean_pool(timeout)

    # clients

    def fio(self, pool: str, *args: str) -> list[str]:
        return self.c.tool("fio", "--output-format=json", "--ioengine=rados",
                           f"--conf={self.c.conf}", "--clientname=admin", f"--pool={pool}",
                           *args)

    def run_fio(self, args: list[str], timeout: float) -> dict[str, Any]:
        p = subprocess.run(args, capture_output=True, text=True, timeout=timeout)
        if p.returncode != 0:
            raise RuntimeError(f"fio failed ({p.returncode}): {p.stderr.strip()[:400]}")
        return fio_json(p.stdout)

    def normal_args(self) -> list[str]:
        # the working set: 4 objects of 1 MB per job, written whole first so
        # every read finds data on the device
        return ["--name=normal", f"--numjobs={self.plan.normal_jobs}", "--nrfiles=4",
                "--size=4M", "--iodepth=2"]

    def prefill(self) -> None:
        self.run_fio(self.fio(POOL, *self.normal_args(), "--rw=write", "--bs=1M"), 600)

    def throughput(self) -> dict[str, dict[str, float]]:
        out = {}
        for name, rw in LOADS.items():
            report = self.run_fio(self.fio(POOL, *self.normal_args(), *rw,
                                           f"--bs={self.plan.block_kb}k", "--time_based",
                                           f"--runtime={self.plan.normal_secs}"),
                                  self.plan.normal_secs + 300)
            out[name] = fio_rates(report)
        return out

    def fill(self, megabytes: int) -> float:
        """Write `megabytes` to the normal pool in 4 MB objects; the seconds it took."""
        t0 = time.monotonic()
        subprocess.run(self.c.tool("rados", "-c", self.c.conf, "-p", POOL, "bench", "900",
                                   "write", "-b", str(4 << 20), "-t", "4", "--no-cleanup",
                                   "--run-name", "fill", "--max-objects",
                                   str(max(megabytes // 4, 1))),
                       capture_output=True, check=True, timeout=960)
        return round(time.monotonic() - t0, 1)

    # the switch

    def switch_under_urgent_load(self, pool_id: int) -> dict[str, Any]:
        """mode auto, urgent client on: time to isolation from the map, epochs,
        urgent latency, degraded PGs seen; a switch that does not end within
        plan.switch_secs is a result too (time_to_isolation_secs None, the PGs
        still acting on ssd then)."""
        epoch0, _, _ = self.acting(pool_id)
        self.c.ceph("sla", "mode", "auto")
        # under the cluster dir: a release root sees it at the same path
        log = self.c.path / f"urgent-{time.monotonic_ns()}"
        proc = subprocess.Popen(
            self.fio("urgent", "--name=urgent", "--rw=randwrite", "--bs=4k", "--iodepth=8",
                     "--nrfiles=4", "--size=4M", "--time_based", "--runtime=900",
                     f"--write_lat_log={log}", "--log_avg_msec=0"),
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        seen = SwitchSeen(time.monotonic())
        missed: dict[str, Any] = {}
        try:
            try:
                tti, epoch_iso = self.await_isolation(pool_id, proc, seen,
                                                      self.plan.switch_secs)
            except SwitchMissed as exc:
                tti, epoch_iso = self.plan.switch_secs, self.acting(pool_id)[0]
                missed = {"not_isolated_after_secs": self.plan.switch_secs,
                          "pgs_on_ssd_at_deadline": exc.on_ssd}
            settle_end = time.monotonic() + self.plan.settle_secs
            while time.monotonic() < settle_end:
                seen.sample(self.pg_stats())
                time.sleep(0.1)
        finally:
            if proc.poll() is None:
                proc.send_signal(signal.SIGINT)
            out, err = proc.communicate(timeout=120)
        mode = self.c.sla_status()["mode"]
        lat = urgent_latencies(log)
        epoch_end = self.acting(pool_id)[0]
        return {
            "time_to_isolation_secs": None if missed else round(tti, 2), **missed,
            "map_polls": seen.polls,
            "map_first_isolated_secs": round(seen.first_map[0], 2) if seen.first_map else None,
            "epochs_to_isolation": epoch_iso - epoch0, "epoch_start": epoch0,
            "degraded_pgs_seen": len(seen.degraded),
            "max_degraded_objects_seen": seen.degraded_objects,
            "epochs_incl_settle": epoch_end - epoch0, "mode_after": mode,
            **latency_figures([ms for t, ms in lat if t <= tti], [ms for t, ms in lat if t > tti]),
            "urgent_fio_rc": proc.returncode, "urgent_fio_report": bool(out.strip()),
            "urgent_fio_err": err.strip()[:200] if proc.returncode not in (0, 128) else "",
        }

    def await_isolation(self, pool_id: int, proc: subprocess.Popen[str], seen: SwitchSeen,
                        timeout: float) -> tuple[float, int]:
        """Poll the map until the pool is off the ssd OSDs and PG stats agree:
        (seconds since seen.started, that epoch)."""
        while True:
            now = time.monotonic()
            epoch, size, acting = self.acting(pool_id)
            seen.polls += 1
            if size == SIZE and acting and not self.on_ssd(acting):
                # The map's first isolated epoch may precede the pg_temp the
                # primaries ask for while they backfill (move): isolation
                # counts once PG stats reported at or after it are clean.
                if seen.first_map is None:
                    seen.first_map = (now - seen.started, epoch)
                if self.stats_isolated(seen.first_map[1]):
                    return now - seen.started, epoch
            else:
                seen.first_map = None
            seen.sample(self.pg_stats())
            if now - seen.started > timeout:
                raise SwitchMissed(self.on_ssd(acting))
            if proc.poll() is not None:
                raise RuntimeError(f"urgent fio ended early (rc {proc.returncode})")
            time.sleep(0.05)  # map polls answer in milliseconds: do not spin on the mon

    def history_record(self, since: float) -> dict[str, Any] | None:
        for h in self.c.json("sla", "history"):
            if h["to"] == "isolated" and h["time"] >= since:
                return {k: h.get(k) for k in ("reason", "time_to_isolation_secs", "pgs_moved",
                                              "replicas_moved")}
        return None

    # one round

    def round(self, strategy: str, megabytes: int, say: Callable[[str], None]) -> dict[str, Any]:
        c, t0 = self.c, time.monotonic()
        c.ceph("sla", "mode", "isolated")
        pool_id = self.managed_pool(strategy)
        self.wait_clean_pool(300)
        fill_secs = self.fill(megabytes)
        self.prefill()
        self.wait_clean_pool(300)
        say(f"{strategy} {megabytes} MB: filled in {fill_secs} s; to shared")
        t1 = time.monotonic()
        before = self.acting(pool_id)[0]
        c.ceph("sla", "mode", "shared")
        try:
            shared = self.wait_shared(strategy, pool_id, before, self.plan.place_secs)
        except AssertionError as exc:  # a result too: the data did not reach its place
            say(f"{strategy} {megabytes} MB: not shared in {self.plan.place_secs:.0f} s")
            return self.unplaced(strategy, megabytes, pool_id, before, str(exc),
                                 {"fill_secs": fill_secs, "round_start": t0})
        to_shared = round(time.monotonic() - t1, 1)
        say(f"{strategy} {megabytes} MB: shared and clean after {to_shared} s: {shared}")
        tput_shared = self.throughput()
        say(f"{strategy} {megabytes} MB: shared throughput {tput_shared}")
        switch = self.switch_and_pin_isolated(pool_id, f"{strategy} {megabytes} MB", say)
        tput_isolated = self.throughput()
        say(f"{strategy} {megabytes} MB: isolated throughput {tput_isolated}")
        stats = self.pool_stats(pool_id)
        self.drop_pool()
        share = shared["replica_share_on_ssd"] if strategy in ("move", "ec") else 0.0
        gain = {name: round(tput_shared[name]["ops_per_sec"]
                            / max(tput_isolated[name]["ops_per_sec"], 1e-9), 3)
                for name in LOADS}
        model = {"mix70": model_gain(strategy, 0.7, SIZE, share),
                 "write": model_gain(strategy, 0.0, SIZE, share),
                 "read": model_gain(strategy, 1.0, SIZE, share)}
        return {"strategy": strategy, "volume_mb": megabytes, "fill_secs": fill_secs,
                "stored_bytes": stats, "to_shared_secs": to_shared, "shared_placement": shared,
                "throughput": {"shared": tput_shared, "isolated": tput_isolated},
                "gain_shared_over_isolated": gain, "model_gain": model, "switch": switch,
                "round_secs": round(time.monotonic() - t0, 1),
                **self.ec_said(strategy)}

    def drop_pool(self) -> None:
        """The round's pool out of the module's hands, then deleted."""
        self.c.ceph("sla", "pool", "rm", POOL, timeout=300)
        self.c.ceph("osd", "pool", "rm", POOL, POOL, "--yes-i-really-really-mean-it")

    def ec_said(self, strategy: str) -> dict[str, Any]:
        """What the mon said to allow_ec_optimizations, for an ec round's result."""
        return {"ec_optimizations": self.ec_optimizations} if strategy == "ec" else {}

    def switch_and_pin_isolated(self, pool_id: int, label: str, say: Callable[[str], None]
                                ) -> dict[str, Any]:
        """The switch under urgent load, then the mode pinned isolated and the
        pool off the ssd OSDs (timed too when the switch missed its deadline)."""
        wall = time.time()
        switch = self.switch_under_urgent_load(pool_id)
        switch["module_record"] = self.history_record(wall - 1)
        say(f"{label}: switch {switch}")
        t = time.monotonic()
        self.c.ceph("sla", "mode", "isolated")
        self.wait_isolated(pool_id, switch["epoch_start"], 900)
        if switch["time_to_isolation_secs"] is None:  # ended pinned, the urgent load off
            switch["isolated_pinned_after_secs"] = round(time.monotonic() - t, 1)
            say(f"{label}: isolated, pinned, after {switch['isolated_pinned_after_secs']} s more")
        return switch

    def unplaced(self, strategy: str, megabytes: int, pool_id: int, before: int, seen: str,
                 start: dict[str, float]) -> dict[str, Any]:
        """A round whose shared placement missed plan.place_secs: the PG states
        then, the pool pinned back to isolated, nothing measured shared."""
        states: dict[str, int] = {}
        for pg in self.pg_stats():
            states[pg["state"]] = states.get(pg["state"], 0) + 1
        stats = self.pool_stats(pool_id)
        # why, as the module says it: the pool's kept_isolated and its health checks
        entry = next(p for p in self.c.sla_status()["pools"] if p["name"] == POOL)
        checks = self.c.json("health", "detail").get("checks", {})
        said = {"kept_isolated": entry.get("kept_isolated"),
                "health": {name: check.get("summary", {}).get("message")
                           for name, check in checks.items() if name.startswith("SLA_")}}
        t = time.monotonic()
        self.c.ceph("sla", "mode", "isolated")
        self.wait_isolated(pool_id, before, 900)
        back = round(time.monotonic() - t, 1)
        self.drop_pool()
        return {"strategy": strategy, "volume_mb": megabytes, "fill_secs": start["fill_secs"],
                "stored_bytes": stats, "to_shared_secs": None,
                "not_shared_after_secs": self.plan.place_secs, "pg_states_then": states,
                "last_seen": seen[:300], "module_said": said, "isolated_pinned_after_secs": back,
                "round_secs": round(time.monotonic() - start["round_start"], 1),
                **self.ec_said(strategy)}

    def managed_pool(self, strategy: str) -> int:
        """The normal pool, managed by `strategy`: replicated of size SIZE, or
        for ec erasure-coded k=SIZE-1 m=1 on the hdd class, one shard per host,
        with overwrites (fio's rados engine writes within objects)."""
        c = self.c
        if strategy == "ec":
            c.ceph("osd", "erasure-code-profile", "set", EC_PROFILE, f"k={SIZE - 1}", "m=1",
                   "crush-device-class=hdd", "crush-failure-domain=host", "--force")
            c.ceph("osd", "pool", "create", POOL, str(self.plan.pg_num),
                   str(self.plan.pg_num), "erasure", EC_PROFILE)
            c.ceph("osd", "pool", "set", POOL, "allow_ec_overwrites", "true")
            # Tentacle's partial reads and parity-delta writes where the release has
            # them; an older mon refuses the key, and says so in the results
            done = c.ceph_raw("osd", "pool", "set", POOL, "allow_ec_optimizations", "true",
                              "--yes-i-really-mean-it")
            self.ec_optimizations = {"on": done.returncode == 0, "ceph_said": (
                done.stderr or done.stdout).strip()[:200]}
            c.ceph("osd", "pool", "application", "enable", POOL, "rados")
            pool_id = next(int(p["pool_id"]) for p in c.json("osd", "pool", "ls", "detail")
                           if p["pool_name"] == POOL)
        else:
            pool_id = c.create_pool(POOL, self.plan.pg_num, size=SIZE)
        out = c.json("sla", "pool", "set", POOL, "normal", "--strategy", strategy, timeout=300)
        if out.get("strategy") != strategy:
            raise RuntimeError(f"pool set gave {out}")
        return pool_id



@contextlib.contextmanager
def strategy_cluster(speeds: DeviceSpeeds, plan: Plan) -> Iterator[StrategyBench]:
    """8 BlueStore OSDs with emulated device speeds, the sla module with its
    rules, the benchmark's timings and an urgent pool; daemons, cgroups and the
    temp dir are gone when the block ends, however it ends."""
    with workdir("sla-strategy-") as tmp, throttled_cluster(tmp, "c") as (cluster, throttle):
        pids = cluster.pids()
        bench = StrategyBench(cluster, plan, tmp)
        for osd, cls in bench.classes.items():
            throttle.limit(f"osd.{osd}", pids[f"osd.{osd}"], speeds.iops(cls))
        cluster.enable_sla()
        cluster.ceph("sla", "rules", "apply", timeout=300)
        for key, value in STRATEGY_CONFIG.items():
            cluster.ceph("config", "set", "mgr", f"mgr/sla/{key}", value)
        cluster.ceph("sla", "set-threshold", *THRESHOLD)
        cluster.ceph("sla", "mode", "isolated")
        cluster.create_pool("urgent", plan.pg_num)
        cluster.ceph("sla", "pool", "set", "urgent", "urgent", timeout=300)
        cluster.wait_clean(300)
        yield bench
