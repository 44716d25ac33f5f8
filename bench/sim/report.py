"""What a policy_sim run prints and writes: the Markdown table of the policies,
the header and recommendation lines, and the JSON summary of the map, devices,
workload, switch cost and results.
"""

from __future__ import annotations

import argparse
from typing import Any

from bench.sim import demand as D
from bench.sim import mapping
from bench.sim import model as M
from bench.sim import policy as SP
from bench.sim.scenario import Demand, Model


def table_rows(results: list[SP.Result], fixed_normal: float) -> list[str]:
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
              results: list[SP.Result], rate_source: dict[str, Any]) -> dict[str, Any]:
    """Everything the run found, for the JSON (the provenance is added on writing)."""
    fixed = next(r for r in results if r.policy.kind == "isolated")
    best = SP.recommend(results, args.sla_budget)
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


def print_recommendation(args: argparse.Namespace, model: Model, results: list[SP.Result]
                         ) -> None:
    fixed = next(r for r in results if r.policy.kind == "isolated")
    best = SP.recommend(results, args.sla_budget)
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
