"""Per-pool client activity as the module measures it: one OSD perf query
keyed by pool (ops and latency sums, folded in as each OSD report arrives),
with the `df` totals as the fallback where the mgr cannot run the query.

The pure parts (rates, periods, latency percentiles) are activity.py and
latency.py; this class owns the query and the windows.
"""
from __future__ import annotations

from collections.abc import Collection
from typing import Any

from ..core.activity import (
    PerfTotals,
    PoolPeriod,
    PoolRates,
    merge_periods,
    perf_query,
    pool_ops_from_df,
    pool_periods,
)
from ..core.gates import pools_with_unknown_pgs
from ..core.latency import LatencyWindow, PoolLatency, Slo, Violations
from .mgr_port import MgrPort


class PoolActivity:
    def __init__(self, mgr: MgrPort) -> None:
        self._mgr = mgr
        self._log = mgr.log
        self._query_id: int | None = None
        self._query_pools: frozenset[int] = frozenset()  # the pools the query reports
        self._query_failed = False
        self._totals = PerfTotals()
        self._pending: dict[int, PoolPeriod] = {}  # read between ticks, for the next
        self._rates = PoolRates(5.0)
        self._latency = LatencyWindow(60.0)
        self._violations = Violations()
        self._urgent_latency: tuple[int, PoolLatency] | None = None
        self._read_fraction: dict[int, float] = {}

    # ---- between ticks ---------------------------------------------------
    def urgent_ops_arrived(self, managed: Collection[int], urgent: Collection[int]) -> bool:
        """Read the query (a few entries, no map work); True when an OSD
        report brought urgent ops. What was read is kept for the next tick."""
        if self._query_id is None:
            return False
        result = self._mgr.get_osd_perf_counters(self._query_id)
        if result is None:
            return False
        periods = pool_periods(result, managed)
        self._pending = merge_periods(self._pending, periods)
        return any(periods[p].ops > 0 for p in urgent if p in periods)

    @property
    def polling(self) -> bool:
        return self._query_id is not None

    # ---- each tick ---------------------------------------------------------
    def read(self, managed: frozenset[int]) -> dict[int, PoolPeriod] | None:
        """Per-pool counters since the last read, or None when this mgr
        cannot run the perf query (then `measure_df` is used)."""
        if self._query_id is not None and managed != self._query_pools:
            self.stop()  # the managed pools changed: a query for these
        if self._query_id is None:
            if self._query_failed:
                return None
            if not managed:
                return {}
            try:
                self._query_id = self._mgr.add_osd_perf_query(perf_query(managed))
            except Exception as e:  # an mgr without dynamic perf queries
                self._log.warning("sla: no OSD perf query (%s): using df totals", e)
            if self._query_id is None:
                self._query_failed = True
                return None
            self._query_pools = managed
            self._log.info("sla: OSD perf query %s registered for pools %s", self._query_id,
                           ",".join(str(p) for p in sorted(managed)))
        result = self._mgr.get_osd_perf_counters(self._query_id)
        if result is None:  # the query is gone: register it again next tick
            self._query_id = None
            return None
        pending, self._pending = self._pending, {}
        return merge_periods({p: v for p, v in pending.items() if p in managed},
                             pool_periods(result, managed))

    def measure(self, now: float, periods: dict[int, PoolPeriod], managed: frozenset[int],
                urgent: list[int], slo: Slo, rate_window: float, slo_window: float) -> None:
        self._rates.window_secs = rate_window
        self._rates.add(now, self._totals.add(periods, managed))
        for pool, period in periods.items():
            if period.ops:  # smoothed: a pool's mix changes slowly
                frac = period.read_ops / period.ops
                self._read_fraction[pool] = 0.8 * self._read_fraction.get(pool, frac) + 0.2 * frac
        self._latency.window_secs = slo_window
        self._latency.add(now, periods, urgent)
        self._urgent_latency = self._latency.worst(urgent, slo.percentile)
        over = [p for p in urgent if slo.on
                and (self._latency.pool(p, slo.percentile).worst() or 0.0) > slo.latency_ms]
        self._violations.add(now, over)

    def measure_df(self, now: float, df: dict[str, Any], managed: frozenset[int],
                   pg_summary: dict[str, Any] | None, rate_window: float) -> None:
        """The df totals: a pool with a PG without stats yet (a fresh mgr
        after failover) is not measured until it has them."""
        self._rates.window_secs = rate_window
        self._rates.add(now, [o for o in pool_ops_from_df(df) if o.pool_id in managed],
                        pools_with_unknown_pgs(pg_summary or {}))

    # ---- what the others read ----------------------------------------------
    def rate(self, pool_id: int) -> float | None:
        return self._rates.rate(pool_id)

    def total_rate(self, pool_ids: list[int]) -> float | None:
        return self._rates.total_rate(pool_ids) if pool_ids else 0.0

    def read_fraction(self, pool_id: int) -> float | None:
        """The pool's share of reads among its client ops (None: no ops seen)."""
        return self._read_fraction.get(pool_id)

    def urgent_latency_ms(self) -> float | None:
        return self._urgent_latency[1].worst() if self._urgent_latency else None

    def pool_latency(self, pool_id: int, slo: Slo) -> dict[str, Any]:
        lat = self._latency.pool(pool_id, slo.percentile)
        return {"percentile": slo.percentile, "periods": lat.periods,
                "write_ms": lat.write[0], "write_p99_ms": lat.write[1],
                "read_ms": lat.read[0], "read_p99_ms": lat.read[1],
                "slo_violation_seconds": round(self._violations.seconds.get(pool_id, 0.0), 1)}

    def stop(self) -> None:
        if self._query_id is not None:
            try:
                self._mgr.remove_osd_perf_query(self._query_id)
            except Exception as e:  # shutting down: nothing else to do about it
                self._log.debug("sla: removing the perf query failed: %s", e)
            self._query_id = None
