"""Client IOPS per pool, from the running op totals the mgr keeps per pool.

Why our own rate: Ceph's `osd_pool_stats` client_io_rate is the mean of the
last 6 PG-stat deltas (about 12 s of smoothing with the default 5 s
`mgr_stats_period`). The running totals (`df` -> pools -> stats -> rd, wr)
move as soon as one OSD reports, so a rate over a short window of those
totals crosses a threshold seconds earlier (CEPH-FACTS.md: totals moved after
about 3.5 s, the smoothed rate passed 100 after 5.4 s).
"""
from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class PoolOps:
    """One pool's running op total (reads + writes) at one moment."""

    pool_id: int
    ops: int


def pool_ops_from_df(df: Mapping[str, Any]) -> list[PoolOps]:
    """Running totals from the mgr's `df` (same shape as `ceph df detail -f json`)."""
    out = []
    for pool in df.get("pools") or []:
        stats = pool.get("stats", {})
        out.append(PoolOps(int(pool["id"]), int(stats.get("rd", 0)) + int(stats.get("wr", 0))))
    return out


class PoolRates:
    """Rates over a sliding window of samples, per pool.

    A sample older than the window is kept as the base, so the rate covers at
    least one full window once enough samples exist. A total that goes down
    (pool recreated, counters reset) restarts that pool's history.
    """

    def __init__(self, window_secs: float) -> None:
        self.window_secs = window_secs
        self._samples: dict[int, deque[tuple[float, int]]] = {}

    def add(self, now: float, totals: Iterable[PoolOps]) -> None:
        seen = set()
        for sample in totals:
            seen.add(sample.pool_id)
            history = self._samples.setdefault(sample.pool_id, deque())
            if history and sample.ops < history[-1][1]:
                history.clear()
            history.append((now, sample.ops))
            while len(history) > 2 and history[1][0] <= now - self.window_secs:
                history.popleft()
        for gone in set(self._samples) - seen:
            del self._samples[gone]

    def reset(self) -> None:
        """Forget every sample: the totals cannot be trusted right now."""
        self._samples.clear()

    def rate(self, pool_id: int) -> float | None:
        """ops/s of one pool, or None before two samples span a useful time."""
        history = self._samples.get(pool_id)
        if not history or len(history) < 2:
            return None
        (t0, ops0), (t1, ops1) = history[0], history[-1]
        if t1 - t0 <= 0:
            return None
        return (ops1 - ops0) / (t1 - t0)

    def total_rate(self, pool_ids: Iterable[int]) -> float | None:
        """Summed ops/s of the given pools; None if none of them has a rate.

        A pool without a rate yet counts as 0 once another pool has one, so a
        newly added urgent pool does not blind the whole measurement.
        """
        rates = [self.rate(p) for p in pool_ids]
        known = [r for r in rates if r is not None]
        return sum(known) if known else None
