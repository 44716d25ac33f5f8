"""Safety gates: the switch to shared needs a clean cluster; isolation only needs active PGs."""
from mgr_sla.decision import Mode
from mgr_sla.gates import ClusterHealth, PgCounts, blocking_gates, pg_counts

CLEAN = ClusterHealth(PgCounts(total=64), 0.0)


def names(gates):
    return [g.name for g in gates]


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


def test_missing_rules_block_both_directions_and_name_the_fix():
    h = ClusterHealth(PgCounts(64), 0.0, missing_rules=("sla_shared",))
    for mode in Mode:
        gates = blocking_gates(mode, h, 0.05)
        assert names(gates) == ["rules_missing"]
        assert "ceph sla rules apply" in gates[0].detail


def test_misplaced_at_the_limit_passes():
    assert blocking_gates(Mode.SHARED, ClusterHealth(PgCounts(64), 0.05), 0.05) == []
