"""The mode decision: thresholds, the dwell band, pins, flapping bounds."""
import math

import pytest

from mgr_sla.core.decision import DecisionState, Mode, ThresholdError, Thresholds, decide, held

T = Thresholds(100.0, 50.0)


def run(series, dwell=10.0, step=1.0, start=Mode.SHARED):
    """Feed a series of urgent IOPS one per `step` seconds; return switch times and modes."""
    state = DecisionState(start, 0.0)
    switches = []
    for i, iops in enumerate(series):
        now = (i + 1) * step
        d = decide(state, iops, now, T, dwell)
        state = d.state
        if d.switch:
            switches.append((now, d.target))
    return switches, state


def test_load_above_high_isolates_at_once():
    switches, state = run([0, 0, 150])
    assert switches == [(3.0, Mode.ISOLATED)]
    assert state.mode is Mode.ISOLATED


def test_quiet_returns_to_shared_only_after_the_dwell():
    switches, _ = run([150] + [10] * 15, dwell=10.0)
    assert switches == [(1.0, Mode.ISOLATED), (12.0, Mode.SHARED)]


def test_quiet_time_starts_only_once_isolation_has_moved_its_data():
    # Switched at t=1; the backfill runs until t=8 and holds the urgent rate at 5:
    # that is not quiet. Without the flag the module shares again at t=11.
    state = DecisionState(Mode.SHARED, 0.0)
    switches = []
    for now in range(1, 30):
        iops = 150.0 if now == 1 else 5.0
        d = decide(state, iops, float(now), T, 10.0, isolating=2 <= now <= 8)
        state = d.state
        if d.switch:
            switches.append((float(now), d.target))
        if 2 <= now <= 8:
            assert d.target is Mode.ISOLATED and "still moving data" in d.reason
    assert switches == [(1.0, Mode.ISOLATED), (19.0, Mode.SHARED)]


def test_isolating_does_not_hold_back_a_switch_to_isolated_or_a_pin():
    shared = DecisionState(Mode.SHARED, 0.0)
    assert decide(shared, 5.0, 1.0, T, 10.0, isolating=True).target is Mode.SHARED
    assert decide(shared, 150.0, 1.0, T, 10.0, isolating=True).switch
    iso = DecisionState(Mode.ISOLATED, 0.0, quiet_since=0.0)
    pinned = decide(iso, 5.0, 100.0, T, 10.0, Mode.SHARED, isolating=True)
    assert pinned.switch and pinned.target is Mode.SHARED


def test_inside_the_band_keeps_isolated_and_restarts_the_dwell():
    # quiet 5 s, band 1 s, quiet again: the dwell counts from the second quiet run
    switches, _ = run([150] + [10] * 5 + [70] + [10] * 12, dwell=10.0)
    assert switches == [(1.0, Mode.ISOLATED), (18.0, Mode.SHARED)]


def test_hovering_load_switches_at_most_once_per_dwell_window():
    # load oscillating across both thresholds every 3 s for 10 minutes
    series = [150 if (i // 3) % 2 else 20 for i in range(600)]
    switches, _ = run(series, dwell=30.0)
    assert len(switches) == 1, switches


def test_periodic_bursts_are_bounded_by_the_dwell():
    # bursts every 60 s, quiet in between; dwell 30 s -> at most 2 switches a minute
    series = [150 if i % 60 < 5 else 0 for i in range(600)]
    switches, _ = run(series, dwell=30.0)
    shared = [t for t, m in switches if m is Mode.SHARED]
    assert all(b - a >= 30.0 for a, b in zip(shared, shared[1:]))
    assert len(switches) <= 2 * 600 / 60


def test_no_measurement_keeps_the_mode():
    state = DecisionState(Mode.ISOLATED, 0.0, quiet_since=0.0)
    d = decide(state, None, 1000.0, T, 10.0)
    assert not d.switch and d.target is Mode.ISOLATED


def test_pin_overrides_load_and_is_reported():
    state = DecisionState(Mode.ISOLATED, 0.0)
    d = decide(state, 5000.0, 1.0, T, 10.0, pinned=Mode.SHARED)
    assert d.switch and d.target is Mode.SHARED and "pinned" in d.reason
    d2 = decide(d.state, 5000.0, 2.0, T, 10.0, pinned=Mode.SHARED)
    assert not d2.switch


def test_held_keeps_the_mode_but_counts_the_quiet_run():
    state = DecisionState(Mode.ISOLATED, 0.0, quiet_since=0.0)
    d = decide(state, 0.0, 20.0, T, 10.0)
    assert d.switch
    kept = held(d, state)
    assert kept.mode is Mode.ISOLATED and kept.quiet_since == 0.0


@pytest.mark.parametrize("high,low,msg", [
    ("abc", None, "must be a number"),
    (-5, None, "must be > 0"),
    (0, None, "must be > 0"),
    (100, 200, "above the high threshold"),
    (math.nan, None, "finite"),
    (True, None, "must be a number"),
    (100, "x", "low threshold must be a number"),
])
def test_bad_thresholds_are_named(high, low, msg):
    with pytest.raises(ThresholdError, match=msg):
        Thresholds.parse(high, low)


def test_low_defaults_to_half_of_high():
    assert Thresholds.parse("200") == Thresholds(200.0, 100.0)
    assert Thresholds.parse(200, 200) == Thresholds(200.0, 200.0)


def test_sustain_a_one_sample_spike_does_not_isolate():
    t = Thresholds(100.0, 50.0)
    shared = DecisionState(Mode.SHARED, 0.0)
    first = decide(shared, 500.0, 10.0, t, 60.0, sustain_secs=2.0)
    assert not first.switch and first.state.high_since == 10.0
    assert "for 0 of 2 s" in first.reason
    dropped = decide(first.state, 10.0, 11.0, t, 60.0, sustain_secs=2.0)
    assert not dropped.switch and dropped.state.high_since is None
    again = decide(dropped.state, 500.0, 12.0, t, 60.0, sustain_secs=2.0)
    held = decide(again.state, 500.0, 14.0, t, 60.0, sustain_secs=2.0)
    assert held.switch and held.target is Mode.ISOLATED


def test_sustain_zero_isolates_at_once():
    t = Thresholds(100.0, 50.0)
    d = decide(DecisionState(Mode.SHARED, 0.0), 500.0, 1.0, t, 60.0)
    assert d.switch and d.target is Mode.ISOLATED


def test_latency_above_the_slo_isolates_below_the_iops_threshold():
    from mgr_sla.core.latency import Slo
    t = Thresholds(10_000.0, 5_000.0)  # far above the load
    slo = Slo(20.0, 75.0, 0.5)
    shared = DecisionState(Mode.SHARED, 0.0)
    d = decide(shared, 300.0, 5.0, t, 60.0, urgent_latency_ms=35.0, slo=slo)
    assert d.switch and d.target is Mode.ISOLATED
    assert "urgent latency 35.0 ms" in d.reason and "SLO 20 ms" in d.reason
    # without the objective the same load keeps shared
    assert not decide(shared, 300.0, 5.0, t, 60.0, urgent_latency_ms=35.0).switch


def test_back_to_shared_only_below_the_band_lower_edge():
    from mgr_sla.core.latency import Slo
    t = Thresholds(10_000.0, 5_000.0)
    slo = Slo(20.0, 75.0, 0.5)
    iso = DecisionState(Mode.ISOLATED, 0.0, quiet_since=0.0)
    inside = decide(iso, 10.0, 100.0, t, 60.0, urgent_latency_ms=15.0, slo=slo)
    assert not inside.switch and "inside the SLO band (10-20 ms)" in inside.reason
    assert inside.state.quiet_since is None
    calm = decide(inside.state, 10.0, 101.0, t, 60.0, urgent_latency_ms=8.0, slo=slo)
    later = decide(calm.state, 10.0, 170.0, t, 60.0, urgent_latency_ms=8.0, slo=slo)
    assert later.switch and later.target is Mode.SHARED
