"""The urgent workload's parameters: plain data, no numpy, so that
policy_sim's --help and its defaults need the standard library only."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class UrgentWorkload:
    night_util: float = 0.01  # urgent demand at night, fraction of urgent capacity
    day_util: float = 0.25  # daytime plateau
    day_start_h: float = 8.0  # plateau reached at
    day_end_h: float = 18.0  # plateau left at
    ramp_h: float = 1.5  # length of the morning / evening ramps
    noise_sigma: float = 0.15  # slow log-normal noise on the cycle
    noise_corr_secs: float = 900.0
    bursts_per_hour: float = 1.0  # Poisson arrivals on the daytime plateau
    night_burst_factor: float = 0.25  # burst rate at night, relative to the plateau's
    burst_mean_secs: float = 240.0  # exponential durations (at least one step)
    burst_min_util: float = 0.10  # a burst adds uniform(min, max) x capacity
    burst_max_util: float = 0.40
