"""The two placement strategies of a normal pool, side by side on a real cluster
with emulated HDD/SSD speeds.

    python3 -m bench.strategy_bench [--smoke] [--out docs/benchmarks/strategies.json]
                                    [--hdd-iops 150] [--ssd-iops 500]

Starts its own mini cluster (8 BlueStore OSDs, 4 hosts of 1 hdd + 1 ssd), caps
every OSD's device I/Os per second by its class (bench/emulation.py), and for
each strategy (copy, move) and two normal data volumes 8x apart:

1. fills the normal pool (4 MB objects, `rados bench write --no-cleanup`) while
   pinned isolated, then pins `ceph sla mode shared` and waits until the shared
   placement is complete and clean (copy: size N+1, every PG acting on one ssd
   OSD; move: the module's entries all in place);
2. measures normal throughput shared, with fio's rados engine: a 70 % read mix
   (randrw, rwmixread=70), write-only (randwrite) and read-only (randread),
   16 KB ops, 4 jobs of iodepth 2 (a closed loop: 8 ops in flight);
3. sets `mode auto` and starts an urgent client (fio randwrite, 4 KB, on the
   urgent pool) that crosses the threshold, and measures the time from urgent
   load start until no PG of the normal pool acts on an ssd OSD: by the OSD
   map itself (osdmaptool's up sets, the map's pg_temp), confirmed by PG stats
   reported at or after that epoch (all active+clean, off ssd: a primary asks
   for its pg_temp only after it has seen the new map); the map's first
   isolated moment is kept too. Also the OSD map epochs of the switch, the
   urgent client's p99 latency during the switch (its ops up to isolation)
   and after, and whether any PG of the normal pool was degraded or
   undersized on the way (PG stats, sampled while it switched);
4. pins isolated once placed back and measures the same two normal loads.

The cluster and its rounds are in bench/strategy_cluster.py, the figures read
from fio, osdmaptool and PG stats in bench/strategy_figures.py.

Run it under the cluster lock: `flock /tmp/sla-cluster.lock python3 -m bench.strategy_bench`.
"""
from __future__ import annotations

if __name__ == "__main__" and not __package__:
    import _script  # noqa: F401  (bench/_script.py: runs this as python3 -m bench.<name>)

import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import asdict
from typing import Any

from bench.common import emulated_main, machine
from bench.emulation import DeviceSpeeds
from bench.provenance import parse_ceph_version
from bench.sla_plan import THRESHOLD
from bench.strategy_cluster import FULL, SIZE, SMOKE, STRATEGY_CONFIG, Plan, strategy_cluster

STRATEGIES = ("copy", "move")


def run(plan: Plan, speeds: DeviceSpeeds, say: Callable[[str], None]) -> dict[str, Any]:
    return run_strategies(plan, speeds, say, STRATEGIES)


def run_strategies(plan: Plan, speeds: DeviceSpeeds, say: Callable[[str], None],
                   strategies: tuple[str, ...]) -> dict[str, Any]:
    """Each strategy's round at each volume on one cluster (bench.ec_bench: ec)."""
    started = time.monotonic()
    rounds = []
    with strategy_cluster(speeds, plan) as bench:
        say("cluster up")
        for mb in plan.volumes_mb:  # every strategy's code early, the big data last
            for strategy in strategies:
                rounds.append(bench.round(strategy, mb, say))
        # the cluster's tools: a release root's where it runs from one
        tools = {name: subprocess.run(bench.c.tool(name, "--version"), capture_output=True,
                                      text=True).stdout.strip() for name in ("ceph", "fio")}
    release = parse_ceph_version(tools["ceph"])
    return {"rounds": rounds, "plan": {**asdict(plan), "osds": 8, "objectstore": "bluestore",
                                       "size": SIZE, "threshold_iops": list(THRESHOLD),
                                       "module": STRATEGY_CONFIG,
                                       "normal_client": "fio rados engine, 16 KB random ops",
                                       "urgent_client": "fio rados engine, 4 KB randwrite, "
                                                        "iodepth 8"},
            "emulation": {"hdd_device_iops": speeds.hdd_iops, "ssd_device_iops": speeds.ssd_iops,
                          "mechanism": "cgroup v1 blkio.throttle.{read,write}_iops_device "
                                       "per OSD process"},
            "machine_tools": {**machine(), **tools}, "ceph_release": release,
            "elapsed_secs": round(time.monotonic() - started, 1)}


def table(results: dict[str, Any]) -> str:
    head = ("| strategy | data | shared mix70 / write ops/s | isolated mix70 / write ops/s "
            "| gain mix70 / write (model) | to shared | time to isolation | epochs "
            "| urgent p99 in switch | degraded PGs |")
    rows = [head, "|" + "---|" * 10]
    for r in results["rounds"]:
        if r["to_shared_secs"] is None:
            rows.append(f"| {r['strategy']} | {r['volume_mb']} MB | not shared in "
                        f"{r['not_shared_after_secs']:.0f} s: {r['pg_states_then']} |" + " |" * 8)
            continue
        s, i, sw = r["throughput"]["shared"], r["throughput"]["isolated"], r["switch"]
        g, m = r["gain_shared_over_isolated"], r["model_gain"]
        rows.append(
            f"| {r['strategy']} | {r['volume_mb']} MB | {s['mix70']['ops_per_sec']:.0f} / "
            f"{s['write']['ops_per_sec']:.0f} | {i['mix70']['ops_per_sec']:.0f} / "
            f"{i['write']['ops_per_sec']:.0f} | {g['mix70']:.2f} ({m['mix70']}) / "
            f"{g['write']:.2f} ({m['write']}) | {r['to_shared_secs']:.0f} s "
            f"| {isolation_text(sw)} | {sw['epochs_to_isolation']} "
            f"| {sw['urgent_p99_ms_during_switch']} ms | {sw['degraded_pgs_seen']} |")
    return "\n".join(rows)


def isolation_text(switch: dict[str, Any]) -> str:
    """The switch's time to isolation, or that it missed its deadline."""
    if switch["time_to_isolation_secs"] is not None:
        return f"{switch['time_to_isolation_secs']:.1f} s"
    return (f"not in {switch['not_isolated_after_secs']:.0f} s "
            f"({switch['pgs_on_ssd_at_deadline']} PGs on ssd)")


def rounds_main(argv: list[str] | None, who: str, doc: str | None, out: str, design: str,
                minutes: int, run: Callable[..., dict[str, Any]]) -> int:
    """The command line of a benchmark of strategy rounds (this one, bench.ec_bench)."""
    return emulated_main(argv, who=who, doc=doc, out=out, tools=("fio", "rados", "ceph",
                         "osdmaptool"), strategy=design,
                         smoke_help=f"smallest run (about {minutes} minutes)",
                         run=run, sizes=(SMOKE, FULL), table=table)


def main(argv: list[str] | None = None) -> int:
    return rounds_main(argv, "strategy-bench", __doc__, "strategies.json", "upmap+copy", 3, run)


if __name__ == "__main__":
    sys.exit(main())
