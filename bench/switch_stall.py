"""What a switch costs the clients, on a real cluster with emulated device speeds.

    python3 -m bench.switch_stall [--smoke] [--out docs/benchmarks/switch-stall.json]

Starts its own mini cluster (8 BlueStore OSDs, 4 hosts of 1 hdd + 1 ssd, every
OSD's device I/Os capped by its class: bench/emulation.py), the sla module,
an urgent pool and POOLS copy pools of size 3 filled with small objects.

1. To shared, all at once and in steps. A normal client per copy pool (fio's
   rados engine, 4 KB random ops, 70 % reads, one op in flight, every op's
   latency logged) runs while `ceph sla mode shared` raises the pools' sizes:
   with max_step_pgs 0 (every pool in one step) and max_step_pgs = one pool's
   PGs (a pool a step). Reported: the worst normal op and the ops over 200 ms
   and 1 s from the switch until TAIL seconds after every pool is at size 4
   with its PGs active, against the same client's p99 before the switch; and
   the time until every pool is active at size 4. Then the same right after an
   isolation, while the SSD OSDs still delete the copies it dropped.
2. Stray deletion after isolation. The copy pools shared and their extra copy
   placed, an urgent client (fio randwrite, 4 KB, iodepth 4) runs; the mode is
   pinned isolated, and the SSD OSDs delete the dropped copies (stray PGs).
   Reported: the urgent p99 and worst op in the seconds before and after, the
   time until the SSD OSDs hold only the urgent pool's PGs again, and the same
   figures for a control run with nothing to delete.

Run it under the cluster lock: `flock /tmp/sla-cluster.lock python3 -m bench.switch_stall`.
"""
from __future__ import annotations

if __name__ == "__main__" and not __package__:
    import _script  # noqa: F401  (bench/_script.py: runs this as python3 -m bench.<name>)

import contextlib
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from bench.common import (
    emulated_main,
    machine,
    throttled_cluster,
    workdir,
)
from bench.emulation import DeviceSpeeds
from bench.sla_clients import percentile
from bench.sla_plan import MODULE_CONFIG
from bench.strategy_figures import urgent_latencies
from harness.cephcluster import Cluster, wait_for

SIZE = 3
Op = tuple[float, float, str]  # completed at (s since the clients started), ms, pool


@dataclass(frozen=True)
class Plan:
    pools: int  # copy pools switched together
    pg_num: int  # PGs per pool
    objects: int  # small objects per pool: the extra copy the SSDs delete after isolation
    object_kb: int
    # normal clients kept on after every pool is active at size 4: long enough that an
    # op the switch stalled completes inside the window (a loaded machine peers slowly)
    tail_secs: float
    base_secs: float  # urgent client before isolation
    after_secs: float  # urgent client after isolation


FULL = Plan(pools=4, pg_num=16, objects=3000, object_kb=16, tail_secs=10, base_secs=15,
            after_secs=60)
SMOKE = Plan(pools=2, pg_num=8, objects=100, object_kb=16, tail_secs=8, base_secs=4,
             after_secs=6)


def pool_names(plan: Plan) -> list[str]:
    return [f"copy{i}" for i in range(plan.pools)]


class Clients:
    """fio processes with per-op latency logs, stopped with SIGINT."""

    def __init__(self, cluster: Cluster, work: Path) -> None:
        self.c, self.work = cluster, work
        self.procs: list[tuple[subprocess.Popen[str], Path]] = []
        self.started = 0.0

    def fio(self, pool: str, *args: str) -> list[str]:
        return self.c.tool("fio", "--ioengine=rados", f"--conf={self.c.conf}",
                           "--clientname=admin", f"--pool={pool}", "--nrfiles=4",
                           "--size=4M", *args)

    def prefill(self, pool: str) -> None:
        subprocess.run(self.fio(pool, "--name=fill", "--rw=write", "--bs=1M"),
                       capture_output=True, check=True, timeout=600)

    def start(self, pool: str, *args: str) -> None:
        log = self.work / f"lat-{pool}-{time.monotonic_ns()}"
        proc = subprocess.Popen(self.fio(pool, f"--name={pool}", "--time_based",
                                         "--runtime=1800", f"--write_lat_log={log}",
                                         "--log_avg_msec=0", *args),
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        self.procs.append((proc, log))
        self.started = self.started or time.monotonic()

    def stop(self) -> list[Op]:
        """Every op as (seconds since the first client started, ms, pool)."""
        ops: list[Op] = []
        for proc, log in self.procs:
            if proc.poll() is None:
                proc.send_signal(signal.SIGINT)
            proc.communicate(timeout=120)
            pool = log.name.split("-")[1]
            ops += [(t, ms, pool) for t, ms in urgent_latencies(log)]
        self.procs, self.started = [], 0.0
        return ops


def window(ops: list[Op], start: float, end: float) -> dict[str, Any]:
    """Latency figures of the ops completed from `start` to `end` (seconds
    since the clients started), and when and where the worst one began."""
    inside = [op for op in ops if start <= op[0] <= end]
    if not inside:
        return {"ops": 0}
    during = [ms for _, ms, _ in inside]
    worst = max(inside, key=lambda op: op[1])
    return {"ops": len(during), "p50_ms": round(percentile(during, 50), 2),
            "p99_ms": round(percentile(during, 99), 2),
            "p999_ms": round(percentile(during, 99.9), 2), "max_ms": round(max(during), 2),
            "worst_began_secs": round(worst[0] - worst[1] / 1000 - start, 2),
            "worst_pool": worst[2],
            "ops_over_200ms": sum(1 for ms in during if ms > 200),
            "ops_over_1s": sum(1 for ms in during if ms > 1000)}


class StallBench:
    def __init__(self, cluster: Cluster, plan: Plan, work: Path) -> None:
        self.c, self.plan, self.work = cluster, plan, work
        self.ssd = {d["id"] for d in cluster.json("osd", "crush", "dump")["devices"]
                    if d["class"] == "ssd"}

    def sizes(self) -> dict[str, int]:
        return {p["pool_name"]: int(p["size"]) for p in self.c.json("osd", "pool", "ls", "detail")}

    def all_at(self, size: int, clean: bool) -> bool:
        """Every copy pool at `size`, its PGs active (and clean, if asked)."""
        sizes = self.sizes()
        for pool in pool_names(self.plan):
            if sizes.get(pool) != size:
                return False
            listed = self.c.json("pg", "ls-by-pool", pool)
            for pg in listed["pg_stats"] if isinstance(listed, dict) else listed:
                state = set(pg["state"].split("+"))
                if "active" not in state or clean and state != {"active", "clean"}:
                    return False
        return True

    def ssd_pgs(self) -> int:
        out = self.c.json("pg", "dump", "osds")
        return sum(int(o["num_pgs"]) for o in out.get("osd_stats", out) if o["osd"] in self.ssd)

    def to_shared(self, step_pgs: int, say: Callable[[str], None]) -> dict[str, Any]:
        """Normal clients on every copy pool while the module shares them."""
        self.c.ceph("config", "set", "mgr", "mgr/sla/max_step_pgs", str(step_pgs))
        clients = Clients(self.c, self.work)
        for pool in pool_names(self.plan):
            clients.start(pool, "--rw=randrw", "--rwmixread=70", "--bs=4k", "--iodepth=1")
        time.sleep(3)  # the clients' own baseline before the switch
        switch_at = time.monotonic() - clients.started
        self.c.ceph("sla", "mode", "shared")
        wait_for("every copy pool active at size 4", lambda: self.all_at(SIZE + 1, False),
                 600, interval=0.5)
        active_at = time.monotonic() - clients.started
        time.sleep(self.plan.tail_secs)
        ops = clients.stop()
        figures = {"max_step_pgs": step_pgs,
                   "time_to_all_active_secs": round(active_at - switch_at, 1),
                   "normal_before": window(ops, 0, switch_at),
                   "normal_switch": window(ops, switch_at, active_at + self.plan.tail_secs)}
        say(f"to shared, max_step_pgs {step_pgs}: {figures}")
        return figures

    def isolate_clean(self, urgent_only: int) -> float:
        """Isolated, clean, and the dropped copies deleted from the SSD OSDs
        (no more PGs there than the urgent pools'): the seconds the deletion took."""
        t0 = time.monotonic()
        self.c.ceph("sla", "mode", "isolated")
        wait_for("every copy pool clean at size 3", lambda: self.all_at(SIZE, True), 900, 1)
        wait_for("the stray copies deleted", lambda: self.ssd_pgs() <= urgent_only, 1800, 1)
        return round(time.monotonic() - t0, 1)

    def stray_round(self, with_strays: bool, say: Callable[[str], None]) -> dict[str, Any]:
        """The urgent client while isolation drops the copies (or, as a
        control, while nothing is shared): its latency before and after, and
        when the SSD OSDs hold no more PGs than before sharing (the dropped
        copies deleted as stray PGs)."""
        urgent_only = self.ssd_pgs()  # isolated and clean: the urgent pools' PGs
        if with_strays:
            self.c.ceph("sla", "mode", "shared")
            wait_for("the extra copies placed", lambda: self.all_at(SIZE + 1, True), 900, 1)
        clients = Clients(self.c, self.work)
        clients.start("urgent", "--rw=randwrite", "--bs=4k", "--iodepth=4")
        time.sleep(self.plan.base_secs)
        at = time.monotonic() - clients.started
        self.c.ceph("sla", "mode", "isolated")
        isolated_at = deleted_at = None
        end = time.monotonic() + self.plan.after_secs
        deadline = time.monotonic() + max(self.plan.after_secs, 300)
        # until the strays are gone or the urgent window ends, and in any case
        # until the pools are isolated (a slow isolation is a figure too)
        while deleted_at is None and time.monotonic() < deadline and (
                isolated_at is None or time.monotonic() < end):
            now = time.monotonic() - clients.started
            if isolated_at is None and self.all_at(SIZE, False):
                isolated_at = now
            if isolated_at is not None and self.ssd_pgs() <= urgent_only:
                deleted_at = now
            time.sleep(1)
        time.sleep(max(0.0, end - time.monotonic()))
        ops = clients.stop()
        figures = {"with_strays": with_strays,
                   "urgent_before": window(ops, 0, at),
                   "urgent_after": window(ops, at, at + self.plan.after_secs),
                   "pools_isolated_secs": None if isolated_at is None
                   else round(isolated_at - at, 1),
                   "strays_deleted_secs": None if deleted_at is None
                   else round(deleted_at - at, 1)}
        say(f"stray deletion ({'with' if with_strays else 'control'}): {figures}")
        return figures


@contextlib.contextmanager
def stall_cluster(speeds: DeviceSpeeds, plan: Plan) -> Iterator[StallBench]:
    """The cluster, the module, the urgent pool and the filled copy pools;
    everything gone when the block ends, however it ends."""
    with workdir("sla-stall-") as tmp, throttled_cluster(tmp, "c") as (cluster, throttle):
        pids = cluster.pids()
        bench = StallBench(cluster, plan, tmp)
        for d in cluster.json("osd", "crush", "dump")["devices"]:
            throttle.limit(f"osd.{d['id']}", pids[f"osd.{d['id']}"], speeds.iops(d["class"]))
        cluster.enable_sla()
        cluster.ceph("sla", "rules", "apply", timeout=300)
        for key, value in {**MODULE_CONFIG, "step_wait_secs": "5"}.items():
            cluster.ceph("config", "set", "mgr", f"mgr/sla/{key}", value)
        cluster.ceph("sla", "mode", "isolated")
        cluster.create_pool("urgent", plan.pg_num)
        cluster.ceph("sla", "pool", "set", "urgent", "urgent", timeout=300)
        clients = Clients(cluster, tmp)
        for pool in pool_names(plan):
            cluster.create_pool(pool, plan.pg_num, size=SIZE)
            cluster.ceph("sla", "pool", "set", pool, "normal", "--strategy", "copy", timeout=300)
            clients.prefill(pool)
            subprocess.run(cluster.tool("rados", "-c", cluster.conf, "-p", pool, "bench", "900",
                                        "write", "-b", str(plan.object_kb << 10), "-t", "16",
                                        "--no-cleanup", "--run-name", "fill", "--max-objects",
                                        str(plan.objects)),
                           capture_output=True, check=True, timeout=960)
        cluster.wait_clean(600)
        yield bench


def run(plan: Plan, speeds: DeviceSpeeds, say: Callable[[str], None]) -> dict[str, Any]:
    started = time.monotonic()
    with stall_cluster(speeds, plan) as bench:
        say("cluster up, pools filled")
        urgent_only = bench.ssd_pgs()
        to_shared = []
        for step_pgs in (0, plan.pg_num):
            round_ = bench.to_shared(step_pgs, say)
            round_["isolated_and_strays_deleted_secs"] = bench.isolate_clean(urgent_only)
            to_shared.append(round_)
        # sharing again right after an isolation, while the SSDs still
        # delete the copies it dropped
        bench.c.ceph("sla", "mode", "shared")
        wait_for("the extra copies placed", lambda: bench.all_at(SIZE + 1, True), 900, 1)
        bench.c.ceph("sla", "mode", "isolated")
        wait_for("every copy pool clean at size 3", lambda: bench.all_at(SIZE, True), 900, 1)
        resharing = bench.to_shared(0, say)
        resharing["isolated_and_strays_deleted_secs"] = bench.isolate_clean(urgent_only)
        strays = [bench.stray_round(True, say), bench.stray_round(False, say)]
    return {"to_shared": to_shared, "stray_deletion": strays, "resharing": resharing,
            "plan": {**asdict(plan), "osds": 8, "objectstore": "bluestore", "size": SIZE,
                     "module": {**MODULE_CONFIG, "step_wait_secs": "5"},
                     "normal_client": "fio rados engine per copy pool, 4 KB randrw 70% reads, "
                                      "iodepth 1",
                     "urgent_client": "fio rados engine, 4 KB randwrite, iodepth 4"},
            "emulation": {"hdd_device_iops": speeds.hdd_iops, "ssd_device_iops": speeds.ssd_iops},
            "machine_tools": machine(), "elapsed_secs": round(time.monotonic() - started, 1)}


def table(results: dict[str, Any]) -> str:
    rows = ["| to shared | max_step_pgs | time to all active | normal p99 before | worst op "
            "| ops > 200 ms | ops > 1 s |", "|---|---|---|---|---|---|---|"]
    labelled = [("one step" if not r["max_step_pgs"] else "a pool a step", r)
                for r in results["to_shared"]]
    labelled.append(("one step, right after isolating", results["resharing"]))
    for label, r in labelled:
        before, sw = r["normal_before"], r["normal_switch"]
        rows.append(f"| {label} "
                    f"| {r['max_step_pgs']} | {r['time_to_all_active_secs']} s "
                    f"| {before.get('p99_ms')} ms | {sw.get('max_ms')} ms "
                    f"| {sw.get('ops_over_200ms')} | {sw.get('ops_over_1s')} |")
    rows += ["", "| isolation | urgent p99 before | urgent p99 after | worst after "
                 "| pools isolated | strays deleted |", "|---|---|---|---|---|---|"]
    for r in results["stray_deletion"]:
        rows.append(f"| {'copies dropped' if r['with_strays'] else 'control'} "
                    f"| {r['urgent_before'].get('p99_ms')} ms "
                    f"| {r['urgent_after'].get('p99_ms')} ms "
                    f"| {r['urgent_after'].get('max_ms')} ms | {r['pools_isolated_secs']} s "
                    f"| {r['strays_deleted_secs']} s |")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    return emulated_main(argv, who="switch-stall", doc=__doc__, out="switch-stall.json",
                         tools=("fio", "rados", "ceph"), strategy="copy",
                         smoke_help="smallest run (a few minutes)",
                         run=run, sizes=(SMOKE, FULL), table=table)


if __name__ == "__main__":
    sys.exit(main())
