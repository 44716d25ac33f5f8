"""The pg_upmap_items planner of shared mode and hybrid placement (pure)."""
from __future__ import annotations

import random
import statistics

import pytest

from mgr_sla.upmaps import (
    OsdPlace,
    Regions,
    commands,
    current_items,
    mapping_faults,
    plan_pg,
    plan_pool,
    raw_set,
    regions_from_maps,
    target_urgent_share,
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
    out = {}
    for pgid, up in up_sets.items():
        final = list(up)
        for frm, to in wanted.get(pgid, ()):
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
    # the primary never moves; only moved replicas change
    for pgid, up in final.items():
        assert up[0] == raw[pgid][0]
    share = sum(regions.osds[o].cls == "ssd" for up in final.values() for o in up) / (3 * 2048)
    target = target_urgent_share(regions, 3)
    assert abs(share - target) / target < 0.05, (share, target)
    # each urgent OSD's load follows its weight
    loads = [sum(o == ssd for up in final.values() for o in up) / regions.osds[ssd].weight
             for ssd in regions.of_class("ssd")]
    assert statistics.pstdev(loads) / statistics.mean(loads) < 0.1, loads


def test_target_share_caps() -> None:
    assert target_urgent_share(mixed_hosts(), 3) == pytest.approx(0.5)
    big_ssd = mixed_hosts(4, 9.0)  # 90% of the weight on SSDs: the primary stays normal
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


def test_mapping_faults_names_each_kind() -> None:
    regions = mixed_hosts()
    faults = mapping_faults({"1.0": [0, 0, 2], "1.1": [0, 1, 2], "1.2": [1, 3, 5],
                             "1.3": [0, 2, 4]}, regions, need_normal=True)
    assert faults.osd_twice == ("1.0",)
    assert set(faults.domain_twice) == {"1.0", "1.1"}
    assert faults.no_normal == ("1.2",)


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
    regions = mixed_hosts()
    raw = isolated_mapping(regions, 3, 64)
    first = plan_pool(3, raw, {}, regions, 3, "shared")
    pgid = next(pg for pg, pairs in first.wanted.items() if len(pairs) == 2)
    ours = first.wanted[pgid]
    primary = raw[pgid][0]
    final = apply(raw, dict(first.wanted))
    taken = {regions.osds[o].domain for o in final[pgid][1:]}
    ssd = next(o for o in regions.of_class("ssd") if regions.osds[o].domain not in taken)
    foreign = ours + ((primary, ssd),)  # the balancer's kind: the one hdd replica goes
    current = {**dict(first.wanted), pgid: foreign}
    up = apply(raw, current)
    assert mapping_faults({pgid: up[pgid]}, regions, need_normal=True).no_normal
    again = plan_pool(3, up, current, regions, 3, "shared")
    assert again.repairs == {pgid} and again.set_items[pgid] == ours
    held = commands(again, placing=False)
    assert held == [{"prefix": "osd pg-upmap-items", "pgid": pgid,
                     "id": [o for pair in ours for o in pair]}]
