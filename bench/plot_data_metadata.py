"""Plots for docs/benchmarks.md from bench/data_metadata.py's JSON.

    python3 -m bench.plot_data_metadata [docs/benchmarks/data-metadata.json] [docs/benchmarks]

Writes data-metadata-perf.png (the paper's Fig. 12: each layout's throughput
relative to hdd, for 4 MB and 4 KiB writes, and its write latency) and
data-metadata-cost.png (Fig. 13: performance per cost at HDD:SSD price ratios
1:2, 1:5 and 1:10, relative to hdd). Needs matplotlib (tox -e integration has it).
"""
from __future__ import annotations

if __name__ == "__main__" and not __package__:
    import _script  # noqa: F401  (bench/_script.py: runs this as python3 -m bench.<name>)

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from bench import needs
from bench.common import RESULTS

LAYOUTS = ("hdd", "ssd", "hdd+ssd", "ssd+ssd")
COLORS = {"hdd": "#7f7f7f", "ssd": "#1f77b4", "hdd+ssd": "#2ca02c", "ssd+ssd": "#9467bd"}
WORKLOADS = {"4m": "4 MB objects", "4k": "4 KiB objects"}
# The paper's Fig. 12 in words (Section 4.3): ssd 2.95x hdd, hdd+ssd about 2x,
# ssd+ssd above ssd (no figure given: not drawn).
PAPER = {"ssd": 2.95, "hdd+ssd": 2.0}


def rows_by(results: dict[str, Any], workload: str) -> dict[str, dict[str, Any]]:
    return {r["config"]: r for r in results["configs"] if r["workload"] == workload}


def price_ratio(label: str) -> float:
    """'1:5' (HDD:SSD) -> 5.0."""
    hdd, ssd = label.split(":")
    return float(ssd) / float(hdd)


def relative(table: dict[str, dict[str, float]]) -> dict[str, dict[str, float]]:
    """Each ratio's row divided by its hdd value (the paper's bars are relative)."""
    return {label: {c: v / row["hdd"] for c, v in row.items()} for label, row in table.items()}


def plot(results: dict[str, Any], out: Path) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out.mkdir(parents=True, exist_ok=True)
    return [plot_perf(plt, results, out / "data-metadata-perf.png"),
            plot_cost(plt, results, out / "data-metadata-cost.png")]


def plot_perf(plt: Any, results: dict[str, Any], path: Path) -> Path:
    """The paper's Fig. 12: each layout's throughput relative to hdd, and its latency."""
    import matplotlib.ticker

    emu = results["emulation"]
    speeds = (f"emulated devices: hdd {emu['hdd_device_iops']}, ssd {emu['ssd_device_iops']} "
              "IO/s per OSD and device")
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    width = 0.8 / len(LAYOUTS)
    wls = [w for w in WORKLOADS if rows_by(results, w)]
    for i, layout in enumerate(LAYOUTS):
        xs, ys = [], []
        for j, wl in enumerate(wls):
            row = rows_by(results, wl).get(layout)
            if row:
                xs.append(j + (i - 1.5) * width)
                ys.append(row["speedup_over_hdd"])
        bars = axes[0].bar(xs, ys, width, color=COLORS[layout], label=layout)
        axes[0].bar_label(bars, fmt="%.2f", fontsize=7)
    for layout, value in PAPER.items():
        i = LAYOUTS.index(layout)
        axes[0].plot([(i - 1.5) * width - width / 2, (i - 1.5) * width + width / 2],
                     [value, value], "k--", lw=1)
    axes[0].plot([], [], "k--", lw=1, label="paper (4 MB)")
    axes[0].set_xticks(range(len(wls)), [WORKLOADS[w] for w in wls])
    axes[0].set_ylabel("write throughput relative to hdd")
    axes[0].legend(fontsize=8)
    latency_bars(axes[1], results, wls, width)
    axes[1].set_yscale("log")
    axes[1].yaxis.set_major_formatter(matplotlib.ticker.ScalarFormatter())
    axes[1].set_xticks(range(len(wls)), [WORKLOADS[w] for w in wls])
    axes[1].set_ylabel("write latency (ms): p50 solid, p99 light")
    fig.suptitle(f"Data/metadata separation, 8 OSDs, 16 writes in flight ({speeds})",
                 fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


def latency_bars(ax: Any, results: dict[str, Any], wls: list[str], width: float) -> None:
    for i, layout in enumerate(LAYOUTS):
        for j, wl in enumerate(wls):
            row = rows_by(results, wl).get(layout)
            if not row:
                continue
            x = j + (i - 1.5) * width
            ax.bar(x, row["p99_ms"], width, color=COLORS[layout], alpha=0.45,
                   label=f"{layout} p99" if j == 0 else None)
            ax.bar(x, row["p50_ms"], width, color=COLORS[layout],
                   label=f"{layout} p50" if j == 0 else None)


def plot_cost(plt: Any, results: dict[str, Any], path: Path) -> Path:
    """Fig. 13: performance per cost at HDD:SSD price ratios, relative to hdd."""
    maps = [(k, label) for k, label in (("perf_per_cost", "4 MB writes"),
                                        ("perf_per_cost_4k", "4 KiB writes (hatched)"))
            if results.get(k)]
    ratios = sorted(results["perf_per_cost"], key=price_ratio)  # the JSON's keys are sorted
    fig, axes = plt.subplots(1, len(ratios), figsize=(4 * len(ratios), 3.8), sharey=True)
    width = 0.8 / len(maps)
    for ax, label in zip(axes, ratios):
        for k, (key, wl_label) in enumerate(maps):
            rel = relative(results[key])[label]
            bars = ax.bar([i + (k - (len(maps) - 1) / 2) * width for i in range(len(LAYOUTS))],
                          [rel[c] for c in LAYOUTS], width, color=[COLORS[c] for c in LAYOUTS],
                          alpha=1.0 if k == 0 else 0.5, hatch=None if k == 0 else "//",
                          label=wl_label)
            ax.bar_label(bars, fmt="%.2f", fontsize=7)
        hdd, ssd = label.split(":")
        ax.set_title(f"HDD:SSD price per GB {hdd}:{ssd}", fontsize=9)
        ax.set_xticks(range(len(LAYOUTS)), LAYOUTS, fontsize=8)
        ax.axhline(1.0, color="k", lw=0.5)
    axes[0].set_ylabel("performance per cost, relative to hdd")
    axes[-1].legend(fontsize=8, loc="upper right")  # the dearest SSDs leave that corner free
    f = results["db_fraction"]
    fig.suptitle("Performance per cost (capacity for the same data; DB fraction f = "
                 + ", ".join(f"{f[w]['value']:.2%} ({WORKLOADS[w]})" for w in WORKLOADS if w in f)
                 + ")",
                 fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("results", nargs="?", type=Path, default=RESULTS / "data-metadata.json")
    ap.add_argument("out_dir", nargs="?", type=Path, default=RESULTS)
    args = ap.parse_args(argv)
    needs.require("plot_data_metadata", "matplotlib")
    for path in plot(json.loads(args.results.read_text()), args.out_dir):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
