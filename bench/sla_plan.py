"""What a run of the SLA benchmark (bench/sla_bench.py) does and the settings
it runs the module with; strategy_bench and primary_affinity run with them too.
"""
from __future__ import annotations

from dataclasses import dataclass

MODES = ("default", "fixed", "adaptive")
RULES = {
    "default": {"urgent": "replicated_rule", "normal": "replicated_rule"},
    "fixed": {"urgent": "sla_isolated_urgent", "normal": "sla_isolated_normal"},
    "adaptive": {"urgent": "sla_isolated_urgent", "normal": "sla_isolated_normal"},
}
# The module in the benchmark: quick to react, short dwell (the defaults are for
# production: docs/policy-simulation.md).
MODULE_CONFIG = {"min_dwell_secs": "20", "interval_secs": "1", "rate_window_secs": "3"}
THRESHOLD = ("30", "10")  # urgent ops/s: isolate above 30, share below 10


@dataclass(frozen=True)
class Plan:
    urgent_n: tuple[int, ...]  # normal clients beside the urgent client
    idle_n: tuple[int, ...]  # normal clients measured with the urgent client idle
    urgent_mb: int  # the urgent client's work: write then read back this much
    normal_secs: int  # each idle throughput measurement
    calibration_secs: int
    back_to_shared: bool  # adaptive: also measure the switch back to shared
    block_kb: int = 16
    pg_num: int = 64
    strategy: str = "move"  # the normal pool's in adaptive mode: move (upmap) or copy


FULL = Plan((0, 1, 2, 4, 8, 16), (1, 4, 16), urgent_mb=8, normal_secs=20,
            calibration_secs=10, back_to_shared=True)
QUICK = Plan((0, 4), (4,), urgent_mb=2, normal_secs=8, calibration_secs=5,
             back_to_shared=False)
