"""Urgent demand over time and the rate the module sees.  Pure and seeded.

Demand is a rate in client IOPS per time step (piecewise constant).  Its
shape: a daily cycle (quiet night, busy day, smooth ramps between), slow
multiplicative noise, and bursts arriving as a Poisson process that add a
fixed rate for a few minutes each.  Levels are fractions of the urgent
region's client capacity, so the same workload shape scales with the map.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from bench.sim.workload import UrgentWorkload

DAY = 86_400.0


@dataclass(frozen=True)
class Burst:
    start: float
    duration: float
    iops: float


def daily_shape(hour: np.ndarray, w: UrgentWorkload) -> np.ndarray:
    """0 at night, 1 on the plateau, raised-cosine ramps in between."""
    h = np.mod(hour, 24.0)
    up = np.clip((h - (w.day_start_h - w.ramp_h)) / w.ramp_h, 0.0, 1.0)
    down = np.clip(((w.day_end_h + w.ramp_h) - h) / w.ramp_h, 0.0, 1.0)
    ramp = np.minimum(up, down)
    return np.asarray(0.5 - 0.5 * np.cos(math.pi * ramp))


def _streams(seed: int) -> tuple[np.random.Generator, np.random.Generator, np.random.Generator]:
    a, b, c = np.random.SeedSequence(seed).spawn(3)
    return np.random.default_rng(a), np.random.default_rng(b), np.random.default_rng(c)


def bursts(w: UrgentWorkload, capacity: float, seconds: float, step: float,
           rng: np.random.Generator) -> list[Burst]:
    """Poisson arrivals whose rate follows the daily cycle (thinning)."""
    count = int(rng.poisson(w.bursts_per_hour * seconds / 3600.0))
    candidates = rng.uniform(0.0, seconds, count)
    factor = w.night_burst_factor + (1.0 - w.night_burst_factor) * daily_shape(
        candidates / 3600.0, w)
    starts = np.sort(candidates[rng.uniform(0.0, 1.0, count) < factor])
    count = len(starts)
    durations = np.maximum(rng.exponential(w.burst_mean_secs, count), step)
    rates = rng.uniform(w.burst_min_util, w.burst_max_util, count) * capacity
    return [Burst(float(s), float(d), float(r)) for s, d, r in zip(starts, durations, rates)]


def urgent_demand(w: UrgentWorkload, capacity: float, seconds: float, step: float,
                  seed: int) -> tuple[np.ndarray, list[Burst]]:
    """(urgent IOPS per step, the bursts); the same seed gives the same series."""
    steps = int(round(seconds / step))
    noise_rng, burst_rng, _ = _streams(seed)
    t = np.arange(steps) * step
    level = w.night_util + (w.day_util - w.night_util) * daily_shape(t / 3600.0 + step / 7200, w)
    a = math.exp(-step / w.noise_corr_secs) if w.noise_corr_secs > 0 else 0.0
    eps = noise_rng.standard_normal(steps)
    z = np.empty(steps)  # AR(1) with unit variance
    scale = math.sqrt(1.0 - a * a)
    for k in range(steps):
        z[k] = a * z[k - 1] + scale * eps[k] if k else eps[0]
    demand = level * capacity * np.exp(w.noise_sigma * z - 0.5 * w.noise_sigma ** 2)
    made = bursts(w, capacity, seconds, step, burst_rng)
    for b in made:
        first, last = int(b.start // step), int(min(b.start + b.duration, seconds - 1e-9) // step)
        for k in range(first, last + 1):
            lo, hi = max(b.start, k * step), min(b.start + b.duration, (k + 1) * step)
            if hi > lo:
                demand[k] += b.iops * (hi - lo) / step
    return demand, made


def measured_rates(demand: np.ndarray, step: float, lag: float, window: float,
                   seed: int) -> np.ndarray:
    """The urgent IOPS the module sees when it decides at the start of each step.

    The rate is over ``window`` seconds ending ``lag`` seconds before the
    decision (the OSDs report op totals every stats period), with Poisson
    counting noise (ops in the window ~ Poisson(rate x window)).
    """
    _, _, rng = _streams(seed)
    edges = np.arange(len(demand) + 1) * step
    cumulative = np.concatenate(([0.0], np.cumsum(demand * step)))
    end = np.maximum(edges[:-1] - lag, 0.0)
    start = np.maximum(end - window, 0.0)
    span = np.maximum(end - start, 1e-9)
    mean = (np.interp(end, edges, cumulative) - np.interp(start, edges, cumulative)) / span
    counts = rng.poisson(np.maximum(mean, 0.0) * window)
    return np.asarray(counts / window, dtype=float)
