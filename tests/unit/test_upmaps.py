"""The pg_upmap_items planner of shared mode and hybrid placement (pure)."""
from __future__ import annotations

import itertools
import random
import statistics
from dataclasses import replace

import pytest

from mgr_sla.core.cluster import PoolInfo
from mgr_sla.core.upmap.fill import Draft, fill_unused
from mgr_sla.core.upmap.pg_ids import (
    merge_bound_seeds,
    no_entry_seeds,
    parent_seed,
    parse_pgid,
    pgid_of,
    placement_seed,
)
from mgr_sla.core.upmap.pg_plan import (
    harmless_pairs,
    plan_pg,
    raw_set,
    share_ranks,
    target_urgent_share,
    urgent_count,
    urgent_member_cap,
)
from mgr_sla.core.upmap.planner import PoolPlan, commands, plan_pool, switch_moves
from mgr_sla.core.upmap.regions import (
    OsdPlace,
    Pairs,
    Regions,
    current_items,
    mapping_faults,
    regions_from_maps,
)


def mixed_hosts(hosts: int = 4, ssd_weight: float = 1.0) -> Regions:
    """Host h holds hdd osd 2h and ssd osd 2h+1 (the mini cluster's shape)."""
    osds = {}
    for h in range(hosts):
        osds[2 * h] = OsdPlace("hdd", -100 - h, 1.0)
        osds[2 * h + 1] = OsdPlace("ssd", -100 - h, ssd_weight)
    return Regions("hdd", "ssd", osds)


def disjoint_hosts(hdd_hosts: int = 6, ssd_hosts: int = 2) -> Regions:
    osds = {}
    for h in range(hdd_hosts):
        osds[h] = OsdPlace("hdd", -100 - h, 1.0)
    for h in range(ssd_hosts):
        osds[100 + h] = OsdPlace("ssd", -200 - h, 1.0)
    return Regions("hdd", "ssd", osds)


def isolated_mapping(regions: Regions, pool: int, pgs: int, size: int = 3
                     ) -> dict[str, list[int]]:
    """A stand-in for CRUSH's isolated rule: normal OSDs in distinct domains."""
    rng = random.Random(pool)
    normal = regions.of_class("hdd")
    out = {}
    for seed in range(pgs):
        picked: list[int] = []
        for osd in rng.sample(normal, len(normal)):
            if regions.osds[osd].domain not in {regions.osds[o].domain for o in picked}:
                picked.append(osd)
            if len(picked) == size:
                break
        out[f"{pool}.{seed:x}"] = picked
    return out


def apply(up_sets: dict[str, list[int]], wanted: dict) -> dict[str, list[int]]:
    """Entries applied as OSDMap::_apply_upmap does: a pair whose source is
    not in the set, or whose target already is, does nothing."""
    out = {}
    for pgid, up in up_sets.items():
        final = list(up)
        for frm, to in wanted.get(pgid, ()):
            if frm in final and to not in final:
                final[final.index(frm)] = to
        out[pgid] = final
    return out


@pytest.mark.parametrize("regions", [mixed_hosts(), mixed_hosts(8, 0.5), disjoint_hosts()],
                         ids=["4-mixed", "8-mixed-half-ssd", "6+2-disjoint"])
def test_shared_plan_keeps_inclusion_domains_and_the_proportional_share(regions: Regions
                                                                         ) -> None:
    raw = isolated_mapping(regions, 5, 2048)
    plan = plan_pool(5, raw, {}, regions, 3, "shared")
    final = apply(raw, dict(plan.wanted))
    faults = mapping_faults(final, regions, need_normal=True)
    assert not faults.any, faults
    # only the moved replicas change, each onto an urgent OSD, and every PG
    # keeps a normal replica (checked by mapping_faults above)
    for pgid, up in final.items():
        pairs = dict(plan.wanted.get(pgid, ()))
        assert len(set(up) & set(raw[pgid])) == 3 - len(pairs)
        assert all(regions.osds[to].cls == "ssd" for to in pairs.values())
    share = sum(regions.osds[o].cls == "ssd" for up in final.values() for o in up) / (3 * 2048)
    target = target_urgent_share(regions, 3)
    assert abs(share - target) / target < 0.05, (share, target)
    # each urgent OSD's load follows its weight
    loads = [sum(o == ssd for up in final.values() for o in up) / regions.osds[ssd].weight
             for ssd in regions.of_class("ssd")]
    assert statistics.pstdev(loads) / statistics.mean(loads) < 0.1, loads


def test_target_share_caps() -> None:
    # min_size (2 of 3) stays on the normal class: one replica of three at most
    assert target_urgent_share(mixed_hosts(), 3) == pytest.approx(1 / 3)
    assert target_urgent_share(mixed_hosts(), 3, urgent_member_cap(mixed_hosts(), 3, 1)) \
        == pytest.approx(1 / 3)  # a min_size lowered by hand lets no more onto the SSDs
    assert target_urgent_share(mixed_hosts(), 4) == pytest.approx(0.5)  # min_size 2 of 4
    assert target_urgent_share(mixed_hosts(), 3, urgent_member_cap(mixed_hosts(), 3, 3)) == 0.0
    # share_past_min_size: all but one replica may go, the weights decide
    assert target_urgent_share(replace(mixed_hosts(), past_min_size=True), 3) \
        == pytest.approx(0.5)
    big_ssd = replace(mixed_hosts(4, 9.0), past_min_size=True)  # the primary stays normal
    assert target_urgent_share(big_ssd, 3) == pytest.approx(2 / 3)
    one_ssd_host = disjoint_hosts(6, 1)
    assert target_urgent_share(one_ssd_host, 3) == pytest.approx(1 / 7)
    assert target_urgent_share(disjoint_hosts(6, 0), 3) == 0.0
    assert target_urgent_share(mixed_hosts(), 1) == 0.0


def test_hybrid_moves_the_primary_only() -> None:
    regions = disjoint_hosts(6, 2)
    raw = isolated_mapping(regions, 7, 512)
    plan = plan_pool(7, raw, {}, regions, 3, "hybrid")
    final = apply(raw, dict(plan.wanted))
    assert not mapping_faults(final, regions, need_normal=False).any
    for pgid, up in final.items():
        assert regions.osds[up[0]].cls == "ssd", pgid
        assert [regions.osds[o].cls for o in up[1:]] == ["hdd", "hdd"]


def test_mixed_hosts_hybrid_never_puts_the_primary_beside_another_replica() -> None:
    regions = mixed_hosts()
    raw = isolated_mapping(regions, 2, 256)
    final = apply(raw, dict(plan_pool(2, raw, {}, regions, 3, "hybrid").wanted))
    assert not mapping_faults(final, regions, need_normal=False).domain_twice


def test_isolated_removes_only_entries_that_reach_urgent_osds() -> None:
    regions = mixed_hosts()
    current = {"1.0": ((0, 1),), "1.1": ((0, 2),), "1.2": ((2, 4), (4, 7))}
    plan = plan_pool(1, {}, current, regions, 3, "isolated")
    assert plan.remove == ("1.0", "1.2")
    assert commands(plan) == [{"prefix": "osd rm-pg-upmap-items", "pgid": "1.0"},
                              {"prefix": "osd rm-pg-upmap-items", "pgid": "1.2"}]


def test_a_second_plan_on_the_applied_state_has_nothing_to_do() -> None:
    regions = mixed_hosts()
    raw = isolated_mapping(regions, 3, 256)
    first = plan_pool(3, raw, {}, regions, 3, "shared")
    assert first.pending == len(first.wanted) > 0
    up = apply(raw, dict(first.wanted))
    again = plan_pool(3, up, dict(first.wanted), regions, 3, "shared")
    assert again.pending == 0 and dict(again.wanted) == dict(first.wanted)
    cmds = commands(first)
    pgid, pairs = sorted(first.set_items.items())[0]
    assert cmds[0] == {"prefix": "osd pg-upmap-items", "pgid": pgid,
                       "id": [o for pair in pairs for o in pair]}


def test_an_urgent_osd_added_moves_few_pgs() -> None:
    before = disjoint_hosts(6, 2)
    after = Regions("hdd", "ssd", {**before.osds, 102: OsdPlace("ssd", -202, 1.0)})
    raw = isolated_mapping(before, 4, 1024)
    a = plan_pool(4, raw, {}, before, 3, "shared").wanted
    b = plan_pool(4, raw, {}, after, 3, "shared").wanted
    changed = sum(1 for pg in raw if a.get(pg) != b.get(pg))
    # The least any placement can change: the PGs that put a replica on the
    # new OSD, plus those that gain an urgent replica because the share grew
    # (2/8 -> 3/9). Straw draws keep every other urgent replica where it was.
    on_new = sum(1 for pairs in b.values() if any(to == 102 for _, to in pairs))
    grown = sum(len(p) for p in b.values()) - sum(len(p) for p in a.values())
    assert changed <= 1.1 * (on_new + grown), (changed, on_new, grown)


def test_pgs_mapped_short_or_on_a_down_osd_are_left_alone() -> None:
    osds = dict(mixed_hosts().osds)
    osds[2] = OsdPlace("hdd", -101, 1.0, up=False)
    regions = Regions("hdd", "ssd", osds)
    plan = plan_pool(1, {"1.0": [0, 4], "1.1": [0, 2, 4], "1.2": [0, 4, 6]}, {}, regions, 3,
                     "shared")
    assert set(plan.wanted) <= {"1.2"}
    # a down urgent OSD is never a target
    assert all(to != 2 for pairs in plan.wanted.values() for _, to in pairs)


def test_crush_on_urgent_only_still_gets_a_normal_replica() -> None:
    """A reweight can overwrite a flat weight set's 0 on urgent OSDs: then
    CRUSH may map a PG onto urgent OSDs only; the plan brings a normal one."""
    regions = mixed_hosts()
    pairs = plan_pg("1.0", [1, 3, 5], regions, 0.5)
    final = [dict(pairs).get(o, o) for o in [1, 3, 5]]
    assert any(regions.osds[o].cls == "hdd" for o in final)
    assert not mapping_faults({"1.0": final}, regions, need_normal=True).any


def test_raw_set_undoes_applied_pairs_only() -> None:
    assert raw_set([0, 3, 5], [(2, 3), (4, 5)]) == [0, 2, 4]
    assert raw_set([0, 2, 4], [(6, 7)]) == [0, 2, 4]  # not applied: from not in raw
    # a chain a->b, b->c (the mon applies pairs in order) is undone last first
    assert raw_set([0, 9, 4], [(2, 6), (6, 9)]) == [0, 2, 4]


def test_mapping_faults_names_each_kind() -> None:
    regions = mixed_hosts()
    faults = mapping_faults({"1.0": [0, 0, 2], "1.1": [0, 1, 2], "1.2": [1, 3, 5],
                             "1.3": [0, 2, 4]}, regions, need_normal=True)
    assert faults.osd_twice == ("1.0",)
    assert set(faults.domain_twice) == {"1.0", "1.1"}
    assert faults.no_normal == ("1.2",)


def test_one_fault_check_for_every_strategy_and_the_planner() -> None:
    """pg_faults is the check: holes are no OSD (an EC pool short of two
    shards is not "one OSD twice"), an OSD of a class outside the regions
    twice still is, and a copy pool counts domains among its normal copies."""
    from mgr_sla.core.upmap.planner import _faulty
    from mgr_sla.core.upmap.regions import CRUSH_ITEM_NONE, pg_faults
    regions = mixed_hosts()
    none = CRUSH_ITEM_NONE
    assert pg_faults([0, none, none], regions, need_normal=True) == (False, False, False)
    assert pg_faults([0, 40, 40], regions, need_normal=True)[0]  # 40: no region's OSD
    # osd 1 (ssd) shares host -100 with osd 0 (hdd): a copy pool's urgent copy may
    assert pg_faults([1, 0, 2], regions, True) == (False, True, False)
    assert pg_faults([1, 0, 2], regions, True, domains_of="hdd") == (False, False, False)
    assert pg_faults([1, 0, 2, 4], regions, True, domains_of="hdd") == (False, False, False)
    assert pg_faults([1, 0, 6, 2], regions, True, domains_of="ssd") == (False, False, False)
    for up in ([0, 0, 2], [0, 1, 2], [1, 3, 5], [0, 2, 4], [0, none, none]):
        assert _faulty(up, regions, True) == any(pg_faults(up, regions, True))


def test_maps_from_mgr_dumps() -> None:
    crush = {
        "types": [{"type_id": 0, "name": "osd"}, {"type_id": 1, "name": "host"},
                  {"type_id": 10, "name": "root"}],
        "devices": [{"id": 0, "class": "hdd"}, {"id": 1, "class": "ssd"}],
        "buckets": [
            {"id": -1, "name": "default", "type_name": "root", "items": [{"id": -2}]},
            {"id": -2, "name": "h0", "type_name": "host",
             "items": [{"id": 0, "weight": 0x10000}, {"id": 1, "weight": 0x8000}]},
            {"id": -3, "name": "h0~ssd", "type_name": "host",
             "items": [{"id": 1, "weight": 0x8000}]},
        ],
    }
    osd_map = {"osds": [{"osd": 0, "up": 1, "in": 1, "weight": 1.0},
                        {"osd": 1, "up": 1, "in": 1, "weight": 0.5}],
               "pg_upmap_items": [{"pgid": "3.a", "mappings": [{"from": 0, "to": 1}]}]}
    regions = regions_from_maps(osd_map, crush, "host", "hdd", "ssd")
    assert regions.osds == {0: OsdPlace("hdd", -2, 1.0), 1: OsdPlace("ssd", -2, 0.25)}
    assert current_items(osd_map) == {3: {"3.a": ((0, 1),)}}


def test_a_foreign_entry_that_breaks_inclusion_is_repaired_even_while_placing_waits() -> None:
    regions = replace(mixed_hosts(), past_min_size=True)  # PGs with two replicas moved
    raw = isolated_mapping(regions, 3, 64)
    first = plan_pool(3, raw, {}, regions, 3, "shared")
    pgid = next(pg for pg, pairs in first.wanted.items() if len(pairs) == 2)
    ours = first.wanted[pgid]
    last_normal = next(o for o in raw[pgid] if o not in dict(ours))
    final = apply(raw, dict(first.wanted))
    taken = {regions.osds[o].domain for o in final[pgid] if o != last_normal}
    ssd = next(o for o in regions.of_class("ssd") if regions.osds[o].domain not in taken)
    foreign = ours + ((last_normal, ssd),)  # the balancer's kind: the one hdd replica goes
    current = {**dict(first.wanted), pgid: foreign}
    up = apply(raw, current)
    assert mapping_faults({pgid: up[pgid]}, regions, need_normal=True).no_normal
    again = plan_pool(3, up, current, regions, 3, "shared")
    assert again.repairs == {pgid} and again.set_items[pgid] == ours
    held = commands(again, placing=False)
    assert held == [{"prefix": "osd pg-upmap-items", "pgid": pgid,
                     "id": [o for pair in ours for o in pair]}]


# ---- the plan does not depend on the order of the up set ------------------------------


def permutations_of(up: list[int]) -> list[list[int]]:
    return [list(p) for p in itertools.permutations(up)]


def plan_of(pgid: str, up: list[int], have: Pairs, regions: Regions, size: int,
            placement: str = "shared", cache: dict | None = None) -> tuple:
    plan = plan_pool(parse_pgid(pgid)[0], {pgid: up}, {pgid: have} if have else {}, regions,
                     size, placement, cache)
    return (dict(plan.wanted), dict(plan.set_items), plan.remove, plan.repairs)


def some_harmless_pair(raw: list[int], regions: Regions, pgid: str) -> Pairs:
    """A balancer-like pair: one hdd replica to another hdd OSD of a free domain."""
    taken = {regions.osds[o].domain for o in raw}
    frm = raw[parse_pgid(pgid)[1] % len(raw)]
    spare = [o for o in regions.of_class("hdd")
             if regions.osds[o].domain not in taken and o not in raw]
    return ((frm, spare[0]),) if spare else ()


@pytest.mark.parametrize("size", [2, 3])
@pytest.mark.parametrize("regions", [mixed_hosts(), mixed_hosts(8, 0.5), disjoint_hosts(),
                                     disjoint_hosts(5, 3)],
                         ids=["4-mixed", "8-mixed-half-ssd", "6+2-disjoint", "5+3-disjoint"])
def test_the_plan_is_the_same_under_every_order_of_the_up_set(regions: Regions, size: int
                                                              ) -> None:
    raw = isolated_mapping(regions, 6, 192, size)
    first = plan_pool(6, raw, {}, regions, size, "shared")
    applied = apply(raw, dict(first.wanted))
    cache: dict = {}
    checked = 0
    for pgid, crush in sorted(raw.items()):
        ours = first.wanted.get(pgid, ())
        balancer = some_harmless_pair(crush, regions, pgid)
        # stale: one of ours that no longer applies, plus a foreign pair onto an ssd
        ssd = regions.of_class("ssd")[0]
        stale = ((crush[0], ssd),) if ssd not in applied[pgid] else ()
        cases = [(crush, ()), (applied[pgid], ours), (apply({pgid: crush}, {pgid: balancer})[pgid],
                                                       balancer),
                 (apply({pgid: crush}, {pgid: stale})[pgid], stale)]
        for up, have in cases:
            expected = plan_of(pgid, up, have, regions, size)
            for order in permutations_of(up):
                assert plan_of(pgid, order, have, regions, size) == expected, (pgid, order, have)
                assert plan_of(pgid, order, have, regions, size, cache=cache) == expected
                checked += 1
    assert checked >= 192 * 4 * 2
    # the cache keys on the set of the CRUSH mapping: a reordering is a hit
    assert len(cache) <= 192 * 4


def test_primary_affinity_reordering_replans_nothing_for_eight_epochs() -> None:
    """`ceph osd primary-affinity osd.N 0` on every hdd puts an ssd replica
    first in every PG that has one; the next epochs must send nothing."""
    regions = mixed_hosts(8, 0.5)
    raw = isolated_mapping(regions, 5, 256)
    plan = plan_pool(5, raw, {}, regions, 3, "shared")
    current = dict(plan.wanted)
    up = apply(raw, current)
    for epoch in range(8):
        rng = random.Random(epoch)
        # affinity (ssd first) or the read balancer (any replica first)
        up = {pg: (sorted(u, key=lambda o: regions.osds[o].cls != "ssd") if epoch % 2 == 0
                   else rng.sample(u, len(u))) for pg, u in up.items()}
        again = plan_pool(5, up, current, regions, 3, "shared")
        assert again.pending == 0, epoch
        assert dict(again.wanted) == current


def test_hybrid_keeps_the_replica_its_entry_moves_in_any_order() -> None:
    """Hybrid moves the PG's primary when it has no entry yet; afterwards the
    entry's replica stays the moved one whatever the up set's order (SSD
    primary affinity 0 or the read balancer would otherwise flip it)."""
    regions = disjoint_hosts(6, 2)
    raw = isolated_mapping(regions, 7, 128)
    first = plan_pool(7, raw, {}, regions, 3, "hybrid")
    applied = apply(raw, dict(first.wanted))
    for pgid, up in applied.items():
        have = first.wanted[pgid]
        assert dict(have).keys() == {raw[pgid][0]}
        expected = plan_of(pgid, up, have, regions, 3, "hybrid")
        assert expected[1] == {}  # nothing to send
        for order in permutations_of(up):
            assert plan_of(pgid, order, have, regions, 3, "hybrid") == expected


# ---- OSDs going down or out ------------------------------------------------------------


def test_an_osd_going_down_changes_no_plan_and_out_changes_only_what_must() -> None:
    """2,048 PGs in shared mode. An SSD going down leaves its PGs degraded (up
    set one short), and every other PG's plan must stay: the share and the
    draws count the OSDs that are in. Marked out, its PGs move and the share
    shrinks, and nothing else changes."""
    regions = disjoint_hosts(8, 3)
    raw = isolated_mapping(regions, 9, 2048)
    plan = plan_pool(9, raw, {}, regions, 3, "shared")
    current = dict(plan.wanted)
    up = apply(raw, current)
    victim = 101
    down = Regions("hdd", "ssd", {**regions.osds, victim: OsdPlace("ssd", -201, 1.0, up=False)})
    up_down = {pg: [o for o in u if o != victim] for pg, u in up.items()}
    degraded = sum(1 for pg in up if victim in up[pg])
    assert degraded > 100
    again = plan_pool(9, up_down, current, down, 3, "shared")
    assert again.pending == 0
    assert target_urgent_share(down, 3) == target_urgent_share(regions, 3)

    out = Regions("hdd", "ssd", {**regions.osds, victim: OsdPlace("ssd", -201, 0.0, up=False)})
    # out: CRUSH never mapped normal pools there; the mon drops pairs onto an out OSD
    up_out = {pg: [o for o in u if o != victim] for pg, u in up.items()}
    current_out = {pg: tuple(p for p in pairs if p[1] != victim) for pg, pairs in current.items()}
    current_out = {pg: pairs for pg, pairs in current_out.items() if pairs}
    up_out = apply(raw, current_out)
    later = plan_pool(9, up_out, current_out, out, 3, "shared")
    changed = set(later.set_items) | set(later.remove)
    expected_k_changes = sum(
        1 for pg in raw
        if len(plan_pg(pg, raw[pg], out, target_urgent_share(out, 3)))
        != len(plan.wanted.get(pg, ())))
    # the PGs that lost their replica on the out OSD, plus those whose urgent
    # count fell with the share (3/11 -> 2/10): nothing else
    assert len(changed) <= degraded + expected_k_changes
    assert all(victim not in dict(p).values() for p in later.wanted.values())
    unchanged_pgs = [pg for pg in raw if pg not in changed]
    assert all(later.wanted.get(pg, ()) == current_out.get(pg, ()) for pg in unchanged_pgs)


def test_a_pg_whose_plan_targets_a_down_osd_waits_for_it() -> None:
    regions = disjoint_hosts(6, 2)
    raw = isolated_mapping(regions, 4, 512)
    plan = plan_pool(4, raw, {}, regions, 3, "shared")
    down = Regions("hdd", "ssd", {**regions.osds, 100: OsdPlace("ssd", -200, 1.0, up=False)})
    # placing from scratch while osd.100 is down: PGs planned onto it wait
    waiting = plan_pool(4, raw, {}, down, 3, "shared")
    onto = {pg for pg, pairs in plan.wanted.items() if 100 in dict(pairs).values()}
    assert waiting.left.get("down") == len(onto) > 0
    assert not onto & set(waiting.set_items)
    assert {pg: p for pg, p in waiting.set_items.items()} == {
        pg: p for pg, p in plan.wanted.items() if pg not in onto}


# ---- PG merges and splits --------------------------------------------------------------


def pool(pg_num: int, **counts: int) -> PoolInfo:
    values = {"pg_num_pending": pg_num, "pg_num_target": pg_num, "pgp_num": pg_num,
              "pgp_num_target": pg_num, **counts}
    return PoolInfo(8, "bulk", 1, 3, pg_num=pg_num, **values)


def test_placement_and_merge_seeds_follow_ceph() -> None:
    assert [placement_seed(ps, 48) for ps in (0, 16, 47, 48, 63)] == [0, 16, 47, 16, 31]
    assert placement_seed(100, 64) == 36 and placement_seed(100, 80) == 36
    assert placement_seed(70, 80) == 70 and placement_seed(5, 0) == 5
    assert [parent_seed(ps) for ps in (0, 1, 2, 3, 127, 64)] == [0, 0, 0, 1, 63, 0]
    assert no_entry_seeds(pool(64)) == frozenset()
    # the last PG waits to merge into its parent: the mon cancels both entries
    assert no_entry_seeds(pool(64, pg_num_pending=63, pg_num_target=32)) == {63, 31}
    # 128 -> 120: sources 120..127 and the PGs they end in (56..63)
    assert merge_bound_seeds(pool(128, pg_num_target=120)) == set(range(120, 128)) | set(
        range(56, 64))
    assert merge_bound_seeds(pool(64, pg_num_target=32)) == set(range(64))
    assert merge_bound_seeds(pool(64, pg_num_target=128)) == frozenset()


class FakeMon:
    """The parts of the mon and the mgr that act on upmap entries during a
    merge: `check_pg_upmaps` cancels entries of PGs at or above pg_num_pending
    and pending a merge (answering rc=0 to a command that sets one), and
    DaemonServer::adjust_pgs removes those of the next merge source and its
    target before each step."""

    def __init__(self, info: PoolInfo, entries: dict[str, Pairs]) -> None:
        self.info = info
        self.entries = dict(entries)
        self.epochs = 0

    def send(self, cmds: list[dict]) -> None:
        if not cmds:
            return
        self.epochs += 1
        for cmd in cmds:
            ps = parse_pgid(cmd["pgid"])[1]
            assert ps < self.info.pg_num  # pg_exists, or ENOENT
            if cmd["prefix"] == "osd pg-upmap-items":
                ids = cmd["id"]
                self.entries[cmd["pgid"]] = tuple(zip(ids[::2], ids[1::2]))
            else:
                self.entries.pop(cmd["pgid"], None)
        self.clean()

    def clean(self) -> None:
        gone = no_entry_seeds(self.info)
        source = self.info.pg_num - 1
        if self.info.pg_num_target < self.info.pg_num:
            gone = gone | {source, parent_seed(source)}
        for pgid in list(self.entries):
            if parse_pgid(pgid)[1] in gone:
                del self.entries[pgid]


@pytest.mark.parametrize("pending", [64, 63], ids=["merge-coming", "last-pg-merging"])
def test_a_merge_drains_pending_and_never_fights_the_mon(pending: int) -> None:
    """pg_num 64 -> 48 with pgp_num already at 48: the old planner kept
    re-sending entries for PGs the mon cancels (pending never drained, one
    empty epoch a second); now the PGs a merge touches get no new entries,
    the commands stop, and the other PGs keep theirs."""
    regions = mixed_hosts(8, 0.5)
    info = pool(64, pg_num_target=48, pg_num_pending=pending, pgp_num=48, pgp_num_target=48)
    crush = isolated_mapping(regions, 8, 48)
    raw = {pgid_of(8, ps): crush[pgid_of(8, placement_seed(ps, 48))] for ps in range(64)}
    start = plan_pool(8, raw, {}, regions, 3, "shared")  # placed before the merge began
    mon = FakeMon(info, dict(start.wanted))
    mon.clean()
    for _ in range(5):
        up = apply(raw, mon.entries)
        plan = plan_pool(8, up, mon.entries, regions, 3, "shared", pool=info)
        mon.send(commands(plan))
    assert plan.pending == 0 and mon.epochs <= 1
    bound = merge_bound_seeds(info)
    assert all(parse_pgid(pg)[1] not in bound for pg in plan.set_items)
    assert plan.left.get("merge") == len([pg for pg in raw if parse_pgid(pg)[1] in bound
                                          and parse_pgid(pg)[1] not in no_entry_seeds(info)])
    # PGs no merge touches keep their entries
    free = [pg for pg in raw if parse_pgid(pg)[1] not in bound]
    assert free and all(mon.entries.get(pg) == start.wanted.get(pg) for pg in free)


def test_without_pool_counts_a_merge_loops_for_ever() -> None:
    """The failure the pool counts fix: planned on its own, a PG the mon
    cancels is pending again at every epoch."""
    regions = mixed_hosts(8, 0.5)
    info = pool(64, pg_num_target=48, pg_num_pending=63, pgp_num=48)
    crush = isolated_mapping(regions, 8, 48)
    raw = {pgid_of(8, ps): crush[pgid_of(8, placement_seed(ps, 48))] for ps in range(64)}
    mon = FakeMon(info, dict(plan_pool(8, raw, {}, regions, 3, "shared").wanted))
    mon.clean()
    for _ in range(3):
        plan = plan_pool(8, apply(raw, mon.entries), mon.entries, regions, 3, "shared")
        mon.send(commands(plan))
    assert plan.pending > 0 and mon.epochs == 3


def test_the_children_of_a_split_take_their_parents_entry_at_once() -> None:
    """pg_num 32 -> 64 while pgp_num is still 32: each child maps like its
    parent and sits on its parent's OSDs; its entry is the parent's, sent
    even while placing waits, so the split moves no data. Once pgp_num
    reaches a child, CRUSH gives it its own seed and it gets its own plan."""
    regions = mixed_hosts(8, 0.5)
    crush = isolated_mapping(regions, 8, 64)
    parents = {pgid_of(8, ps): crush[pgid_of(8, ps)] for ps in range(32)}
    before = plan_pool(8, parents, {}, regions, 3, "shared", pool=pool(32))
    current = dict(before.wanted)
    info = pool(64, pgp_num=32, pgp_num_target=64)
    raw = {pgid_of(8, ps): crush[pgid_of(8, placement_seed(ps, 32))] for ps in range(64)}
    up = apply(raw, current)  # children have no entry yet: CRUSH's own mapping
    plan = plan_pool(8, up, current, regions, 3, "shared", pool=info)
    for ps in range(32, 64):
        child, parent = pgid_of(8, ps), pgid_of(8, ps - 32)
        assert plan.wanted.get(child) == current.get(parent)
        if current.get(parent):
            assert child in plan.keeps
    assert set(plan.set_items) == plan.keeps and plan.keeps
    held = commands(plan, placing=False)
    assert {c["pgid"] for c in held} == plan.keeps
    final = apply(raw, {**current, **plan.set_items})
    assert all(final[pgid_of(8, ps)] == final[pgid_of(8, ps - 32)] for ps in range(32, 64))
    # pgp_num catches up: children map on their own seed, planned on it
    grown = pool(64)
    own = {pgid_of(8, ps): crush[pgid_of(8, ps)] for ps in range(64)}
    entries = {**current, **plan.set_items}
    later = plan_pool(8, apply(own, entries), entries, regions, 3, "shared", pool=grown)
    alone = plan_pool(8, own, {}, regions, 3, "shared", pool=grown)
    assert dict(later.wanted) == dict(alone.wanted)
    assert not later.keeps


def test_pgs_that_do_not_exist_get_no_command() -> None:
    regions = mixed_hosts()
    raw = isolated_mapping(regions, 8, 40)
    plan = plan_pool(8, raw, {}, regions, 3, "shared", pool=pool(32))
    assert all(parse_pgid(pg)[1] < 32 for pg in plan.set_items)


# ---- foreign entries (the balancer's) ----------------------------------------------------


def test_harmless_pairs_are_told_from_conflicting_ones() -> None:
    regions = mixed_hosts(8)
    raw = [0, 2, 4]  # hdd on hosts 0, 1, 2
    assert harmless_pairs(raw, [(2, 6)], regions) == (((2, 6),), ())
    assert harmless_pairs(raw, [(2, 7)], regions) == ((), ((2, 7),))  # onto an ssd
    assert harmless_pairs(raw, [(2, 1)], regions) == ((), ((2, 1),))  # host 0 twice
    assert harmless_pairs(raw, [(8, 6)], regions) == ((), ((8, 6),))  # does not apply
    assert harmless_pairs(raw, [(2, 6), (4, 6)], regions) == (((2, 6),), ((4, 6),))
    out = Regions("hdd", "ssd", {**regions.osds, 6: OsdPlace("hdd", -103, 0.0)})
    assert harmless_pairs(raw, [(2, 6)], out) == ((), ((2, 6),))  # onto an out OSD


def test_the_balancers_hdd_pairs_stay_and_ours_join_them() -> None:
    """A PG with a balancer pair (hdd -> hdd) gets its urgent pairs added to
    it, not instead of it; the plan stays put whatever the balancer does
    with its pair later, and isolated keeps the pair while dropping ours."""
    regions = mixed_hosts(8, 0.5)
    raw = isolated_mapping(regions, 5, 512)
    plain = plan_pool(5, raw, {}, regions, 3, "shared")
    current = {pg: some_harmless_pair(raw[pg], regions, pg) for pg in raw}
    current = {pg: p for pg, p in current.items() if p}
    up = apply(raw, current)
    plan = plan_pool(5, up, current, regions, 3, "shared")
    kept = 0
    for pgid, foreign in current.items():
        wanted = set(plan.wanted.get(pgid, ()))
        ours = set(plain.wanted.get(pgid, ()))
        frm = foreign[0][0]
        if frm in dict(ours):
            assert wanted >= {p for p in ours if p[0] == frm}  # that replica goes urgent
        else:
            assert set(foreign) <= wanted
            kept += 1
        # the same replicas go urgent as without the balancer's pair
        assert {a for a, b in wanted if regions.osds[b].cls == "ssd"} == {
            a for a, b in ours}
    assert kept > len(current) // 2
    applied = apply(raw, dict(plan.wanted))
    assert not mapping_faults(applied, regions, need_normal=True).any
    assert plan_pool(5, applied, dict(plan.wanted), regions, 3, "shared").pending == 0
    back = plan_pool(5, applied, dict(plan.wanted), regions, 3, "isolated")
    assert back.repairs == set(back.set_items)  # protective: sent even while placing waits
    for pgid, pairs in back.set_items.items():
        assert all(regions.osds[b].cls == "hdd" for _, b in pairs)
        assert set(pairs) <= set(current.get(pgid, ()))
    assert set(back.set_items) | set(back.remove) == {
        pg for pg, p in plan.wanted.items() if any(regions.osds[b].cls == "ssd" for _, b in p)}


def test_switch_moves_count_only_new_pairs() -> None:
    regions = mixed_hosts()
    raw = isolated_mapping(regions, 5, 64)
    current = {pg: some_harmless_pair(raw[pg], regions, pg) for pg in raw}
    current = {pg: p for pg, p in current.items() if p}
    up = apply(raw, current)
    moves = switch_moves(up, current, regions, 3, "shared")
    plan = plan_pool(5, up, current, regions, 3, "shared")
    assert sum(moves.values()) == sum(
        1 for pg, pairs in plan.wanted.items() for p in pairs if p not in current.get(pg, ()))


def test_commands_send_keeps_and_repairs_first() -> None:
    plan = PoolPlan(1, {}, {"1.0": ((0, 1),), "1.1": ((2, 3),), "1.2": ((4, 5),)},
                    ("1.3", "1.4"), frozenset({"1.2"}), frozenset({"1.1"}), frozenset({"1.4"}))
    assert [c["pgid"] for c in commands(plan)] == ["1.3", "1.4", "1.1", "1.2", "1.0"]
    assert [c["pgid"] for c in commands(plan, placing=False)] == ["1.3", "1.1", "1.2"]


def test_a_smaller_share_takes_replicas_back_only_when_placing_may_move_data() -> None:
    """An SSD marked out lowers the share: the PGs that then need no urgent
    replica lose their entry, a data movement that waits like placing does
    (while PGs are degraded, say); removals that protect never wait."""
    regions = disjoint_hosts(6, 2)
    raw = isolated_mapping(regions, 4, 512)
    plan = plan_pool(4, raw, {}, regions, 3, "shared")
    current = dict(plan.wanted)
    out = Regions("hdd", "ssd", {**regions.osds, 101: OsdPlace("ssd", -201, 0.0)})
    current = {pg: p for pg, p in current.items() if 101 not in dict(p).values()}
    later = plan_pool(4, apply(raw, current), current, out, 3, "shared")
    assert later.shrinks and later.shrinks == set(later.remove)
    held = commands(later, placing=False)
    assert not any(c["prefix"] == "osd rm-pg-upmap-items" for c in held)
    isolated = plan_pool(4, apply(raw, current), current, out, 3, "isolated")
    assert isolated.remove and not isolated.shrinks
    assert len(commands(isolated, placing=False)) == len(isolated.remove)


# ---- the pool's share and its urgent OSDs ---------------------------------------------


def _urgent_replicas(regions: Regions, up_sets: dict[str, list[int]]) -> dict[int, int]:
    count = dict.fromkeys(regions.of_class("ssd"), 0)
    for up in up_sets.values():
        for o in up:
            if o in count:
                count[o] += 1
    return count


def small_ssds(ssds: int = 3) -> Regions:
    """Ten 4 TB hdd hosts and a few 0.5 TB ssd hosts: a share of 3.6 %."""
    osds = {h: OsdPlace("hdd", -100 - h, 4.0) for h in range(10)}
    osds.update({100 + h: OsdPlace("ssd", -200 - h, 0.5) for h in range(ssds)})
    return Regions("hdd", "ssd", osds)


@pytest.mark.parametrize("regions", [mixed_hosts(), mixed_hosts(8, 0.5), disjoint_hosts(),
                                     small_ssds()],
                         ids=["4-mixed", "8-mixed-half-ssd", "6+2-disjoint", "small-ssds"])
@pytest.mark.parametrize("pgs", [32, 64, 128])
def test_a_small_pool_gets_the_target_share_to_one_pg(regions: Regions, pgs: int) -> None:
    """A draw per PG is off by 1/sqrt(PGs): in a 32-PG pool with a small
    urgent region the share came out anywhere from 0.3 to 2 times the target.
    The pool's seeds share the fraction by rank: exact to one PG."""
    target = target_urgent_share(regions, 3) * 3 * pgs
    for pool_id in range(1, 21):
        raw = isolated_mapping(regions, pool_id, pgs)
        plan = plan_pool(pool_id, raw, {}, regions, 3, "shared", pool=PoolInfo(
            pool_id, "p", 1, 3, pg_num=pgs, pg_num_pending=pgs, pg_num_target=pgs,
            pgp_num=pgs, pgp_num_target=pgs))
        got = sum(_urgent_replicas(regions, apply(raw, dict(plan.wanted))).values())
        assert abs(got - target) <= 1, (pool_id, got, target)


def test_every_urgent_osd_gets_a_replica_of_a_small_pool() -> None:
    """8 SSDs, 32 PGs at a third: the draw alone left an SSD without any
    urgent replica of the pool in one pool in eight. One PG per unused SSD
    changes, the share does not, and the plan is the same the next epoch."""
    regions = mixed_hosts(8, 0.5)
    info = pool(32)
    filled = 0
    for pool_id in range(1, 41):
        raw = isolated_mapping(regions, pool_id, 32)
        draws = {pg: plan_pg(pg, up, regions, target_urgent_share(regions, 3),
                             place=None) for pg, up in raw.items()}
        plan = plan_pool(pool_id, raw, {}, regions, 3, "shared", pool=info)
        final = apply(raw, dict(plan.wanted))
        count = _urgent_replicas(regions, final)
        assert all(count.values()), (pool_id, count)
        assert not mapping_faults(final, regions, need_normal=True).any
        drawn = _urgent_replicas(regions, apply(raw, draws))
        filled += sum(1 for n in drawn.values() if n == 0)
        # applied, the plan has nothing more to do
        again = plan_pool(pool_id, final, dict(plan.wanted), regions, 3, "shared", pool=info)
        assert again.pending == 0 and dict(again.wanted) == dict(plan.wanted)
    assert filled, "the draw alone used every SSD: the case is not exercised"


def test_fill_unused_changes_one_pg_per_unused_osd_and_keeps_a_donor() -> None:
    regions = mixed_hosts(4)
    raw = {f"1.{i:x}": [0, 2, 4] for i in range(3)}
    drafts = [Draft(pg, tuple(up), (), tuple(up), i, (), None, None, (), ((0, 1),))
              for i, (pg, up) in enumerate(sorted(raw.items()))]
    # ssd 1 (host 0, in place of hdd 0) holds all three; 3, 5 and 7 none.
    # 3 and 5 share a host with hdd 2 or 4: that replica goes instead of hdd
    # 0's (each PG keeps one urgent replica). Three replicas fill three SSDs:
    # 7 stays unused rather than leave ssd 1 with none
    swaps = fill_unused(drafts, regions)
    assert sorted(swaps.values()) == [((0, 1), (2, 3)), ((0, 1), (4, 5))]
    # one replica of the pool per SSD is not to be taken from its only holder
    assert fill_unused(drafts[:1], regions) == {}


def test_one_seed_more_changes_the_extra_replica_of_few_pgs() -> None:
    share = 0.1  # 0.3 replicas per PG: the fraction decides every PG
    for pgp in (31, 63, 127):
        before, after = share_ranks(5, pgp), share_ranks(5, pgp + 1)
        k0 = {s: urgent_count((5, s), 3, share, before[s]) for s in range(pgp)}
        k1 = {s: urgent_count((5, s), 3, share, after[s]) for s in range(pgp)}
        assert sum(k0[s] != k1[s] for s in range(pgp)) <= 2


def test_an_osd_going_down_changes_no_entry_where_the_fill_acts() -> None:
    """With the fill at work (a small pool, SSDs the draw left unused), an
    hdd or an ssd going down holds some PGs back: the fill of the last whole
    view stands, so no entry changes, and none when the OSD is back."""
    regions = mixed_hosts(8, 0.5)
    info = pool(32)
    exercised = 0
    for pool_id in range(1, 41):
        raw = isolated_mapping(regions, pool_id, 32)
        cache: dict = {}
        plan = plan_pool(pool_id, raw, {}, regions, 3, "shared", cache, pool=info)
        if not cache.get(("fill", pool_id, 32)):
            continue  # every SSD drawn: the fill did nothing in this pool
        exercised += 1
        current = dict(plan.wanted)
        up = apply(raw, current)
        for victim in (0, 2, 3):  # hdd, hdd, ssd
            down = Regions("hdd", "ssd", {**regions.osds, victim: OsdPlace(
                regions.osds[victim].cls, regions.osds[victim].domain,
                regions.osds[victim].weight, up=False)})
            assert down.fingerprint == regions.fingerprint
            up_down = {pg: [o for o in u if o != victim] for pg, u in up.items()}
            held = plan_pool(pool_id, up_down, current, down, 3, "shared", cache, pool=info)
            assert held.pending == 0, (pool_id, victim, held.set_items, held.remove)
            back = plan_pool(pool_id, up, current, regions, 3, "shared", cache, pool=info)
            assert back.pending == 0, (pool_id, victim)
    assert exercised
