"""SLA benchmark on a real cluster with emulated HDD/SSD speeds.

    python3 bench/sla_bench.py [--quick] [--out docs/benchmarks/results.json] [--plots DIR]

Starts its own mini cluster (8 memstore OSDs, 4 hosts of 1 hdd + 1 ssd),
makes the hdd-class OSDs slow on purpose (injected dispatch delay, no CPU
spent: CEPH-FACTS.md), calibrates, then runs side by side on that cluster:

- default:  both pools on Ceph's replicated_rule (all OSDs, class-oblivious)
- fixed:    urgent pool on sla_isolated_urgent, normal on sla_isolated_normal
- adaptive: the sla module in auto mode (isolated while urgent is active)

Each client writes then reads back its objects with fio's rados engine
(the paper's micro-benchmark); the urgent client does a fixed amount of work
(turnaround), normal clients run for the whole measurement. Figures: urgent
p50/p99 op latency and turnaround against the number of normal clients, and
normal ops/s with the urgent client idle.
"""
from __future__ import annotations

import argparse
import json
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from integration.cephcluster import Bench, Cluster, wait_for  # noqa: E402

HDD_DELAY_MS = 12.0
SSD_DELAY_MS = 3.0


@dataclass(frozen=True)
class Plan:
    normal_clients: tuple[int, ...]
    urgent_mb: int  # the urgent client's work: write then read back this much
    normal_secs: int  # normal throughput measurement with urgent idle
    block_kb: int = 16


FULL = Plan((0, 1, 2, 4, 8, 16), urgent_mb=8, normal_secs=20)
QUICK = Plan((0, 4), urgent_mb=2, normal_secs=8)


def fio_args(cluster: Cluster, name: str, pool: str, block_kb: int) -> list[str]:
    return ["fio", "--output-format=json", f"--name={name}", "--ioengine=rados",
            f"--conf={cluster.conf}", "--clientname=admin", f"--pool={pool}",
            f"--bs={block_kb}k", "--iodepth=2", "--nrfiles=8"]


def run_fio(args: list[str], timeout: float) -> dict[str, Any]:
    out = subprocess.run(args, capture_output=True, text=True, timeout=timeout)
    if out.returncode != 0:
        raise RuntimeError(f"fio failed: {out.stderr.strip()[:400]}")
    return json.loads(out.stdout[out.stdout.index("{"):])  # type: ignore[no-any-return]


def urgent_client(cluster: Cluster, plan: Plan) -> dict[str, float]:
    """Write then read back plan.urgent_mb: turnaround and op latencies."""
    common = fio_args(cluster, "urgent", "urgent", plan.block_kb) + [f"--size={plan.urgent_mb}M"]
    started = time.monotonic()
    wrote = run_fio(common + ["--rw=write"], 600)
    read = run_fio(common + ["--rw=read"], 600)
    turnaround = time.monotonic() - started
    lat: list[float] = []
    for result, kind in ((wrote, "write"), (read, "read")):
        job = result["jobs"][0][kind]
        pct = job["clat_ns"].get("percentile", {})
        lat.append((pct.get("50.000000", 0.0), pct.get("99.000000", 0.0), job["total_ios"]))
    # op-weighted p50, worst p99 of the two phases (writes dominate both)
    ios = sum(n for _, _, n in lat) or 1
    return {
        "urgent_turnaround_s": round(turnaround, 2),
        "urgent_p50_ms": round(sum(p50 * n for p50, _, n in lat) / ios / 1e6, 2),
        "urgent_p99_ms": round(max(p99 for _, p99, _ in lat) / 1e6, 2),
    }


class NormalClients:
    """n fio processes on the normal pool, time based, stopped by PID."""

    def __init__(self, cluster: Cluster, n: int, plan: Plan, secs: int) -> None:
        self.procs = [subprocess.Popen(
            fio_args(cluster, f"normal{i}", "normal", plan.block_kb)
            + ["--size=4M", "--rw=randrw", "--rwmixread=50", "--time_based",
               f"--runtime={secs}"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
            for i in range(n)]

    def ops_per_sec(self) -> float:
        total = 0.0
        for p in self.procs:
            out, _ = p.communicate(timeout=900)
            result = json.loads(out[out.index("{"):])
            for job in result["jobs"]:
                secs = max(job["job_runtime"] / 1000.0, 1e-3)
                total += (job["read"]["total_ios"] + job["write"]["total_ios"]) / secs
        return round(total, 1)

    def stop(self) -> None:
        for p in self.procs:
            if p.poll() is None:
                p.terminate()
                p.wait(30)


def emulate_devices(cluster: Cluster) -> dict[str, Any]:
    classes = {d["id"]: d["class"] for d in cluster.json("osd", "crush", "dump")["devices"]}
    for osd, cls in classes.items():
        delay = HDD_DELAY_MS if cls == "hdd" else SSD_DELAY_MS
        cluster.ceph("config", "set", f"osd.{osd}", "osd_debug_inject_dispatch_delay_probability",
                     "1")
        cluster.ceph("config", "set", f"osd.{osd}", "osd_debug_inject_dispatch_delay_duration",
                     str(delay / 1000.0))
    return {"mechanism": "osd_debug_inject_dispatch_delay (probability 1)",
            "hdd_delay_ms": HDD_DELAY_MS, "ssd_delay_ms": SSD_DELAY_MS}


def cpu_busy(during: Any) -> tuple[Any, float]:
    """Run `during()`; return its result and the machine's CPU busy percent meanwhile."""
    def read() -> tuple[int, int]:
        fields = [int(x) for x in Path("/proc/stat").read_text().split("\n")[0].split()[1:]]
        return sum(fields), fields[3] + fields[4]
    t0, i0 = read()
    result = during()
    t1, i1 = read()
    return result, round(100.0 * (1 - (i1 - i0) / max(t1 - t0, 1)), 1)


def calibrate(cluster: Cluster) -> dict[str, Any]:
    """One class at a time: a size-1 pool on that class, saturated with rados bench."""
    out: dict[str, Any] = {}
    for cls, rule in (("hdd", "sla_isolated_normal"), ("ssd", "sla_isolated_urgent")):
        pool = f"cal-{cls}"
        cluster.create_pool(pool, 16, size=1)
        cluster.ceph("osd", "pool", "set", pool, "crush_rule", rule)
        cluster.wait_clean(120)

        def bench(pool: str = pool) -> float:
            p = subprocess.run(["rados", "-c", cluster.conf, "-p", pool, "bench", "8", "write",
                                "-b", "4096", "-t", "32", "--format", "json"],
                               capture_output=True, text=True, timeout=120, check=True)
            return float(json.loads(p.stdout[p.stdout.index("{"):])["bandwidth"]) * 1024 * 1024 \
                / 4096

        ops, busy = cpu_busy(bench)
        out[cls] = {"ops_per_sec_class": round(ops, 1), "ops_per_sec_per_osd": round(ops / 4, 1),
                    "cpu_busy_percent": busy}
        cluster.ceph("osd", "pool", "rm", pool, pool, "--yes-i-really-really-mean-it")
    out["ssd_to_hdd_ratio"] = round(out["ssd"]["ops_per_sec_class"] /
                                    out["hdd"]["ops_per_sec_class"], 2)
    return out


def set_mode(cluster: Cluster, mode: str) -> None:
    """Put the pools where `mode` wants them and wait until the data is there."""
    status = cluster.sla_status()
    for pool in ("urgent", "normal"):
        if any(p["name"] == pool for p in status["pools"]):
            cluster.ceph("sla", "pool", "rm", pool)
    if mode == "default":
        rules = {"urgent": "replicated_rule", "normal": "replicated_rule"}
    else:
        rules = {"urgent": "sla_isolated_urgent", "normal": "sla_isolated_normal"}
    for pool, rule in rules.items():
        cluster.ceph("osd", "pool", "set", pool, "crush_rule", rule)
    if mode == "adaptive":
        cluster.ceph("sla", "pool", "set", "urgent", "urgent", timeout=300)
        cluster.ceph("sla", "pool", "set", "normal", "normal", timeout=300)
    cluster.wait_clean(600)


def adaptive_isolated(cluster: Cluster) -> dict[str, Any] | None:
    """Make the module isolate with a short urgent burst; return the switch record."""
    if cluster.sla_status()["mode"] == "isolated":
        return None
    bench = Bench(cluster, "urgent", secs=60)
    try:
        wait_for("isolated", lambda: cluster.sla_status()["mode"] == "isolated", 120)
        reaction = time.monotonic() - bench.started
        record = wait_for("time to isolation", lambda: (h := cluster.json("sla", "history")[0])
                          ["time_to_isolation_secs"] is not None and h, 600)
    finally:
        bench.stop()
    cluster.wait_clean(600)
    return {**record, "reaction_secs": round(reaction, 2)}


def adaptive_shared(cluster: Cluster) -> None:
    wait_for("shared", lambda: cluster.sla_status()["mode"] == "shared", 600)
    cluster.wait_clean(600)


def pool_counters(cluster: Cluster, pool: str) -> tuple[int, int]:
    """(bytes written by clients, bytes written by recovery/backfill) so far."""
    stats = {int(e["poolid"]): e["stat_sum"] for e in cluster.json("pg", "dump", "pools")}
    pool_id = next(int(p["pool_id"]) for p in cluster.json("osd", "pool", "ls", "detail")
                   if p["pool_name"] == pool)
    s = stats.get(pool_id, {})
    return int(s.get("num_write_kb", 0)) * 1024, int(s.get("num_bytes_recovered", 0))


def measure(cluster: Cluster, plan: Plan) -> dict[str, Any]:
    runs: list[dict[str, Any]] = []
    switches: list[dict[str, Any]] = []
    cluster.ceph("config", "set", "mgr", "mgr/sla/min_dwell_secs", "20")
    cluster.ceph("config", "set", "mgr", "mgr/sla/interval_secs", "1")
    cluster.ceph("config", "set", "mgr", "mgr/sla/rate_window_secs", "3")
    cluster.ceph("sla", "set-threshold", "30", "10")
    for mode in ("default", "fixed", "adaptive"):
        set_mode(cluster, mode)
        for n in plan.normal_clients:
            if mode == "adaptive":
                w0, r0 = pool_counters(cluster, "normal")
                record = adaptive_isolated(cluster)
                if record is not None:
                    w1, r1 = pool_counters(cluster, "normal")
                    record["backfill_bytes_per_client_byte"] = round((r1 - r0) / max(w1 - w0, 1), 3)
                    switches.append(record)
            normals = NormalClients(cluster, n, plan, secs=3600)
            try:
                if n:
                    time.sleep(3)  # let the normal clients reach steady state first
                result = urgent_client(cluster, plan)
            finally:
                normals.stop()
            runs.append({"mode": mode, "normal_clients": n, "urgent_active": True, **result})
            print(json.dumps(runs[-1]), flush=True)
        # urgent idle: normal throughput
        n = max(plan.normal_clients)
        if mode == "adaptive":
            adaptive_shared(cluster)
        normals = NormalClients(cluster, n, plan, secs=plan.normal_secs)
        ops = normals.ops_per_sec()
        runs.append({"mode": mode, "normal_clients": n, "urgent_active": False,
                     "normal_ops_per_sec": ops})
        print(json.dumps(runs[-1]), flush=True)
    return {"runs": runs, "switches": switches}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="smoke run (a few minutes)")
    ap.add_argument("--out", type=Path, default=ROOT / "docs/benchmarks/results.json")
    args = ap.parse_args()
    plan = QUICK if args.quick else FULL
    if shutil.which("fio") is None:
        print("sla-bench: fio not found: apt-get install fio", file=sys.stderr)
        return 2
    tmp = Path(tempfile.mkdtemp(prefix="sla-bench-"))
    cluster = Cluster.up(tmp / "c")
    try:
        cluster.enable_sla()
        cluster.ceph("sla", "rules", "apply", timeout=300)
        for pool in ("urgent", "normal"):
            cluster.create_pool(pool, 64)
        emulation = emulate_devices(cluster)
        emulation["calibration"] = calibrate(cluster)
        print(json.dumps(emulation), flush=True)
        results = measure(cluster, plan)
    finally:
        cluster.down()
        shutil.rmtree(tmp, ignore_errors=True)
    results["emulation"] = emulation
    results["machine"] = {"cpus": 2, "kernel": platform.release(),
                          "ceph": subprocess.run(["ceph", "--version"], capture_output=True,
                                                 text=True).stdout.strip()}
    results["plan"] = {"quick": args.quick, "normal_clients": list(plan.normal_clients),
                       "urgent_mb": plan.urgent_mb, "block_kb": plan.block_kb}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2, sort_keys=True) + "\n")
    print(f"results: {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
