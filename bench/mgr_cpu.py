"""What the sla module costs: the ceph-mgr's CPU and, on the OSDs, its perf
query, with the module enabled and disabled, same load.

    python3 -m bench.mgr_cpu [--secs 150] [--rounds 2] [--write-secs 30]
                             [--out docs/benchmarks/mgr-cpu.json] [--conf CEPH_CONF]

Starts its own mini cluster (deploy/minicluster.sh: 8 memstore OSDs; --conf:
a running mini cluster instead, whose pools urgent and normal it reuses), manages
an urgent and a normal pool (the urgent pool idle, so the mode stays shared),
writes objects into the normal pool once (for --write-secs), then alternates
phases of --secs with the module on and off (`ceph mgr module disable sla`,
which also removes its OSD perf query), --rounds times each, on first. In
every phase a fresh `rados bench rand` (4 KiB reads of those objects, 8
threads, closed loop) runs for the phase: its ops/s, the OSDs' summed CPU
seconds per 1,000 ops and the mgr's CPU are read per phase (/proc
utime+stime). Reads keep the memstore OSDs from filling; the perf query counts
reads and writes alike. Alternating phases spread any drift over both
conditions. Figures are medians per condition; the added cost is on minus off.
"""
from __future__ import annotations

if __name__ == "__main__" and not __package__:
    import _script  # noqa: F401  (bench/_script.py: runs this as python3 -m bench.<name>)

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from bench import provenance
from bench.common import RESULTS, cluster_for, process_cpu_secs, rados_bench, write_json
from harness.cephcluster import Cluster, placed, wait_for

LOAD = "rados bench rand, 4 KiB reads, 8 threads, normal pool; urgent pool idle"


def phase(cluster: Cluster, secs: float) -> dict[str, float]:
    pids = cluster.pids()
    mgr = pids["mgr.x"]
    osds = [pid for name, pid in pids.items() if name.startswith("osd.")]
    mgr0, osd0 = process_cpu_secs(mgr), sum(process_cpu_secs(p) for p in osds)
    t0 = time.monotonic()
    ops = rados_bench(cluster, "normal", secs, "rand", "-t", "8", "--run-name", "cost")
    mgr1, osd1 = process_cpu_secs(mgr), sum(process_cpu_secs(p) for p in osds)
    t1 = time.monotonic()
    return {"client_ops_per_sec": round(ops, 1), "wall_secs": round(t1 - t0, 1),
            "mgr_cpu_percent": round(100 * (mgr1 - mgr0) / (t1 - t0), 2),
            "osd_cpu_secs_per_kop": round(1000 * (osd1 - osd0) / (ops * (t1 - t0)), 4)}


def sla_on(cluster: Cluster, on: bool) -> None:
    if on:
        cluster.ceph("mgr", "module", "enable", "sla")
        # the first tick registers the perf query: wait for ticks, not a guess
        wait_for("sla ticking", lambda: cluster.ceph_raw("sla", "status").returncode == 0
                 and cluster.sla_status()["tick_seconds"]["count"] >= 3, 120)
    else:
        cluster.ceph("mgr", "module", "disable", "sla")
        wait_for("sla disabled", lambda: cluster.ceph_raw("sla", "status").returncode != 0, 60)


def prepare(cluster: Cluster, write_secs: float) -> str:
    """Rules, the two managed pools, shared and clean, objects to read; the mode."""
    cluster.enable_sla()
    cluster.ceph("sla", "rules", "apply", timeout=300)
    pools = {p["pool_name"] for p in cluster.json("osd", "pool", "ls", "detail")}
    for pool in ("urgent", "normal"):
        if pool not in pools:
            cluster.create_pool(pool, 32)
    managed = {p["name"]: p for p in cluster.sla_status()["pools"]}  # a --conf cluster's
    if "urgent" not in managed:
        cluster.ceph("sla", "pool", "set", "urgent", "urgent", timeout=120)
    if "normal" not in managed:
        # the move strategy (pg_upmap_items): what the figures are about
        cluster.ceph("sla", "pool", "set", "normal", "normal", "--strategy", "move", timeout=300)
    elif (managed["normal"]["role"], managed["normal"].get("strategy")) != ("normal", "move"):
        raise RuntimeError(f"pool normal is managed otherwise: {managed['normal']}")
    cluster.ceph("config", "set", "mgr", "mgr/sla/min_dwell_secs", "5")
    # shared and every upmap entry in, then clean: a phase measured while the
    # entries still land would time the peering they cause, not the module
    wait_for("shared, upmap entries placed", lambda: placed(cluster), 300)
    cluster.wait_clean(300)
    # the objects the read phases read (rados bench rand needs a write's metadata)
    ops = rados_bench(cluster, "normal", write_secs, "write", "-b", "4096", "-t", "8",
                      "--no-cleanup", "--run-name", "cost")
    print(f"mgr-cpu: wrote {ops:.0f} ops/s for {write_secs:g} s", flush=True)
    return str(cluster.sla_status()["mode"])


def alternate(cluster: Cluster, rounds: int, secs: float) -> dict[str, list[dict[str, float]]]:
    """`rounds` x (module on, module off), a read phase of `secs` in each."""
    phases: dict[str, list[dict[str, float]]] = {"on": [], "off": []}
    for _ in range(rounds):
        for state in ("on", "off"):
            sla_on(cluster, state == "on")
            cluster.wait_clean(300)  # steady state: no phase starts amid peering
            phases[state].append(phase(cluster, secs))
            print(f"mgr-cpu: module {state}: {phases[state][-1]}", flush=True)
    return phases


def median(rows: list[dict[str, float]], key: str) -> float:
    return round(statistics.median(r[key] for r in rows), 4)


def summarize(phases: dict[str, list[dict[str, float]]]) -> dict[str, Any]:
    on, off = phases["on"], phases["off"]
    return {
        "median": {state: {k: median(rows, k) for k in rows[0]}
                   for state, rows in phases.items()},
        "added_mgr_cpu_percent": round(median(on, "mgr_cpu_percent")
                                       - median(off, "mgr_cpu_percent"), 2),
        "client_ops_on_over_off": round(median(on, "client_ops_per_sec")
                                        / median(off, "client_ops_per_sec"), 4),
        "osd_cpu_per_op_on_over_off": round(median(on, "osd_cpu_secs_per_kop")
                                            / median(off, "osd_cpu_secs_per_kop"), 4),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--secs", type=float, default=150, help="seconds per phase")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--write-secs", type=float, default=30,
                    help="seconds of writes that lay out the objects the phases read")
    ap.add_argument("--out", type=Path, default=RESULTS / "mgr-cpu.json")
    ap.add_argument("--conf", help="use this running mini cluster instead of starting one")
    args = ap.parse_args(argv)
    if args.secs < 1 or args.rounds < 1 or args.write_secs < 1:
        ap.error("--secs, --rounds and --write-secs must be >= 1")
    with cluster_for(args.conf, "sla-mgrcpu-") as cluster:
        release = provenance.ceph_release(cluster.tool("ceph", "--version"))
        mode = prepare(cluster, args.write_secs)
        phases = alternate(cluster, args.rounds, args.secs)
    result: dict[str, Any] = {
        "secs_per_phase": args.secs, "rounds": args.rounds, "phases": phases,
        **summarize(phases), "mode_during_on": mode, "load": LOAD,
        "cluster": f"1 mon, 1 mgr, 8 memstore OSDs (deploy/minicluster.sh), Ceph {release}",
        "provenance": provenance.provenance(
            "bench.mgr_cpu", sys.argv[1:] if argv is None else argv, release,
            provenance.CURRENT_DESIGN)}
    write_json(args.out, result)
    print(json.dumps({k: v for k, v in result.items() if k != "phases"}, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
