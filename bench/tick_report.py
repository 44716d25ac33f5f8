"""Table and plot of bench/tick_bench.py runs at growing sizes.

  for spec in "1000 100 1000" "3000 300 10000" "10000 1000 100000"; do
      set -- $spec
      python3 -m bench.tick_bench --osds $1 --pools $2 --pgs $3 --out /tmp/tick-$3.json
  done
  python3 -m bench.tick_report /tmp/tick-1000.json /tmp/tick-10000.json /tmp/tick-100000.json

Writes tick.json (the runs, each with its provenance, and the targets) and
tick-growth.png (needs matplotlib) into --out-dir (default docs/benchmarks).
"""
from __future__ import annotations

import math

if __name__ == "__main__" and not __package__:
    import _script  # noqa: F401  (bench/_script.py: runs this as python3 -m bench.<name>)

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from bench import provenance
from bench.common import RESULTS, write_json
from bench.tick_bench import TARGETS

COLUMNS = ("quiet_tick_ms_p50", "quiet_tick_ms_p99", "epoch_tick_ms_p50", "admission_ms_p50",
           "pg_scan_ms_p50", "scrape_ms_p50", "status_ms_p50", "expensive_gets_per_quiet_tick",
           "rss_mb")
PLOTTED = ("quiet_tick_ms_p50", "quiet_tick_ms_p99", "epoch_tick_ms_p50", "admission_ms_p50",
           "pg_scan_ms_p50", "scrape_ms_p50", "status_ms_p50")


def table(runs: list[dict[str, Any]]) -> str:
    lines = ["| OSDs | pools | PGs | " + " | ".join(COLUMNS) + " |",
             "|---|---|---|" + "---|" * len(COLUMNS)]
    for r in runs:
        lines.append(f"| {r['osds']:,} | {r['pools']:,} | {r['pgs']:,} | "
                     + " | ".join(f"{r[c]:g}" if c in r else "-" for c in COLUMNS) + " |")
    return "\n".join(lines) + "\n"


def plot(runs: list[dict[str, Any]], path: Path) -> bool:
    """tick-growth.png; False when matplotlib is missing."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    fig, ax = plt.subplots(figsize=(7, 4))
    pgs = [r["pgs"] for r in runs]
    for column in PLOTTED:
        # a run without the column plots as a gap (NaN), not a zero
        ax.plot(pgs, [math.nan if r.get(column) is None else float(r[column]) for r in runs],
                marker="o", label=column)
    ax.axhline(TARGETS["quiet_tick_ms_p99"], color="grey", linestyle=":",
               label=f"target: quiet tick p99 {TARGETS['quiet_tick_ms_p99']:g} ms")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("PGs (OSDs and pools grow with them: see tick.json)")
    ax.set_ylabel("ms")
    ax.set_title("sla module cost per tick (bench/tick_bench.py)")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def report(runs: list[dict[str, Any]], argv: list[str]) -> dict[str, Any]:
    """tick.json: the runs and targets; its own provenance takes the runs' design
    (they must agree) and says which commits the runs were measured at."""
    designs = {str((r.get("provenance") or {}).get("placement_design")) for r in runs}
    if len(designs) != 1 or designs & {"None", provenance.UNKNOWN}:
        raise ValueError(f"the runs' placement designs differ or are missing: {designs}")
    block = provenance.provenance("bench.tick_report", argv, provenance.NO_CEPH, designs.pop())
    commits = {r["provenance"]["commit"] for r in runs}
    if commits != {block["commit"]}:
        block["note"] = f"runs measured at {', '.join(sorted(commits))}"
    return {"runs": runs, "targets": TARGETS, "provenance": block}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("runs", nargs="+", type=Path, help="bench.tick_bench results")
    ap.add_argument("--out-dir", type=Path, default=RESULTS)
    args = ap.parse_args(argv)
    runs = sorted((json.loads(p.read_text()) for p in args.runs), key=lambda r: r["pgs"])
    try:
        result = report(runs, sys.argv[1:] if argv is None else argv)
    except ValueError as exc:
        print(f"tick-report: {exc}", file=sys.stderr)
        return 2
    write_json(args.out_dir / "tick.json", result)
    print(table(runs), end="")
    if not plot(runs, args.out_dir / "tick-growth.png"):
        print("matplotlib missing: no plot", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
