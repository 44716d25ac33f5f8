"""Safety gates: the switch to shared needs a clean cluster (isolation is
gated per pool, by what concerns it: tests/unit/test_tick.py)."""

from mgr_sla.core.gates import ClusterHealth, PgCounts, inactive_by_pool, pg_counts, shared_gates

CLEAN = ClusterHealth(PgCounts(total=64), 0.0)


def names(gates):
    return [g.name.value for g in gates]


def test_clean_cluster_has_no_gates():
    assert shared_gates(CLEAN, 0.05) == []


def test_pg_states_are_counted():
    c = pg_counts([
        {"state_name": "active+clean", "count": 10},
        {"state_name": "active+undersized+degraded", "count": 2},
        {"state_name": "unknown", "count": 1},
        {"state_name": "peering", "count": 3},
        {"state_name": "active+remapped+backfilling", "count": 4},
    ])
    assert c.total == 20 and c.degraded == 2 and c.unknown == 1 and c.inactive == 4


def test_a_stale_pg_is_not_known_to_be_settled() -> None:
    """stale+active+clean: its primary went down and has not reported since;
    placement waits for it as for an unknown PG."""
    from mgr_sla.core.gates import all_settled
    stale = [{"state_name": "active+clean", "count": 10},
             {"state_name": "stale+active+clean", "count": 2}]
    assert pg_counts(stale).unknown == 2 and pg_counts(stale).inactive == 0
    assert not all_settled({"pgs_by_state": stale})
    assert all_settled({"pgs_by_state": stale[:1]})


def test_shared_waits_for_every_problem():
    h = ClusterHealth(PgCounts(64, inactive=0, degraded=2, unknown=1), 0.2,
                      down_osds=(3,), unverified="pool 5 lacks choose_args")
    assert names(shared_gates(h, 0.05)) == [
        "rules_unverified", "pgs_unknown", "pgs_degraded", "misplaced", "osd_down"]


def test_inactive_pgs_hold_shared_and_are_counted_per_pool():
    own = ClusterHealth(PgCounts(64, inactive=13, degraded=13), 0.1, own_move_in_flight=True)
    assert "pgs_inactive" in names(shared_gates(own, 0.05))
    summary = {"by_pool": {"1": {"active+clean": 30, "peering": 2},
                           "2": {"activating+undersized": 3, "active+clean": 1},
                           "3": {"peering": 5}}}
    assert inactive_by_pool(summary, [1, 2]) == {1: 2, 2: 3}


def test_missing_rules_hold_shared_and_name_the_fix():
    h = ClusterHealth(PgCounts(64), 0.0, missing_rules=("sla_shared",))
    gates = shared_gates(h, 0.05)
    assert names(gates) == ["rules_missing"]
    assert "ceph sla rules apply" in gates[0].detail


def test_misplaced_at_the_limit_passes():
    assert shared_gates(ClusterHealth(PgCounts(64), 0.05), 0.05) == []


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
    gates = shared_gates(health, 0.05)
    assert [g.name.value for g in gates] == ["cluster_flags"] and "norebalance" in gates[0].detail


def test_capacity_gate_from_the_admissions_projected_fill() -> None:
    health = ClusterHealth(PgCounts(total=8), 0.0, urgent_fill_after=0.9, nearfull_ratio=0.85)
    assert [g.name.value for g in shared_gates(health, 0.05)] == ["urgent_capacity"]


def test_daily_cap_holds_shared_only() -> None:
    health = ClusterHealth(PgCounts(total=8), 0.0, switches_last_day=48, max_switches_per_day=48)
    assert [g.name.value for g in shared_gates(health, 0.05)] == ["daily_cap"]
    uncapped = ClusterHealth(PgCounts(total=8), 0.0, switches_last_day=500)
    assert shared_gates(uncapped, 0.05) == []
