"""PG slots per urgent OSD: the projection that keeps a pool isolated before
sharing it would take an urgent OSD past mon_max_pg_per_osd."""
from __future__ import annotations

from mgr_sla.core.pg_slots import (
    PoolSlots,
    UrgentOsd,
    after_losing,
    plan_slots,
    spread,
    withheld,
)

# four urgent OSDs, one per failure domain, equal weights
URGENT = {o: UrgentOsd(1.0, -100 - o) for o in (1, 3, 5, 7)}


def test_spread_is_weight_proportional_with_a_margin() -> None:
    even = spread(64, URGENT)
    assert set(even) == set(URGENT) and len(set(even.values())) == 1
    assert 16 < even[1] <= 16 + 11  # mean 16, 3 sigmas of Binomial(64, 1/4) = 10.4
    heavy = spread(64, {**URGENT, 1: UrgentOsd(3.0, -101)})
    assert heavy[1] > heavy[3]
    assert spread(0, URGENT) == {} and spread(10, {}) == {}


def test_losing_the_worst_domain_spreads_its_pgs_by_weight() -> None:
    counts, lost = after_losing({1: 30, 3: 30, 5: 30, 7: 30}, URGENT)
    assert lost == -107 and counts == {1: 40, 3: 40, 5: 40}  # a tie: the first in id order
    # the worst loss is not the fullest OSD's: it is one that adds to the fullest
    counts, lost = after_losing({1: 30, 3: 60, 5: 30, 7: 30}, URGENT)
    assert lost == -107 and counts == {1: 40, 3: 70, 5: 40}
    one_domain = {1: UrgentOsd(1.0, -100), 3: UrgentOsd(1.0, -100)}
    assert after_losing({1: 5, 3: 6}, one_domain) == ({1: 5, 3: 6}, None)


def test_a_pool_that_would_pass_the_limit_stays_isolated_and_says_where() -> None:
    now = {1: 24, 3: 24, 5: 24, 7: 24}  # an urgent pool's PGs
    small = PoolSlots(4, "small", shared_now=False, extra_replicas=8)
    big = PoolSlots(5, "big", shared_now=False, extra_replicas=64)
    verdict = plan_slots(now, [small, big], URGENT, limit=50)
    assert 4 not in verdict.kept
    assert "osd." in verdict.kept[5] and "over mon_max_pg_per_osd 50" in verdict.kept[5]
    osd, pgs = verdict.worst_if_shared[5]
    assert pgs > 50 and osd in URGENT
    assert all(n <= 50 for n in verdict.projected.values()) and not verdict.over_limit()


def test_shared_pools_keep_their_room_and_count_from_their_real_up_sets() -> None:
    """A shared pool is admitted first, from what its up sets put on each OSD:
    a lower-numbered isolated pool does not take its room (no churn)."""
    now = {1: 40, 3: 40, 5: 40, 7: 40}  # includes the shared pool's 16 per OSD
    shared = PoolSlots(9, "shared", shared_now=True, on_urgent={1: 16, 3: 16, 5: 16, 7: 16})
    waiting = PoolSlots(2, "waiting", shared_now=False, extra_replicas=64)
    verdict = plan_slots(now, [waiting, shared], URGENT, limit=56)
    assert 9 not in verdict.kept and 2 in verdict.kept
    assert verdict.projected == {1: 54, 3: 54, 5: 54}  # 40 + 40/3, rounded up
    # past the limit on its own real placement: it isolates
    assert 9 in plan_slots(now, [shared], URGENT, limit=50).kept


def test_urgent_osds_over_the_limit_with_nothing_shared_are_named() -> None:
    verdict = plan_slots({1: 60, 3: 60, 5: 60, 7: 60}, [], URGENT, limit=70)
    assert verdict.over_limit() == [(1, 80), (3, 80), (5, 80)]


def test_osds_withholding_pgs_stop_all_sharing() -> None:
    assert withheld({"checks": {}}) is None
    why = withheld({"checks": {"PENDING_CREATING_PGS": {
        "summary": {"message": "8 PGs pending on creation"}}}})
    assert why is not None and "8 PGs pending on creation" in why


def test_a_pool_crush_has_mapped_counts_its_exact_osds_without_the_margin() -> None:
    """An isolated copy pool's extra copy mapped by CRUSH on its real PGs: the
    projection counts exactly those OSDs, so a pool the estimate's margin
    would keep isolated shares when CRUSH puts no OSD past the limit, and a
    skewed mapping is kept isolated where the even estimate would let it go."""
    now = {1: 20, 3: 20, 5: 20, 7: 20}
    even = {1: 16, 3: 16, 5: 16, 7: 16}
    estimated = PoolSlots(4, "copy", shared_now=False, extra_replicas=64)
    assert 4 in plan_slots(now, [estimated], URGENT, limit=50).kept  # 16 + margin, domain lost
    mapped = PoolSlots(4, "copy", shared_now=False, on_urgent=even, extra_replicas=64,
                       mapped=True)
    verdict = plan_slots(now, [mapped], URGENT, limit=50)
    assert 4 not in verdict.kept and verdict.worst_if_shared[4] == (1, 48)  # 36 + 36/3
    skewed = PoolSlots(4, "copy", shared_now=False, on_urgent={1: 40, 3: 8, 5: 8, 7: 8},
                       extra_replicas=64, mapped=True)
    kept = plan_slots(now, [skewed], URGENT, limit=65).kept
    assert "osd.1" in kept[4], kept
    assert 4 not in plan_slots(now, [estimated], URGENT, limit=65).kept


def test_an_urgent_osd_without_a_pg_count_keeps_every_isolated_pool() -> None:
    # osd.7's report is not in: counting it as empty would admit a pool that passes the limit
    counts = {1: 24, 3: 24, 5: 24}
    shared = PoolSlots(4, "shared", shared_now=True, on_urgent={1: 4})
    waiting = PoolSlots(5, "waiting", shared_now=False, extra_replicas=8)
    verdict = plan_slots(counts, [shared, waiting], URGENT, 250)
    assert list(verdict.kept) == [5]  # the shared pool stays as it is
    assert verdict.kept[5] == "no PG count reported for osd.7: the PG limit cannot be checked"
    both = plan_slots({1: 24, 3: 24}, [waiting], URGENT, 250)
    assert "osd.5 and 1 more urgent OSDs" in both.kept[5]
    assert plan_slots({**counts, 7: 24}, [waiting], URGENT, 250).kept == {}
