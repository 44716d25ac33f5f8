"""The EC shard planner (pure): shards move in place, at most m per PG, by the pool's
shard preference, to urgent OSDs in failure domains the PG does not use; the pool's
urgent share follows the weights; a PG with a hole is left alone."""
from __future__ import annotations

import random

import pytest

from crush_rules.ec_rules import ITEM_NONE, EcLayout, ec_shard_faults
from mgr_sla.core.upmap.ec_plan import ec_target_share, plan_ec_pg, shard_order
from mgr_sla.core.upmap.pg_plan import share_ranks
from mgr_sla.core.upmap.regions import OsdPlace, Regions


def hosts(n: int, ssd_weight: float = 1.0, ssd_hosts: int | None = None) -> Regions:
    """Host h holds hdd osd 2h and (for the first ssd_hosts hosts) ssd osd 2h+1."""
    osds = {}
    for h in range(n):
        osds[2 * h] = OsdPlace("hdd", -100 - h, 1.0)
        if ssd_hosts is None or h < ssd_hosts:
            osds[2 * h + 1] = OsdPlace("ssd", -100 - h, ssd_weight)
    return Regions("hdd", "ssd", osds)


def own_mapping(regions: Regions, pool: int, pgs: int, shards: int) -> dict[str, list[int]]:
    """A stand-in for the pool's own rule: hdd OSDs on distinct hosts, by shard."""
    rng = random.Random(pool)
    hdd = regions.of_class("hdd")
    return {f"{pool}.{seed:x}": rng.sample(hdd, shards) for seed in range(pgs)}


def layout(regions: Regions, k: int, m: int) -> EcLayout:
    return EcLayout(k, m, {o: p.cls for o, p in regions.osds.items()},
                    {o: p.domain for o, p in regions.osds.items()})


def place(own: dict[str, list[int]], regions: Regions, k: int, m: int, prefer: str
          ) -> dict[str, tuple[list[int], tuple[tuple[int, int], ...]]]:
    pool = 5
    share = ec_target_share(regions, k, m)
    ranks = share_ranks(pool, len(own))
    out = {}
    for pgid, raw in own.items():
        pairs = plan_ec_pg(pgid, raw, regions, k, m, share, prefer=prefer,
                           place=ranks[int(pgid.split(".")[1], 16)])
        moved = dict(pairs)
        out[pgid] = ([moved.get(o, o) for o in raw], pairs)
    return out


@pytest.mark.parametrize("n,k,m,ssd_weight,ssd_hosts", [
    (4, 2, 1, 1.0, None), (8, 4, 2, 1.0, None), (8, 4, 2, 0.3, None), (10, 4, 2, 1.0, 1),
    (6, 4, 2, 5.0, None)])
def test_shards_move_in_place_within_m_and_the_share_follows_the_weights(
        n: int, k: int, m: int, ssd_weight: float, ssd_hosts: int | None) -> None:
    regions = hosts(n, ssd_weight, ssd_hosts)
    own = own_mapping(regions, 5, 1024, k + m)
    placed = place(own, regions, k, m, "data")
    for pgid, (shared, pairs) in placed.items():
        assert ec_shard_faults(own[pgid], shared, layout(regions, k, m)) == [], (pgid, pairs)
    on_ssd = sum(regions.osds[o].cls == "ssd" for s, _ in placed.values() for o in s)
    share = on_ssd / (1024 * (k + m))
    target = ec_target_share(regions, k, m)
    assert target > 0 and abs(share - target) / target < 0.05, (share, target)


def test_the_preference_picks_data_or_parity_shards() -> None:
    regions = hosts(8)
    own = own_mapping(regions, 5, 256, 6)
    for prefer, positions in (("data", range(4)), ("parity", range(4, 6))):
        moved = [pos for pgid, (shared, _) in place(own, regions, 4, 2, prefer).items()
                 for pos, (was, now) in enumerate(zip(own[pgid], shared)) if was != now]
        # at most m = 2 move, and here two of each PG's (share 1/3 of 6 shards)
        assert moved and all(p in positions for p in moved), (prefer, moved[:10])
        # the moved shards spread over the group's positions
        assert set(moved) == set(positions), (prefer, sorted(set(moved)))


def test_a_pg_with_a_hole_or_an_unknown_osd_is_left_alone() -> None:
    regions = hosts(4)
    assert plan_ec_pg("5.0", [0, ITEM_NONE, 4], regions, 2, 1, 0.5) == ()
    assert plan_ec_pg("5.0", [0, 99, 4], regions, 2, 1, 0.5) == ()
    assert plan_ec_pg("5.0", [0, 2], regions, 2, 1, 0.5) == ()


def test_no_urgent_domain_free_means_no_move() -> None:
    # one host with an ssd, and the PG already uses that host with another shard
    regions = hosts(4, ssd_hosts=1)
    raw = [2, 0, 4]  # shard 1 on host 0, whose ssd (osd 1) is the only one
    for place_at in (0.01, 0.5, 0.99):
        pairs = plan_ec_pg("5.3", raw, regions, 2, 1, 1 / 3, place=place_at)
        assert all(frm == 0 and to == 1 for frm, to in pairs), pairs  # only in place


def test_target_share_caps() -> None:
    assert ec_target_share(hosts(4), 2, 1) == pytest.approx(1 / 3)  # m of k+m
    assert ec_target_share(hosts(8, 0.25), 4, 2) == pytest.approx(0.2)  # the weights
    assert ec_target_share(hosts(10, 5.0, 1), 4, 2) == pytest.approx(1 / 6)  # one ssd host
    assert ec_target_share(hosts(4, 0.0), 2, 1) == 0.0


def test_shard_order_is_by_group_then_a_hash() -> None:
    order = shard_order((5, 7), 4, 2, "parity")
    assert sorted(order[:2]) == [4, 5] and sorted(order[2:]) == [0, 1, 2, 3]
    with pytest.raises(ValueError, match="shard preference 'xor'"):
        shard_order((5, 7), 4, 2, "xor")
