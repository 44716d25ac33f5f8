"""Urgent pools' latency from the OSD perf query, and the latency objective.

What the figure is: each read of the perf query gives, per pool, the sum and
count of op latencies (measured on the primary OSD, from the op's arrival to
its reply) since the previous read; their ratio is that period's mean. The
objective's figure is a percentile (`slo_percentile`, default 75 as in EAFC,
seed 003) over the per-period means of the last `slo_window_secs`, per pool and
op (read, write); p99 of the same means is reported beside it. It is not a
percentile of single ops: Ceph sends no per-op latencies to the mgr, and the
OSDs' latency histograms reach it only through `perf histogram dump` sent to
each OSD. Pure: plain data in, plain data out.
"""
from __future__ import annotations

import math
from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from .activity import PoolPeriod

OPS = ("write", "read")


@dataclass(frozen=True)
class Slo:
    """The latency objective: off when latency_ms is 0."""

    latency_ms: float = 0.0
    percentile: float = 75.0
    low_fraction: float = 0.5  # the band's lower edge: shared again only below this

    @property
    def on(self) -> bool:
        return self.latency_ms > 0


class SloError(ValueError):
    """An objective that cannot be used; the message names the problem."""


def parse_slo(latency_ms: object, percentile: object = None) -> Slo:
    try:
        ms = float(latency_ms)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise SloError(f"the SLO must be a latency in ms, not {latency_ms!r}") from None
    if ms != ms or ms < 0 or ms == float("inf"):
        raise SloError(f"the SLO must be a finite latency >= 0 ms (0: off), not {latency_ms!r}")
    pct = 75.0
    if percentile is not None:
        try:
            pct = float(percentile)  # type: ignore[arg-type]
        except (TypeError, ValueError):
            raise SloError(f"the percentile must be a number, not {percentile!r}") from None
        if not 0 < pct <= 100:
            raise SloError(f"the percentile must be in (0, 100], not {pct:g}")
    return Slo(ms, pct)


def percentile(values: Iterable[float], q: float) -> float | None:
    """Nearest-rank percentile; None for no values."""
    ordered = sorted(values)
    if not ordered:
        return None
    rank = min(len(ordered), max(1, math.ceil(q * len(ordered) / 100)))
    return ordered[rank - 1]


@dataclass(frozen=True)
class PoolLatency:
    """One pool's latency over the window, per op: (the SLO percentile, p99), ms."""

    pool_id: int
    write: tuple[float | None, float | None]
    read: tuple[float | None, float | None]
    periods: int

    def worst(self) -> float | None:
        """The higher of the write and read figures at the SLO percentile."""
        known = [v for v in (self.write[0], self.read[0]) if v is not None]
        return max(known) if known else None


class LatencyWindow:
    """Per-period mean latencies per pool and op, over a sliding window."""

    def __init__(self, window_secs: float) -> None:
        self.window_secs = window_secs
        self._means: dict[tuple[int, str], deque[tuple[float, float]]] = {}

    def add(self, now: float, periods: Mapping[int, PoolPeriod], pools: Iterable[int]) -> None:
        for pool in pools:
            period = periods.get(pool)
            if period is not None:
                for op, total, count in (
                        ("write", period.write_latency_ns, period.write_latency_count),
                        ("read", period.read_latency_ns, period.read_latency_count)):
                    if count > 0:
                        self._means.setdefault((pool, op), deque()).append(
                            (now, total / count / 1e6))
            for op in OPS:
                means = self._means.get((pool, op))
                while means and means[0][0] < now - self.window_secs:
                    means.popleft()

    def pool(self, pool_id: int, q: float) -> PoolLatency:
        def figures(op: str) -> tuple[float | None, float | None]:
            values = [m for _, m in self._means.get((pool_id, op), ())]
            return percentile(values, q), percentile(values, 99.0)
        count = sum(len(self._means.get((pool_id, op), ())) for op in OPS)
        return PoolLatency(pool_id, figures("write"), figures("read"), count)

    def worst(self, pool_ids: Iterable[int], q: float) -> tuple[int, PoolLatency] | None:
        """The urgent pool whose latency at the SLO percentile is highest."""
        best: tuple[float, int, PoolLatency] | None = None
        for pool in pool_ids:
            lat = self.pool(pool, q)
            value = lat.worst()
            if value is not None and (best is None or value > best[0]):
                best = (value, pool, lat)
        return (best[1], best[2]) if best else None


class Violations:
    """Seconds each urgent pool spent above the objective (a counter)."""

    def __init__(self) -> None:
        self.seconds: dict[int, float] = {}
        self._last: float | None = None

    def add(self, now: float, over: Iterable[int]) -> None:
        if self._last is not None:
            for pool in over:
                self.seconds[pool] = self.seconds.get(pool, 0.0) + (now - self._last)
        self._last = now
