"""Client IOPS per pool, from the running op totals the mgr keeps per pool.

Why our own rate: Ceph's `osd_pool_stats` client_io_rate is the mean of the
last 6 PG-stat deltas (about 12 s of smoothing with the default 5 s
`mgr_stats_period`). The running totals (`df` -> pools -> stats -> rd, wr)
move as soon as one OSD reports, so a rate over a short window of those
totals crosses a threshold seconds earlier (measured: totals moved after
about 3.5 s, the smoothed rate passed 100 after 5.4 s).
"""
from __future__ import annotations

from collections import deque
from collections.abc import Collection, Iterable, Mapping
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

    def add(self, now: float, totals: Iterable[PoolOps],
            untrusted: Collection[int] = ()) -> None:
        """Add a sample per pool. `untrusted` pools (a PG without stats yet,
        e.g. a fresh mgr after failover) restart their history instead: their
        totals would jump from 0 to the full value and look like a burst."""
        seen = set()
        for sample in totals:
            seen.add(sample.pool_id)
            if sample.pool_id in untrusted:
                self._samples.pop(sample.pool_id, None)
                continue
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
        """ops/s of one pool, or None before two samples span a useful time.

        The totals move only when a sample is taken (an OSD's report arrives
        between ticks), so the total at `now - window` is the base sample,
        the newest at or before it: the rate is the ops that arrived in the
        last window over the window. Dividing by the base's age instead (up
        to a window plus a tick) made a load's first report decay by a sixth
        a tick until the next report, and the sustain time restart.
        """
        history = self._samples.get(pool_id)
        if not history or len(history) < 2:
            return None
        (t0, ops0), (t1, ops1) = history[0], history[-1]
        if t1 - t0 <= 0:
            return None
        return (ops1 - ops0) / min(t1 - t0, self.window_secs)

    def total_rate(self, pool_ids: Iterable[int]) -> float | None:
        """Summed ops/s of the given pools; None if none of them has a rate.

        A pool without a rate yet counts as 0 once another pool has one, so a
        newly added urgent pool does not blind the whole measurement.
        """
        rates = [self.rate(p) for p in pool_ids]
        known = [r for r in rates if r is not None]
        return sum(known) if known else None


# One dynamic OSD perf query for every pool (rbd_support/perf.py is Ceph's own
# user of the API): each OSD adds its ops and latencies per pool to its
# MMgrReport, and the mgr folds them in as each report arrives; the pool
# totals of `df` move only when the mgr applies its pending PG stats, once per
# mgr_stats_period at its own phase, which can add a whole period to the
# reaction (measured: 11 s instead of 3-5 s).
PERF_QUERY: dict[str, Any] = {
    "key_descriptor": [{"type": "pool_id", "regex": "^(.*)$"}],
    "performance_counter_descriptors": ["write_ops", "read_ops", "write_latency",
                                        "read_latency"],
}


def perf_query(pools: Iterable[int]) -> dict[str, Any]:
    """PERF_QUERY for the given pools only (the OSDs then report, and the mgr
    converts, an entry per managed pool, not one per pool of the cluster: at
    1,000 busy pools, thousands of objects a tick the module would drop), as
    rbd_support narrows its own query by pool."""
    ids = "|".join(str(p) for p in sorted(pools))
    return {**PERF_QUERY, "key_descriptor": [{"type": "pool_id", "regex": f"^({ids})$"}]}


@dataclass(frozen=True)
class PoolPeriod:
    """One pool's ops and latency sums since the previous read of the query."""

    write_ops: int = 0
    read_ops: int = 0
    write_latency_ns: int = 0
    write_latency_count: int = 0
    read_latency_ns: int = 0
    read_latency_count: int = 0

    @property
    def ops(self) -> int:
        return self.write_ops + self.read_ops


def pool_periods(result: Mapping[str, Any] | None,
                 pools: Collection[int] | None = None) -> dict[int, PoolPeriod]:
    """`get_osd_perf_counters(PERF_QUERY)` -> pool id -> counters (deltas).

    Each entry is {'k': [[pool_id]], 'c': [[w_ops, 0], [r_ops, 0],
    [w_lat_ns, w_count], [r_lat_ns, r_count]]}; an entry whose key is not a
    pool id is skipped, and so is a pool not in `pools` (when given)."""
    out: dict[int, PoolPeriod] = {}
    for entry in (result or {}).get("counters", []):
        try:
            pool = int(entry["k"][0][0])
            if pools is not None and pool not in pools:
                continue
            c = [(int(v[0]), int(v[1]) if len(v) > 1 else 0) for v in entry["c"]]
        except (KeyError, IndexError, TypeError, ValueError):
            continue
        if len(c) < 4:
            continue
        out[pool] = PoolPeriod(c[0][0], c[1][0], c[2][0], c[2][1], c[3][0], c[3][1])
    return out


def merge_periods(a: Mapping[int, PoolPeriod], b: Mapping[int, PoolPeriod]
                  ) -> dict[int, PoolPeriod]:
    """Two reads of the query's deltas as one (each field summed per pool)."""
    out = dict(a)
    for pool, p in b.items():
        q = out.get(pool)
        out[pool] = p if q is None else PoolPeriod(
            q.write_ops + p.write_ops, q.read_ops + p.read_ops,
            q.write_latency_ns + p.write_latency_ns,
            q.write_latency_count + p.write_latency_count,
            q.read_latency_ns + p.read_latency_ns, q.read_latency_count + p.read_latency_count)
    return out


class PerfTotals:
    """Running op totals per pool from the perf query's deltas, to feed
    PoolRates like the `df` totals (a delta never jumps from 0 after a
    failover: the new mgr's query starts at 0 for every pool)."""

    def __init__(self) -> None:
        self._totals: dict[int, int] = {}

    def add(self, periods: Mapping[int, PoolPeriod], pools: Iterable[int]) -> list[PoolOps]:
        for pool, period in periods.items():
            self._totals[pool] = self._totals.get(pool, 0) + period.ops
        return [PoolOps(p, self._totals.get(p, 0)) for p in pools]
