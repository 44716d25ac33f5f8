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
from pathlib import Path
from typing import Any

from bench import needs, provenance
from bench.common import default_cache_dir, write_json
from bench.sim.workload import UrgentWorkload

# numpy is the simulation's one third-party need: without it, --help still works
# and a run ends in one line naming what to install (bench/needs.py)
NEEDS = ("numpy",)
if not needs.missing(*NEEDS):
    from bench.sim import model as M
    from bench.sim import policy as SP
    from bench.sim.report import print_header, print_recommendation, summarize, table_rows
    from bench.sim.scenario import Demand, Model, build_model, latency_tables, urgent_demand

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
    p.add_argument("--cache-dir", type=Path, default=default_cache_dir())
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
    w = UrgentWorkload()
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


def policies(thresholds: list[float], low_fraction: float, dwells: list[float]
             ) -> list[SP.Policy]:
    out = [SP.Policy("default Ceph (one rule)", "default"),
           SP.Policy("fixed isolation", "isolated"),
           SP.Policy("fixed shared", "shared")]
    for high in thresholds:
        for dwell in dwells:
            out.append(SP.Policy(f"adaptive {high:g}/{high * low_fraction:g} {dwell:g}s",
                                 "adaptive", high, high * low_fraction, dwell))
    return out


def run_policies(args: argparse.Namespace, model: Model, dem: Demand, tables: M.Tables
                 ) -> list[SP.Result]:
    if args.thresholds:
        thresholds = list(args.thresholds)
    else:
        thresholds = [round2(f * model.urgent_capacity) for f in THRESHOLD_FRACTIONS]
    results = []
    for policy in policies(thresholds, args.low_fraction, args.dwells):
        traj = SP.run_policy(policy, dem.seen, args.step, model.switch, dem.warm,
                             model.spec.normal_pgs + model.spec.urgent_pgs)
        results.append(SP.score(policy, traj, dem.demand, tables, args.step, dem.warm,
                                args.sla_factor))
    return results


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    needs.require("policy_sim", *NEEDS)
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
    harm = {name: SP.harm_point(getattr(tables, name), tables.solo, args.sla_factor)
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
