"""Shared mode with SSD primaries: does it give normal clients more?

    python3 bench/primary_affinity.py [--rounds 2] [--clients 16]
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

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.emulation import DeviceSpeeds, EmulationError  # noqa: E402
from bench.sla_bench import FULL, Bench, NormalClients, bench_cluster, wait_for  # noqa: E402

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
    if affinity != 1:
        set_hdd_primary_affinity(bench, 1)
    return rows


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


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--clients", type=int, default=16)
    ap.add_argument("--out", type=Path, default=ROOT / "docs/benchmarks/primary-affinity.json")
    args = ap.parse_args()
    if args.rounds < 1 or args.clients < 1:
        print("primary-affinity: --rounds and --clients must be >= 1", file=sys.stderr)
        return 2
    started = time.monotonic()
    speeds = DeviceSpeeds()
    try:
        with bench_cluster(FULL, speeds) as bench:
            rows = experiment(bench, args.rounds, args.clients)
    except EmulationError as exc:
        print(f"primary-affinity: {exc}", file=sys.stderr)
        return 2
    result = {"runs": rows, "summary": summary(rows), "normal_clients": args.clients,
              "normal_secs": FULL.normal_secs, "hdd_device_iops": speeds.hdd_iops,
              "ssd_device_iops": speeds.ssd_iops,
              "elapsed_secs": round(time.monotonic() - started, 1)}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2, sort_keys=True) + "\n")
    print(json.dumps(result["summary"], indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
