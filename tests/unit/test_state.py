"""Persisted state round-trips; the rule names are the generator's."""
import pytest

from mgr_sla.core.decision import DecisionState, Mode
from mgr_sla.core.state import (
    HISTORY_LEN,
    ModuleState,
    PoolRole,
    Role,
    StateError,
    SwitchRecord,
    UrgentPlacement,
)


def test_round_trip_keeps_mode_roles_and_history():
    s = ModuleState(DecisionState(Mode.SHARED, 12.0, 3.0), pinned=Mode.SHARED)
    s.roles = {3: PoolRole(Role.NORMAL), 4: PoolRole(Role.URGENT, UrgentPlacement.HYBRID)}
    s.record_switch(SwitchRecord(12.0, "isolated", "shared", "quiet", epoch=40, pgs_moved=7))
    s.blocked_total = {"osd_down": 2}
    back = ModuleState.from_json(s.to_json(), now=99.0)
    assert back.to_json() == s.to_json()
    assert back.decision.mode is Mode.SHARED and back.pinned is Mode.SHARED
    assert back.roles[4].placement is UrgentPlacement.HYBRID
    assert back.last_switch().pgs_moved == 7 and back.switches_total == 1


def test_a_running_urgent_spell_survives_a_failover():
    """high_since (the start of a run above the high threshold) is kept, so a new
    mgr does not restart the sustain time the switch waits for."""
    s = ModuleState(DecisionState(Mode.SHARED, 12.0, None, 40.0))
    back = ModuleState.from_json(s.to_json(), now=50.0)
    assert back.decision.high_since == 40.0 and back.decision.quiet_since is None
    older = s.to_json().replace('"high_since": 40.0, ', "")
    assert ModuleState.from_json(older, now=50.0).decision.high_since is None


def test_missing_state_starts_isolated():
    for text in (None, ""):
        s = ModuleState.from_json(text, now=5.0)
        assert s.decision.mode is Mode.ISOLATED and s.roles == {}


def test_broken_or_future_state_is_an_error_naming_why():
    for text in ("{not json", '{"mode": "sideways"}', "[]",
                 '{"version": 99, "mode": "shared", "mode_since": 1}'):
        with pytest.raises(StateError):
            ModuleState.from_json(text, now=5.0)


def test_version_1_records_load_without_original_rules():
    old = ('{"mode": "shared", "mode_since": 3.0, "roles": {"4": {"role": "normal", '
           '"placement": "isolated"}}}')
    s = ModuleState.from_json(old, now=5.0)
    assert s.roles[4] == PoolRole(Role.NORMAL) and s.roles[4].original_rule is None
    assert '"version": 4' in s.to_json() and s.sent_back == {} and s.last_step is None


def test_pools_sent_back_and_the_last_step_survive_a_failover():
    from mgr_sla.core.state import StepRecord
    s = ModuleState.initial(0.0)
    s.sent_back = {7: "osd.3 holds 35 PGs, limit 35"}
    s.last_step = StepRecord(12.5, 40, (7, 9))
    again = ModuleState.from_json(s.to_json(), 20.0)
    assert again.sent_back == s.sent_back and again.last_step == s.last_step


def test_original_rule_round_trips():
    s = ModuleState.initial(0.0)
    s.roles = {3: PoolRole(Role.NORMAL, original_rule="replicated_rule")}
    assert ModuleState.from_json(s.to_json(), 1.0).roles[3].original_rule == "replicated_rule"


def test_history_is_bounded_and_dry_runs_do_not_count():
    s = ModuleState.initial(0.0)
    for i in range(HISTORY_LEN + 10):
        s.record_switch(SwitchRecord(float(i), "a", "b", "r", dry_run=(i % 2 == 0)))
    assert len(s.history) == HISTORY_LEN
    assert s.switches_total == (HISTORY_LEN + 10) // 2
    assert not s.last_switch().dry_run


def test_rule_names_are_the_generators():
    """The module switches pools between the rules crush_rules writes: one name each."""
    from crush_rules import rules as R
    from mgr_sla.core import state as S
    assert (S.RULE_ISOLATED_NORMAL, S.RULE_ISOLATED_URGENT, S.RULE_SHARED, S.RULE_HYBRID) == (
        R.ISOLATED_NORMAL, R.ISOLATED_URGENT, R.SHARED, R.HYBRID)


def test_copy_roles_round_trip_and_older_records_default_to_move() -> None:
    from mgr_sla.core.state import PoolRole, Role, Strategy
    state = ModuleState.initial(1.0)
    state.roles[4] = PoolRole(Role.NORMAL, strategy=Strategy.COPY, base_size=3, base_min_size=2)
    back = ModuleState.from_json(state.to_json(), 2.0)
    assert back.roles[4] == state.roles[4]
    old = '{"version": 2, "mode": "isolated", "mode_since": 1, "roles": {"2": {"role": "normal"}}}'
    assert ModuleState.from_json(old, 2.0).roles[2].strategy is Strategy.MOVE


def test_pools_filter_by_role_and_strategy_and_modes_know_their_other():
    from mgr_sla.core.state import Strategy
    s = ModuleState.initial(0.0)
    s.roles = {7: PoolRole(Role.NORMAL, strategy=Strategy.COPY), 3: PoolRole(Role.NORMAL),
               5: PoolRole(Role.URGENT)}
    assert s.pools() == [3, 5, 7]
    assert s.pools(role=Role.NORMAL) == [3, 7] and s.pools(role=Role.URGENT) == [5]
    assert s.pools(role=Role.NORMAL, strategy=Strategy.MOVE) == [3]
    assert s.pools(strategy=Strategy.COPY) == [7]
    assert Mode.SHARED.other() is Mode.ISOLATED and Mode.ISOLATED.other() is Mode.SHARED
