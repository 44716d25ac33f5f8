"""Simulate the SLA module's mode policy on a 1,000+ OSD map for a day or more.

Usage: python3 bench/policy_sim.py [--osds 1200] [--seed 1] [--days 1]
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

import argparse
import json
import math
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.sim import demand as D  # noqa: E402
from bench.sim import mapping  # noqa: E402
from bench.sim import model as M  # noqa: E402
from crush_rules.tools import Tools  # noqa: E402

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
                          "or run python3 bench/sla_bench.py to measure them")
    try:
        results = json.loads(calibration.read_text())
        if not isinstance(results, dict):
            raise ValueError("not a JSON object")
        hdd, ssd = rates_from_calibration(results)
    except (OSError, ValueError) as exc:  # json.JSONDecodeError is a ValueError
        raise ConfigError(f"{name}: {exc}; pass --hdd-ops and --ssd-ops, "
                          "or run python3 bench/sla_bench.py") from None
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
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
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
    g = p.add_argument_group("devices")
    g.add_argument("--calibration", type=Path, default=CALIBRATION,
                   help="bench/sla_bench.py results with the measured device rates "
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
    g = p.add_argument_group("switch cost")
    g.add_argument("--normal-tb", type=float, default=100.0, help="normal pool data (one copy)")
    g.add_argument("--urgent-tb", type=float, default=10.0, help="urgent pool data (one copy)")
    g.add_argument("--backfill-mbps", type=float, default=30.0,
                   help="MB/s of one backfill (osd_max_backfills=1: one per OSD at a time)")
    g.add_argument("--backfill-fraction", type=float, default=0.2,
                   help="share of an HDD's op capacity a running backfill takes")
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
    g = p.add_argument_group("policy grid")
    g.add_argument("--thresholds", type=float, nargs="+",
                   help="high thresholds in IOPS (default: 0.5-20%% of urgent capacity)")
    g.add_argument("--low-fraction", type=float, default=0.5)
    g.add_argument("--dwells", type=float, nargs="+", default=list(DWELLS))
    return p.parse_args(argv)


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


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        hdd_ops, ssd_ops, rate_source = device_rates(args.hdd_ops, args.ssd_ops,
                                                     args.calibration)
    except ConfigError as exc:
        print(f"policy_sim: {exc}", file=sys.stderr)
        return 2
    started = time.monotonic()
    tools = Tools()
    tools.check_available()
    spec = mapping.spec_for(args.osds, args.hdd_per_host, args.ssd_per_host, args.pgs_per_osd)
    maps = mapping.build(spec, tools, None if args.no_cache else args.cache_dir)
    mapped_at = time.monotonic()

    devices = M.Devices(hdd_ops, ssd_ops, normal_target_rho=args.normal_rho)
    write = 1.0 - args.read_fraction
    n = spec.osds
    mu = devices.rates(maps.device_class)
    coef = {name: M.load_coefficients(getattr(maps, name), n, write)
            for name in ("normal_isolated", "normal_shared", "urgent_isolated",
                         "normal_default", "urgent_default")}
    ssd_count = sum(1 for c in maps.device_class if c == "ssd")
    replicas_per_op = write * spec.size + (1.0 - write)
    urgent_capacity = ssd_count * devices.ssd_ops / replicas_per_op

    stats = M.move_stats(maps.normal_isolated, maps.normal_shared, n)
    switch = M.SwitchModel.build(stats, spec.normal_pgs, args.normal_tb * M.TB,
                                 args.urgent_tb * M.TB, spec.size, args.backfill_mbps * 1e6,
                                 args.max_misplaced)
    backfill = M.backfill_load(stats, devices, args.backfill_fraction)

    workload = D.UrgentWorkload(night_util=args.night_util, day_util=args.day_util,
                                bursts_per_hour=args.bursts_per_hour,
                                night_burst_factor=args.night_burst_factor,
                                burst_mean_secs=args.burst_secs,
                                burst_min_util=args.burst_util[0],
                                burst_max_util=args.burst_util[1])
    warm = int(round(args.warmup_days * D.DAY / args.step))
    seconds = (args.warmup_days + args.days) * D.DAY
    demand, bursts = D.urgent_demand(workload, urgent_capacity, seconds, args.step, args.seed)
    seen = D.measured_rates(demand, args.step, args.lag, args.window, args.seed)

    zero = np.zeros(n)
    u_iso, u_pgs = coef["urgent_isolated"], maps.urgent_isolated
    cases = {
        "isolated": M.LoadCase(coef["normal_isolated"], u_iso, u_pgs, zero),
        "shared": M.LoadCase(coef["normal_shared"], u_iso, u_pgs, zero),
        "isolated_backfill": M.LoadCase(coef["normal_isolated"], u_iso, u_pgs, backfill),
        "shared_backfill": M.LoadCase(coef["normal_shared"], u_iso, u_pgs, backfill),
        "default": M.LoadCase(coef["normal_default"], coef["urgent_default"],
                              maps.urgent_default, zero),
        "solo": M.LoadCase(None, u_iso, u_pgs, zero),
    }
    peak = float(demand.max())
    tables = M.Tables(**{name: M.build_table(case, peak, mu, devices, write)
                         for name, case in cases.items()})

    if args.thresholds:
        thresholds = list(args.thresholds)
    else:
        thresholds = [round2(f * urgent_capacity) for f in THRESHOLD_FRACTIONS]
    results = []
    for policy in policies(thresholds, args.low_fraction, args.dwells):
        traj = M.run_policy(policy, seen, args.step, switch, warm,
                            spec.normal_pgs + spec.urgent_pgs)
        results.append(M.score(policy, traj, demand, tables, args.step, warm, args.sla_factor))
    fixed = next(r for r in results if r.policy.kind == "isolated")
    best = M.recommend(results, args.sla_budget)
    elapsed = time.monotonic() - started

    harm = {name: M.harm_point(getattr(tables, name), tables.solo, args.sla_factor)
            for name in ("shared", "shared_backfill", "isolated_backfill", "default")}
    counted = demand[warm:]
    counted_bursts = [b for b in bursts if b.start >= args.warmup_days * D.DAY]
    hdd_n = coef["normal_isolated"][mu == devices.hdd_ops]
    summary: dict[str, Any] = {
        "command": "python3 bench/policy_sim.py " + " ".join(sys.argv[1:] if argv is None
                                                              else argv),
        "map": {
            "osds": n, "hosts": spec.hosts, "per_host": f"{spec.hdd_per_host} hdd + "
            f"{spec.ssd_per_host} ssd", "hdd_weight": spec.hdd_weight,
            "ssd_weight": spec.ssd_weight, "size": spec.size,
            "normal_pgs": spec.normal_pgs, "urgent_pgs": spec.urgent_pgs,
            "normal_pool_id": mapping.NORMAL_POOL_ID, "urgent_pool_id": mapping.URGENT_POOL_ID,
            **maps.info,
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
                float(coef["normal_shared"][mu == devices.ssd_ops].sum() / replicas_per_op), 4),
            "hdd_normal_load_max_over_mean_isolated": round(
                float(hdd_n.max() / hdd_n.mean()), 4),
        },
        "devices": {"hdd_ops": devices.hdd_ops, "ssd_ops": devices.ssd_ops,
                    "rho_cap": devices.rho_cap, "normal_target_rho": devices.normal_target_rho,
                    "read_fraction": args.read_fraction, "source": rate_source},
        "workload": {
            "urgent_capacity_iops": round(urgent_capacity, 1),
            "night_util": workload.night_util, "day_util": workload.day_util,
            "bursts_per_hour": workload.bursts_per_hour,
            "night_burst_factor": workload.night_burst_factor,
            "burst_mean_secs": workload.burst_mean_secs,
            "burst_util": [workload.burst_min_util, workload.burst_max_util],
            "urgent_mean_iops": round(float(counted.mean()), 1),
            "urgent_peak_iops": round(float(counted.max()), 1),
            "bursts_counted": len(counted_bursts),
            "step_secs": args.step, "lag_secs": args.lag, "window_secs": args.window,
            "days": args.days, "warmup_days": args.warmup_days, "seed": args.seed,
        },
        "switch_cost": {"normal_tb": args.normal_tb, "urgent_tb": args.urgent_tb,
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
        "seconds": {"mapping": round(mapped_at - started, 2), "total": round(elapsed, 2)},
    }

    print(f"map: {n} OSDs, {spec.hosts} hosts of {spec.hdd_per_host} hdd + "
          f"{spec.ssd_per_host} ssd; normal pool {spec.normal_pgs} PGs, urgent {spec.urgent_pgs}")
    origin = rate_source.get("calibration", "flags")
    print(f"devices: hdd {devices.hdd_ops:g}, ssd {devices.ssd_ops:g} ops/s per OSD "
          f"(hdd from {'--hdd-ops' if args.hdd_ops is not None else origin}, "
          f"ssd from {'--ssd-ops' if args.ssd_ops is not None else origin})")
    print(f"switch: {stats.replicas_moved} replicas ({switch.bytes_per_switch / M.TB:.1f} TB), "
          f"{switch.full_switch_secs / 3600:.2f} h at {args.backfill_mbps:g} MB/s per OSD; "
          f"urgent capacity {urgent_capacity:.0f} IOPS; urgent mean {counted.mean():.0f}, "
          f"peak {counted.max():.0f} IOPS, {len(counted_bursts)} bursts")
    shared_harm = harm["shared"]
    print("sharing breaks the SLA above " + ("never" if shared_harm is None else
          f"{shared_harm:.0f} urgent IOPS ({shared_harm / urgent_capacity:.0%} of capacity)")
          + "; during a shared->isolated backfill above "
          + ("never" if harm["shared_backfill"] is None else f"{harm['shared_backfill']:.0f}"))
    print()
    print("\n".join(table_rows(results, fixed.normal_ops_per_day)))
    if best is not None:
        p = best.policy
        print(f"\nrecommended: threshold_iops {p.high_iops:g} "
              f"({p.high_iops / ssd_count:.2f} per urgent OSD, "
              f"{p.high_iops / urgent_capacity:.1%} of urgent capacity), threshold_low_iops "
              f"{p.low_iops:g}, min_dwell_secs {p.dwell_secs:g}: normal "
              f"{best.normal_ops_per_day / fixed.normal_ops_per_day:.3f} x fixed isolation, "
              f"{best.sla_violation_minutes_per_day:.1f} SLA-violation min/day")
        if best.normal_ops_per_day < fixed.normal_ops_per_day * 1.005:
            print("  (no adaptive setting within the SLA budget beats fixed isolation here)")
    else:
        print(f"\nno adaptive setting stays within {args.sla_budget:g} SLA-violation min/day")
    print(f"time: mapping {mapped_at - started:.1f} s, total {elapsed:.1f} s")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(summary, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
