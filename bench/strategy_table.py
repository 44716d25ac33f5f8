"""Where each placement strategy pays: the module's own switch-cost model
(mgr_sla/core/switch_cost.py) over normal data volume x read mix, on a cluster of
a given size, with the same max_isolation_secs decision the module makes.

Pure (no Ceph): the figures are the model's, the same the module shows in
`ceph sla plan`; the measured side is bench/strategy_bench.py and
tests/integration/test_copy_strategy.py.

    python3 -m bench.strategy_table --out docs/benchmarks/strategy-table.json
"""
from __future__ import annotations

if __name__ == "__main__" and not __package__:
    import _script  # noqa: F401  (bench/_script.py: runs this as python3 -m bench.<name>)

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench import provenance
from mgr_sla.core.models.registry import MODELS
from mgr_sla.core.settings import Settings
from mgr_sla.core.state import Strategy
from mgr_sla.core.switch_cost import Capacity, PoolCostInputs, pool_cost

TB = 1e12


@dataclass(frozen=True)
class Cluster:
    hdd_osds: int = 1000
    ssd_osds: int = 200
    hdd_tb: float = 8.0
    ssd_tb: float = 4.0
    pgs: int = 100_000
    size: int = 3
    drain_mb_s: float = 1000.0  # cluster-wide recovery rate (about 1 MB/s per hdd OSD)
    isolations_per_day: int = 12  # urgent bursts that isolate


def cell(c: Cluster, volume_tb: float, reads: float, max_isolation_secs: float
         ) -> dict[str, Any]:
    stored = volume_tb * TB
    hdd_bytes, ssd_bytes = c.hdd_osds * c.hdd_tb * TB, c.ssd_osds * c.ssd_tb * TB
    share = min(ssd_bytes / (hdd_bytes + ssd_bytes), (c.size - 1) / c.size)
    cap = Capacity(urgent_free_bytes=ssd_bytes * 0.9, nearfull_ratio=0.85,
                   urgent_total_bytes=ssd_bytes, normal_used_bytes=stored * c.size,
                   normal_total_bytes=hdd_bytes, backfillfull_ratio=0.90,
                   drain_bytes_per_sec=c.drain_mb_s * 1e6,
                   drain_basis=f"{c.drain_mb_s:g} MB/s cluster-wide")
    pool = PoolCostInputs(1, "normal", Strategy.MOVE, c.size, stored, c.pgs, share, reads)
    cost = pool_cost(pool, cap, max_isolation_secs, list(MODELS.values()), Settings().min_gain)
    out: dict[str, Any] = {"volume_tb": volume_tb, "read_fraction": reads,
                           "recommended": cost.recommended, "reason": cost.reason}
    for sc in cost.costs:
        usable = sc.fits_urgent and sc.time_to_isolation_secs <= max_isolation_secs
        out[sc.strategy] = {
            "gain": sc.expected_gain, "usable": usable,
            "time_to_isolation_secs": sc.time_to_isolation_secs,
            "sla_minutes_per_day": round(sc.time_to_isolation_secs * c.isolations_per_day
                                         / 60, 1),
            "epochs_to_shared": sc.epochs_to_shared,
            "osdmap_bytes_shared": sc.osdmap_bytes_shared,
            "bytes_to_shared_tb": round(sc.bytes_to_shared / TB, 3),
            "fits_urgent": sc.fits_urgent}
    return out


def table(cells: list[dict[str, Any]]) -> str:
    lines = [f"{'VOLUME':>8} {'READS':>6}  {'COPY gain/TTI/SLA min':<24} "
             f"{'MOVE gain/TTI/SLA min':<26} RECOMMENDED"]
    for c in cells:
        def fmt(s: dict[str, Any]) -> str:
            mark = "" if s["usable"] else " (no)"
            return (f"{s['gain']:.2f}x/{s['time_to_isolation_secs']:g}s/"
                    f"{s['sla_minutes_per_day']:g}{mark}")
        lines.append(f"{c['volume_tb']:>6g}TB {c['read_fraction']:>6.0%}  "
                     f"{fmt(c['copy']):<24} {fmt(c['move']):<26} {c['recommended']}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--volumes-tb", type=float, nargs="+", default=[0.1, 1, 10, 100])
    parser.add_argument("--reads", type=float, nargs="+", default=[0.0, 0.3, 0.7, 1.0])
    parser.add_argument("--max-isolation-secs", type=float, default=60.0)
    parser.add_argument("--hdd-osds", type=int, default=1000)
    parser.add_argument("--ssd-osds", type=int, default=200)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    c = Cluster(hdd_osds=args.hdd_osds, ssd_osds=args.ssd_osds)
    cells = [cell(c, v, r, args.max_isolation_secs) for v in args.volumes_tb
             for r in args.reads]
    print(table(cells))
    if args.out:
        args.out.write_text(json.dumps({
            "provenance": provenance.provenance(
                "bench.strategy_table", sys.argv[1:] if argv is None else argv,
                "none (the module's cost model, no Ceph)", "upmap+copy"),
            "cluster": c.__dict__, "max_isolation_secs": args.max_isolation_secs,
            "cells": cells}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
