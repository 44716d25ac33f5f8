"""The policy simulator's pure parts: queues, loads, demand, switch accounting."""

import json

import numpy as np
import pytest

from bench import policy_sim as P
from bench.sim import demand as D
from bench.sim import model as M
from bench.sim import policy as SP

DEV = M.Devices(hdd_ops=100.0, ssd_ops=400.0, rho_cap=0.99, normal_target_rho=0.9)


# -- queue model ---------------------------------------------------------------------


def test_queue_latency_is_mm1_and_capped():
    s = 0.01
    assert M.queue_latency(s, 0.0, 0.99) == pytest.approx(s)
    assert M.queue_latency(s, 0.5, 0.99) == pytest.approx(2 * s)
    assert M.queue_latency(s, 0.9, 0.99) == pytest.approx(10 * s)
    # at or past saturation the latency is capped, not negative or infinite
    assert M.queue_latency(s, 1.0, 0.99) == pytest.approx(100 * s)
    assert M.queue_latency(s, 3.0, 0.99) == pytest.approx(100 * s)
    assert M.queue_latency(s, -0.2, 0.99) == pytest.approx(s)


def test_device_rates_by_class():
    assert list(DEV.rates(["hdd", "ssd", "hdd"])) == [100.0, 400.0, 100.0]
    with pytest.raises(ValueError, match="nvme"):
        DEV.rates(["nvme"])


def test_load_coefficients_writes_all_replicas_reads_primary():
    pgs = np.array([[0, 1, 2], [0, 2, 3]])
    assert list(M.load_coefficients(pgs, 5, 1.0)) == [1.0, 0.5, 1.0, 0.5, 0.0]
    assert list(M.load_coefficients(pgs, 5, 0.0)) == [1.0, 0.0, 0.0, 0.0, 0.0]
    half = M.load_coefficients(pgs, 5, 0.5)
    assert half.sum() == pytest.approx(0.5 * 3 + 0.5 * 1)


def test_op_latency_is_the_slowest_replica_for_writes():
    pgs = np.array([[0, 1], [2, 3]])
    lat = np.array([1.0, 5.0, 2.0, 3.0])
    assert M.op_latency(pgs, lat, 1.0) == pytest.approx((5.0 + 3.0) / 2)
    assert M.op_latency(pgs, lat, 0.0) == pytest.approx((1.0 + 2.0) / 2)
    # rows are independent demand levels
    two = M.op_latency(pgs, np.stack([lat, lat * 2]), 1.0)
    assert list(two) == pytest.approx([4.0, 8.0])


def test_saturating_normal_stops_at_the_busiest_osd():
    # OSD 0,1 hdd; 2,3 ssd. Normal on hdd only, urgent on ssd only.
    mu = DEV.rates(["hdd", "hdd", "ssd", "ssd"])
    normal = M.load_coefficients(np.array([[0, 1]]), 4, 1.0)  # each op: 1 on osd 0 and 1
    urgent_pgs = np.array([[2, 3]])
    urgent = M.load_coefficients(urgent_pgs, 4, 1.0)
    case = M.LoadCase(normal, urgent, urgent_pgs, np.zeros(4))
    x, lat = M.evaluate(case, np.array([0.0, 200.0]), mu, DEV, 1.0)
    assert list(x) == pytest.approx([90.0, 90.0])  # 0.9 x 100 ops/s, urgent elsewhere
    assert lat[0] == pytest.approx(1 / 400)
    assert lat[1] == pytest.approx((1 / 400) / (1 - 0.5))
    # sharing the ssd: the normal load raises the urgent latency
    shared = M.LoadCase(M.load_coefficients(np.array([[0, 2]]), 4, 1.0), urgent, urgent_pgs,
                        np.zeros(4))
    x, lat = M.evaluate(shared, np.array([0.0]), mu, DEV, 1.0)
    assert x[0] == pytest.approx(90.0)
    assert lat[0] == pytest.approx((1 / 400) / (1 - 90 / 400))
    solo = M.LoadCase(None, urgent, urgent_pgs, np.zeros(4))
    x, lat = M.evaluate(solo, np.array([100.0]), mu, DEV, 1.0)
    assert x[0] == 0.0 and lat[0] == pytest.approx((1 / 400) / 0.75)


def test_table_interpolates_evaluate_and_harm_point():
    mu = DEV.rates(["hdd", "ssd"])
    pgs = np.array([[1]])
    urgent = M.load_coefficients(pgs, 2, 1.0)
    solo = M.build_table(M.LoadCase(None, urgent, pgs, np.zeros(2)), 300.0, mu, DEV, 1.0,
                         points=301)
    _, lat = solo.lookup(np.array([100.0]))
    assert lat[0] == pytest.approx((1 / 400) / 0.75, rel=1e-3)
    noisy = M.build_table(M.LoadCase(np.array([1.0, 1.0]), urgent, pgs, np.zeros(2)), 300.0,
                          mu, DEV, 1.0, points=301)
    harm = SP.harm_point(noisy, solo, 1.5)
    # normal adds rho 0.225 on the ssd: 1.5x solo once (1 - u) / (1 - u - 0.225) > 1.5
    assert harm == pytest.approx(0.325 * 400, abs=1.5)
    assert SP.harm_point(solo, solo, 1.5) is None


# -- demand --------------------------------------------------------------------------


def test_daily_shape_quiet_night_busy_day():
    w = D.UrgentWorkload()
    shape = D.daily_shape(np.array([0.0, 3.0, 12.0, 23.0, 36.0]), w)
    assert list(shape) == pytest.approx([0.0, 0.0, 1.0, 0.0, 1.0])
    ramp = D.daily_shape(np.array([w.day_start_h - w.ramp_h / 2]), w)
    assert ramp[0] == pytest.approx(0.5)


def test_demand_is_deterministic_by_seed():
    w = D.UrgentWorkload()
    a, bursts_a = D.urgent_demand(w, 10_000.0, D.DAY, 10.0, seed=7)
    b, bursts_b = D.urgent_demand(w, 10_000.0, D.DAY, 10.0, seed=7)
    c, _ = D.urgent_demand(w, 10_000.0, D.DAY, 10.0, seed=8)
    assert np.array_equal(a, b) and bursts_a == bursts_b
    assert not np.array_equal(a, c)
    assert len(a) == 8640 and (a > 0).all()
    night, day = a[: 4 * 360].mean(), a[10 * 360: 16 * 360].mean()
    assert day > 5 * night
    for burst in bursts_a:
        assert w.burst_min_util * 1e4 <= burst.iops <= w.burst_max_util * 1e4
        assert burst.duration >= 10.0
    s1 = D.measured_rates(a, 10.0, 5.0, 5.0, seed=7)
    s2 = D.measured_rates(a, 10.0, 5.0, 5.0, seed=7)
    assert np.array_equal(s1, s2)


def test_bursts_add_their_rate_for_their_duration():
    w = D.UrgentWorkload(night_util=0.0, day_util=0.0, noise_sigma=0.0, bursts_per_hour=20.0,
                         night_burst_factor=1.0)
    demand, bursts = D.urgent_demand(w, 1000.0, 7200.0, 10.0, seed=3)
    assert bursts
    total = sum(b.iops * min(b.duration, 7200.0 - b.start) for b in bursts)
    assert demand.sum() * 10.0 == pytest.approx(total)


def test_measured_rate_lags_the_demand():
    demand = np.array([0.0] * 5 + [1000.0] * 5)
    seen = D.measured_rates(demand, 10.0, 5.0, 5.0, seed=1)
    # the decision at the start of step k sees [10k-10, 10k-5]: step k-1
    assert (seen[:6] == 0).all()
    assert seen[6:] == pytest.approx([1000.0] * 4, rel=0.2)


# -- switches and bytes --------------------------------------------------------------


def test_move_stats_counts_replicas_that_change_osd():
    before = np.array([[0, 1, 2], [3, 4, 5], [0, 1, 3]])
    after = np.array([[0, 1, 6], [5, 4, 3], [7, 1, 6]])  # PG 1 only reorders
    stats = M.move_stats(before, after, 8)
    assert stats.replicas_moved == 3
    assert list(stats.work) == [1, 0, 1, 1, 0, 0, 2, 1]
    assert stats.max_work == 2


def test_switch_model_bytes_time_and_misplaced():
    stats = M.MoveStats(10, np.array([4, 2, 2, 2]))
    sw = M.SwitchModel.build(stats, normal_pgs=100, normal_bytes=100e9, urgent_bytes=0.0,
                             size=3, backfill_bytes_per_sec=1e8)
    assert sw.bytes_per_replica == pytest.approx(1e9)
    assert sw.bytes_per_switch == pytest.approx(10e9)
    assert sw.full_switch_secs == pytest.approx(4 * 1e9 / 1e8)
    assert sw.misplaced_full == pytest.approx(10 / 300)
    load = M.backfill_load(stats, DEV, 0.2)
    assert list(load) == pytest.approx([20.0, 10.0, 10.0, 10.0])


def test_advance_moves_toward_the_target():
    assert SP.advance(0.0, 1.0, 10.0, 40.0) == pytest.approx(0.25)
    assert SP.advance(0.9, 1.0, 10.0, 40.0) == 1.0
    assert SP.advance(0.5, 0.0, 10.0, 40.0) == pytest.approx(0.25)
    assert SP.advance(0.3, 0.0, 10.0, 0.0) == 0.0


SW = M.SwitchModel(replicas_moved=100, bytes_per_replica=1e9, full_switch_secs=40.0,
                   misplaced_full=0.04)


def test_adaptive_switches_and_bytes_are_counted():
    # quiet 100 s (dwell 50 s): shared; then busy: isolated; then quiet again
    seen = np.array([0.0] * 10 + [500.0] * 10 + [0.0] * 10)
    policy = SP.Policy("a", "adaptive", high_iops=100.0, low_iops=50.0, dwell_secs=50.0)
    traj = SP.run_policy(policy, seen, 10.0, SW)
    assert traj.switches == 3  # shared, isolated, shared
    # the first switch completes (4 steps), the second too, the third runs 4 of its steps
    assert traj.bytes_moved == pytest.approx(3 * SW.bytes_per_switch)
    # handover at the end: shared serving starts only once the move is complete
    k_shared = 5  # decided at t=50 (quiet since 0, dwell 50)
    assert not traj.serving_shared[k_shared: k_shared + 4].any()
    assert traj.backfilling[k_shared: k_shared + 4].all()
    assert traj.serving_shared[k_shared + 4]
    # isolation is protective only when the shared->isolated move is done
    assert traj.serving_shared[10:14].all() and traj.backfilling[10:14].all()
    assert not traj.serving_shared[14]
    assert traj.isolation_delays == [40.0]


def test_reversal_moves_back_only_what_moved():
    seen = np.array([0.0] * 6 + [500.0] * 6)
    policy = SP.Policy("a", "adaptive", high_iops=100.0, low_iops=50.0, dwell_secs=50.0)
    traj = SP.run_policy(policy, seen, 10.0, SW)
    # shared decided at step 5 (one step of progress: 0.25), reversed at step 6
    assert traj.switches == 2
    assert traj.bytes_moved == pytest.approx(0.5 * SW.bytes_per_switch)
    assert not traj.serving_shared.any()


def test_quiet_time_starts_once_isolation_has_moved_its_data():
    """The simulation runs the module's own tick step, `isolating` included:
    while the switch to isolated still moves data, shared is not even
    proposed (so no gate has to hold it), as in the live module."""
    big = M.SwitchModel(100, 1e9, 100.0, misplaced_full=0.5)
    seen = np.array([0.0] * 6 + [500.0] * 2 + [0.0] * 20)
    policy = SP.Policy("a", "adaptive", high_iops=100.0, low_iops=50.0, dwell_secs=0.0)
    traj = SP.run_policy(policy, seen, 10.0, big)
    # shared at step 0; isolated at 6 while 60% moved; the move back takes
    # 60 s (6 steps); shared again right after it, never blocked
    assert traj.blocked == 0
    assert traj.switches == 3
    assert traj.isolation_delays == [70.0]


def test_warmup_steps_are_not_counted():
    seen = np.array([0.0] * 10 + [500.0] * 10)
    policy = SP.Policy("a", "adaptive", high_iops=100.0, low_iops=50.0, dwell_secs=0.0)
    traj = SP.run_policy(policy, seen, 10.0, SW, count_from=10)
    assert traj.switches == 1
    assert traj.bytes_moved == pytest.approx(SW.bytes_per_switch)


def test_fixed_policies_never_switch():
    seen = np.array([0.0, 500.0, 0.0])
    iso = SP.run_policy(SP.Policy("i", "isolated"), seen, 10.0, SW)
    shared = SP.run_policy(SP.Policy("s", "shared"), seen, 10.0, SW)
    assert iso.switches == shared.switches == 0
    assert not iso.serving_shared.any() and shared.serving_shared.all()


def _result(kind, high, dwell, minutes, normal, moved=0.0):
    return SP.Result(SP.Policy("p", kind, high, high / 2, dwell), minutes, 0.0, 1.0, normal, 0.0,
                    0.0, moved, 0.0, 0.0, None)


def test_score_counts_violation_minutes_against_solo():
    grid = np.array([0.0, 1000.0])
    solo = M.Table(grid, np.zeros(2), np.array([1.0, 1.0]))
    good = M.Table(grid, np.array([100.0, 100.0]), np.array([1.0, 1.0]))
    bad = M.Table(grid, np.array([200.0, 200.0]), np.array([2.0, 2.0]))
    tables = M.Tables(good, bad, good, bad, bad, solo)
    demand = np.full(8640, 10.0)
    traj = SP.run_policy(SP.Policy("s", "shared"), demand, 10.0, SW)
    r = SP.score(SP.Policy("s", "shared"), traj, demand, tables, 10.0, 0, 1.5)
    assert r.sla_violation_minutes_per_day == pytest.approx(1440.0)
    assert r.urgent_ops_violating == pytest.approx(1.0)
    assert r.normal_ops_per_day == pytest.approx(200.0 * 86400)
    traj = SP.run_policy(SP.Policy("i", "isolated"), demand, 10.0, SW)
    r = SP.score(SP.Policy("i", "isolated"), traj, demand, tables, 10.0, 0, 1.5)
    assert r.sla_violation_minutes_per_day == 0.0


def test_recommend_prefers_normal_ops_within_the_sla_budget():
    results = [
        _result("isolated", 0, 0, 0.0, 100.0),
        _result("adaptive", 100, 60, 30.0, 130.0),  # over budget
        _result("adaptive", 200, 300, 2.0, 110.0, moved=5.0),
        _result("adaptive", 400, 900, 1.0, 110.2, moved=1.0),  # same normal, fewer bytes
        _result("adaptive", 50, 60, 0.0, 100.0),
    ]
    best = SP.recommend(results, budget_minutes=5.0)
    assert best is not None and best.policy.high_iops == 400
    assert SP.recommend(results[:2], budget_minutes=5.0) is None


# -- device rates from the benchmark's calibration ---------------------------------


def _calibration(hdd=120.0, ssd=358.8):
    return {"emulation": {"calibration": {
        "hdd": {"osd": 4, "device_iops_cap": 150,
                "capped": {"client_write_ops_per_sec": hdd, "device_iops": 132.0}},
        "ssd": {"osd": 1, "device_iops_cap": 500,
                "capped": {"client_write_ops_per_sec": ssd}},
        "ssd_over_hdd_client_writes": 2.99}}, "plan": {"quick": False}}


def test_rates_come_from_the_capped_calibration():
    assert P.rates_from_calibration(_calibration()) == (120.0, 358.8)
    assert P.rates_from_calibration(_calibration(hdd=150, ssd=500)) == (150.0, 500.0)


def test_rates_name_the_missing_key():
    results = _calibration()
    del results["emulation"]["calibration"]["ssd"]["capped"]
    with pytest.raises(ValueError, match=r"emulation\.calibration\.ssd\.capped\b"):
        P.rates_from_calibration(results)
    with pytest.raises(ValueError, match=r"^no emulation in"):
        P.rates_from_calibration({"runs": []})
    with pytest.raises(ValueError, match="hdd.capped.client_write_ops_per_sec is 0"):
        P.rates_from_calibration(_calibration(hdd=0.0))
    with pytest.raises(ValueError, match="not a positive number"):
        P.rates_from_calibration(_calibration(ssd=None))


def test_flags_win_and_the_source_is_recorded(tmp_path):
    path = tmp_path / "results.json"
    path.write_text(json.dumps(_calibration()))
    hdd, ssd, source = P.device_rates(None, None, path)
    assert (hdd, ssd) == (120.0, 358.8)
    assert source["calibration"] == str(path)
    assert source["calibrated"]["ssd_device_iops_cap"] == 500 and source["quick_run"] is False
    hdd, ssd, source = P.device_rates(100.0, None, path)
    assert (hdd, ssd) == (100.0, 358.8) and source["hdd_ops"] == "--hdd-ops"
    # both flags given: the file is not needed
    hdd, ssd, source = P.device_rates(100.0, 400.0, tmp_path / "absent.json")
    assert (hdd, ssd) == (100.0, 400.0) and "calibration" not in source


def test_a_missing_calibration_says_what_to_do(tmp_path):
    with pytest.raises(P.ConfigError,
                       match="absent.json not found.*--hdd-ops.*python3 -m bench.sla_bench"):
        P.device_rates(None, 400.0, tmp_path / "absent.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    with pytest.raises(P.ConfigError, match="no emulation in the calibration"):
        P.device_rates(None, None, bad)
    assert P.main(["--calibration", str(tmp_path / "absent.json")]) == 2


def test_copy_layout_puts_one_ssd_copy_in_front():
    normal = np.array([[0, 1, 2], [1, 2, 3], [2, 3, 0]])
    urgent = np.array([[6, 7, 5], [7, 6, 4]])
    shared = M.copy_layout(normal, urgent)
    assert shared.tolist() == [[6, 0, 1, 2], [7, 1, 2, 3], [6, 2, 3, 0]]
    stats = M.copy_stats(normal, shared, 8)
    # each PG: its ssd OSD receives, its hdd primary sends
    assert stats.replicas_moved == 3
    assert list(stats.work) == [1, 1, 1, 0, 0, 0, 2, 1]
    # a read lands on the ssd copy only; a write on all four
    coef = M.load_coefficients(shared, 8, write_fraction=0.0)
    assert coef[:6].sum() == 0 and coef[6:].sum() == pytest.approx(1.0)


def test_copy_isolates_at_once_and_moves_nothing_back():
    sw = M.SwitchModel.build(M.MoveStats(100, np.array([40, 10])), normal_pgs=100,
                             normal_bytes=100e9, urgent_bytes=0.0, size=3,
                             backfill_bytes_per_sec=1e8, strategy="copy")
    assert sw.full_switch_secs == pytest.approx(400.0)
    assert sw.to_isolated_secs == M.COPY_ISOLATION_SECS and not sw.isolation_moves_data
    seen = np.array([0.0] * 60 + [500.0] * 10)
    policy = SP.Policy("a", "adaptive", high_iops=100.0, low_iops=50.0, dwell_secs=50.0)
    traj = SP.run_policy(policy, seen, 10.0, sw)
    assert traj.switches == 2
    assert traj.bytes_moved == pytest.approx(sw.bytes_per_switch)  # the copy, once
    assert traj.isolation_delays == [10.0]  # one step, not the 400 s of the copy
    move = M.SwitchModel.build(M.MoveStats(100, np.array([40, 10])), normal_pgs=100,
                               normal_bytes=100e9, urgent_bytes=0.0, size=3,
                               backfill_bytes_per_sec=1e8)
    assert move.to_isolated_secs == move.full_switch_secs and move.isolation_moves_data
