"""Plots for docs/benchmarks.md from bench/sla_bench.py's results.json.

    python3 -m bench.plot_results [docs/benchmarks/results.json] [docs/benchmarks]
    python3 -m bench.plot_results --tables [docs/benchmarks/results.json]

Writes urgent-latency.png (the paper's Fig. 3 and 9: the urgent client's p99 op
latency and turnaround as normal clients pile on, per mapping),
normal-throughput.png (Fig. 10: normal ops/s with the urgent client idle) and
ssd-speedup.png (Fig. 11: the urgent client alone, class-oblivious rule vs the
heterogeneity-aware rules). Needs matplotlib (tox -e integration has it).
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

MODES = ("default", "fixed", "adaptive")
COLORS = {"default": "#7f7f7f", "fixed": "#1f77b4", "adaptive": "#2ca02c"}


def series(runs: list[dict[str, Any]], mode: str, active: bool, key: str
           ) -> tuple[list[int], list[float]]:
    pts = sorted((r["normal_clients"], r[key]) for r in runs
                 if r["mode"] == mode and r["urgent_active"] is active)
    return [n for n, _ in pts], [v for _, v in pts]


def speeds_label(results: dict[str, Any]) -> str:
    emu = results["emulation"]
    return f"emulated devices: hdd {emu['hdd_device_iops']}, ssd {emu['ssd_device_iops']} IO/s"


def plot(results: dict[str, Any], out: Path) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out.mkdir(parents=True, exist_ok=True)
    made = [plot_urgent(plt, results, out / "urgent-latency.png"),
            plot_normal(plt, results, out / "normal-throughput.png"),
            plot_solo(plt, results, out / "ssd-speedup.png")]
    runs = results["runs"]
    slo = results.get("slo")
    pair = [next((r for r in runs if r["mode"] == m), None)
            for m in ("adaptive-mistuned", "adaptive-slo")]
    if slo and all(pair):
        made.append(plot_slo(plt, slo, pair, out / "slo-objective.png"))
    return made


def plot_urgent(plt: Any, results: dict[str, Any], path: Path) -> Path:
    """The paper's Fig. 3 and 9: the urgent client as normal clients pile on."""
    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    for mode in MODES:
        for ax, key in zip(axes, ("urgent_p99_ms", "urgent_turnaround_s")):
            x, y = series(results["runs"], mode, True, key)
            ax.plot(x, y, "o-", color=COLORS[mode], label=mode)
    axes[0].set_ylabel("urgent op latency p99 (ms)")
    axes[1].set_ylabel("urgent client turnaround (s)")
    for ax in axes:
        ax.set_xlabel("normal clients")
        ax.set_ylim(bottom=0)
        ax.legend()
    fig.suptitle(f"Urgent client as normal clients pile on ({speeds_label(results)})",
                 fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


def plot_normal(plt: Any, results: dict[str, Any], path: Path) -> Path:
    """Fig. 10: normal ops/s with the urgent client idle."""
    runs = results["runs"]
    fig, ax = plt.subplots(figsize=(7, 4))
    counts = sorted({r["normal_clients"] for r in runs if not r["urgent_active"]})
    width = 0.8 / len(MODES)
    for i, mode in enumerate(MODES):
        x, y = series(runs, mode, False, "normal_ops_per_sec")
        ax.bar([counts.index(n) + (i - 1) * width for n in x], y, width, color=COLORS[mode],
               label=mode)
    ax.set_xticks(range(len(counts)), [str(n) for n in counts])
    ax.set_xlabel("normal clients (urgent client idle)")
    ax.set_ylabel("normal client ops/s (all clients)")
    ax.set_title(f"Normal throughput with the urgent client idle\n({speeds_label(results)})",
                 fontsize=10)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


def plot_solo(plt: Any, results: dict[str, Any], path: Path) -> Path:
    """Fig. 11: the urgent client alone, class-oblivious rule vs the
    heterogeneity-aware rules."""
    fig, axes = plt.subplots(1, 2, figsize=(9, 4))
    solo = {r["mode"]: r for r in results["runs"]
            if r["urgent_active"] and r["normal_clients"] == 0}
    names = [m for m in MODES if m in solo]
    labels = {"default": "default\n(all OSDs)", "fixed": "fixed\n(ssd only)",
              "adaptive": "adaptive\n(ssd only)"}
    for ax, keys, unit in ((axes[0], ("urgent_p50_ms", "urgent_p99_ms"), "op latency (ms)"),
                           (axes[1], ("urgent_turnaround_s",), "turnaround (s)")):
        width = 0.8 / len(keys)
        for j, key in enumerate(keys):
            ax.bar([i + (j - (len(keys) - 1) / 2) * width for i in range(len(names))],
                   [solo[m][key] for m in names], width,
                   label=key.split("_")[1] if len(keys) > 1 else None,
                   color=[COLORS[m] for m in names], alpha=1.0 if j else 0.6)
        ax.set_xticks(range(len(names)), [labels[m] for m in names])
        ax.set_ylabel(f"urgent {unit}")
        if len(keys) > 1:
            ax.legend()
    fig.suptitle("Urgent client alone: class-oblivious vs SSD-only rules "
                 f"({speeds_label(results)})", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


def plot_slo(plt: Any, slo: dict[str, Any], pair: list[Any], path: Path) -> Path:
    """The latency objective against a mis-tuned IOPS threshold: the module's
    own latency figure (what the objective applies to) and the urgent
    client's p99 per op, with the objective drawn in."""
    names = ["threshold too high\n(adaptive-mistuned)", "same + objective\n(adaptive-slo)"]
    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    module_ms = [r.get("module_urgent_latency_ms") or 0.0 for r in pair]
    axes[0].bar(range(2), module_ms, color=[COLORS["default"], COLORS["adaptive"]])
    axes[0].axhline(slo["slo_ms"], color="black", linestyle="--",
                    label=f"objective {slo['slo_ms']:g} ms")
    axes[0].set_ylabel("module's urgent latency (ms, p75 of per-period means)")
    axes[0].legend()
    axes[1].bar(range(2), [r["urgent_p99_ms"] for r in pair],
                color=[COLORS["default"], COLORS["adaptive"]])
    axes[1].set_ylabel("urgent op latency p99 (ms, fio)")
    for ax in axes:
        ax.set_xticks(range(2), names)
        ax.set_ylim(bottom=0)
    violated = pair[1].get("module_slo_violation_secs")
    fig.suptitle(f"Latency objective with {pair[0]['normal_clients']} normal clients "
                 f"(objective violated {violated} s in the slo run)", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


def tables(results: dict[str, Any]) -> str:
    """The results as the Markdown tables of docs/benchmarks.md."""
    runs = results["runs"]
    lines = ["| mapping | normal clients | urgent p50 ms | urgent p99 ms | urgent turnaround s "
             "| normal ops/s | CPU busy % | hdd / ssd device use |", "|---" * 8 + "|"]
    for mode in MODES:
        for r in sorted((r for r in runs if r["mode"] == mode and r["urgent_active"]),
                        key=lambda r: r["normal_clients"]):
            lines.append(
                f"| {mode} | {r['normal_clients']} | {r['urgent_p50_ms']} | {r['urgent_p99_ms']} "
                f"| {r['urgent_turnaround_s']} | {r['normal_ops_per_sec']} "
                f"| {r.get('cpu_busy_percent', '')} | {use(r)} |")
    lines += ["", "| mapping | normal clients (urgent idle) | normal ops/s | CPU busy % "
              "| hdd / ssd device use |", "|---|---|---|---|---|"]
    for mode in MODES:
        for r in sorted((r for r in runs if r["mode"] == mode and not r["urgent_active"]),
                        key=lambda r: r["normal_clients"]):
            lines.append(f"| {mode} | {r['normal_clients']} | {r['normal_ops_per_sec']} "
                         f"| {r.get('cpu_busy_percent', '')} | {use(r)} |")
    return "\n".join(lines + switch_table(results["switches"])
                     + slo_table(results.get("slo"), runs)) + "\n"


def switch_table(switches: list[dict[str, Any]]) -> list[str]:
    lines = ["", "| switch | normal clients | reaction s | time to isolation s | settled s "
             "| PGs / replicas moved | MB moved | backfill bytes per client byte "
             "| urgent p50 / p99 ms during |", "|---|---|---|---|---|---|---|---|---|"]
    for sw in switches:
        during = (f"{sw['urgent_p50_ms_during_switch']} / {sw['urgent_p99_ms_during_switch']}"
                  if "urgent_p99_ms_during_switch" in sw else "-")
        lines.append(
            f"| to {sw['to']} | {sw['normal_clients']} | {sw['reaction_secs']} "
            f"| {sw['time_to_isolation_secs'] if sw['time_to_isolation_secs'] else '-'} "
            f"| {sw['settled_secs']} | {sw['pgs_moved'] or '-'} / {sw['replicas_moved'] or '-'} "
            f"| {sw['bytes_moved'] / 1e6:.1f} | {sw['backfill_bytes_per_client_byte']} "
            f"| {during} |")
    return lines


def slo_table(slo: dict[str, Any] | None, runs: list[dict[str, Any]]) -> list[str]:
    if not slo:
        return []
    lines = ["", f"Latency objective {slo['slo_ms']:g} ms ({slo['basis']}):", "",
             "| run | normal clients | module's urgent latency ms | urgent p50 ms "
             "| urgent p99 ms | urgent turnaround s | mode after | objective violated s |",
             "|---|---|---|---|---|---|---|---|"]
    for r in runs:
        if r["mode"] in ("adaptive-mistuned", "adaptive-slo"):
            lines.append(
                f"| {r['mode']} | {r['normal_clients']} | {r.get('module_urgent_latency_ms')} "
                f"| {r['urgent_p50_ms']} | {r['urgent_p99_ms']} | {r['urgent_turnaround_s']} "
                f"| {r.get('mode_after', '-')} | {r.get('module_slo_violation_secs', '-')} |")
    sw = slo.get("switch") or {}
    if sw:
        lines += ["", f"The objective's switch: {sw.get('reason')}; reaction "
                      f"{sw.get('reaction_secs')} s after the urgent client started."]
    return lines


def use(run: dict[str, Any]) -> str:
    if "hdd_device_use" not in run:
        return ""
    return (f"{run['hdd_device_use']:.0%} (max {run['hdd_device_use_max']:.0%}) / "
            f"{run['ssd_device_use']:.0%} (max {run['ssd_device_use_max']:.0%})")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("results", nargs="?", type=Path, default=RESULTS / "results.json")
    ap.add_argument("out_dir", nargs="?", type=Path, default=RESULTS)
    ap.add_argument("--tables", action="store_true", help="print the Markdown tables instead")
    args = ap.parse_args(argv)
    results = json.loads(args.results.read_text())
    if args.tables:
        print(tables(results), end="")
    else:
        needs.require("plot_results", "matplotlib")
        for path in plot(results, args.out_dir):
            print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
