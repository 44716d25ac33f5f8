"""Urgent latency from the perf query's per-period sums, and the objective."""
from __future__ import annotations

import pytest

from mgr_sla.core.activity import PoolPeriod
from mgr_sla.core.latency import LatencyWindow, SloError, Violations, parse_slo, percentile


def period(write_ms: float, count: int = 10) -> PoolPeriod:
    return PoolPeriod(write_ops=count, write_latency_ns=int(write_ms * 1e6 * count),
                      write_latency_count=count)


def test_percentile_is_nearest_rank() -> None:
    values = [float(v) for v in range(1, 101)]
    assert percentile(values, 75) == 75.0 and percentile(values, 99) == 99.0
    assert percentile([5.0], 75) == 5.0 and percentile([], 50) is None
    assert percentile([1.0, 2.0, 3.0, 4.0], 100) == 4.0


def test_window_keeps_per_period_means_and_drops_old_ones() -> None:
    w = LatencyWindow(10.0)
    for t, ms in enumerate([2.0, 4.0, 6.0, 8.0, 40.0]):
        w.add(float(t), {3: period(ms)}, [3])
    lat = w.pool(3, 75)
    assert lat.write == (8.0, 40.0) and lat.read == (None, None) and lat.periods == 5
    w.add(20.0, {}, [3])  # ten seconds later: every period has left the window
    assert w.pool(3, 75).write == (None, None)


def test_worst_urgent_pool_and_periods_without_ops() -> None:
    w = LatencyWindow(60.0)
    w.add(0.0, {1: period(3.0), 2: period(30.0), 4: PoolPeriod()}, [1, 2, 4])
    pool, lat = w.worst([1, 2, 4], 75)
    assert pool == 2 and lat.worst() == 30.0
    assert w.pool(4, 75).periods == 0


def test_violation_seconds_count_only_while_over() -> None:
    v = Violations()
    v.add(0.0, [])
    v.add(2.0, [5])
    v.add(5.0, [5, 6])
    assert v.seconds == {5: 5.0, 6: 3.0}


@pytest.mark.parametrize("args, error", [
    (("abc",), "latency in ms"), (("-1",), ">= 0"), (("nan",), "finite"),
    (("20", "0"), "(0, 100]"), (("20", "x"), "number")])
def test_bad_objectives_name_the_problem(args: tuple, error: str) -> None:
    with pytest.raises(SloError, match=error.replace("(", r"\(").replace("]", r"\]")):
        parse_slo(*args)


def test_objective_parses() -> None:
    assert parse_slo("20").latency_ms == 20 and parse_slo("20").percentile == 75
    assert parse_slo("0").on is False and parse_slo(5, 99).percentile == 99
