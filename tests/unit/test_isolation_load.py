"""What isolating the normal pools does to the normal OSDs' PG counts (pure),
and the tick holding a pool whose isolation would take one past its limit."""
from __future__ import annotations

from dataclasses import replace

from mgr_sla.core.decision import DecisionState, Mode, Thresholds
from mgr_sla.core.gates import ClusterHealth, PgCounts
from mgr_sla.core.isolation_load import hold, isolation_load, returns_of
from mgr_sla.core.models.registry import targets
from mgr_sla.core.pg_slots import PgLimit
from mgr_sla.core.state import PoolRole, Role, Strategy
from mgr_sla.core.tick import PoolNow, TickInputs, plan_tick

HDD = (0, 2, 4, 6)
SSD = frozenset({1, 3, 5, 7})
DEFAULT = PgLimit(250, 3.0, "the OSD")  # 750 PGs at most


def pairs_from(osd: int, n: int, pool: int = 2, first: int = 0) -> dict[str, tuple]:
    """n PGs of `pool`, each with one replica moved from `osd` to an SSD."""
    return {f"{pool}.{first + i:x}": ((osd, 1 + 2 * (i % 4)),) for i in range(n)}


def counts(**by_osd: int) -> dict[int, int]:
    out = dict.fromkeys(HDD, 0)
    out.update({int(k[3:]): v for k, v in by_osd.items()})
    return out


def test_only_pairs_to_urgent_osds_from_normal_ones_come_back() -> None:
    pairs = {"2.0": ((0, 1), (2, 4)),  # one to an SSD, one hdd-to-hdd (the balancer's)
             "2.1": ((4, 3),), "2.2": ((3, 5),)}  # an SSD to an SSD: no normal source
    assert returns_of(pairs, SSD, frozenset(HDD)) == {0: 1, 4: 1}


def test_a_split_while_shared_puts_an_hdd_osd_over_its_hard_limit() -> None:
    """Before the split isolation fits; the split doubles the PGs on osd.4 and
    its children take their parent's pairs: isolating then brings twice as
    many back, past the 750 osd.4 holds."""
    limits = dict.fromkeys(HDD, DEFAULT)
    before = isolation_load(counts(osd4=340), {2: pairs_from(4, 40)}, SSD, limits, {2: "bulk"})
    assert before.over == () and before.worst is not None
    assert (before.worst.osd, before.worst.pgs) == (4, 380)
    children = pairs_from(4, 40, first=40)  # 2.28.. inherit 2.0..'s pairs
    after = isolation_load(counts(osd4=680), {2: {**pairs_from(4, 40), **children}}, SSD,
                           limits, {2: "bulk"})
    worst = after.worst
    assert worst is not None and worst.over and after.over == (worst,)
    assert (worst.osd, worst.pgs, worst.now, worst.pools) == (4, 760, 680, ("bulk",))
    why = worst.reason()
    assert "760 PGs on osd.4" in why and "80 back from pools bulk" in why
    assert "the 750 PGs it holds at most (mon_max_pg_per_osd 250 x " \
           "osd_max_pg_per_osd_hard_ratio 3 as osd.4 runs them)" in why
    assert "osd_max_pg_per_osd_hard_ratio on osd.4" in why and "pg_num of bulk" in why
    assert worst.to_dict() == {"osd": 4, "pgs": 760, "pgs_now": 680, "pgs_arriving": 0,
                               "hard_limit": 750, "limit_basis": "the OSD", "over": True,
                               "pools": ["bulk"]}


def test_the_worst_is_the_fullest_against_its_own_limit_and_an_unknown_limit_is_never_over(
        ) -> None:
    lowered = PgLimit(100, 1.0, "the config database")  # 100 at most
    load = isolation_load(counts(osd0=700, osd2=95, osd4=900),
                          {2: pairs_from(0, 10), 3: {**pairs_from(2, 10, pool=3),
                                                     **pairs_from(4, 10, pool=3, first=10)}},
                          SSD, {0: DEFAULT, 2: lowered}, {2: "a", 3: "b"})
    assert [a.osd for a in load.after] == [2, 0, 4]  # 105/100, 710/750, osd.4: no limit
    assert [a.osd for a in load.over] == [2]
    assert "(from the config database)" in load.over[0].reason()
    assert not load.after[2].over and load.after[2].limit is None


def test_pgs_on_their_way_count_with_the_report() -> None:
    load = isolation_load(counts(osd0=700), {2: pairs_from(0, 30)}, SSD, {0: DEFAULT},
                          arriving={0: 30})
    assert load.worst is not None and load.worst.pgs == 760 and load.worst.arriving == 30
    assert "730 it holds, 30 of them on their way" in load.worst.reason()


def test_no_pairs_nothing_to_project() -> None:
    """A copy pool shares by one more copy and isolates by dropping it: no pair."""
    load = isolation_load(counts(osd0=749), {2: {}}, SSD, {0: DEFAULT})
    assert load.worst is None and load.over == () and load.returning == {}


def test_hold_takes_the_pools_one_by_one_and_holds_the_one_that_does_not_fit() -> None:
    load = isolation_load(counts(osd0=700), {2: pairs_from(0, 30), 3: pairs_from(0, 40, 3),
                                             4: pairs_from(2, 5, 4)},
                          SSD, dict.fromkeys(HDD, DEFAULT), {2: "a", 3: "b", 4: "c"})
    held = hold(load, [4, 3, 2])
    # c (5 back) and a (30) first: 730 on osd.0; b's 40 would make it 770
    assert list(held) == [3]
    assert "isolating it would put 770 PGs on osd.0 (700 it holds, 70 back from pools a, b)" \
        in held[3]
    assert "Held on its shared placement" in held[3]
    # a pool whose pairs go anyway counts first: then a does not fit either
    assert sorted(hold(load, [2, 4], committed=[3])) == [2]
    assert hold(load, [2, 4]) == {}


def test_a_limit_lowered_below_what_an_osd_holds_holds_any_pool_bringing_pgs_there() -> None:
    load = isolation_load(counts(osd0=300), {2: pairs_from(0, 1)}, SSD,
                          {0: PgLimit(200, 1.0, "the OSD")}, {2: "a"})
    assert list(hold(load, [2])) == [2]


# ---- the tick --------------------------------------------------------------------

CLEAN = ClusterHealth(PgCounts(total=64), misplaced_ratio=0.0)
MOVE = PoolRole(Role.NORMAL, strategy=Strategy.MOVE)


def shared_inputs(**kw: object) -> TickInputs:
    pools = (PoolNow(2, "bulk", MOVE, "sla_shared", 3, targets(MOVE)),
             PoolNow(3, "logs", MOVE, "sla_shared", 3, targets(MOVE)))
    load = isolation_load(counts(osd0=700), {2: pairs_from(0, 30), 3: pairs_from(0, 40, 3)},
                          SSD, dict.fromkeys(HDD, DEFAULT), {2: "bulk", 3: "logs"})
    base = TickInputs(now=1000.0, state=DecisionState(Mode.SHARED, 0.0, quiet_since=0.0),
                      urgent_iops=0.0, thresholds=Thresholds(100.0, 50.0), min_dwell_secs=60.0,
                      health=CLEAN, max_misplaced_ratio=0.05, pools=pools, isolation=load)
    return replace(base, **kw)  # type: ignore[arg-type]


def test_a_switch_to_isolated_holds_the_pool_that_would_take_an_hdd_past_its_limit() -> None:
    plan = plan_tick(shared_inputs(urgent_iops=500.0))
    assert plan.switch and plan.state.mode is Mode.ISOLATED
    assert [(c.pool, c.to_rule) for c in plan.pool_changes] == [("bulk", "sla_isolated_normal")]
    assert list(plan.held) == [3] and "770 PGs on osd.0" in plan.held[3]
    assert [g.name.value for g in plan.gates] == ["normal_pg_limit"]
    assert plan.gates[0].detail.startswith("pools logs held on their shared placement")
    # the next tick, bulk isolated (its pairs gone, its PGs on their way): logs stays held
    after = isolation_load(counts(osd0=700), {3: pairs_from(0, 40, 3)}, SSD,
                           dict.fromkeys(HDD, DEFAULT), {3: "logs"}, arriving={0: 30})
    isolated = DecisionState(Mode.ISOLATED, 1000.0)
    pools = (PoolNow(2, "bulk", MOVE, "sla_isolated_normal", 3, targets(MOVE)),
             PoolNow(3, "logs", MOVE, "sla_shared", 3, targets(MOVE)))
    plan = plan_tick(shared_inputs(now=1001.0, state=isolated, urgent_iops=500.0, pools=pools,
                                   isolation=after))
    assert plan.pool_changes == () and list(plan.held) == [3]
    # room again (the limit raised): logs isolates
    roomy = replace(after, limits=dict.fromkeys(HDD, PgLimit(300, 3.0, "the OSD")))
    plan = plan_tick(shared_inputs(now=1002.0, state=isolated, urgent_iops=500.0, pools=pools,
                                   isolation=roomy))
    assert [c.pool for c in plan.pool_changes] == ["logs"] and plan.held == {}


def test_a_pool_sent_back_is_held_too_and_shared_mode_shows_the_hold_to_come() -> None:
    plan = plan_tick(shared_inputs(sent_back=frozenset({2, 3})))
    assert [c.pool for c in plan.pool_changes] == ["bulk"] and list(plan.held) == [3]
    # shared, nothing sent back: nothing held now, the hold a switch would meet is shown
    plan = plan_tick(shared_inputs())
    assert plan.pool_changes == () and plan.held == {} and plan.gates == ()
    assert [g.name.value for g in plan.holds] == ["normal_pg_limit"]


def test_without_a_load_or_within_the_limits_isolation_goes_as_before() -> None:
    for load in (None, replace(shared_inputs().isolation,  # type: ignore[type-var]
                               limits=dict.fromkeys(HDD, PgLimit(300, 3.0, "the OSD")))):
        plan = plan_tick(shared_inputs(urgent_iops=500.0, isolation=load))
        assert [c.pool for c in plan.pool_changes] == ["bulk", "logs"] and plan.held == {}
        assert plan.gates == ()
