"""The admission as a pure function: plain facts in, for every managed normal
pool its strategy and whether it shares, with a case for every reason."""
from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from mgr_sla.core.admission import (
    SETTLE_SECS,
    AdmissionFacts,
    NormalPool,
    Placement,
    admit,
    choice_since,
    strategy_changes,
)
from mgr_sla.core.admission_facts import MonFacts, Projection
from mgr_sla.core.cluster import PoolInfo
from mgr_sla.core.decision import Mode
from mgr_sla.core.gain import MeasuredGain
from mgr_sla.core.mon_projection import PoolPgs
from mgr_sla.core.pg_slots import PgLimit, UrgentOsd
from mgr_sla.core.settings import Settings
from mgr_sla.core.state import PoolRole, Role, Strategy, SwitchRecord
from mgr_sla.core.switch_cost import Capacity

GIB = 2.0**30
LIMIT = PgLimit(250, 3.0, "the OSD")
RULES = frozenset({"sla_isolated_normal", "sla_shared", "sla_isolated_urgent", "sla_copy_3"})
RULE_IDS = {"sla_isolated_normal": 1, "sla_shared": 3, "sla_isolated_urgent": 2, "sla_copy_3": 5}
MOVE = PoolRole(Role.NORMAL, strategy=Strategy.MOVE)
COPY = PoolRole(Role.NORMAL, strategy=Strategy.COPY, base_size=3, base_min_size=2)
AUTO = replace(COPY, auto=True)
EVEN = {1: 8, 3: 8, 5: 8, 7: 8}  # a 32-PG pool's PGs per urgent OSD


def urgent(pgs: int = 40, used: float = 10 * GIB, limit: PgLimit | None = LIMIT
           ) -> dict[int, UrgentOsd]:
    """Four urgent OSDs of 100 GiB, one per failure domain."""
    return {o: UrgentOsd(1.0, -100 - o, pgs, used, 100 * GIB, limit) for o in (1, 3, 5, 7)}


def pool(pid: int = 9, role: PoolRole = MOVE, **kw: Any) -> NormalPool:
    info = PoolInfo(pid, f"p{pid}", 1, 3, min_size=2, pg_num=32, pg_num_target=32)
    base: dict[str, Any] = {
        "pool_id": pid, "name": f"p{pid}", "role": role, "info": info,
        "placement": Placement.ISOLATED, "stored_bytes": 1 * GIB, "read_fraction": 0.7,
        "projections": {"move": Projection(EVEN, "planned"),
                        "copy": Projection(EVEN, "crush")},
        "has_weight_set": True, "urgent_share": 0.25}
    base.update(kw)
    return NormalPool(**base)


def facts(*pools: NormalPool, **kw: Any) -> AdmissionFacts:
    cap = Capacity(360 * GIB, 0.85, 400 * GIB, 100 * GIB, 1000 * GIB, 0.9)
    mon = MonFacts(250, "pacific", tuple(PoolPgs(p.pool_id, 32, p.info.size, 1) for p in pools),
                   16, {1: 8, 5: 8}, RULE_IDS)
    base: dict[str, Any] = {
        "now": 1e6, "settings": Settings(), "mode": Mode.SHARED, "pinned": None,
        "pools": pools, "urgent": urgent(), "capacity": cap, "rules": RULES, "mon": mon}
    base.update(kw)
    return AdmissionFacts(**base)


def kept(f: AdmissionFacts, pid: int = 9) -> str | None:
    return admit(f).pools[pid].kept


def test_a_pool_that_fits_and_gains_shares() -> None:
    result = admit(facts(pool()))
    assert result.kept == {} and result.pools[9].strategy == "move"
    assert result.pools[9].verdict().slots is not None
    assert result.projected is not None and not result.projected.over


def test_the_strategys_conditions() -> None:
    """nosizechange: the mon refuses every size change, so copy cannot toggle it."""
    info = PoolInfo(9, "p9", 1, 3, min_size=2, pg_num=32, flags=frozenset({"nosizechange"}))
    why = kept(facts(pool(role=COPY, info=info)))
    assert why is not None and "nosizechange" in why
    auto = admit(facts(pool(role=AUTO, info=info, read_fraction=1.0))).pools[9]
    assert auto.choice.strategy == "move" and "nosizechange" in (auto.verdict("copy").blocked
                                                                 or "")


def test_isolation_too_slow() -> None:
    why = kept(facts(pool(stored_bytes=400 * GIB)))  # 100 MiB/s drain, 300 GiB back
    assert why is not None and "max_isolation_secs 60" in why


def test_rules_or_weight_set_not_installed() -> None:
    why = kept(facts(pool(has_weight_set=False)))
    assert why == "the pool's weight set not installed ('ceph sla rules apply')"
    why = kept(facts(pool(role=COPY), rules=RULES - {"sla_copy_3"}))
    assert why is not None and "sla_copy_3 not installed" in why


def test_the_mons_own_projection_on_the_size_raise() -> None:
    f = facts(pool(role=COPY))
    tight = replace(f, mon=replace(f.mon, limit=7))  # 32 x 4 > 7 x 16 in OSDs (Pacific)
    why = kept(tight)
    assert why is not None and "(ERANGE)" in why and "'osd pool set p9 size 4'" in why


@pytest.mark.parametrize("osds, what", [
    (urgent() | {7: UrgentOsd(1.0, -107, None, 0.0, 100 * GIB, LIMIT)}, "no PG count reported"),
    (urgent() | {7: UrgentOsd(1.0, -107, 40, 0.0, 100 * GIB, None)}, "PG limit not read yet"),
])
def test_nothing_proved_to_fit_shares_nothing_new(osds: dict[int, UrgentOsd], what: str) -> None:
    why = kept(facts(pool(), urgent=osds))
    assert why is not None and what in why and "osd.7" in why
    # a pool already shared stays as it is
    shared = pool(placement=Placement.SHARED, live=EVEN,
                  projections={"move": Projection(EVEN, "placed")})
    assert kept(facts(shared, urgent=osds)) is None


def test_pg_slots_on_the_mapping_each_osd_holds_and_its_own_limit() -> None:
    """Each urgent OSD holds 40 PGs; the pool adds 8 each, 16 on osd.1 (its
    CRUSH mapping is skewed); with a failure domain lost that passes osd.1's
    own limit of 60 (the mgr's 250 says nothing)."""
    tight = urgent() | {1: UrgentOsd(1.0, -101, 40, 10 * GIB, 100 * GIB,
                                     PgLimit(60, 1.0, "the OSD"))}
    skewed = {1: 16, 3: 8, 5: 8, 7: 0}
    why = kept(facts(pool(projections={"move": Projection(skewed, "planned")}),
                     urgent=tight))
    assert why is not None and "PGs on osd.1 with the urgent failure domain" in why
    assert "over 54 PGs, 90% of the 60 it holds at most" in why
    assert "the module's planned entries" in why
    assert kept(facts(pool(), urgent=tight)) is not None  # 40 + 8 + 48/3 = 64 > 54
    assert kept(facts(pool(), urgent=urgent(pgs=30) | {
        1: UrgentOsd(1.0, -101, 30, 10 * GIB, 100 * GIB, PgLimit(60, 1.0, "the OSD"))})) is None


def test_an_estimate_stands_in_until_the_mapping_is_known() -> None:
    why = kept(facts(pool(projections={}), urgent=urgent(pgs=40, limit=PgLimit(60, 3.0, "x"))))
    assert why is not None and "an estimate by weight" in why


def test_shared_pools_keep_their_room_and_the_strays_count_while_data_moves() -> None:
    """A shared pool is admitted first on its real placement; a pool between
    placements keeps its live PGs in the count (strays until its PGs moved)
    while its new ones arrive: the peak."""
    limit = PgLimit(70, 3.0, "the OSD")
    osds = urgent(pgs=48, limit=limit)  # 8 of them the shared pool's own
    shared = pool(2, placement=Placement.SHARED, live=EVEN,
                  projections={"move": Projection(EVEN, "placed")})
    result = admit(facts(pool(), shared, urgent=osds))
    assert result.pools[2].kept is None and result.pools[9].kept is not None
    moving = pool(2, placement=Placement.MOVING, live=EVEN)
    result = admit(facts(moving, urgent=urgent(pgs=40, limit=limit)))
    # 40 held (the live 8 among them) + 8 planned, a domain lost: 64 <= 70
    assert result.pools[2].kept is None
    assert result.pools[2].verdict().slots.pgs == 64  # type: ignore[union-attr]


def test_space_past_nearfull_on_the_same_mapping() -> None:
    """8 of 32 PGs of a 300 GiB pool on each urgent OSD at 60 GiB used: 135 GiB
    (the skewed one) passes 85 GiB."""
    why = kept(facts(pool(stored_bytes=300 * GIB), urgent=urgent(used=60 * GIB),
                     settings=Settings(max_isolation_secs=1e9)))
    assert why is not None and "past nearfull_ratio 85%" in why and "osd." in why


def test_the_write_budget_goes_to_the_best_gains_first() -> None:
    settings = Settings(max_urgent_drive_writes=0.2, min_gain=0)  # 80 GiB a day
    gain = {"copy": MeasuredGain(3.0, 2.8, 3.2, 600, 600, 900, 900, 1, 0.9, 1e6 - 60)}
    first = pool(2, COPY, stored_bytes=50 * GIB, measured=gain, read_fraction=0.9)
    second = pool(3, COPY, stored_bytes=50 * GIB, read_fraction=0.9)
    result = admit(facts(second, first, settings=settings))
    assert result.pools[2].kept is None
    why = result.pools[3].kept
    assert why is not None and "max_urgent_drive_writes" in why and "would write 50.0" in why
    assert kept(facts(second, first, settings=settings, pinned=Mode.SHARED), 3) is None


def test_the_gain_decides_unless_shared_mode_is_pinned() -> None:
    writes = pool(role=COPY, read_fraction=0.0)  # copy's model: 1.0x on writes
    why = kept(facts(writes))
    assert why is not None and "under min_gain 1.05x" in why
    assert kept(facts(writes, pinned=Mode.SHARED)) is None
    assert kept(facts(writes, settings=Settings(min_gain=0))) is None
    slow = MeasuredGain(0.8, 0.7, 0.9, 600, 600, 900, 900, 1, 0.7, 1e6 - 60)
    why = kept(facts(pool(measured={"move": slow})))
    assert why is not None and "0.80x (measured" in why


def test_placing_longer_than_the_usual_quiet_period() -> None:
    history = tuple(r for t in (0.0, 86400.0, 172800.0) for r in (
        SwitchRecord(1e6 - 86400 * 7 + t, "isolated", "shared", "quiet"),
        SwitchRecord(1e6 - 86400 * 7 + t + 30, "shared", "isolated", "busy")))
    why = kept(facts(pool(role=COPY, stored_bytes=20 * GIB, read_fraction=1.0),
                     history=history))
    assert why is not None and "longer than the usual quiet period (30 s" in why


def test_withheld_pgs_keep_every_pool_not_shared_yet() -> None:
    shared = pool(2, placement=Placement.SHARED, live=EVEN,
                  projections={"move": Projection(EVEN, "placed")})
    result = admit(facts(pool(), shared, withheld="Ceph reports PENDING_CREATING_PGS"))
    assert "PENDING_CREATING_PGS" in (result.pools[9].kept or "")
    assert result.pools[2].kept is None  # the check after the fact sends it back
    assert "p9" in result.health(0.9, "hdd")["SLA_PG_LIMIT"][0]


def test_a_pool_sent_back_stays_isolated_and_says_why() -> None:
    result = admit(facts(pool(), sent_back={9: "pg 9.1 not active for 12 s"}))
    assert result.pools[9].kept == "pg 9.1 not active for 12 s"


def test_a_shared_pool_is_judged_on_its_limits_not_its_gain() -> None:
    slow = MeasuredGain(0.5, 0.45, 0.55, 600, 600, 900, 900, 1, 0.7, 1e6 - 60)
    shared = pool(placement=Placement.SHARED, live=EVEN, measured={"move": slow},
                  projections={"move": Projection(EVEN, "placed")})
    assert kept(facts(shared)) is None
    assert kept(facts(shared, urgent=urgent(limit=PgLimit(40, 3.0, "the OSD")))) is not None


def test_auto_takes_the_best_gain_that_fits_and_settles_before_changing() -> None:
    reads = pool(role=AUTO, read_fraction=1.0)
    result = admit(facts(reads))
    choice = result.pools[9].choice
    assert choice.strategy == "copy" and choice.auto  # copy serves reads from the SSD
    writes = pool(role=AUTO, read_fraction=0.0)
    result = admit(facts(writes))
    assert result.pools[9].choice.strategy == "move" and result.pools[9].strategy == "copy"
    roles = {9: AUTO}
    since = choice_since(result, roles, {}, 100.0)
    assert since == {9: ("move", 100.0)}
    assert strategy_changes(result, roles, since, 100.0 + SETTLE_SECS - 1, ()) == {}
    changes = strategy_changes(result, roles, since, 100.0 + SETTLE_SECS, ())
    assert changes[9][1].strategy is Strategy.MOVE
    # not while its data is on the urgent region
    moving = admit(facts(replace(writes, placement=Placement.MOVING)))
    assert strategy_changes(moving, roles, since, 1e9, ()) == {}


def test_the_admissions_health_lines() -> None:
    osds = urgent(pgs=240, limit=PgLimit(200, 3.0, "the OSD"))
    result = admit(facts(pool(), urgent=osds))
    lines = result.health(0.9, "hdd")
    assert lines["SLA_PG_LIMIT"][0].startswith("pool p9: sharing it by move would put")
    assert any(line.startswith("osd.") and "with no normal pool shared" in line
               for line in lines["SLA_PG_LIMIT"])
    full = replace(facts(pool(placement=Placement.SHARED, live=EVEN)).capacity,
                   normal_used_bytes=899 * GIB)
    lines = admit(facts(pool(placement=Placement.SHARED, live=EVEN, stored_bytes=20 * GIB),
                        capacity=full)).health(0.9, "hdd")
    assert "isolating now would fill the hdd region" in lines["SLA_NORMAL_REGION_FULL"][0]


def test_a_strategy_blocked_by_a_limit_stays_out_until_the_limit_changes() -> None:
    """No flip cycle: copy past the OSDs' PG limit leaves a read pool on move at
    every admission, however long, and is taken again once the limit is raised."""
    big = {o: 215 for o in EVEN}  # copy's PGs per urgent OSD: 40 + 215 > 250
    reads = pool(role=AUTO, read_fraction=1.0, projections={
        "move": Projection(EVEN, "planned"), "copy": Projection(big, "crush")})
    for now in (1e6, 1e6 + 660.0, 1e6 + 86400.0):
        choice = admit(facts(reads, now=now)).pools[9].choice
        assert choice.strategy == "move" and "copy: " in choice.why, (now, choice)
    raised = admit(facts(reads, urgent=urgent(limit=PgLimit(400, 3.0, "the OSD"))))
    assert raised.pools[9].choice.strategy == "copy", raised.pools[9].choice
