"""Reaction time and time to isolation of the `sla` module on a real cluster.

    python3 bench/module_bench.py [--trials 5] [--stats-periods 5 2] [--conf CEPH_CONF]

Without --conf it starts its own mini cluster (deploy/minicluster.sh) and stops
it at the end. Each trial: normal pool in shared mode and clean, then an
urgent client starts (`rados bench` 4 KiB writes); reaction = bench start ->
the module's switch record (`ceph sla history`); time to isolation = the
module's own record (switch -> no normal-pool PG acting on an ssd OSD). The trials for each
`mgr_stats_period` run side by side on the same cluster.
"""
from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from harness.cephcluster import Cluster, RadosBench, wait_for  # noqa: E402

HIGH, LOW, DWELL = 60, 25, 8


def setup(cluster: Cluster) -> None:
    cluster.enable_sla()
    cluster.ceph("sla", "rules", "apply", timeout=300)
    for pool in ("urgent", "normal"):
        cluster.create_pool(pool, 32)
    subprocess.run(["rados", "-c", cluster.conf, "-p", "normal", "bench", "5", "write", "-b",
                    "65536", "-t", "4", "--no-cleanup"], check=True, capture_output=True)
    for name, value in [("interval_secs", 1), ("min_dwell_secs", DWELL), ("rate_window_secs", 3)]:
        cluster.ceph("config", "set", "mgr", f"mgr/sla/{name}", str(value))
    cluster.ceph("sla", "set-threshold", str(HIGH), str(LOW))
    cluster.ceph("sla", "pool", "set", "urgent", "urgent", timeout=120)
    cluster.ceph("sla", "pool", "set", "normal", "normal", timeout=300)


def settled_shared(cluster: Cluster) -> bool:
    """Shared, the normal pool on its shared rule, data in place, nothing blocked."""
    status = cluster.sla_status()
    normal = next(p for p in status["pools"] if p["name"] == "normal")
    return status["mode"] == "shared" and normal["rule"] == "sla_shared" and not status["gates"]


def trial(cluster: Cluster) -> dict[str, float]:
    wait_for("shared and settled", lambda: settled_shared(cluster), 300)
    cluster.wait_clean(300)
    started = time.time()
    bench = RadosBench(cluster, "urgent", secs=90)
    try:
        last = wait_for("time to isolation", lambda: (h := cluster.json("sla", "history")[0])
                        ["to"] == "isolated" and h["time_to_isolation_secs"] is not None and h,
                        300)
    finally:
        bench.stop()
    # the module's own switch record: no polling delay in the figure
    reaction = float(last["time"]) - started
    return {"reaction_secs": round(reaction, 2),
            "time_to_isolation_secs": float(last["time_to_isolation_secs"]),
            "pgs_moved": last["pgs_moved"], "replicas_moved": last["replicas_moved"]}


def summary(rows: list[dict[str, float]], key: str) -> str:
    values = [r[key] for r in rows]
    return f"{statistics.median(values):6.1f} ({min(values):.1f}-{max(values):.1f})"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--trials", type=int, default=5)
    ap.add_argument("--stats-periods", type=int, nargs="+", default=[5, 2])
    ap.add_argument("--conf", help="use this running cluster instead of starting one")
    ap.add_argument("--out", type=Path, help="write the results as JSON here")
    args = ap.parse_args()
    tmp = None
    if args.conf:
        cluster = Cluster(Path(args.conf).parent)
    else:
        tmp = Path(tempfile.mkdtemp(prefix="sla-bench-"))
        cluster = Cluster.up(tmp / "c")
    results: dict[str, Any] = {"trials": {}, "settings": {
        "threshold_iops": HIGH, "threshold_low_iops": LOW, "min_dwell_secs": DWELL,
        "interval_secs": 1, "rate_window_secs": 3,
        "urgent_client": "rados bench 4 KiB writes, 8 threads"}}
    try:
        setup(cluster)
        for period in args.stats_periods:
            cluster.ceph("config", "set", "mgr", "mgr_stats_period", str(period))
            rows = [trial(cluster) for _ in range(args.trials)]
            results["trials"][str(period)] = rows
    finally:
        if tmp is not None:
            cluster.down()
            shutil.rmtree(tmp, ignore_errors=True)
    print(f"{'mgr_stats_period':>16} {'trials':>6} {'reaction s: median (min-max)':>30} "
          f"{'time to isolation s':>26}")
    for period, rows in results["trials"].items():
        print(f"{period:>16} {len(rows):>6} {summary(rows, 'reaction_secs'):>30} "
              f"{summary(rows, 'time_to_isolation_secs'):>26}")
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(results, indent=2, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
