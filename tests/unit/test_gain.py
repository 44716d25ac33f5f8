"""The measured gain of sharing a normal pool, and whether sharing is worth it."""
from __future__ import annotations

from mgr_sla.core.activity import PoolPeriod
from mgr_sla.core.gain import (
    ISOLATED,
    ExpectedGain,
    GainLedger,
    MeasuredGain,
    expected_gain,
    load_bin,
    not_worth_sharing,
    quiet_periods,
    usual_quiet_secs,
)
from mgr_sla.core.state import SwitchRecord

POOL = 7


def ops(n: int, latency_ms: float, reads: float = 0.0) -> PoolPeriod:
    r = round(n * reads)
    return PoolPeriod(write_ops=n - r, read_ops=r,
                      write_latency_ns=int((n - r) * latency_ms * 1e6),
                      write_latency_count=n - r,
                      read_latency_ns=int(r * latency_ms * 1e6), read_latency_count=r)


def run(ledger: GainLedger, start: float, secs: int, shared: bool | str, per_sec: int,
        latency_ms: float, quiet: bool = True, reads: float = 0.0) -> float:
    """A closed-loop client: per_sec ops each second at latency_ms; `shared`
    True: shared by the copy strategy (or by the strategy named)."""
    where = shared if isinstance(shared, str) else "copy" if shared else ISOLATED
    for t in range(secs):
        ledger.add(start + t, {POOL: ops(per_sec, latency_ms, reads)}, {POOL: where}, quiet)
    return start + secs


def test_a_closed_loop_client_twice_as_fast_shared_measures_a_gain_of_two() -> None:
    ledger = GainLedger()
    # 4 ops in flight both ways: 100 ops/s at 40 ms isolated, 200 ops/s at 20 ms shared
    t = run(ledger, 0, 200, False, 100, 40.0, reads=0.9)
    assert ledger.measured(POOL, "copy") is None  # no shared period yet
    run(ledger, t, 200, True, 200, 20.0, reads=0.9)
    got = ledger.measured(POOL, "copy")
    assert got is not None and abs(got.gain - 2.0) < 0.01, got
    assert got.loads == 1 and got.read_fraction == 0.9
    assert "matched load" in got.basis() and "95% interval" in got.basis()
    # the same latency every window: the interval is the gain itself
    assert got.low == got.gain == got.high


def test_ops_while_urgent_clients_are_busy_do_not_count() -> None:
    ledger = GainLedger()
    t = run(ledger, 0, 200, False, 100, 40.0)
    run(ledger, t, 200, True, 100, 5.0, quiet=False)  # shared, but urgent load: not filed
    assert ledger.measured(POOL, "copy") is None


def test_loads_seen_in_one_placement_only_are_not_compared() -> None:
    ledger = GainLedger()
    # isolated: 0.1 in flight; shared: 20 in flight (factor 4 bins apart)
    t = run(ledger, 0, 200, False, 10, 10.0)
    run(ledger, t, 200, True, 1000, 20.0)
    assert load_bin(10, 1, 0.01) != load_bin(1000, 1, 0.02)
    assert ledger.measured(POOL, "copy") is None


def test_too_few_ops_give_no_measurement() -> None:
    ledger = GainLedger()
    t = run(ledger, 0, 200, False, 1, 40.0)  # a minute of 1 op/s: 200 ops in all
    run(ledger, t, 100, True, 1, 20.0)  # not enough in the matched windows
    assert ledger.measured(POOL, "copy") is None


def test_only_the_last_periods_count() -> None:
    """A workload that changed: after two new periods of each placement
    the old gain is gone."""
    ledger = GainLedger(keep_periods=2)
    t = 0.0
    for _ in range(2):
        t = run(ledger, t, 120, False, 100, 40.0)
        t = run(ledger, t, 120, True, 200, 20.0)
    first = ledger.measured(POOL, "copy")
    assert first is not None and first.gain > 1.9
    for _ in range(2):  # now sharing brings nothing
        t = run(ledger, t, 120, False, 100, 40.0)
        t = run(ledger, t, 120, True, 100, 40.0)
    now = ledger.measured(POOL, "copy")
    assert now is not None and abs(now.gain - 1.0) < 0.01, now


def test_spells_too_short_to_file_a_window_are_not_periods() -> None:
    """Short isolated spells (an urgent burst, then the dwell) file nothing:
    they must not push the isolated period that measured out of the last ones."""
    ledger = GainLedger(keep_periods=2)
    t = run(ledger, 0, 120, False, 100, 40.0)
    t = run(ledger, t, 120, True, 200, 20.0)
    for _ in range(3):
        t = run(ledger, t, 20, False, 100, 40.0)  # under a window
        t = run(ledger, t, 10, False, 100, 40.0, quiet=False)
        t = run(ledger, t, 120, True, 200, 20.0)
    got = ledger.measured(POOL, "copy")
    assert got is not None and abs(got.gain - 2.0) < 0.01, got


def test_each_strategy_is_measured_against_the_same_isolated_periods() -> None:
    ledger = GainLedger(keep_periods=4)
    t = run(ledger, 0, 200, False, 100, 40.0)
    t = run(ledger, t, 200, "copy", 200, 20.0)  # twice as fast shared by copy
    t = run(ledger, t, 200, False, 100, 40.0)
    run(ledger, t, 200, "move", 150, 32.0)  # 4.8 in flight: the same bin as 4
    copy, move = ledger.measured(POOL, "copy"), ledger.measured(POOL, "move")
    assert copy is not None and move is not None
    assert copy.gain == 2.0 and move.gain == 1.25
    assert ledger.measured(POOL, "other") is None


def test_a_deleted_pool_is_forgotten() -> None:
    ledger = GainLedger()
    t = run(ledger, 0, 200, False, 100, 40.0)
    run(ledger, t, 200, True, 200, 20.0)
    ledger.add(t + 300, {}, {}, True)
    assert ledger.measured(POOL, "copy") is None


def measured(gain: float, at: float = 1000.0, reads: float = 0.9, spread: float = 1.0
             ) -> MeasuredGain:
    return MeasuredGain(gain, gain / spread, gain * spread, 300, 300, 3000, 3000, 1, reads, at)


def test_the_measured_gain_speaks_while_fresh_and_clear_of_min_gain() -> None:
    got = expected_gain(1.5, "copy", 0.85, measured(1.02), now=2000, retry_secs=86400,
                        min_gain=1.05)
    assert (got.gain, got.source) == (1.02, "measured")
    stale = expected_gain(1.5, "copy", 0.85, measured(1.02), now=1000 + 86401,
                          retry_secs=86400, min_gain=1.05)
    assert (stale.gain, stale.source) == (1.5, "model") and "too long ago" in stale.basis
    # an interval across min_gain decides nothing: the model does, the measurement is shown
    unsure = expected_gain(1.5, "copy", 0.85, measured(1.08, spread=1.1), now=2000,
                           retry_secs=86400, min_gain=1.05)
    assert (unsure.gain, unsure.source) == (1.5, "model")
    assert "not clear of min_gain 1.05x" in unsure.basis and unsure.measured is not None
    sure = expected_gain(1.5, "copy", 0.85, measured(1.3, spread=1.1), now=2000,
                         retry_secs=86400, min_gain=1.05)
    assert (sure.gain, sure.source) == (1.3, "measured")
    none = expected_gain(1.03, "copy", None, None, now=2000, retry_secs=86400, min_gain=1.05)
    assert none.source == "model" and "assumed" in none.basis


def test_a_pool_under_min_gain_or_slower_to_place_than_the_quiet_lasts_is_not_shared(
) -> None:
    low = not_worth_sharing(ExpectedGain(1.0, "model", "copy, 0% reads"), 1.05, 10, None)
    assert low is not None and "under min_gain 1.05x" in low and "copy, 0% reads" in low
    ok = ExpectedGain(2.0, "measured", "...")
    assert not_worth_sharing(ok, 1.05, 10, None) is None
    assert not_worth_sharing(ok, 1.05, 10, (3600.0, "median of 3")) is None
    slow = not_worth_sharing(ok, 1.05, 7200, (3600.0, "median of 3 shared periods"))
    assert slow is not None and "longer than the usual quiet period" in slow
    assert not_worth_sharing(ok, 0, 7200, (3600.0, "median of 3")) is None  # 0: every pool


def test_quiet_periods_come_from_the_switches_and_the_usual_one_from_this_hour() -> None:
    day = 86400.0
    history = [SwitchRecord(0 * day + 3600, "isolated", "shared", ""),
               SwitchRecord(0 * day + 3600 + 600, "shared", "isolated", ""),
               SwitchRecord(1 * day + 3700, "isolated", "shared", ""),
               SwitchRecord(1 * day + 3700 + 900, "shared", "isolated", ""),
               SwitchRecord(1 * day + 40000, "isolated", "shared", "", dry_run=True),
               SwitchRecord(1 * day + 50000, "isolated", "shared", ""),
               SwitchRecord(1 * day + 50000 + 60, "shared", "isolated", ""),
               SwitchRecord(2 * day, "isolated", "shared", "")]  # still running
    periods = quiet_periods(history)
    assert [round(length) for _, length in periods] == [600, 900, 60]
    near = usual_quiet_secs(periods, now=2 * day + 3650)
    assert near is not None and near[0] == 900 and "at this hour" in near[1]
    far = usual_quiet_secs(periods, now=2 * day + 20000)
    assert far is not None and far[0] == 600 and "at any hour" in far[1]
    assert usual_quiet_secs([], now=0) is None
    assert usual_quiet_secs(periods[:2], now=2 * day + 3650) is None  # too few to say


def test_a_share_ends_once_this_periods_windows_measure_it_clear_under_min_gain() -> None:
    from mgr_sla.core.gain import is_loss, losing_share
    loss = measured(0.8, at=2000.0, spread=1.1)
    why = losing_share(loss, 1.05, since=1500.0)
    assert why is not None and is_loss(why) and "0.80x" in why and "under min_gain 1.05x" in why
    # windows of an earlier period only, an interval across min_gain, a gain,
    # or min_gain 0 (every pool shared): it stays
    assert losing_share(loss, 1.05, since=2500.0) is None
    assert losing_share(measured(1.0, at=2000.0, spread=1.1), 1.05, since=1500.0) is None
    assert losing_share(measured(1.3, at=2000.0), 1.05, since=1500.0) is None
    assert losing_share(loss, 0.0, since=1500.0) is None
    assert losing_share(None, 1.05, since=1500.0) is None
    # and a measurement gone stale says so, for the strategy choice's trial
    stale = expected_gain(1.5, "copy", 0.85, measured(1.02), now=1000 + 86401,
                          retry_secs=86400, min_gain=1.05)
    assert stale.stale and not expected_gain(1.5, "copy", 0.85, measured(1.02), now=2000,
                                             retry_secs=86400, min_gain=1.05).stale
