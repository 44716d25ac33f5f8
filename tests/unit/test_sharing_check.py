"""What sharing caused, checked after the fact: which pools go back at once."""
from __future__ import annotations

from dataclasses import replace

from mgr_sla.core.pg_slots import PgLimit, withholding_osds
from mgr_sla.core.sharing_check import (
    STUCK_FAR_SECS,
    STUCK_SECS,
    SharingNow,
    StuckPg,
    UrgentOsdNow,
    not_active_pools,
    sharing_faults,
    to_repeer,
    toofull_pools,
)

TIGHT = PgLimit(35, 1.0, "the OSD")
URGENT = {1: UrgentOsdNow(20, TIGHT, 0.3), 3: UrgentOsdNow(20, TIGHT, 0.3)}
NAMES = {7: "bulk", 9: "other", 2: "fast"}


def now(**kw: object) -> SharingNow:
    base: dict[str, object] = {"sharing": {7: frozenset({1}), 9: frozenset({3})},
                               "names": NAMES, "urgent": URGENT,
                               "managed": frozenset({2, 7, 9})}
    base.update(kw)
    return SharingNow(**base)  # type: ignore[arg-type]


def test_nothing_wrong_sends_nothing_back() -> None:
    assert sharing_faults(now()) == {}


def test_a_pg_stuck_with_an_urgent_osd_sends_back_the_pools_on_that_osd() -> None:
    """A PG of an urgent pool waiting for osd.1 (at its limit: it withholds the
    replica) sends back the normal pools with PGs there, not the others."""
    stuck = StuckPg("2.1a", 2, "activating+undersized+degraded", (1, 5), (5,), STUCK_SECS + 1)
    faults = sharing_faults(now(stuck=[stuck], urgent={
        1: UrgentOsdNow(34, TIGHT, 0.3), 3: UrgentOsdNow(20, TIGHT, 0.3)}))
    assert list(faults) == [7]
    assert f"pg 2.1a not active for {STUCK_SECS + 1:.0f} s (activating+undersized+degraded)" \
        in faults[7]
    assert "osd.1 holds 34 PGs, limit 35" in faults[7]
    # a few seconds of peering is not stuck; an unmanaged pool's PG is not ours
    young = StuckPg("2.1a", 2, "peering", (1,), (1,), STUCK_SECS - 1)
    theirs = StuckPg("4.0", 4, "peering", (1,), (1,), 60.0)
    assert sharing_faults(now(stuck=[young, theirs])) == {}


def test_a_stuck_pg_of_a_shared_pool_sends_it_back_even_where_its_osds_are_unknown() -> None:
    stuck = StuckPg("9.3", 9, "activating", (3, 0), (0,), 30.0)
    near = {1: UrgentOsdNow(20, TIGHT, 0.3), 3: UrgentOsdNow(34, TIGHT, 0.3)}
    faults = sharing_faults(now(stuck=[stuck], sharing={7: None, 9: frozenset({3})},
                                urgent=near))
    assert set(faults) == {7, 9}  # 7's OSDs are not known: it may be on osd.3


def test_a_pg_stuck_on_an_urgent_osd_far_from_its_limit_sends_back_its_own_pool_only() -> None:
    """osd.3 at 20 of 35 PGs withholds nothing (it is down, say): the stuck PG
    is its own pool's doing, not that of the other pools with PGs there."""
    stuck = StuckPg("9.3", 9, "undersized+degraded+peered", (0,), (0,), STUCK_FAR_SECS + 1)
    on_3 = StuckPg("9.4", 9, "peering", (3, 0), (3, 0), STUCK_FAR_SECS + 1)
    for pg in (stuck, on_3):
        pools = {7: frozenset({3}), 9: frozenset({3})}
        faults = sharing_faults(now(stuck=[pg], sharing=pools))
        assert set(faults) == {9}, (pg, faults)
        # a peering slow on a loaded cluster (over 20 s) is no fault yet
        assert sharing_faults(now(stuck=[replace(pg, secs=30.0)], sharing=pools)) == {}


def test_an_urgent_osd_at_its_limit_sends_back_the_pools_on_it() -> None:
    full = {1: UrgentOsdNow(35, TIGHT, 0.3), 3: UrgentOsdNow(34, TIGHT, 0.3)}
    faults = sharing_faults(now(urgent=full))
    assert list(faults) == [7] and "osd.1 holds 35 PGs, limit 35" in faults[7]
    assert "it creates no more PGs" in faults[7]


def test_withheld_pgs_send_back_only_the_pools_on_the_urgent_osds_ceph_names() -> None:
    """PENDING_CREATING_PGS names osd.3: the pool with PGs there goes back, the
    other stays; a normal OSD named (osd.4) sends none back, since isolating
    would load it further."""
    why = "Ceph reports PENDING_CREATING_PGS"
    assert set(sharing_faults(now(withheld=why, withheld_by=frozenset({3})))) == {9}
    assert sharing_faults(now(withheld=why, withheld_by=frozenset({4}))) == {}
    health = {"checks": {"PENDING_CREATING_PGS": {
        "summary": {"message": "2 PGs pending on creation"},
        "detail": [{"message": "osd.3 has pending PGs"}, {"message": "osd.12 has pending PGs"}]}}}
    assert withholding_osds(health) == {3, 12}
    assert withholding_osds({"checks": {"PENDING_CREATING_PGS": {}}}) == frozenset()


def test_withheld_pgs_and_a_full_urgent_osd_send_every_pool_back() -> None:
    faults = sharing_faults(now(withheld="Ceph reports PENDING_CREATING_PGS"))
    assert set(faults) == {7, 9} and "PENDING_CREATING_PGS" in faults[9]
    past = {1: UrgentOsdNow(20, TIGHT, 0.9), 3: UrgentOsdNow(20, TIGHT, 0.86)}
    faults = sharing_faults(now(urgent=past, nearfull_ratio=0.85))
    assert set(faults) == {7, 9}
    assert "osd.1 of the urgent region is 90% full, past nearfull_ratio 85% " \
           "(2 urgent OSDs past it)" == faults[7]


def test_toofull_pgs_send_back_their_own_pool_only() -> None:
    by_pool = {"7": {"active+clean": 10},
               "9": {"active+undersized+degraded+remapped+backfill_toofull": 2,
                     "active+clean": 30},
               "11": {"active+recovery_toofull+degraded": 1}}
    assert toofull_pools(by_pool) == {9, 11}
    faults = sharing_faults(now(toofull=toofull_pools(by_pool)))
    assert list(faults) == [9] and "backfill_toofull" in faults[9]
    assert not_active_pools({"7": {"activating": 1}, "9": {"active+clean": 3},
                             "4": {"peering": 2}}, frozenset({7, 9})) == {7}


def test_pgs_still_stuck_once_the_pools_went_back_are_re_peered_now_and_then() -> None:
    """An OSD that withheld a PG at its limit may not take it up again when it
    has room: what the module undoes is re-peered, and only that."""
    old = StuckPg("2.7", 2, "activating+remapped", (1, 4), (4, 6), 25.0)
    young = StuckPg("2.8", 2, "activating+remapped", (1, 4), (4, 6), 10.0)
    hdd = StuckPg("2.9", 2, "activating", (4, 6), (4, 6), 60.0)
    stuck = now(stuck=[young, old, hdd])
    assert to_repeer(stuck, False, {}, 100.0) == []  # nothing sent back: not ours to undo
    assert to_repeer(stuck, True, {}, 100.0) == ["2.7"]
    assert to_repeer(stuck, True, {"2.7": 90.0}, 100.0) == []  # once a minute at most
    assert to_repeer(stuck, True, {"2.7": 30.0}, 100.0) == ["2.7"]


def test_an_unreported_pg_counts_only_with_an_urgent_osd_near_its_limit() -> None:
    """A PG whose stats still show the OSDs it had before the step: withheld
    only where an urgent OSD of its new up set is near the most PGs it holds
    (or its count is not known); far from it, the PG is only slow to peer and
    report on a loaded machine, and nothing goes back."""
    def late(up: tuple[int, ...]) -> StuckPg:
        return StuckPg("7.0", 7, "active+clean on [2, 0, 6] as last reported", up, (2, 0, 6),
                       STUCK_SECS + 20, unreported=True)
    roomy = {1: UrgentOsdNow(24, PgLimit(1000, 3.0, "the OSD"), 0.1), 3: URGENT[3]}
    assert sharing_faults(now(stuck=[late((1, 0, 6))], urgent=roomy)) == {}
    near = {1: UrgentOsdNow(32, TIGHT, 0.3), 3: URGENT[3]}  # 32 of 35: past 90%
    faults = sharing_faults(now(stuck=[late((1, 0, 6))], urgent=near))
    assert list(faults) == [7] and "as last reported" in faults[7]
    unknown = {1: UrgentOsdNow(None, TIGHT, 0.3), 3: URGENT[3]}
    assert list(sharing_faults(now(stuck=[late((1, 0, 6))], urgent=unknown))) == [7]
    # the same PG reported inactive is stuck whatever the OSD's count, once it has
    # stayed so past a slow peering (20 s was seen on a loaded machine)
    reported = StuckPg("7.0", 7, "activating", (1, 0, 6), (0, 6), STUCK_SECS + 20)
    assert sharing_faults(now(stuck=[reported], urgent=roomy)) == {}
    reported = replace(reported, secs=STUCK_FAR_SECS + 1)
    assert list(sharing_faults(now(stuck=[reported], urgent=roomy))) == [7]
