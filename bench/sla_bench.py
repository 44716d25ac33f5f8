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

The cluster and what is measured on it are in bench/sla_cluster.py, the fio
clients in bench/sla_clients.py, the plans and module settings in
bench/sla_plan.py.
"""
from __future__ import annotations

if __name__ == "__main__" and not __package__:
    import _script  # noqa: F401  (bench/_script.py: runs this as python3 -m bench.<name>)

import argparse
import dataclasses
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench import provenance
from bench.common import RESULTS, machine, missing_tools, progress, write_json
from bench.emulation import DeviceSpeeds, EmulationError
from bench.sla_cluster import Bench, bench_cluster
from bench.sla_plan import FULL, MODES, MODULE_CONFIG, QUICK, THRESHOLD, Plan


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
