"""Where each placement strategy pays in the policy simulation: bench/policy_sim.py
run once per (strategy, normal data volume, read fraction), each run's best
setting within the SLA budget and its ceiling, in one table and one file; then
what the module's `auto` does with such a pool (bench/policy_auto.py: shared
by which strategy, or kept isolated and why) at each volume and mix.

    python3 -m bench.policy_strategies [--volumes-tb 1 10 100] [--reads 0 0.7]
        [--ssd-tb 3.84] [--out docs/benchmarks/policy-strategies.json]
        [policy_sim options ...]

Options it does not know go to every policy_sim run as they are (--days, --osds,
--hdd-ops, --ssd-ops, --thresholds, --dwells, ...). Pure CPU, like policy_sim.
"""
from __future__ import annotations

if __name__ == "__main__" and not __package__:
    import _script  # noqa: F401  (bench/_script.py: runs this as python3 -m bench.<name>)

import argparse
import contextlib
import io
import json
import re
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench import needs, policy_sim, provenance
from bench.common import RESULTS, write_json
from bench.policy_auto import auto_decision

STRATEGIES = ("move", "copy")


def summarize_run(run: dict[str, Any]) -> dict[str, Any]:
    """One simulation's answer: the recommended adaptive setting (most normal ops
    within the SLA budget), the adaptive setting with the most normal ops at all,
    and fixed shared, each against fixed isolation."""
    results = run["results"]

    def brief(r: dict[str, Any] | None) -> dict[str, Any] | None:
        if r is None:
            return None
        return {k: r[k] for k in ("policy", "high_iops", "dwell_secs", "normal_vs_fixed",
                                  "sla_violation_minutes_per_day", "switches_per_day",
                                  "bytes_moved_per_day", "mean_time_to_isolation_secs")}

    by_name = {r["policy"]: r for r in results}
    adaptive = [r for r in results if r["kind"] == "adaptive"]
    best = run["recommended"]
    return {
        "recommended": brief(by_name[best["policy"]] if best else None),
        "most_normal_ops": brief(max(adaptive, key=lambda r: r["normal_ops_per_day"])),
        "fixed_shared": brief(next(r for r in results if r["kind"] == "shared")),
        "switch": {"full_switch_secs": run["placement"]["full_switch_secs"],
                   "to_isolated_secs": run["switch_cost"]["to_isolated_secs"],
                   "bytes_per_switch": run["placement"]["bytes_per_switch"]},
    }


def simulate(strategy: str, volume_tb: float, reads: float, extra: list[str]
             ) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="sla-policy-") as tmp:
        out = Path(tmp) / "run.json"
        argv = [*extra, "--strategy", strategy, "--normal-tb", f"{volume_tb:g}",
                "--read-fraction", f"{reads:g}", "--out", str(out)]
        with contextlib.redirect_stdout(io.StringIO()):
            rc = policy_sim.main(argv)
        if rc != 0:
            raise SystemExit(f"policy_strategies: policy_sim {' '.join(argv)} failed ({rc})")
        run: dict[str, Any] = json.loads(out.read_text())
    return run


def table(cells: list[dict[str, Any]]) -> str:
    lines = ["| normal data | reads | strategy | switch to shared | to isolated "
             "| best within the SLA budget | its SLA min/day | best at any cost "
             "| its SLA min/day |", "|" + "---|" * 9]
    for c in cells:
        rec, top = c["recommended"], c["most_normal_ops"]
        best = "none" if rec is None else f"{rec['normal_vs_fixed']:.3f}x"
        best_sla = "-" if rec is None else rec["sla_violation_minutes_per_day"]
        lines.append(
            f"| {c['volume_tb']:g} TB | {c['read_fraction']:.0%} | {c['strategy']} "
            f"| {c['switch']['full_switch_secs'] / 3600:.2f} h "
            f"| {_duration(c['switch']['to_isolated_secs'])} | {best} | {best_sla} "
            f"| {top['normal_vs_fixed']:.3f}x | {top['sla_violation_minutes_per_day']} |")
    return "\n".join(lines)


def ssd_osds(map_info: dict[str, Any]) -> int:
    """Urgent (ssd) OSDs of the simulated map: hosts x its per-host ssd count."""
    match = re.search(r"(\d+) ssd", str(map_info.get("per_host", "")))
    return int(map_info["hosts"]) * int(match.group(1)) if match else 0


def auto_rows(cells: list[dict[str, Any]], urgent_raw_tb: float) -> list[dict[str, Any]]:
    """`auto`'s decision per (volume, read fraction), from both strategies' cells."""
    rows = []
    for volume, reads in dict.fromkeys((c["volume_tb"], c["read_fraction"]) for c in cells):
        both = {c["strategy"]: c for c in cells
                if (c["volume_tb"], c["read_fraction"]) == (volume, reads)}
        rows.append({"volume_tb": volume, "read_fraction": reads,
                     **auto_decision(both, volume, urgent_raw_tb)})
    return rows


def auto_table(rows: list[dict[str, Any]]) -> str:
    lines = ["| normal data | reads | auto shares it by | normal ops vs fixed | TB to urgent "
             "per switch / day (budget) | kept isolated because, or limited by |", "|" + "---|" * 6]
    for r in rows:
        lines.append(f"| {r['volume_tb']:g} TB | {r['read_fraction']:.0%} "
                     f"| {r['shared_by'] or 'kept isolated'} | {r['normal_vs_fixed']:.3f}x "
                     f"| {r['urgent_bytes_per_switch'] / 1e12:.1f} / "
                     f"{r['urgent_bytes_per_day'] / 1e12:.1f} "
                     f"({r['urgent_budget_bytes_per_day'] / 1e12:.0f}) "
                     f"| {_auto_why(r)} |")
    return "\n".join(lines)


def _auto_why(row: dict[str, Any]) -> str:
    """Why the pool is kept isolated (with what blocks the other strategy), or
    what bounds its sharing."""
    if not row["kept_isolated"]:
        return row["budget_limit"] or "-"
    blocked = [f"{s}: {o['blocked']}" for s, o in row["options"].items()
               if o["blocked"] and o["blocked"] not in row["kept_isolated"]]
    return "; ".join([row["kept_isolated"], *blocked])


def _duration(secs: float) -> str:
    return f"{secs:g} s" if secs < 120 else f"{secs / 3600:.2f} h"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--volumes-tb", type=float, nargs="+", default=[1.0, 10.0, 100.0])
    parser.add_argument("--reads", type=float, nargs="+", default=[0.0, 0.7])
    parser.add_argument("--strategies", nargs="+", choices=STRATEGIES, default=list(STRATEGIES))
    parser.add_argument("--ssd-tb", type=float, default=3.84,
                        help="raw TB of each urgent (ssd) OSD: the room for a copy and "
                             "the urgent write budget (default 3.84)")
    parser.add_argument("--out", type=Path, default=RESULTS / "policy-strategies.json")
    args, extra = parser.parse_known_args(argv)
    bad = [a for a in extra if a in ("--strategy", "--normal-tb", "--read-fraction", "--out")]
    if bad:
        parser.error(f"{bad[0]} is set per run here: use --strategies, --volumes-tb, --reads")
    needs.require("policy_strategies", *policy_sim.NEEDS)
    cells, release, first = [], "", None
    for volume in args.volumes_tb:
        for reads in args.reads:
            for strategy in args.strategies:
                run = simulate(strategy, volume, reads, extra)
                first = first or run
                release = run["provenance"]["ceph_release"]
                cells.append({"strategy": strategy, "volume_tb": volume, "read_fraction": reads,
                              **summarize_run(run)})
                print(f"policy_strategies: {strategy} {volume:g} TB reads {reads:.0%} done",
                      file=sys.stderr, flush=True)
    assert first is not None
    urgent_raw_tb = ssd_osds(first["map"]) * args.ssd_tb
    auto = auto_rows(cells, urgent_raw_tb) if set(args.strategies) == set(STRATEGIES) else []
    result = {
        "what": "bench/policy_sim.py per strategy, normal data volume and read fraction: "
                "normal throughput against fixed isolation and SLA-violation minutes a day",
        "map": first["map"], "devices": {k: v for k, v in first["devices"].items()
                                         if k != "read_fraction"},
        "workload": first["workload"], "sla": first["sla"],
        "policy_sim_options": extra, "cells": cells,
        "auto": {"urgent_raw_tb": round(urgent_raw_tb, 1), "ssd_tb_per_osd": args.ssd_tb,
                 "settings": "the module's defaults (min_gain, max_isolation_secs, "
                             "max_urgent_drive_writes)", "pools": auto},
        "provenance": provenance.provenance(
            "bench.policy_strategies", sys.argv[1:] if argv is None else argv, release,
            "+".join(provenance.DESIGN_OF_STRATEGY[s] for s in args.strategies))}
    write_json(args.out, result, sort_keys=False)
    print(table(cells))
    if auto:
        print(auto_table(auto))
    return 0


if __name__ == "__main__":
    sys.exit(main())
