"""An operator's size or min_size on a managed pool, told from the module's
own commands (core/by_hand.py), and the tick leaving a refused one alone
(core/tick.py `hands_off`). Pure: plain data in and out."""
from __future__ import annotations

from dataclasses import replace

from mgr_sla.core.by_hand import (
    PoolSizes,
    by_hand_view,
    hands_off,
    intended,
    judge,
    release_role,
)
from mgr_sla.core.decision import DecisionState, Mode, Thresholds
from mgr_sla.core.gates import ClusterHealth, PgCounts
from mgr_sla.core.models.registry import targets
from mgr_sla.core.state import ModuleState, PoolRole, Role, SizeRecord, Strategy
from mgr_sla.core.tick import PoolChange, PoolNow, TickInputs, plan_tick

COPY = PoolRole(Role.NORMAL, original_rule="replicated_rule", strategy=Strategy.COPY,
                base_size=3, base_min_size=2)
RULES = {"sla_isolated_normal", "sla_shared", "sla_copy_3", "sla_copy_4"}
ISOLATED = SizeRecord(3, 2)  # the module keeps the pool at its base
SHARED = SizeRecord(4, 2)  # the module put it at base + 1, on sla_copy_3


def pool(size: int, min_size: int) -> PoolSizes:
    return PoolSizes("copied", size, min_size)


def test_an_operators_min_size_on_an_isolated_pool_becomes_its_base() -> None:
    judged = judge(pool(3, 1), COPY, ISOLATED, RULES, 50.0)
    assert judged.role == replace(COPY, base_min_size=1)
    assert judged.record == SizeRecord(3, 1, min_size_by_hand_at=50.0)
    assert judged.change is not None and judged.change.refusal is None
    assert "min_size 1 set by hand" in judged.change.line()
    # the next tick: the pool is as recorded, nothing more to take
    again = judge(pool(3, 1), judged.role, judged.record, RULES, 60.0)
    assert again.change is None and again.role is None and again.record == judged.record


def test_the_base_min_size_holds_while_shared_too() -> None:
    judged = judge(pool(4, 1), COPY, SHARED, RULES, 50.0)
    assert judged.role == replace(COPY, base_min_size=1)
    assert judged.record is not None and (judged.record.size, judged.record.min_size) == (4, 1)


def test_the_mons_min_size_reset_after_the_modules_size_change_is_not_an_operators() -> None:
    """Saved before its commands: size 4 with min_size 2, from (3, 2). The map
    may show the pool as before, or at size 4 with the mon's own min_size
    (a failover between the two commands leaves it so): neither is taken."""
    under_way = SizeRecord(4, 2, before=(3, 2))
    for sizes in ((3, 2), (4, 3), (4, 1)):
        judged = judge(pool(*sizes), COPY, under_way, RULES, 50.0)
        assert judged.change is None and judged.role is None, sizes
        assert judged.record == under_way
    done = judge(pool(4, 2), COPY, under_way, RULES, 50.0)
    assert done.change is None and done.record == SHARED


def test_an_operators_size_on_an_isolated_pool_becomes_its_base_with_its_rule() -> None:
    judged = judge(pool(4, 2), COPY, ISOLATED, RULES, 50.0)
    assert judged.role == replace(COPY, base_size=4, base_min_size=2)
    assert judged.record == SizeRecord(4, 2, size_by_hand_at=50.0)
    # the same without sla_copy_4: refused, naming the rule and the fix
    refused = judge(pool(4, 2), COPY, ISOLATED, RULES - {"sla_copy_4"}, 50.0)
    assert refused.role is None and refused.change is not None
    assert refused.record is not None and refused.record.refused == refused.change.line()
    assert (refused.record.size, refused.record.min_size) == (3, 2)  # what the module set
    line = refused.change.line()
    for words in ("pool copied: size 4 set by hand (the module had set 3)", "sla_copy_4",
                  "'ceph sla pool set copied normal --strategy copy'",
                  "'ceph osd pool set copied size 3'", "keeps it isolated"):
        assert words in line, line


def test_an_operators_size_while_shared_is_refused_unless_pool_set_again() -> None:
    """At N + 1 the module cannot tell N from N + 1 copies meant: refused;
    `pool set` again takes the pool's size as its base."""
    for size in (3, 5):
        refused = judge(pool(size, 2), COPY, SHARED, RULES, 50.0)
        assert refused.role is None and refused.change is not None
        assert refused.change.refusal is not None and "shared" in refused.change.refusal
        assert refused.change.expected == 4
    asked = judge(pool(5, 3), COPY, SHARED, RULES, 50.0, asked=True)
    assert asked.role == replace(COPY, base_size=5, base_min_size=3)
    assert asked.record is not None and not asked.record.refused


def test_sizes_the_copy_strategy_cannot_keep_are_refused() -> None:
    for sizes in ((1, 1), (9, 5)):
        judged = judge(pool(*sizes), COPY, ISOLATED, RULES | {"sla_copy_9"}, 50.0, asked=True)
        assert judged.role is None and judged.change is not None, sizes
        assert judged.change.refusal is not None and "sizes 2 to 8" in judged.change.refusal


def test_a_min_size_above_the_base_size_is_refused() -> None:
    for sizes, record in (((4, 4), SHARED), ((3, 4), ISOLATED), ((3, 0), ISOLATED)):
        judged = judge(pool(*sizes), COPY, record, RULES, 50.0)
        assert judged.role is None and judged.change is not None, sizes
        assert judged.change.what == "min_size" and judged.change.refusal is not None
        assert f"min_size {record.min_size}'" in judged.change.refusal  # the way back
    assert hands_off({3: judge(pool(4, 4), COPY, SHARED, RULES, 50.0).record}) == {3}


def test_a_refusal_ends_when_the_operator_sets_the_modules_values_back() -> None:
    refused = judge(pool(5, 3), COPY, SHARED, RULES, 50.0).record
    assert refused is not None and refused.refused
    back = judge(pool(4, 2), COPY, refused, RULES, 60.0)
    assert back.change is None and back.record == SHARED


def test_the_move_and_ec_strategies_and_urgent_pools_keep_no_size() -> None:
    for role in (PoolRole(Role.NORMAL), PoolRole(Role.NORMAL, strategy=Strategy.EC),
                 PoolRole(Role.URGENT),
                 replace(COPY, strategy=Strategy.MOVE, auto=True)):  # an auto pool on move
        judged = judge(pool(5, 1), role, ISOLATED, RULES, 50.0)
        assert judged == judged.__class__(None), role
        assert release_role(role, pool(5, 1), ISOLATED) == role


def test_a_pool_recorded_before_the_records_is_taken_as_the_module_wants_it() -> None:
    assert judge(pool(4, 2), COPY, None, RULES, 50.0).record == SizeRecord(4, 2)
    assert judge(pool(3, 1), COPY, None, RULES, 50.0).record is None  # converged first


def test_the_record_saved_before_the_ticks_commands() -> None:
    up = PoolChange(3, "copied", COPY, "sla_isolated_normal", "sla_copy_3", 3, 4, True, 2, 2)
    assert intended(up, None) == SizeRecord(4, 2, before=(3, 2))
    # a min_size set back after the mon's reset: the notes of the record carry on
    noted = SizeRecord(4, 2, min_size_by_hand_at=7.0)
    back = PoolChange(3, "copied", COPY, "sla_copy_3", "sla_copy_3", 4, 4, False, 3, 2)
    assert intended(back, noted) == SizeRecord(4, 2, before=(4, 3), min_size_by_hand_at=7.0)
    rule_only = PoolChange(3, "copied", COPY, "sla_shared", "sla_isolated_normal", 3, None,
                           False)
    assert intended(rule_only, noted) is None


def test_pool_rm_leaves_an_operators_values_as_they_are() -> None:
    assert release_role(COPY, pool(5, 3), SHARED) == replace(COPY, base_size=5, base_min_size=3)
    assert release_role(COPY, pool(4, 1), SHARED) == replace(COPY, base_min_size=1)
    # a min_size the base size cannot have: the mon's, once the urgent copy goes
    assert release_role(COPY, pool(4, 4), SHARED) == replace(COPY, base_min_size=None)
    assert release_role(COPY, pool(4, 2), SizeRecord(4, 2, before=(3, 2))) == COPY


def test_status_shows_a_base_taken_from_an_operator_and_a_refusal() -> None:
    judged = judge(pool(3, 1), COPY, ISOLATED, RULES, 50.0)
    assert judged.role is not None
    assert by_hand_view(judged.role, judged.record) == {
        "base_min_size": {"value": 1, "set_at": 50.0}}
    refused = judge(pool(5, 3), COPY, SHARED, RULES, 50.0).record
    view = by_hand_view(COPY, refused)
    assert view is not None and "size 5 set by hand" in view["refused"]
    assert by_hand_view(COPY, ISOLATED) is None


def test_the_records_survive_the_store() -> None:
    state = ModuleState.initial(0.0)
    state.sizes = {3: SizeRecord(4, 1, (3, 1), 5.0, 6.0, "pool copied: ..."), 4: SHARED}
    assert ModuleState.from_json(state.to_json(), 0.0).sizes == state.sizes
    state.forget_pools({4})
    assert list(state.sizes) == [4]


def test_the_tick_leaves_a_refused_pools_size_alone_and_keeps_it_isolated() -> None:
    """Shared mode, a copy pool at size 5 on sla_copy_3 by an operator's hand:
    its rule goes back to sla_isolated_normal (no normal data on the urgent
    OSDs), its size and min_size stay; without the hold the tick sets 4."""
    shared = DecisionState(Mode.SHARED, 0.0, quiet_since=0.0)
    now = PoolNow(3, "copied", COPY, "sla_copy_3", 5, targets(COPY), 3, 16)
    base = TickInputs(now=1000.0, state=shared, urgent_iops=0.0,
                      thresholds=Thresholds(100.0, 50.0), min_dwell_secs=60.0,
                      health=ClusterHealth(PgCounts(total=64), misplaced_ratio=0.0),
                      max_misplaced_ratio=0.05, pools=(now,))
    fought = plan_tick(base).pool_changes
    assert [(c.to_size, c.to_min_size) for c in fought] == [(4, 2)]
    held = plan_tick(replace(base, hands_off=frozenset({3}))).pool_changes
    assert [(c.to_rule, c.to_size, c.to_min_size, c.toward_shared) for c in held] == [
        ("sla_isolated_normal", None, None, False)]
    at_rest = replace(now, rule="sla_isolated_normal")
    assert plan_tick(replace(base, pools=(at_rest,), hands_off=frozenset({3}))
                     ).pool_changes == ()
