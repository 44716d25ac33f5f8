"""The EC shard planner (pure): shards move in place, at most m per PG, by the pool's
shard preference, to urgent OSDs in failure domains the PG does not use; the pool's
urgent share follows the weights; a PG with a hole is left alone."""
from __future__ import annotations

import random
from dataclasses import replace

import pytest

from crush_rules.ec_rules import ITEM_NONE, EcLayout, ec_shard_faults
from mgr_sla.core.cluster import PoolInfo
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
    assert ec_target_share(hosts(4), 2, 1) == pytest.approx(1 / 3)  # min_size k of k+m
    # 4+2: min_size 5 stays on hdd, one shard of six moves (two with share_past_min_size)
    assert ec_target_share(hosts(8), 4, 2) == pytest.approx(1 / 6)
    assert ec_target_share(hosts(8), 4, 2, min_size=6) == 0.0
    assert ec_target_share(replace(hosts(8), past_min_size=True), 4, 2) == pytest.approx(1 / 3)
    assert ec_target_share(hosts(8, 0.1), 4, 2) == pytest.approx(1 / 11)  # the weights
    assert ec_target_share(hosts(10, 5.0, 1), 4, 2) == pytest.approx(1 / 6)  # one ssd host
    assert ec_target_share(hosts(4, 0.0), 2, 1) == 0.0


def test_shard_order_is_by_group_then_a_hash() -> None:
    order = shard_order((5, 7), 4, 2, "parity")
    assert sorted(order[:2]) == [4, 5] and sorted(order[2:]) == [0, 1, 2, 3]
    with pytest.raises(ValueError, match="shard preference 'xor'"):
        shard_order((5, 7), 4, 2, "xor")


# -- the pool's plan on each epoch, its checks, and the model's figures --------------

def _pool(pgs: int, k: int = 2, m: int = 1, **counts: int) -> PoolInfo:
    return PoolInfo(5, "ecdata", 7, k + m, erasure=True, pg_num=pgs, pgp_num=pgs,
                    ec_k=k, ec_m=m, **counts)


def test_the_pool_plan_places_shards_then_takes_them_back() -> None:
    from mgr_sla.core.upmap.ec_plan import ec_faults, plan_ec_pool
    from mgr_sla.core.upmap.ec_plan import own_mapping as undo
    regions, info = hosts(6), _pool(64)
    own = own_mapping(regions, 5, 64, 3)
    shared = plan_ec_pool(own, {}, regions, info, "shared")
    assert shared.set_items and not shared.remove
    # placed: the same plan again asks nothing; the up sets pass the checks
    up = {pg: [dict(shared.wanted.get(pg, ())).get(o, o) for o in raw] for pg, raw in own.items()}
    assert all(undo(up[pg], shared.wanted.get(pg, ())) == own[pg] for pg in own)
    again = plan_ec_pool(up, shared.wanted, regions, info, "shared")
    assert again.pending == 0 and again.wanted == shared.wanted
    assert not ec_faults(up, regions, info).any
    # isolated: every entry to an ssd goes, and protects (never waits as a shrink)
    back = plan_ec_pool(up, shared.wanted, regions, info, "isolated")
    assert set(back.remove) == set(shared.wanted) and not back.set_items and not back.shrinks


def test_a_splitting_pool_gets_no_new_entry() -> None:
    from mgr_sla.core.upmap.ec_plan import plan_ec_pool
    regions = hosts(6)
    own = own_mapping(regions, 5, 64, 3)
    held = plan_ec_pool(own, {}, regions, _pool(64, pg_num_target=128), "shared")
    assert held.pending == 0 and not held.wanted


def _shared(regions: Regions, info: PoolInfo, own: dict[str, list[int]]
            ) -> tuple[dict[str, list[int]], dict[str, tuple[tuple[int, int], ...]]]:
    """The pool shared on `own`: its up sets and entries once placed."""
    from mgr_sla.core.upmap.ec_plan import plan_ec_pool
    wanted = dict(plan_ec_pool(own, {}, regions, info, "shared").wanted)
    return {pg: [dict(wanted.get(pg, ())).get(o, o) for o in raw]
            for pg, raw in own.items()}, wanted


def test_a_pg_with_a_member_down_keeps_its_entry() -> None:
    """An OSD down under noout is a hole in an EC up set (CRUSH_ITEM_NONE in its
    slot): the PG keeps its entry, shards on urgent OSDs stay there, and once
    the OSD is back nothing is sent."""
    from mgr_sla.core.upmap.ec_plan import plan_ec_pool
    regions, info = hosts(6), _pool(64)
    up, wanted = _shared(regions, info, own_mapping(regions, 5, 64, 3))
    for down_osd in (0, next(t for pairs in wanted.values() for _, t in pairs)):
        osds = dict(regions.osds)
        osds[down_osd] = osds[down_osd]._replace(up=False)
        down = Regions("hdd", "ssd", osds)
        holed = {pg: [ITEM_NONE if o == down_osd else o for o in u] for pg, u in up.items()}
        touched = [pg for pg, u in holed.items() if ITEM_NONE in u]
        assert touched and any(pg in wanted for pg in touched)
        plan = plan_ec_pool(holed, wanted, down, info, "shared")
        assert plan.pending == 0, (down_osd, plan.set_items, plan.remove)
        assert plan.wanted == wanted
        back = plan_ec_pool(up, wanted, regions, info, "shared")
        assert back.pending == 0
    # isolation still takes every shard off the urgent OSDs, holes or not
    holed = {pg: [ITEM_NONE if o == 0 else o for o in u] for pg, u in up.items()}
    gone = plan_ec_pool(holed, wanted, regions, info, "isolated")
    assert set(gone.remove) == set(wanted)


def test_a_splits_children_take_their_parents_pairs_at_once() -> None:
    """pg_num 32 -> 64, pgp_num still 32: each child maps like its parent and
    its data sits where the parent's entry put it; it gets the parent's pairs
    in the first plan (keeps: sent even while placing waits), none moves."""
    from mgr_sla.core.upmap.ec_plan import plan_ec_pool
    from mgr_sla.core.upmap.planner import commands
    regions = hosts(6)
    parent_info = _pool(32)
    up, wanted = _shared(regions, parent_info, own_mapping(regions, 5, 32, 3))
    raw = own_mapping(regions, 5, 32, 3)
    split = PoolInfo(5, "ecdata", 7, 3, erasure=True, pg_num=64, pgp_num=32, ec_k=2, ec_m=1,
                     pg_num_target=64, pgp_num_target=64)
    children = {f"5.{ps:x}": list(raw[f"5.{ps - 32:x}"]) for ps in range(32, 64)}
    plan = plan_ec_pool({**up, **children}, wanted, regions, split, "shared")
    inherited = {f"5.{int(pg.split('.')[1], 16) + 32:x}": pairs for pg, pairs in wanted.items()}
    assert inherited and plan.set_items == inherited and plan.keeps == set(inherited)
    assert not plan.remove
    sent = commands(plan, placing=False)
    assert {c["pgid"] for c in sent} == set(inherited)


def test_every_pg_keeps_min_size_on_the_normal_class_unless_the_operator_says_so() -> None:
    """4+2 (min_size 5) with SSDs as heavy as the HDDs: by default at most one
    shard per PG on SSDs, so every PG stays active with the SSDs stopped; with
    share_past_min_size up to m = 2, and some PGs would stop."""
    from mgr_sla.core.upmap.ec_plan import plan_ec_pool
    regions = hosts(8)
    info = PoolInfo(5, "ecdata", 7, 6, min_size=5, erasure=True, pg_num=256, pgp_num=256,
                    ec_k=4, ec_m=2)
    own = own_mapping(regions, 5, 256, 6)

    def most_on_ssd(r: Regions) -> int:
        up, _ = _shared(r, info, own)
        return max(sum(r.osds[o].cls == "ssd" for o in u) for u in up.values())
    assert most_on_ssd(regions) == 1
    assert most_on_ssd(replace(regions, past_min_size=True)) == 2
    assert plan_ec_pool(own, {}, regions, info, "shared").wanted


def test_the_checks_catch_more_than_m_shards_on_ssds_and_a_domain_twice() -> None:
    from mgr_sla.core.upmap.ec_plan import ec_faults
    regions, info = hosts(4), _pool(2)
    found = ec_faults({"5.0": [1, 3, 4], "5.1": [0, 1, 4]}, regions, info)
    assert found.no_normal == ("5.0",) and found.domain_twice == ("5.1",)


def test_the_model_relieves_reads_most_and_prices_the_shards_moved() -> None:
    from mgr_sla.core.models.ec import EcModel
    from mgr_sla.core.state import Strategy
    from mgr_sla.core.switch_cost import Capacity, PoolCostInputs
    model, gib = EcModel(), 2.0**30
    reads, writes = model.gain(1.0, 6, 2 / 6, 4), model.gain(0.0, 6, 2 / 6, 4)
    assert reads == pytest.approx(2.0) and writes == pytest.approx(1.5) and reads > writes
    assert model.gain(0.5, 6, 0.0, 4) == 1.0
    cap = Capacity(100 * gib, 0.85, 200 * gib, 0, 1000 * gib, 0.9)
    cost = model.cost(PoolCostInputs(5, "ecdata", Strategy.EC, 6, 40 * gib, 128, 2 / 6, 0.5,
                                     data_shards=4), cap, 0.5)
    # two shards of 1/4 of the data each: half the stored bytes, both ways
    assert cost.bytes_to_shared == cost.bytes_to_isolated == pytest.approx(20 * gib)
    assert model.refusal(_pool(8)) is None
    assert "is replicated" in model.refusal(PoolInfo(6, "rep", 0, 3))  # type: ignore[operator]
