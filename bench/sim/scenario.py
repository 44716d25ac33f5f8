"""One run's simulated cluster and demand, built from policy_sim's options: the
map and its PG mappings with the device rates, load shares and switch cost
(Model), the urgent demand and what the module measures of it (Demand), and
the latency tables the policies are scored on.
"""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass

import numpy as np

from bench.sim import demand as D
from bench.sim import mapping
from bench.sim import model as M
from crush_rules.tools import Tools


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
