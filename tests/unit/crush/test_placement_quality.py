"""Shared mode's placement on real CRUSH mappings (crushtool + osdmaptool) of
every built topology and a few random ones: what an operator checks on the
osdmap after a switch. Every PG full, no OSD or host twice, a normal replica
in each, the pool's urgent share near the weight-proportional target, every
urgent OSD used, and only the replicas that go urgent moved."""
from __future__ import annotations

import random
from pathlib import Path

import pytest

from crush_rules import synthetic
from crush_rules.crushmap import crushmap_from_dump
from crush_rules.crushtext import parse_blocks
from crush_rules.generate import read_map, synthetic_osdmap
from crush_rules.sampling import Pool, map_rule
from crush_rules.tools import Tools
from mgr_sla.core.cluster import PoolInfo
from mgr_sla.core.upmap.pg_ids import pgid_of
from mgr_sla.core.upmap.planner import plan_pool
from mgr_sla.core.upmap.regions import mapping_faults, regions_from_maps

FIXTURES = Path(__file__).resolve().parents[2] / "crush_topologies"
TOOLS = Tools()
ISOLATED_NORMAL = ("take default class hdd", "chooseleaf firstn 0 type host", "emit")


def _random_hosts(seed: int) -> list[list[tuple[str, float]]]:
    """Hosts of hdd and ssd OSDs, some mixed, some of one class, uneven
    weights; at least three with hdd OSDs (the isolated rule needs them)."""
    rng = random.Random(seed)
    hosts = []
    for h in range(rng.randint(4, 9)):
        hdds = rng.randint(1 if h < 3 else 0, 3)
        host = [("hdd", rng.choice([2.0, 4.0, 8.0])) for _ in range(hdds)]
        host += [("ssd", rng.choice([0.25, 0.5, 1.0])) for _ in range(rng.randint(0, 2))]
        hosts.append(host or [("hdd", 1.0)])
    if sum(c == "ssd" for h in hosts for c, _ in h) == 0:
        hosts.append([("ssd", 0.5)])
    return hosts


def _text(name: str) -> str:
    if name.startswith("random"):
        return synthetic.crush_text(_random_hosts(int(name[len("random"):])))
    return (FIXTURES / f"{name}.txt").read_text()


TOPOLOGIES = sorted(p.stem for p in FIXTURES.glob("*.txt")) + [f"random{i}" for i in range(6)]


@pytest.mark.parametrize("pgs", [32, 128])
@pytest.mark.parametrize("name", TOPOLOGIES)
def test_shared_placement_on_real_crush_mappings(name: str, pgs: int) -> None:
    binary = read_map(TOOLS, _text(name).encode())
    crush = TOOLS.dump(binary)
    devices = [int(d["id"]) for d in crush["devices"]]
    hosts_with_hdd = {b["id"] for b in crush["buckets"] if b.get("type_name") == "host"
                      and any(int(i["id"]) >= 0 and next(
                          d for d in crush["devices"] if d["id"] == i["id"]).get("class") == "hdd"
                              for i in b["items"])}
    if len(hosts_with_hdd) < 3:
        pytest.skip(f"{name}: fewer than 3 hosts with hdd OSDs (the rules refuse it)")
    osdmap = synthetic_osdmap(TOOLS, crushmap_from_dump(crush), 3, pgs)
    raw = map_rule(TOOLS, parse_blocks(TOOLS.decompile(binary)), osdmap, Pool(1, 0, pgs),
                   ISOLATED_NORMAL, None, synthetic=True)
    up = {pgid_of(1, ps): list(osds) for ps, osds in raw.items()}
    osd_map = {"osds": [{"osd": o, "up": 1, "in": 1, "weight": 1.0} for o in devices]}
    regions = regions_from_maps(osd_map, crush, "host", "hdd", "ssd")
    info = PoolInfo(1, "normal", 1, 3, pg_num=pgs, pg_num_pending=pgs, pg_num_target=pgs,
                    pgp_num=pgs, pgp_num_target=pgs)
    plan = plan_pool(1, up, {}, regions, 3, "shared", pool=info)
    final = {}
    for pgid, osds in up.items():
        moved = dict(plan.wanted.get(pgid, ()))
        final[pgid] = [moved.get(o, o) for o in osds]

    # CRUSH itself maps a PG short where one host holds little of the hdd
    # weight (choose_total_tries runs out): such a PG is left as CRUSH has it
    short = {pgid for pgid, osds in up.items() if len(osds) < 3}
    assert len(short) < pgs / 4, f"{name}: CRUSH maps {len(short)} of {pgs} PGs short"
    assert all(final[pgid] == up[pgid] for pgid in short)
    up = {pgid: osds for pgid, osds in up.items() if pgid not in short}
    final = {pgid: osds for pgid, osds in final.items() if pgid not in short}
    pgs = len(up)
    assert all(len(osds) == 3 for osds in final.values())
    faults = mapping_faults(final, regions, need_normal=True)
    assert not faults.any, faults
    ssd = regions.of_class("ssd")
    urgent = [o for osds in final.values() for o in osds if o in ssd]
    ssd_weight = sum(regions.osds[o].weight for o in ssd)
    hdd_weight = sum(regions.osds[o].weight for o in regions.of_class("hdd"))
    # the weight-proportional target, as capped by what a PG can take: min_size
    # (2 of 3) stays normal, and one replica per urgent failure domain
    target = min(ssd_weight / (ssd_weight + hdd_weight), 1 / 3,
                 len({regions.osds[o].domain for o in ssd}) / 3)
    share = len(urgent) / (3 * pgs)
    assert 0.8 <= share / target <= 1.3 or abs(share - target) * 3 * pgs <= 1, (share, target)
    # every urgent OSD serves the pool, where the pool has a replica for each
    if len(urgent) >= len(ssd):
        assert set(urgent) == set(ssd), sorted(set(ssd) - set(urgent))
    # only the replicas that go urgent move: efficiency 1
    moved = sum(1 for pgid in up for a, b in zip(up[pgid], final[pgid]) if a != b)
    assert moved == len(urgent)
