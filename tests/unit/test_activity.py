"""Per-pool rates from the mgr's running op totals."""
from mgr_sla.core.activity import PoolOps, PoolRates, pool_ops_from_df


def test_df_totals_sum_reads_and_writes():
    df = {"pools": [{"id": 1, "stats": {"rd": 10, "wr": 5}}, {"id": 2, "stats": {}}]}
    assert pool_ops_from_df(df) == [PoolOps(1, 15), PoolOps(2, 0)]


def test_rate_needs_two_samples_then_covers_the_window():
    r = PoolRates(window_secs=5.0)
    r.add(0.0, [PoolOps(1, 0)])
    assert r.rate(1) is None
    for t in range(1, 11):
        r.add(float(t), [PoolOps(1, 100 * t)])
    assert r.rate(1) == 100.0
    r.add(11.0, [PoolOps(1, 1000)])  # no new ops reported in the last second
    assert 80.0 <= r.rate(1) <= 100.0


def test_stepwise_reports_average_over_the_window():
    # totals that move only every 5 s (OSD stats period) still give a steady rate
    r = PoolRates(window_secs=5.0)
    for t in range(0, 31):
        r.add(float(t), [PoolOps(1, (t // 5) * 500)])
    assert 80.0 <= r.rate(1) <= 125.0


def test_counter_reset_restarts_the_pool():
    r = PoolRates(5.0)
    r.add(0.0, [PoolOps(1, 1000)])
    r.add(1.0, [PoolOps(1, 2000)])
    r.add(2.0, [PoolOps(1, 10)])
    assert r.rate(1) is None


def test_total_rate_counts_unknown_pools_as_zero_once_one_is_known():
    r = PoolRates(5.0)
    r.add(0.0, [PoolOps(1, 0)])
    assert r.total_rate([1, 2]) is None
    r.add(2.0, [PoolOps(1, 200), PoolOps(2, 0)])
    assert r.total_rate([1, 2]) == 100.0


def test_deleted_pools_are_forgotten():
    r = PoolRates(5.0)
    r.add(0.0, [PoolOps(1, 0)])
    r.add(1.0, [PoolOps(2, 0)])
    assert r.rate(1) is None


def test_reset_forgets_everything():
    r = PoolRates(5.0)
    r.add(0.0, [PoolOps(1, 0)])
    r.add(1.0, [PoolOps(1, 100)])
    r.reset()
    r.add(2.0, [PoolOps(1, 100000)])
    assert r.rate(1) is None


def test_a_pool_with_unknown_pgs_restarts_alone() -> None:
    rates = PoolRates(10.0)
    rates.add(0.0, [PoolOps(1, 0), PoolOps(2, 0)])
    rates.add(1.0, [PoolOps(1, 100), PoolOps(2, 50)], untrusted={2})
    rates.add(2.0, [PoolOps(1, 200), PoolOps(2, 5000)])
    assert rates.rate(1) == 100.0
    assert rates.rate(2) is None  # one sample since it became trusted


def test_perf_query_counters_become_pool_totals() -> None:
    from mgr_sla.core.activity import PerfTotals, pool_periods
    result = {"counters": [
        {"k": [["3"]], "c": [[120, 0], [30, 0], [2_400_000_000, 120], [150_000_000, 30]]},
        {"k": [["junk"]], "c": [[1, 0]]},
    ]}
    periods = pool_periods(result)
    assert set(periods) == {3}
    assert periods[3].ops == 150 and periods[3].write_latency_ns / 120 == 20_000_000
    totals = PerfTotals()
    assert totals.add(periods, [3, 4]) == [PoolOps(3, 150), PoolOps(4, 0)]
    assert totals.add(pool_periods(result), [3]) == [PoolOps(3, 300)]
    assert pool_periods(None) == {} and pool_periods({"counters": [{"k": []}]}) == {}


def test_a_report_holds_its_rate_for_one_window_then_leaves_it() -> None:
    """Ticks every second, one OSD report of 350 ops arrives at t=10: the
    rate is 350 / 5 s on every tick until the report is a window old (it
    used to decay by a sixth a tick, and restart the sustain time)."""
    rates = PoolRates(5.0)
    for t in range(0, 10):
        rates.add(float(t), [PoolOps(1, 1000)])
    seen = []
    for t in range(10, 17):
        rates.add(float(t), [PoolOps(1, 1350)])
        seen.append(rates.rate(1))
    assert seen[:5] == [70.0] * 5
    assert seen[5:] == [0.0, 0.0]
