"""Simulate the SLA module's mode policy on a 1,000+ OSD map for a day or more.

Usage: python3 -m bench.policy_sim [--osds 1200] [--seed 1] [--days 1]
                                   [--out docs/policy-simulation.json]
                                   [--calibration docs/benchmarks/results.json]

The CRUSH map is synthetic (hosts of 10 hdd + 2 ssd OSDs by default), the SLA
rules and weight sets come from crush_rules.generate, and the PG mappings of
the normal pool (both rules) and the urgent pool from osdmaptool (cached).
Urgent demand follows a daily cycle with Poisson bursts; the module's own
decide() and gates drive the normal pool's mode; devices are M/M/1 queues with
the service rates measured by bench/sla_bench.py's calibration (the client
write ops/s of one device-capped OSD per class, read from --calibration) unless
--hdd-ops/--ssd-ops are given.  See docs/policy-simulation.md for the model.
Prints a Markdown table and writes the full results as JSON.
"""

from __future__ import annotations

if __name__ == "__main__" and not __package__:
    import _script  # noqa: F401  (bench/_script.py: runs this as python3 -m bench.<name>)

import argparse
import json
import math
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from bench import provenance
from bench.common import write_json
from bench.sim import demand as D
from bench.sim import mapping
from bench.sim import model as M
from crush_rules.tools import Tools

ROOT = Path(__file__).resolve().parents[1]

THRESHOLD_FRACTIONS = (0.005, 0.01, 0.02, 0.05, 0.1, 0.2)  # of the urgent client capacity
DWELLS = (60.0, 300.0, 900.0, 1800.0, 3600.0, 7200.0)
CALIBRATION = ROOT / "docs" / "benchmarks" / "results.json"
RATE_KEY = ("emulation", "calibration", "{cls}", "capped", "client_write_ops_per_sec")


class ConfigError(Exception):
    """A one-line reason the simulation cannot start."""


def round2(value: float) -> float:
    """Two significant digits (thresholds an operator would type)."""
    if value <= 0:
        return 0.0
    digits = 1 - int(math.floor(math.log10(value)))
    return float(round(value, digits))


def rates_from_calibration(results: dict[str, Any]) -> tuple[float, float]:
    """(hdd, ssd) client write ops/s per OSD from bench/sla_bench.py's results.

    Reads ``emulation.calibration.{hdd,ssd}.capped.client_write_ops_per_sec``;
    raises ValueError naming the key that is missing or not a positive number.
    """
    rates = []
    for cls in ("hdd", "ssd"):
        node: Any = results
        path = [key.format(cls=cls) for key in RATE_KEY]
        for depth, key in enumerate(path):
            if not isinstance(node, dict) or key not in node:
                raise ValueError(f"no {'.'.join(path[:depth + 1])} in the calibration")
            node = node[key]
        if isinstance(node, bool) or not isinstance(node, (int, float)) or not node > 0:
            raise ValueError(f"{'.'.join(path)} is {node!r}, not a positive number")
        rates.append(float(node))
    return rates[0], rates[1]


def repo_relative(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(ROOT))
    except ValueError:
        return str(path)


def device_rates(hdd_ops: float | None, ssd_ops: float | None,
                 calibration: Path) -> tuple[float, float, dict[str, Any]]:
    """The service rates and where they came from: explicit flags win, the rest
    come from the calibration file (which must then exist)."""
    if hdd_ops is not None and ssd_ops is not None:
        return hdd_ops, ssd_ops, {"hdd_ops": "--hdd-ops", "ssd_ops": "--ssd-ops"}
    name = repo_relative(calibration)
    if not calibration.is_file():
        raise ConfigError(f"{name} not found: pass --hdd-ops and --ssd-ops, "
                          "or run python3 -m bench.sla_bench to measure them")
    try:
        results = json.loads(calibration.read_text())
        if not isinstance(results, dict):
            raise ValueError("not a JSON object")
        hdd, ssd = rates_from_calibration(results)
    except (OSError, ValueError) as exc:  # json.JSONDecodeError is a ValueError
        raise ConfigError(f"{name}: {exc}; pass --hdd-ops and --ssd-ops, "
                          "or run python3 -m bench.sla_bench") from None
    cal = results["emulation"]["calibration"]
    key = ".".join(RATE_KEY)
    source: dict[str, Any] = {
        "calibration": name,
        "hdd_ops": "--hdd-ops" if hdd_ops is not None else key.format(cls="hdd"),
        "ssd_ops": "--ssd-ops" if ssd_ops is not None else key.format(cls="ssd"),
        "calibrated": {"hdd_client_write_ops_per_sec": hdd,
                       "ssd_client_write_ops_per_sec": ssd,
                       "hdd_device_iops_cap": cal["hdd"].get("device_iops_cap"),
                       "ssd_device_iops_cap": cal["ssd"].get("device_iops_cap")},
    }
    plan = results.get("plan")
    source["quick_run"] = plan.get("quick") if isinstance(plan, dict) else None
    return (hdd if hdd_ops is None else hdd_ops, ssd if ssd_ops is None else ssd_ops, source)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    p.add_argument("--osds", type=int, default=1200)
    p.add_argument("--hdd-per-host", type=int, default=10)
    p.add_argument("--ssd-per-host", type=int, default=2)
    p.add_argument("--pgs-per-osd", type=int, default=100)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--days", type=float, default=1.0)
    p.add_argument("--warmup-days", type=float, default=1.0)
    p.add_argument("--step", type=float, default=10.0, help="time step, s")
    p.add_argument("--out", type=Path, default=Path("docs/policy-simulation.json"))
    p.add_argument("--cache-dir", type=Path, default=mapping.default_cache_dir())
    p.add_argument("--no-cache", action="store_true")
    _device_args(p)
    _switch_and_workload_args(p)
    g = p.add_argument_group("policy grid")
    g.add_argument("--thresholds", type=float, nargs="+",
                   help="high thresholds in IOPS (default: 0.5-20%% of urgent capacity)")
    g.add_argument("--low-fraction", type=float, default=0.5)
    g.add_argument("--dwells", type=float, nargs="+", default=list(DWELLS))
    return p.parse_args(argv)


def _device_args(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("devices")
    g.add_argument("--calibration", type=Path, default=CALIBRATION,
                   help="bench.sla_bench results with the measured device rates "
                        "(default: %(default)s)")
    g.add_argument("--hdd-ops", type=float,
                   help="hdd OSD service rate, ops/s (default: the calibration's hdd "
                        "client write ops/s)")
    g.add_argument("--ssd-ops", type=float,
                   help="ssd OSD service rate, ops/s (default: the calibration's ssd "
                        "client write ops/s)")
    g.add_argument("--normal-rho", type=float, default=0.9,
                   help="utilization saturating normal clients drive their busiest OSD to")
    g.add_argument("--read-fraction", type=float, default=0.0,
                   help="share of ops that are reads (primary only); the rest write all replicas")


def _switch_and_workload_args(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("switch cost")
    g.add_argument("--normal-tb", type=float, default=100.0, help="normal pool data (one copy)")
    g.add_argument("--urgent-tb", type=float, default=10.0, help="urgent pool data (one copy)")
    g.add_argument("--backfill-mbps", type=float, default=30.0,
                   help="MB/s of one backfill (osd_max_backfills=1: one per OSD at a time)")
    g.add_argument("--backfill-fraction", type=float, default=0.2,
                   help="share of an HDD's op capacity a running backfill takes")
    g.add_argument("--strategy", choices=("move", "copy"), default="move",
                   help="how the normal pool shares: move a share of its replicas onto the "
                        "SSDs (pg_upmap_items), or add one copy there (size N+1)")
    g.add_argument("--max-misplaced", type=float, default=0.05,
                   help="the module's max_misplaced_ratio gate")
    g = p.add_argument_group("urgent workload and SLA")
    w = D.UrgentWorkload()
    g.add_argument("--night-util", type=float, default=w.night_util)
    g.add_argument("--day-util", type=float, default=w.day_util)
    g.add_argument("--bursts-per-hour", type=float, default=w.bursts_per_hour,
                   help="burst arrivals per hour on the daytime plateau")
    g.add_argument("--night-burst-factor", type=float, default=w.night_burst_factor,
                   help="night burst rate relative to the daytime rate")
    g.add_argument("--burst-secs", type=float, default=w.burst_mean_secs)
    g.add_argument("--burst-util", type=float, nargs=2, default=(w.burst_min_util,
                                                                   w.burst_max_util))
    g.add_argument("--lag", type=float, default=5.0, help="measurement lag, s")
    g.add_argument("--window", type=float, default=5.0, help="rate window, s")
    g.add_argument("--sla-factor", type=float, default=1.5,
                   help="urgent latency target as a multiple of its solo latency")
    g.add_argument("--sla-budget", type=float, default=5.0,
                   help="SLA-violation minutes a day a recommended setting may have")


def policies(thresholds: list[float], low_fraction: float, dwells: list[float]) -> list[M.Policy]:
    out = [M.Policy("default Ceph (one rule)", "default"),
           M.Policy("fixed isolation", "isolated"),
           M.Policy("fixed shared", "shared")]
    for high in thresholds:
        for dwell in dwells:
            out.append(M.Policy(f"adaptive {high:g}/{high * low_fraction:g} {dwell:g}s",
                                "adaptive", high, high * low_fraction, dwell))
    return out


def table_rows(results: list[M.Result], fixed_normal: float) -> list[str]:
    head = ("| policy | high / low IOPS | dwell s | SLA-violation min/day | urgent ops violated "
            "| normal Gops/day | vs fixed | switches/day | TB moved/day | shared time "
            "| backfill h/day |")
    rows = [head, "|" + "---|" * 11]
    for r in results:
        p = r.policy
        band = f"{p.high_iops:g} / {p.low_iops:g}" if p.kind == "adaptive" else "-"
        dwell = f"{p.dwell_secs:g}" if p.kind == "adaptive" else "-"
        name = "adaptive" if p.kind == "adaptive" else p.name
        rows.append(
            f"| {name} | {band} | {dwell} | {r.sla_violation_minutes_per_day:.1f} "
            f"| {r.urgent_ops_violating:.2%} | {r.normal_ops_per_day / 1e9:.2f} "
            f"| {r.normal_ops_per_day / fixed_normal:.3f} | {r.switches_per_day:.1f} "
            f"| {r.bytes_moved_per_day / M.TB:.1f} | {r.shared_fraction:.0%} "
            f"| {r.backfill_hours_per_day:.1f} |"
        )
    return rows


@dataclass
class Model:
    """The cluster as the simulation sees it: mappings, device rates, loads, switch cost."""

    spec: mapping.MapSpec
    maps: mapping.ClusterMappings
    devices: M.Devices
    mu: np.ndarray
    coef: dict[str, np.ndarray]
    write: float
    urgent_capacity: float
    ssd_count: int
    stats: M.MoveStats
    switch: M.SwitchModel
    backfill: np.ndarray
    mapping_secs: float


def build_model(args: argparse.Namespace, hdd_ops: float, ssd_ops: float) -> Model:
    """The map and PG mappings (osdmaptool, cached), loads and the switch's cost."""
    started = time.monotonic()
    tools = Tools()
    tools.check_available()
    spec = mapping.spec_for(args.osds, args.hdd_per_host, args.ssd_per_host, args.pgs_per_osd)
    maps = mapping.build(spec, tools, None if args.no_cache else args.cache_dir)
    mapping_secs = time.monotonic() - started
    devices = M.Devices(hdd_ops, ssd_ops, normal_target_rho=args.normal_rho)
    write = 1.0 - args.read_fraction
    n = spec.osds
    coef = {name: M.load_coefficients(getattr(maps, name), n, write)
            for name in ("normal_isolated", "normal_shared", "urgent_isolated",
                         "normal_default", "urgent_default")}
    ssd_count = sum(1 for c in maps.device_class if c == "ssd")
    urgent_capacity = ssd_count * devices.ssd_ops / (write * spec.size + (1.0 - write))
    if args.strategy == "copy":
        shared = M.copy_layout(maps.normal_isolated, maps.urgent_isolated)
        coef["normal_shared"] = M.load_coefficients(shared, n, write)
        stats = M.copy_stats(maps.normal_isolated, shared, n)
    else:
        stats = M.move_stats(maps.normal_isolated, maps.normal_shared, n)
    switch = M.SwitchModel.build(stats, spec.normal_pgs, args.normal_tb * M.TB,
                                 args.urgent_tb * M.TB, spec.size, args.backfill_mbps * 1e6,
                                 args.max_misplaced, args.strategy)
    return Model(spec, maps, devices, devices.rates(maps.device_class), coef, write,
                 urgent_capacity, ssd_count, stats, switch,
                 M.backfill_load(stats, devices, args.backfill_fraction), mapping_secs)


@dataclass
class Demand:
    workload: D.UrgentWorkload
    demand: np.ndarray  # urgent IOPS per step, warm-up included
    bursts: list[D.Burst]
    seen: np.ndarray  # what the module measures
    warm: int  # warm-up steps


def urgent_demand(args: argparse.Namespace, capacity: float) -> Demand:
    workload = D.UrgentWorkload(night_util=args.night_util, day_util=args.day_util,
                                bursts_per_hour=args.bursts_per_hour,
                                night_burst_factor=args.night_burst_factor,
                                burst_mean_secs=args.burst_secs,
                                burst_min_util=args.burst_util[0],
                                burst_max_util=args.burst_util[1])
    seconds = (args.warmup_days + args.days) * D.DAY
    demand, bursts = D.urgent_demand(workload, capacity, seconds, args.step, args.seed)
    seen = D.measured_rates(demand, args.step, args.lag, args.window, args.seed)
    return Demand(workload, demand, bursts, seen,
                  int(round(args.warmup_days * D.DAY / args.step)))


def latency_tables(model: Model, peak: float) -> M.Tables:
    """Urgent latency and normal throughput per urgent load, for each layout."""
    zero = np.zeros(model.spec.osds)
    coef, maps = model.coef, model.maps
    u_iso, u_pgs = coef["urgent_isolated"], maps.urgent_isolated
    cases = {
        "isolated": M.LoadCase(coef["normal_isolated"], u_iso, u_pgs, zero),
        "shared": M.LoadCase(coef["normal_shared"], u_iso, u_pgs, zero),
        "isolated_backfill": M.LoadCase(coef["normal_isolated"], u_iso, u_pgs, model.backfill),
        "shared_backfill": M.LoadCase(coef["normal_shared"], u_iso, u_pgs, model.backfill),
        "default": M.LoadCase(coef["normal_default"], coef["urgent_default"],
                              maps.urgent_default, zero),
        "solo": M.LoadCase(None, u_iso, u_pgs, zero),
    }
    return M.Tables(**{name: M.build_table(case, peak, model.mu, model.devices, model.write)
                       for name, case in cases.items()})


def run_policies(args: argparse.Namespace, model: Model, dem: Demand, tables: M.Tables
                 ) -> list[M.Result]:
    if args.thresholds:
        thresholds = list(args.thresholds)
    else:
        thresholds = [round2(f * model.urgent_capacity) for f in THRESHOLD_FRACTIONS]
    results = []
    for policy in policies(thresholds, args.low_fraction, args.dwells):
        traj = M.run_policy(policy, dem.seen, args.step, model.switch, dem.warm,
                            model.spec.normal_pgs + model.spec.urgent_pgs)
        results.append(M.score(policy, traj, dem.demand, tables, args.step, dem.warm,
                               args.sla_factor))
    return results


def map_summary(model: Model) -> dict[str, Any]:
    spec, stats, switch = model.spec, model.stats, model.switch
    ssd, hdd = model.mu == model.devices.ssd_ops, model.mu == model.devices.hdd_ops
    hdd_n = model.coef["normal_isolated"][hdd]
    return {
        "map": {
            "osds": spec.osds, "hosts": spec.hosts, "per_host": f"{spec.hdd_per_host} hdd + "
            f"{spec.ssd_per_host} ssd", "hdd_weight": spec.hdd_weight,
            "ssd_weight": spec.ssd_weight, "size": spec.size,
            "normal_pgs": spec.normal_pgs, "urgent_pgs": spec.urgent_pgs,
            "normal_pool_id": mapping.NORMAL_POOL_ID, "urgent_pool_id": mapping.URGENT_POOL_ID,
            **model.maps.info,
        },
        "placement": {
            "replicas_moved_per_switch": stats.replicas_moved,
            "replicas_moved_fraction": round(stats.replicas_moved / (spec.normal_pgs * spec.size),
                                             4),
            "max_replicas_one_osd_moves": stats.max_work,
            "bytes_per_replica": round(switch.bytes_per_replica),
            "bytes_per_switch": round(switch.bytes_per_switch),
            "full_switch_secs": round(switch.full_switch_secs),
            "misplaced_ratio_at_switch_start": round(switch.misplaced_full, 4),
            "normal_load_share_on_ssd_shared": round(
                float(model.coef["normal_shared"][ssd].sum() / model.coef["normal_shared"].sum()),
                4),
            "hdd_normal_load_max_over_mean_isolated": round(
                float(hdd_n.max() / hdd_n.mean()), 4),
        },
    }


def workload_summary(args: argparse.Namespace, model: Model, dem: Demand) -> dict[str, Any]:
    w, counted = dem.workload, dem.demand[dem.warm:]
    return {
        "urgent_capacity_iops": round(model.urgent_capacity, 1),
        "night_util": w.night_util, "day_util": w.day_util,
        "bursts_per_hour": w.bursts_per_hour, "night_burst_factor": w.night_burst_factor,
        "burst_mean_secs": w.burst_mean_secs, "burst_util": [w.burst_min_util, w.burst_max_util],
        "urgent_mean_iops": round(float(counted.mean()), 1),
        "urgent_peak_iops": round(float(counted.max()), 1),
        "bursts_counted": len(counted_bursts(args, dem)),
        "step_secs": args.step, "lag_secs": args.lag, "window_secs": args.window,
        "days": args.days, "warmup_days": args.warmup_days, "seed": args.seed,
    }


def counted_bursts(args: argparse.Namespace, dem: Demand) -> list[D.Burst]:
    return [b for b in dem.bursts if b.start >= args.warmup_days * D.DAY]


def summarize(args: argparse.Namespace, model: Model, dem: Demand, harm: dict[str, Any],
              results: list[M.Result], rate_source: dict[str, Any]) -> dict[str, Any]:
    """Everything the run found, for the JSON (the provenance is added on writing)."""
    fixed = next(r for r in results if r.policy.kind == "isolated")
    best = M.recommend(results, args.sla_budget)
    d = model.devices
    return {
        **map_summary(model),
        "devices": {"hdd_ops": d.hdd_ops, "ssd_ops": d.ssd_ops, "rho_cap": d.rho_cap,
                    "normal_target_rho": d.normal_target_rho,
                    "read_fraction": args.read_fraction, "source": rate_source},
        "workload": workload_summary(args, model, dem),
        "switch_cost": {"strategy": args.strategy,
                        "to_isolated_secs": round(model.switch.to_isolated_secs),
                        "normal_tb": args.normal_tb, "urgent_tb": args.urgent_tb,
                        "backfill_mbps_per_osd": args.backfill_mbps,
                        "backfill_fraction_of_hdd": args.backfill_fraction,
                        "max_misplaced_ratio": args.max_misplaced},
        "sla": {"metric": "mean urgent op latency", "factor_of_solo": args.sla_factor,
                "budget_minutes_per_day": args.sla_budget,
                "violated_above_iops": {k: None if v is None else round(v)
                                        for k, v in harm.items()}},
        "results": [dict(r.to_dict(), normal_vs_fixed=round(r.normal_ops_per_day
                                                            / fixed.normal_ops_per_day, 4))
                    for r in results],
        "recommended": None if best is None else best.to_dict(),
    }


def print_header(args: argparse.Namespace, model: Model, dem: Demand, harm: dict[str, Any],
                 rate_source: dict[str, Any]) -> None:
    spec, d, switch = model.spec, model.devices, model.switch
    counted = dem.demand[dem.warm:]
    print(f"map: {spec.osds} OSDs, {spec.hosts} hosts of {spec.hdd_per_host} hdd + "
          f"{spec.ssd_per_host} ssd; normal pool {spec.normal_pgs} PGs, urgent {spec.urgent_pgs}")
    origin = rate_source.get("calibration", "flags")
    print(f"devices: hdd {d.hdd_ops:g}, ssd {d.ssd_ops:g} ops/s per OSD "
          f"(hdd from {'--hdd-ops' if args.hdd_ops is not None else origin}, "
          f"ssd from {'--ssd-ops' if args.ssd_ops is not None else origin})")
    print(f"switch ({args.strategy}): {model.stats.replicas_moved} replicas "
          f"({switch.bytes_per_switch / M.TB:.1f} TB), "
          f"{switch.full_switch_secs / 3600:.2f} h at {args.backfill_mbps:g} MB/s per OSD, "
          f"isolation {switch.to_isolated_secs / 3600:.2f} h; "
          f"urgent capacity {model.urgent_capacity:.0f} IOPS; urgent mean {counted.mean():.0f}, "
          f"peak {counted.max():.0f} IOPS, {len(counted_bursts(args, dem))} bursts")
    shared_harm = harm["shared"]
    print("sharing breaks the SLA above " + ("never" if shared_harm is None else
          f"{shared_harm:.0f} urgent IOPS ({shared_harm / model.urgent_capacity:.0%} of "
          "capacity)") + "; during a shared->isolated backfill above "
          + ("never" if harm["shared_backfill"] is None else f"{harm['shared_backfill']:.0f}"))
    print()


def print_recommendation(args: argparse.Namespace, model: Model, results: list[M.Result]
                         ) -> None:
    fixed = next(r for r in results if r.policy.kind == "isolated")
    best = M.recommend(results, args.sla_budget)
    if best is None:
        print(f"\nno adaptive setting stays within {args.sla_budget:g} SLA-violation min/day")
        return
    p = best.policy
    print(f"\nrecommended: threshold_iops {p.high_iops:g} "
          f"({p.high_iops / model.ssd_count:.2f} per urgent OSD, "
          f"{p.high_iops / model.urgent_capacity:.1%} of urgent capacity), threshold_low_iops "
          f"{p.low_iops:g}, min_dwell_secs {p.dwell_secs:g}: normal "
          f"{best.normal_ops_per_day / fixed.normal_ops_per_day:.3f} x fixed isolation, "
          f"{best.sla_violation_minutes_per_day:.1f} SLA-violation min/day")
    if best.normal_ops_per_day < fixed.normal_ops_per_day * 1.005:
        print("  (no adaptive setting within the SLA budget beats fixed isolation here)")


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        hdd_ops, ssd_ops, rate_source = device_rates(args.hdd_ops, args.ssd_ops,
                                                     args.calibration)
    except ConfigError as exc:
        print(f"policy_sim: {exc}", file=sys.stderr)
        return 2
    started = time.monotonic()
    model = build_model(args, hdd_ops, ssd_ops)
    dem = urgent_demand(args, model.urgent_capacity)
    tables = latency_tables(model, float(dem.demand.max()))
    results = run_policies(args, model, dem, tables)
    harm = {name: M.harm_point(getattr(tables, name), tables.solo, args.sla_factor)
            for name in ("shared", "shared_backfill", "isolated_backfill", "default")}
    summary = summarize(args, model, dem, harm, results, rate_source)
    elapsed = time.monotonic() - started
    summary["seconds"] = {"mapping": round(model.mapping_secs, 2), "total": round(elapsed, 2)}
    summary["provenance"] = provenance.provenance(
        "bench.policy_sim", sys.argv[1:] if argv is None else argv,
        provenance.parse_ceph_version(str(model.maps.info.get("tools", ""))),
        provenance.CURRENT_DESIGN)
    print_header(args, model, dem, harm, rate_source)
    fixed = next(r for r in results if r.policy.kind == "isolated")
    print("\n".join(table_rows(results, fixed.normal_ops_per_day)))
    print_recommendation(args, model, results)
    print(f"time: mapping {model.mapping_secs:.1f} s, total {elapsed:.1f} s")
    write_json(args.out, summary, sort_keys=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
