"""The ec strategy on an erasure-coded normal pool, shared and isolated, on a
real cluster with emulated HDD/SSD speeds.

    python3 -m bench.ec_bench [--smoke] [--out docs/benchmarks/ec-strategy.json]
                              [--hdd-iops 150] [--ssd-iops 500]

The strategy benchmark's rounds (bench/strategy_bench.py: fill, pin shared,
fio's rados engine at a 70 % read mix, write-only and read-only, the switch to
isolated under urgent load, fio again isolated) on an EC pool of k=2 m=1 on the
hdd class, one shard per host, with overwrites on (fio writes within objects):
the module moves up to one shard of each PG onto an ssd OSD, in place. Run it
with slow SSDs too (`--ssd-iops 50`): the gain then comes from the relief of the
HDDs only, an EC op waiting for every shard it touches.

Run it under the cluster lock: `flock /tmp/sla-cluster.lock python3 -m bench.ec_bench`.
"""
from __future__ import annotations

if __name__ == "__main__" and not __package__:
    import _script  # noqa: F401  (bench/_script.py: runs this as python3 -m bench.<name>)

import sys
from collections.abc import Callable
from typing import Any

from bench.emulation import DeviceSpeeds
from bench.strategy_bench import rounds_main, run_strategies
from bench.strategy_cluster import Plan

STRATEGIES = ("ec",)


def run(plan: Plan, speeds: DeviceSpeeds, say: Callable[[str], None]) -> dict[str, Any]:
    results = run_strategies(plan, speeds, say, STRATEGIES)
    results["plan"]["pool"] = "erasure-coded k=2 m=1, hdd, one shard per host, overwrites"
    return results


def main(argv: list[str] | None = None) -> int:
    return rounds_main(argv, "ec-bench", __doc__, "ec-strategy.json", "ec", 2, run)


if __name__ == "__main__":
    sys.exit(main())
