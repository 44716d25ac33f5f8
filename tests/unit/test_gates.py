"""Safety gates: the switch to shared needs a clean cluster; isolation only needs active PGs."""
from dataclasses import replace

import pytest

from mgr_sla.core.decision import Mode
from mgr_sla.core.gates import ClusterHealth, PgCounts, blocking_gates, pg_counts

CLEAN = ClusterHealth(PgCounts(total=64), 0.0)


def names(gates):
    return [g.name.value for g in gates]


def test_clean_cluster_has_no_gates():
    assert blocking_gates(Mode.SHARED, CLEAN, 0.05) == []
    assert blocking_gates(Mode.ISOLATED, CLEAN, 0.05) == []


def test_pg_states_are_counted():
    c = pg_counts([
        {"state_name": "active+clean", "count": 10},
        {"state_name": "active+undersized+degraded", "count": 2},
        {"state_name": "unknown", "count": 1},
        {"state_name": "peering", "count": 3},
        {"state_name": "active+remapped+backfilling", "count": 4},
    ])
    assert c.total == 20 and c.degraded == 2 and c.unknown == 1 and c.inactive == 4


def test_shared_waits_for_every_problem():
    h = ClusterHealth(PgCounts(64, inactive=0, degraded=2, unknown=1), 0.2,
                      down_osds=(3,), unverified="pool 5 lacks choose_args")
    assert names(blocking_gates(Mode.SHARED, h, 0.05)) == [
        "rules_unverified", "pgs_unknown", "pgs_degraded", "misplaced", "osd_down"]


def test_isolation_goes_ahead_with_data_moving_but_not_with_inactive_pgs():
    moving = ClusterHealth(PgCounts(64, degraded=3), 0.4, down_osds=(1,))
    assert blocking_gates(Mode.ISOLATED, moving, 0.05) == []
    inactive = ClusterHealth(PgCounts(64, inactive=1), 0.0)
    assert names(blocking_gates(Mode.ISOLATED, inactive, 0.05)) == ["pgs_inactive"]


def test_isolation_cancels_the_modules_own_move_despite_its_peering_pgs():
    """PGs peering because the module's switch to shared still moves replicas
    do not hold isolation; with an OSD of the rules down, or someone else's
    move, they do, and the switch to shared is held either way."""
    own = ClusterHealth(PgCounts(64, inactive=13, degraded=13), 0.1, own_move_in_flight=True)
    assert blocking_gates(Mode.ISOLATED, own, 0.05) == []
    assert "pgs_inactive" in names(blocking_gates(Mode.SHARED, own, 0.05))
    down = replace(own, down_osds=(4,))
    assert names(blocking_gates(Mode.ISOLATED, down, 0.05)) == ["pgs_inactive"]
    theirs = replace(own, own_move_in_flight=False)
    assert names(blocking_gates(Mode.ISOLATED, theirs, 0.05)) == ["pgs_inactive"]


def test_missing_rules_block_both_directions_and_name_the_fix():
    h = ClusterHealth(PgCounts(64), 0.0, missing_rules=("sla_shared",))
    for mode in Mode:
        gates = blocking_gates(mode, h, 0.05)
        assert names(gates) == ["rules_missing"]
        assert "ceph sla rules apply" in gates[0].detail


def test_misplaced_at_the_limit_passes():
    assert blocking_gates(Mode.SHARED, ClusterHealth(PgCounts(64), 0.05), 0.05) == []


def test_gates_count_only_the_managed_pools_pgs() -> None:
    from mgr_sla.core.gates import pool_pg_states, pools_with_unknown_pgs
    summary = {"by_pool": {"1": {"active+clean": 30, "active+clean+scrubbing": 2},
                           "2": {"active+clean": 32},
                           "7": {"peering": 8, "unknown": 4}}}
    counts = pg_counts(pool_pg_states(summary, [1, 2]))
    assert counts == PgCounts(total=64)
    assert pg_counts(pool_pg_states(summary, [7])).inactive == 12
    assert pools_with_unknown_pgs(summary) == {7}


def test_flags_hold_shared_not_isolation() -> None:
    from mgr_sla.core.gates import holding_flags
    flags = holding_flags("sortbitwise,recovery_deletes,norebalance,noout")
    assert flags == ("noout", "norebalance")
    health = ClusterHealth(PgCounts(total=8), 0.0, flags=flags)
    gates = blocking_gates(Mode.SHARED, health, 0.05)
    assert [g.name.value for g in gates] == ["cluster_flags"] and "norebalance" in gates[0].detail
    assert blocking_gates(Mode.ISOLATED, health, 0.05) == []


def test_capacity_gate_from_the_projected_fill() -> None:
    from mgr_sla.core.gates import projected_urgent_fill
    gib = 2.0 ** 30
    size = {1: 100 * gib, 3: 100 * gib}
    used = {1: 40 * gib, 3: 10 * gib}
    # 200 GiB of normal replicas, half go urgent, split by weight 1:1
    fill = projected_urgent_fill(used, size, {1: 1.0, 3: 1.0}, 200 * gib, 0.5)
    assert fill == pytest.approx(0.9)
    health = ClusterHealth(PgCounts(total=8), 0.0, urgent_fill_after=fill, nearfull_ratio=0.85)
    assert [g.name.value for g in blocking_gates(Mode.SHARED, health, 0.05)] == ["urgent_capacity"]
    assert projected_urgent_fill({}, {}, {}, 1.0, 0.5) is None


def test_daily_cap_holds_shared_only() -> None:
    health = ClusterHealth(PgCounts(total=8), 0.0, switches_last_day=48, max_switches_per_day=48)
    assert [g.name.value for g in blocking_gates(Mode.SHARED, health, 0.05)] == ["daily_cap"]
    assert blocking_gates(Mode.ISOLATED, health, 0.05) == []
    uncapped = ClusterHealth(PgCounts(total=8), 0.0, switches_last_day=500)
    assert blocking_gates(Mode.SHARED, uncapped, 0.05) == []
