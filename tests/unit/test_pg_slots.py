"""PG slots per urgent OSD: the limit as each OSD runs it, and the projection
the admission checks it against (a failure domain lost)."""
from __future__ import annotations

from mgr_sla.core.pg_slots import (
    PgLimit,
    UrgentOsd,
    after_losing,
    check_slots,
    spread,
    withheld,
)

LIMIT = PgLimit(250, 3.0, "the OSD")
# four urgent OSDs, one per failure domain, equal weights
URGENT = {o: UrgentOsd(1.0, -100 - o, limit=PgLimit(50, 3.0, "the OSD")) for o in (1, 3, 5, 7)}


def test_the_limit_is_the_one_the_osd_enforces_with_room_to_spare() -> None:
    """OSD::maybe_wait_for_max_pg creates a PG only below mon_max_pg_per_osd x
    osd_max_pg_per_osd_hard_ratio; the module admits up to the soft value, or
    90% of the hard one when the ratio leaves less."""
    assert (LIMIT.hard, LIMIT.admit) == (750, 250)
    tight = PgLimit(35, 1.0, "the OSD")
    assert (tight.hard, tight.admit) == (35, 31)
    assert "31 PGs, 90% of the 35 it holds at most" in tight.describe(4)
    assert "osd_max_pg_per_osd_hard_ratio 1 as osd.4 runs them" in tight.describe(4)
    assert LIMIT.describe(4) == "mon_max_pg_per_osd 250 as osd.4 runs it"
    assert "from the mgr's value" in PgLimit(250, 3.0, "the mgr's value").describe(4)
    assert PgLimit(35, 1.5, "the OSD").hard == 53  # 52.5: the OSD creates one at 52


def test_spread_is_weight_proportional_with_a_margin() -> None:
    even = spread(64, URGENT)
    assert set(even) == set(URGENT) and len(set(even.values())) == 1
    assert 16 < even[1] <= 16 + 11  # mean 16, 3 sigmas of Binomial(64, 1/4) = 10.4
    heavy = spread(64, {**URGENT, 1: UrgentOsd(3.0, -101)})
    assert heavy[1] > heavy[3]
    assert spread(0, URGENT) == {} and spread(10, {}) == {}


def test_losing_the_worst_domain_spreads_its_pgs_by_weight() -> None:
    counts, lost = after_losing({1: 30, 3: 30, 5: 30, 7: 30}, URGENT)
    assert lost == -107 and counts == {1: 40, 3: 40, 5: 40}  # a tie: the last in id order
    # the worst loss is not the fullest OSD's: it is one that adds to the fullest
    counts, lost = after_losing({1: 30, 3: 60, 5: 30, 7: 30}, URGENT)
    assert lost in (-101, -105, -107) and counts[3] == 70
    one_domain = {1: UrgentOsd(1.0, -100), 3: UrgentOsd(1.0, -100)}
    assert after_losing({1: 5, 3: 6}, one_domain) == ({1: 5, 3: 6}, None)


def test_the_worst_loss_is_judged_against_each_osds_own_limit() -> None:
    """osd.1 runs a limit half the others': the loss that piles onto it is the
    worst, even where another OSD ends up with more PGs."""
    urgent = {**URGENT, 1: UrgentOsd(1.0, -101, limit=PgLimit(25, 3.0, "the OSD"))}
    check = check_slots({1: 20, 3: 40, 5: 20, 7: 20}, urgent)
    assert check is not None and check.osd == 1 and check.over
    assert "over mon_max_pg_per_osd 25 as osd.1 runs it" in check.reason("sharing it", "x")
    fits = check_slots({1: 10, 3: 10, 5: 10, 7: 10}, URGENT)
    assert fits is not None and not fits.over and fits.pgs == 14  # 10 + 10/3, up


def test_osds_withholding_pgs_stop_all_sharing() -> None:
    assert withheld({"checks": {}}) is None
    why = withheld({"checks": {"PENDING_CREATING_PGS": {
        "summary": {"message": "8 PGs pending on creation"}}}})
    assert why is not None and "8 PGs pending on creation" in why


def _brute_worst(counts: dict[int, int], urgent: dict[int, UrgentOsd]) -> tuple[float, int]:
    """The worst loss by trying every domain (what after_losing must match)."""
    import math
    domains = {p.domain for p in urgent.values()}
    total = sum(p.weight for p in urgent.values())
    best = (0.0, 0)
    for lost in domains:
        rest = total - sum(p.weight for p in urgent.values() if p.domain == lost)
        moved = sum(counts[o] for o, p in urgent.items() if p.domain == lost)
        for o, p in urgent.items():
            if p.domain != lost and rest > 0:
                n = counts[o] + math.ceil(moved * p.weight / rest)
                best = max(best, (n / p.limit.admit if p.limit else 0.0, n))
    return best


def test_the_two_candidate_losses_find_what_trying_every_domain_finds() -> None:
    import random
    rng = random.Random(5)
    for _ in range(300):
        urgent = {o: UrgentOsd(rng.choice((0.5, 1.0, 2.0)), -rng.randrange(1, 7),
                               limit=PgLimit(rng.randrange(20, 80), rng.choice((1.0, 3.0)), "x"))
                  for o in range(rng.randrange(2, 14))}
        if len({p.domain for p in urgent.values()}) < 2:
            continue
        counts = {o: rng.randrange(0, 60) for o in urgent}
        after, _ = after_losing(counts, urgent)
        got = max((n / urgent[o].limit.admit, n) for o, n in after.items())  # type: ignore
        assert got == _brute_worst(counts, urgent), (counts, urgent)
