"""Table and plot of bench/tick_bench.py runs at growing sizes (issue 17).

  for spec in "1000 100 1000" "3000 300 10000" "10000 1000 100000"; do
      set -- $spec
      python3 bench/tick_bench.py --osds $1 --pools $2 --pgs $3 --out /tmp/tick-$3.json
  done
  python3 bench/tick_report.py /tmp/tick-1000.json /tmp/tick-10000.json /tmp/tick-100000.json
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "docs" / "benchmarks"
COLUMNS = ("quiet_tick_ms_p50", "quiet_tick_ms_p99", "epoch_tick_ms_p50", "pg_scan_ms_p50",
           "scrape_ms_p50", "status_ms_p50", "expensive_gets_per_quiet_tick", "rss_mb")
TARGETS = {"quiet_tick_ms_p99": 10, "pg_scan_ms_p50": 500, "scrape_ms_p50": 50,
           "status_ms_p50": 100, "expensive_gets_per_quiet_tick": 0}


def main(paths: list[str]) -> int:
    runs = sorted((json.loads(Path(p).read_text()) for p in paths), key=lambda r: r["pgs"])
    (OUT / "tick.json").write_text(json.dumps({"runs": runs, "targets": TARGETS}, indent=2,
                                              sort_keys=True) + "\n")
    print("| OSDs | pools | PGs | " + " | ".join(COLUMNS) + " |")
    print("|---|---|---|" + "---|" * len(COLUMNS))
    for r in runs:
        print(f"| {r['osds']:,} | {r['pools']:,} | {r['pgs']:,} | "
              + " | ".join(f"{r[c]:g}" for c in COLUMNS) + " |")
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib missing: no plot", file=sys.stderr)
        return 0
    fig, ax = plt.subplots(figsize=(7, 4))
    pgs = [r["pgs"] for r in runs]
    for column in ("quiet_tick_ms_p50", "quiet_tick_ms_p99", "epoch_tick_ms_p50",
                   "pg_scan_ms_p50", "scrape_ms_p50", "status_ms_p50"):
        ax.plot(pgs, [r[column] for r in runs], marker="o", label=column)
    ax.axhline(10, color="grey", linestyle=":", label="target: quiet tick p99 10 ms")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("PGs (OSDs and pools grow with them: see tick.json)")
    ax.set_ylabel("ms")
    ax.set_title("sla module cost per tick (bench/tick_bench.py)")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(OUT / "tick-growth.png", dpi=110)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
