"""Shared mode with SSD primaries: does it give normal clients more?

    python3 -m bench.primary_affinity [--rounds 2] [--clients 16] [--secs 20] [--pg-num 64]
                                      [--out docs/benchmarks/primary-affinity.json]

In shared mode `sla_shared` draws each normal PG's hdd replica at position 0
(normal inclusion), so the primary, which serves every read, is always an hdd.
The SLA benchmark measured adaptive/fixed 1.47x with 16 normal clients and
blamed those primaries. This experiment tests that on the benchmark's own
cluster (bench/sla_bench.py: 8 BlueStore OSDs, hdd 150 / ssd 500 device I/O/s)
by setting the hdd OSDs' primary affinity to 0, which moves primaries to an ssd
replica where a PG has one without moving any data. Per round, side by side
and in the same pools, normal clients only (the urgent client idle): isolated
(the fixed mapping) and shared, each with hdd primary affinity 1 and 0. In
isolated mode a normal PG has only hdd replicas, so affinity 0 on all of them
should change nothing there, which the isolated step with affinity 0 checks.
"""
from __future__ import annotations

if __name__ == "__main__" and not __package__:
    import _script  # noqa: F401  (bench/_script.py: runs this as python3 -m bench.<name>)

import argparse
import dataclasses
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from bench import provenance
from bench.common import RESULTS, write_json
from bench.emulation import DeviceSpeeds, EmulationError
from bench.sla_clients import NormalClients
from bench.sla_cluster import Bench, bench_cluster
from bench.sla_plan import FULL
from harness.cephcluster import wait_for

# (label, mode, hdd primary affinity), in the order run each round. The switch
# to shared with affinity 0 already set goes through the module's gates.
STEPS = (("isolated", "isolated", 1), ("shared", "shared", 1),
         ("isolated, hdd affinity 0", "isolated", 0), ("shared, hdd affinity 0", "shared", 0))


def primaries_by_class(bench: Bench) -> dict[str, int]:
    """Normal-pool PGs that hold an ssd replica, by the class of their primary;
    'unclean' counts PGs not active+clean."""
    out = {"hdd": 0, "ssd": 0, "unclean": 0}
    for pg in bench.normal_pgs():
        if pg["state"] != "active+clean":
            out["unclean"] += 1
        if any(bench.classes[o] == "ssd" for o in pg["acting"]):
            out[bench.classes[pg["acting_primary"]]] += 1
    return out


def set_hdd_primary_affinity(bench: Bench, weight: int) -> None:
    """Set it on every hdd OSD; wait until every PG holding an ssd replica has
    its primary on the class that weight implies (ssd for 0) and all are clean."""
    for osd, cls in bench.classes.items():
        if cls == "hdd":
            bench.cluster.ceph("osd", "primary-affinity", f"osd.{osd}", str(weight))
    other = "hdd" if weight == 0 else "ssd"

    def followed() -> dict[str, int] | None:
        seen = primaries_by_class(bench)
        if seen["unclean"] or seen[other]:
            raise RuntimeError(f"primaries of PGs with an ssd replica: {seen}")
        return seen
    wait_for(f"no primary on {other} for PGs with an ssd replica", followed, 300)


def experiment(bench: Bench, rounds: int, clients: int) -> list[dict[str, Any]]:
    bench.fresh_pools("adaptive")  # managed by the module, pinned isolated
    # Lay out the clients' objects once, so no measured run pays for creating them.
    NormalClients(bench.cluster, clients, bench.plan, 5).ops_per_sec(stop=False)
    rows: list[dict[str, Any]] = []
    affinity = 1
    for r in range(rounds):
        for label, mode, weight in STEPS:
            bench.cluster.ceph("sla", "mode", mode)
            bench.wait_placed(mode, 600)
            if weight != affinity:
                set_hdd_primary_affinity(bench, weight)
                affinity = weight
            row = {**bench.idle_run(label, clients), "round": r + 1, "hdd_primary_affinity":
                   weight, "pgs_with_ssd_replica_by_primary_class": primaries_by_class(bench)}
            rows.append(row)
    return rows  # the cluster goes with the benchmark: affinity is not set back


def summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    ops = {label: [r["normal_ops_per_sec"] for r in rows if r["mode"] == label]
           for label, _, _ in STEPS}
    median = {label: statistics.median(v) for label, v in ops.items()}
    base = median["isolated"]
    # A shared run with affinity 0 counts only if no PG holding an ssd replica
    # kept its primary on an hdd.
    held = all(r["pgs_with_ssd_replica_by_primary_class"]["hdd"] == 0 for r in rows
               if r["hdd_primary_affinity"] == 0 and r["mode"].startswith("shared"))
    return {"normal_ops_per_sec": ops, "median": median,
            "median_over_isolated": {label: round(m / base, 2) for label, m in median.items()},
            "ssd_primaries_held": held}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--clients", type=int, default=16)
    ap.add_argument("--secs", type=int, default=FULL.normal_secs,
                    help="seconds of each measured run (normal clients only)")
    ap.add_argument("--pg-num", type=int, default=FULL.pg_num, help="PGs of each pool")
    ap.add_argument("--out", type=Path, default=RESULTS / "primary-affinity.json")
    args = ap.parse_args(argv)
    if min(args.rounds, args.clients, args.secs, args.pg_num) < 1:
        print("primary-affinity: --rounds, --clients, --secs and --pg-num must be >= 1",
              file=sys.stderr)
        return 2
    started = time.monotonic()
    speeds = DeviceSpeeds()
    plan = dataclasses.replace(FULL, normal_secs=args.secs, pg_num=args.pg_num)
    try:
        with bench_cluster(plan, speeds) as bench:
            release = provenance.ceph_release(bench.cluster.tool("ceph", "--version"))
            rows = experiment(bench, args.rounds, args.clients)
    except EmulationError as exc:
        print(f"primary-affinity: {exc}", file=sys.stderr)
        return 2
    result = {"runs": rows, "summary": summary(rows), "normal_clients": args.clients,
              "normal_secs": plan.normal_secs, "pg_num": plan.pg_num,
              "hdd_device_iops": speeds.hdd_iops,
              "ssd_device_iops": speeds.ssd_iops,
              "elapsed_secs": round(time.monotonic() - started, 1),
              "provenance": provenance.provenance(
                  "bench.primary_affinity", sys.argv[1:] if argv is None else argv, release,
                  provenance.CURRENT_DESIGN)}
    write_json(args.out, result)
    print(json.dumps(result["summary"], indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
