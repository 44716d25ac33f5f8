"""Plots for docs/benchmarks.md from bench/sla_bench.py's results.json.

    python3 bench/plot_results.py [docs/benchmarks/results.json] [docs/benchmarks]

Writes urgent-latency.png (the paper's Fig. 3 and 9: urgent op latency as
normal clients pile on, per mapping), normal-throughput.png (Fig. 10: normal
ops/s with the urgent client idle) and ssd-speedup.png (Fig. 11: the urgent
client alone, class-oblivious vs heterogeneity-aware rules). Needs matplotlib.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
MODES = ("default", "fixed", "adaptive")


def plot(results: dict[str, Any], out: Path) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out.mkdir(parents=True, exist_ok=True)
    runs = results["runs"]
    made = []

    fig, ax = plt.subplots(figsize=(7, 4))
    for mode in MODES:
        pts = sorted((r["normal_clients"], r["urgent_p99_ms"]) for r in runs
                     if r["mode"] == mode and r["urgent_active"])
        ax.plot([n for n, _ in pts], [v for _, v in pts], "o-", label=f"{mode} p99")
    ax.set_xlabel("normal clients")
    ax.set_ylabel("urgent op latency p99 (ms)")
    ax.set_title("Urgent latency as normal clients pile on")
    ax.legend()
    fig.tight_layout()
    made.append(out / "urgent-latency.png")
    fig.savefig(made[-1], dpi=90)
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(6, 4))
    idle = {r["mode"]: r["normal_ops_per_sec"] for r in runs if not r["urgent_active"]}
    ax.bar(list(idle), list(idle.values()), color=["#7f7f7f", "#1f77b4", "#2ca02c"])
    ax.set_ylabel("normal client ops/s")
    ax.set_title("Normal throughput, urgent client idle")
    fig.tight_layout()
    made.append(out / "normal-throughput.png")
    fig.savefig(made[-1], dpi=90)
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(6, 4))
    solo = {r["mode"]: r for r in runs if r["urgent_active"] and r["normal_clients"] == 0}
    names = [m for m in MODES if m in solo]
    ax.bar([f"{m}\np50" for m in names], [solo[m]["urgent_p50_ms"] for m in names])
    ax.bar([f"{m}\np99" for m in names], [solo[m]["urgent_p99_ms"] for m in names])
    ax.set_ylabel("urgent op latency (ms)")
    ax.set_title("Urgent client alone: class-oblivious vs SSD rules")
    fig.tight_layout()
    made.append(out / "ssd-speedup.png")
    fig.savefig(made[-1], dpi=90)
    plt.close(fig)
    return made


if __name__ == "__main__":
    src = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "docs/benchmarks/results.json"
    dst = Path(sys.argv[2]) if len(sys.argv) > 2 else ROOT / "docs/benchmarks"
    for path in plot(json.loads(src.read_text()), dst):
        print(path)
