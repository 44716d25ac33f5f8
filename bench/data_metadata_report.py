"""The layouts and workloads data_metadata measures, the cost model, and what a
run's rows add up to: speedups over hdd, the DB fraction, performance per cost
(also with rule-of-thumb DB sizes) and the Markdown table of docs/benchmarks.md.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

# layout -> (class of the block device, class of the separate DB device or None)
CONFIGS: dict[str, tuple[str, str | None]] = {
    "hdd": ("hdd", None), "ssd": ("ssd", None),
    "hdd+ssd": ("hdd", "ssd"), "ssd+ssd": ("ssd", "ssd")}
COST_RATIOS = ("1:2", "1:5", "1:10")  # HDD:SSD price per GB, as the paper writes them
DEFAULT_DB_FRACTION = 0.04  # Ceph's advice: block.db at least 4% of block
# block.db sized as Ceph's docs advise at least (4% of block) and as the paper measured (6%)
SENSITIVITY_FRACTIONS = (0.04, 0.06)


@dataclass(frozen=True)
class Workload:
    name: str
    block: int  # bytes per write = the object's size
    objects: int  # distinct objects, written round robin (wrapping if the run outlasts them)
    iodepth: int = 16


WORKLOADS = (Workload("4m", 4 << 20, 256), Workload("4k", 4096, 150_000))


def cost_ratio(label: str) -> float:
    """SSD price per GB in HDD units from 'HDD:SSD', e.g. '1:5' -> 5.0."""
    try:
        hdd, ssd = (float(x) for x in label.split(":"))
    except ValueError:
        raise ValueError(f"cost ratio must look like 1:5, not {label!r}") from None
    if hdd <= 0 or ssd <= 0:
        raise ValueError(f"cost ratio parts must be positive: {label!r}")
    return ssd / hdd


def capacity_cost(config: str, ssd_per_hdd: float, db_fraction: float) -> float:
    """Price of the devices that hold 1 GB of data, an HDD GB costing 1.

    A separate DB needs `db_fraction` GB per GB of data on its own device."""
    r, f = ssd_per_hdd, db_fraction
    costs = {"hdd": 1.0, "ssd": r, "hdd+ssd": 1.0 + f * r, "ssd+ssd": r * (1.0 + f)}
    if config not in costs:
        raise ValueError(f"unknown layout {config!r}")
    return costs[config]


def perf_per_cost(perf: Mapping[str, float], db_fraction: float,
                  ratios: Sequence[str] = COST_RATIOS) -> dict[str, dict[str, float]]:
    """{ratio: {layout: performance / capacity cost}} for the layouts in `perf`."""
    return {label: {c: round(p / capacity_cost(c, cost_ratio(label), db_fraction), 2)
                    for c, p in perf.items()}
            for label in ratios}


def best_per_ratio(table: Mapping[str, Mapping[str, float]]) -> dict[str, str]:
    return {label: max(row, key=lambda c: row[c]) for label, row in table.items()}


def speedups(perf: Mapping[str, float], base: str = "hdd") -> dict[str, float]:
    return {c: round(p / perf[base], 2) for c, p in perf.items()} if perf.get(base) else {}


def device_use(row: Mapping[str, Any], kind: str) -> str:
    """'rate (cap)' of one device kind ('block', 'db') in a result row; '-' if none."""
    if row.get(f"{kind}_iops_per_osd") is None:
        return "-"
    return f"{row[f'{kind}_iops_per_osd']:.0f} ({row.get(f'{kind}_cap_iops') or 'none'})"


def table(results: Mapping[str, Any]) -> str:
    """The results as Markdown (docs/benchmarks.md)."""
    rows = results["configs"]
    lines = ["| layout | workload | ops/s | MB/s | p50 ms | p99 ms | vs hdd | CPU busy % "
             "| block dev IO/s (cap) | DB dev IO/s (cap) |", "|---" * 10 + "|"]
    for r in rows:
        lines.append(
            f"| {r['config']} | {r['workload']} | {r['ops_per_sec']:.1f} | {r['mb_per_sec']:.1f} "
            f"| {r['p50_ms']:.1f} | {r['p99_ms']:.1f} | {r.get('speedup_over_hdd', '-')} "
            f"| {r.get('cpu_busy_percent', '-')} | {device_use(r, 'block')} "
            f"| {device_use(r, 'db')} |")
    fractions = results.get("db_fraction") or {}
    if fractions:
        lines += ["", "DB fraction f (SST bytes per stored byte): " + ", ".join(
            f"{w.name} {fractions[w.name]['value']:.3%}"
            + ("" if fractions[w.name].get("measured") else " (default)")
            for w in WORKLOADS if w.name in fractions)]
    for key, what in (("perf_per_cost", "MB/s per cost unit, 4 MB writes"),
                      ("perf_per_cost_4k", "ops/s per cost unit, 4 KiB writes")):
        ppc = results.get(key)
        if not ppc:
            continue
        layouts = [c for c in CONFIGS if c in next(iter(ppc.values()))]
        lines += ["", f"| SSD:HDD price ({what}) | " + " | ".join(layouts) + " | best |",
                  "|---" * (len(layouts) + 2) + "|"]
        for label, row in sorted(ppc.items(), key=lambda kv: cost_ratio(kv[0])):
            hdd, ssd = label.split(":")
            best = max(row, key=lambda c: row[c])
            lines.append(f"| {ssd}:{hdd} | " + " | ".join(
                f"**{row[c]}**" if c == best else str(row[c]) for c in layouts)
                + f" | {best} |")
    return "\n".join(lines) + "\n"


def summarize(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Speedups over hdd, the DB fraction used for the cost, performance per cost."""
    out: dict[str, Any] = {}
    fractions: dict[str, Any] = {}
    for wl in WORKLOADS:
        by = {r["config"]: r for r in rows if r["workload"] == wl.name}
        for c, s in speedups({c: r["ops_per_sec"] for c, r in by.items()}).items():
            by[c]["speedup_over_hdd"] = s
        dbs = [c for c in ("hdd+ssd", "ssd+ssd") if c in by]
        # a compaction may free more than a run added: no measure, not a negative size
        measured = {c: by[c]["sst_fraction"] for c in dbs
                    if by[c].get("sst_fraction") is not None and by[c]["sst_fraction"] >= 0}
        f = (round(sum(measured.values()) / len(measured), 5) if measured
             else DEFAULT_DB_FRACTION)
        fractions[wl.name] = {
            "value": f, "measured": measured,
            "db_used_fraction": {c: by[c].get("db_used_fraction") for c in dbs},
            "source": ("mean over the layouts with a DB device of the RocksDB SST bytes "
                       "(REAL column of `bluefs stats`) added per BlueStore stored byte added "
                       "by the run, all OSDs, each read after a RocksDB compaction of every "
                       "OSD; db_used_fraction: the same with BlueFS db_used_bytes, which "
                       "counts space in 1 MiB allocation units plus BlueFS's own journal"
                       if measured else f"not measured: default {DEFAULT_DB_FRACTION}")}
        metric = "mb_per_sec" if wl.name == "4m" else "ops_per_sec"
        key = "perf_per_cost" if wl.name == "4m" else f"perf_per_cost_{wl.name}"
        if set(CONFIGS) <= set(by):
            perf = {c: by[c][metric] for c in CONFIGS}
            out[key] = perf_per_cost(perf, f)
            out[f"best_{key}"] = best_per_ratio(out[key])
            out[f"speedup_over_hdd_{wl.name}"] = {c: by[c]["speedup_over_hdd"] for c in CONFIGS}
            # the same with DB devices sized by rule of thumb, not by what this run stored
            out[f"{key}_if_db_fraction"] = {
                str(alt): perf_per_cost(perf, alt) for alt in SENSITIVITY_FRACTIONS}
    out["db_fraction"] = fractions
    return out


COST_MODEL = {
    "ratios": "HDD:SSD price per GB (the paper's 1:2, 1:5, 1:10); an HDD GB costs 1",
    "capacity_cost_per_data_gb": {"hdd": "1", "ssd": "r", "hdd+ssd": "1 + f*r",
                                  "ssd+ssd": "r*(1+f)"},
    "perf_per_cost": "4 MB workload: MB/s divided by the capacity cost",
    "perf_per_cost_4k": "4 KiB workload: ops/s divided by the capacity cost",
    "f": "db_fraction.<workload>.value"}
