"""The module's tick as one pure step: plain data in, a plan out."""
from __future__ import annotations

from dataclasses import replace

import pytest

from mgr_sla.core.decision import DecisionState, Mode, Thresholds
from mgr_sla.core.gates import ClusterHealth, PgCounts
from mgr_sla.core.models.registry import targets
from mgr_sla.core.state import PoolRole, Role, Strategy, UrgentPlacement
from mgr_sla.core.tick import PoolNow, TickInputs, TickPlan, plan_tick

CLEAN = ClusterHealth(PgCounts(total=64), misplaced_ratio=0.0)
NORMAL = PoolRole(Role.NORMAL)
URGENT = PoolRole(Role.URGENT)


def pool_now(pool_id: int, name: str, role: PoolRole, rule: str, size: int = 0,
             min_size: int = 0) -> PoolNow:
    """The pool as the shell hands it over: with its strategy's targets."""
    return PoolNow(pool_id, name, role, rule, size, targets(role), min_size)


def rules(plan: TickPlan) -> list[tuple[int, str, str, str]]:
    return [(c.pool_id, c.pool, c.from_rule, c.to_rule) for c in plan.pool_changes]


def inputs(**kw: object) -> TickInputs:
    base = TickInputs(
        now=1000.0, state=DecisionState(Mode.ISOLATED, 0.0, quiet_since=0.0), urgent_iops=0.0,
        thresholds=Thresholds(100.0, 50.0), min_dwell_secs=60.0, health=CLEAN,
        max_misplaced_ratio=0.05,
        pools=(pool_now(1, "fast", URGENT, "sla_isolated_urgent"),
               pool_now(2, "bulk", NORMAL, "sla_isolated_normal")))
    return replace(base, **kw)  # type: ignore[arg-type]


def test_quiet_past_the_dwell_shares_and_moves_the_normal_pool() -> None:
    plan = plan_tick(inputs())
    assert plan.switch and plan.state.mode is Mode.SHARED and plan.gates == ()
    assert rules(plan) == [(2, "bulk", "sla_isolated_normal", "sla_shared")]


def test_nothing_to_do_when_the_pools_are_where_the_mode_wants() -> None:
    shared = DecisionState(Mode.SHARED, 0.0, quiet_since=0.0)
    plan = plan_tick(inputs(state=shared, pools=(
        pool_now(2, "bulk", NORMAL, "sla_shared"),)))
    assert not plan.switch and plan.pool_changes == () and plan.gates == ()


def test_urgent_load_isolates_at_once() -> None:
    shared = DecisionState(Mode.SHARED, 0.0, quiet_since=0.0)
    plan = plan_tick(inputs(state=shared, urgent_iops=500.0,
                            pools=(pool_now(2, "bulk", NORMAL, "sla_shared"),)))
    assert plan.switch and plan.state.mode is Mode.ISOLATED
    assert rules(plan) == [(2, "bulk", "sla_shared", "sla_isolated_normal")]
    assert "high threshold" in plan.decision.reason


@pytest.mark.parametrize("health, gate", [
    (replace(CLEAN, pgs=PgCounts(64, degraded=2)), "pgs_degraded"),
    (replace(CLEAN, pgs=PgCounts(64, unknown=1)), "pgs_unknown"),
    (replace(CLEAN, pgs=PgCounts(64, inactive=1)), "pgs_inactive"),
    (replace(CLEAN, misplaced_ratio=0.2), "misplaced"),
    (replace(CLEAN, down_osds=(3,)), "osd_down"),
    (replace(CLEAN, unverified="rules fail verification: R3"), "rules_unverified"),
    (replace(CLEAN, missing_rules=("sla_shared",)), "rules_missing"),
])
def test_every_gate_holds_the_switch_to_shared(health: ClusterHealth, gate: str) -> None:
    plan = plan_tick(inputs(health=health))
    assert not plan.switch and plan.state.mode is Mode.ISOLATED
    assert [g.name.value for g in plan.gates] == [gate]
    assert plan.newly_blocked == (gate,)
    assert plan.pool_changes == ()
    # the quiet run keeps counting while held
    assert plan.state.quiet_since == 0.0


@pytest.mark.parametrize("health, blocks", [
    (replace(CLEAN, pgs=PgCounts(64, degraded=2)), False),
    (replace(CLEAN, misplaced_ratio=0.9), False),
    (replace(CLEAN, unverified="verification pending"), False),
    (replace(CLEAN, down_osds=(3,)), False),
    (replace(CLEAN, pgs=PgCounts(64, inactive=1), inactive_by_pool={1: 1}), False),  # urgent
    (replace(CLEAN, pgs=PgCounts(64, inactive=1), inactive_by_pool={2: 1}), True),
    (replace(CLEAN, missing_rules=("sla_shared",)), False),  # not the one it goes to
    (replace(CLEAN, missing_rules=("sla_isolated_normal",)), True),
])
def test_isolation_is_held_only_by_what_concerns_the_pool(health: ClusterHealth,
                                                          blocks: bool) -> None:
    """The switch to isolated always goes; a move pool's change waits only for
    its own PGs to be active and for the rule it goes to."""
    shared = DecisionState(Mode.SHARED, 0.0)
    plan = plan_tick(inputs(state=shared, urgent_iops=500.0, health=health,
                            pools=(pool_now(2, "bulk", NORMAL, "sla_shared"),)))
    assert plan.switch and plan.state.mode is Mode.ISOLATED
    assert bool(plan.gates) is blocks and (plan.pool_changes == ()) is blocks


def test_a_pool_sent_back_isolates_whatever_the_gates_say() -> None:
    """What its sharing caused (PGs stuck on an urgent OSD at its limit) is
    what holds its PGs inactive: no gate holds the pool's way back."""
    shared = DecisionState(Mode.SHARED, 0.0, quiet_since=0.0)
    stuck = replace(CLEAN, pgs=PgCounts(64, inactive=2), inactive_by_pool={2: 2},
                    missing_rules=("sla_hybrid",), down_osds=(5,))
    plan = plan_tick(inputs(state=shared, health=stuck, sent_back=frozenset({2}),
                            pools=(pool_now(2, "bulk", NORMAL, "sla_shared"),)))
    assert rules(plan) == [(2, "bulk", "sla_shared", "sla_isolated_normal")]
    assert plan.gates == ()


def test_isolation_is_never_held_by_a_change_toward_shared() -> None:
    """A pool kept isolated (an urgent OSD past nearfull) goes back at once
    while another pool waits for its step toward shared, and while the
    shared gates hold that one."""
    shared = DecisionState(Mode.SHARED, 0.0, quiet_since=0.0)
    full = replace(CLEAN, urgent_fill_after=0.9, nearfull_ratio=0.85)
    pools = (_copy_pool(2, 64, True), _copy_pool(3, 64))
    plan = plan_tick(inputs(state=shared, health=full, pools=pools, keep_isolated=frozenset({2}),
                            max_step_pgs=32, step_wait_secs=5.0, last_step_at=999.0))
    assert [(c.pool_id, c.to_size) for c in plan.pool_changes] == [(2, 3)]
    assert plan.waiting == ("p3",) and [g.name.value for g in plan.gates] == ["urgent_capacity"]


def test_a_blocked_episode_is_counted_once() -> None:
    degraded = replace(CLEAN, pgs=PgCounts(64, degraded=2))
    first = plan_tick(inputs(health=degraded))
    again = plan_tick(inputs(health=degraded,
                             blocked_before=frozenset(g.name.value for g in first.gates)))
    assert first.newly_blocked == ("pgs_degraded",) and again.newly_blocked == ()


def test_pools_converge_to_the_mode_in_force_while_a_switch_is_blocked() -> None:
    """A new urgent pool still reaches its region while shared waits."""
    degraded = replace(CLEAN, pgs=PgCounts(64, degraded=2))
    plan = plan_tick(inputs(health=degraded, pools=(
        pool_now(1, "fast", URGENT, "replicated_rule"),
        pool_now(2, "bulk", NORMAL, "sla_isolated_normal"))))
    assert not plan.switch
    assert rules(plan) == [(1, "fast", "replicated_rule",
                                            "sla_isolated_urgent")]


def test_hybrid_urgent_pool_wants_sla_hybrid() -> None:
    hybrid = PoolRole(Role.URGENT, UrgentPlacement.HYBRID)
    plan = plan_tick(inputs(urgent_iops=60.0, pools=(pool_now(1, "fast", hybrid,
                                                             "sla_isolated_urgent"),)))
    assert rules(plan) == [(1, "fast", "sla_isolated_urgent", "sla_hybrid")]


def test_dry_run_decides_but_changes_no_pool() -> None:
    plan = plan_tick(inputs(dry_run=True))
    assert plan.switch and plan.state.mode is Mode.SHARED and plan.pool_changes == ()


def test_pinned_mode_wins_over_the_rate() -> None:
    plan = plan_tick(inputs(urgent_iops=900.0, pinned=Mode.SHARED))
    assert plan.switch and plan.state.mode is Mode.SHARED


def test_no_rate_yet_keeps_the_mode() -> None:
    plan = plan_tick(inputs(urgent_iops=None))
    assert not plan.switch and plan.pool_changes == ()


COPY = PoolRole(Role.NORMAL, strategy=Strategy.COPY, base_size=3, base_min_size=2)


def test_a_copy_pool_shares_by_one_more_copy_and_isolates_by_dropping_it() -> None:
    plan = plan_tick(inputs(pools=(pool_now(2, "bulk", COPY, "sla_isolated_normal", 3, 2),)))
    assert plan.switch and len(plan.pool_changes) == 1
    change = plan.pool_changes[0]
    assert (change.to_rule, change.from_size, change.to_size) == ("sla_copy_3", 3, 4)
    assert change.toward_shared and change.size_changes and change.rule_changes
    shared = DecisionState(Mode.SHARED, 0.0, quiet_since=0.0)
    plan = plan_tick(inputs(state=shared, urgent_iops=500.0,
                            pools=(pool_now(2, "bulk", COPY, "sla_copy_3", 4, 2),)))
    change = plan.pool_changes[0]
    assert (change.from_size, change.to_size, change.toward_shared) == (4, 3, False)
    assert change.to_rule == "sla_isolated_normal"  # off the urgent take once isolated


def test_a_pool_kept_isolated_does_not_follow_shared_mode() -> None:
    plan = plan_tick(inputs(pools=(pool_now(2, "bulk", COPY, "sla_isolated_normal", 3),),
                            keep_isolated=frozenset({2})))
    assert plan.switch and plan.pool_changes == ()
    # and a kept pool that is shared goes back
    shared = DecisionState(Mode.SHARED, 0.0, quiet_since=0.0)
    plan = plan_tick(inputs(state=shared, pools=(pool_now(2, "bulk", COPY, "sla_copy_3", 4),),
                            keep_isolated=frozenset({2})))
    assert [(c.from_size, c.to_size, c.to_rule) for c in plan.pool_changes] == [
        (4, 3, "sla_isolated_normal")]


def test_a_pool_without_a_target_for_the_mode_is_left_alone() -> None:
    plan = plan_tick(inputs(pools=(PoolNow(2, "bulk", NORMAL, "sla_isolated_normal"),)))
    assert plan.switch and plan.pool_changes == ()


def test_a_copy_pools_min_size_converges_every_tick() -> None:
    """A size change resets min_size; a failover between the two steps must
    not leave it so: the next tick sets it back, in either mode."""
    shared = DecisionState(Mode.SHARED, 0.0, quiet_since=0.0)
    for state, size, rule in ((shared, 4, "sla_copy_3"),
                              (DecisionState(Mode.ISOLATED, 999.0), 3, "sla_isolated_normal")):
        plan = plan_tick(inputs(state=state, urgent_iops=30.0, pools=(
            pool_now(2, "bulk", COPY, rule, size, min_size=1),)))
        assert [(c.size_changes, c.from_min_size, c.to_min_size, c.toward_shared)
                for c in plan.pool_changes] == [(False, 1, 2, False)]  # isolation's gates
    plan = plan_tick(inputs(state=shared, urgent_iops=30.0, pools=(
        pool_now(2, "bulk", COPY, "sla_copy_3", 4, min_size=2),)))
    assert plan.pool_changes == ()


def test_inactive_pgs_never_hold_a_copy_pool_dropping_its_copy() -> None:
    """The urgent copy is each shared copy pool PG's primary: an urgent OSD that
    fails leaves PGs inactive, and dropping the copy is the fix. A move pool's
    isolation (data moves back) waits for its own PGs, and holds no other pool."""
    inactive = replace(CLEAN, pgs=PgCounts(64, inactive=8, degraded=8), down_osds=(7,),
                       inactive_by_pool={2: 4, 3: 4})
    shared = DecisionState(Mode.SHARED, 0.0, quiet_since=0.0)
    copy = pool_now(2, "bulk", COPY, "sla_copy_3", 4, min_size=2)
    plan = plan_tick(inputs(state=shared, urgent_iops=500.0, health=inactive, pools=(copy,)))
    assert plan.switch and plan.gates == ()
    assert [(c.to_rule, c.to_size) for c in plan.pool_changes] == [("sla_isolated_normal", 3)]
    moving = pool_now(3, "moved", NORMAL, "sla_shared")
    plan = plan_tick(inputs(state=shared, urgent_iops=500.0, health=inactive,
                            pools=(copy, moving)))
    assert plan.switch and [g.name.value for g in plan.gates] == ["pgs_inactive"]
    assert [c.pool_id for c in plan.pool_changes] == [2]  # the copy pool goes all the same
    assert "moved" in plan.gates[0].detail


def _copy_pool(pool_id: int, pgs: int, shared: bool = False) -> PoolNow:
    role = COPY
    rule, size = ("sla_copy_3", 4) if shared else ("sla_isolated_normal", 3)
    return PoolNow(pool_id, f"p{pool_id}", role, rule, size, targets(role), 2, pgs)


def test_a_switch_to_shared_goes_a_bounded_step_at_a_time() -> None:
    """Pools in order up to max_step_pgs (a larger pool alone), the next step
    no sooner than step_wait_secs later; isolation is never paced."""
    pools = (_copy_pool(2, 64), _copy_pool(3, 128), _copy_pool(4, 512), _copy_pool(5, 32))
    plan = plan_tick(inputs(pools=pools, max_step_pgs=200, step_wait_secs=5.0))
    assert plan.switch and [c.pool_id for c in plan.pool_changes] == [2, 3]
    assert plan.waiting == ("p4", "p5")
    shared = DecisionState(Mode.SHARED, 1000.0, quiet_since=0.0)
    stepped = (_copy_pool(2, 64, True), _copy_pool(3, 128, True)) + pools[2:]
    early = plan_tick(inputs(now=1003.0, state=shared, pools=stepped, max_step_pgs=200,
                             step_wait_secs=5.0, last_step_at=1000.0))
    assert early.pool_changes == () and early.waiting == ("p4", "p5")
    later = plan_tick(inputs(now=1005.0, state=shared, pools=stepped, max_step_pgs=200,
                             step_wait_secs=5.0, last_step_at=1000.0))
    assert [c.pool_id for c in later.pool_changes] == [4] and later.waiting == ("p5",)
    # the step's PGs still peering: the gates hold the next one
    peering = replace(CLEAN, pgs=PgCounts(64, inactive=8))
    held_plan = plan_tick(inputs(now=1010.0, state=shared, pools=stepped, health=peering,
                                 max_step_pgs=200, step_wait_secs=5.0, last_step_at=1000.0))
    assert held_plan.pool_changes == () and [g.name.value for g in held_plan.gates] == [
        "pgs_inactive"]
    assert held_plan.waiting == ("p4", "p5")
    # the step's PGs not yet reported after its own epoch: the next one waits too
    stale = plan_tick(inputs(now=1010.0, state=shared, pools=stepped, max_step_pgs=200,
                             step_wait_secs=5.0, last_step_at=1000.0, last_step_settled=False))
    assert stale.pool_changes == () and stale.waiting == ("p4", "p5") and stale.gates == ()
    # urgent load: every shared pool isolates at once, whatever the last step
    isolating = plan_tick(inputs(now=1001.0, state=shared, urgent_iops=500.0, pools=(
        _copy_pool(2, 64, True), _copy_pool(3, 128, True), _copy_pool(6, 600, True)),
        max_step_pgs=200, step_wait_secs=5.0, last_step_at=1000.0))
    assert [c.pool_id for c in isolating.pool_changes] == [2, 3, 6]
    assert isolating.waiting == ()
    # 0: one step
    assert len(plan_tick(inputs(pools=pools, max_step_pgs=0)).pool_changes) == 4


def test_copies_placing_by_design_do_not_hold_the_next_step() -> None:
    """The last step's pools are undersized until their copy is placed: the
    next step waits for them to be active, not clean; degradation beyond
    that still holds it."""
    from mgr_sla.core.gates import shared_gates
    placing = replace(CLEAN, pgs=PgCounts(64, degraded=16), degraded_by_design=16)
    assert shared_gates(placing, 0.05) == []
    beyond = replace(placing, pgs=PgCounts(64, degraded=20))
    gates = shared_gates(beyond, 0.05)
    assert [g.name.value for g in gates] == ["pgs_degraded"]
    assert "4 PGs degraded" in gates[0].detail and "besides 16 placing" in gates[0].detail
