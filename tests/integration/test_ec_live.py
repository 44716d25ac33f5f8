"""Erasure-coded pools on a live cluster: the mechanism the EC strategy stands on.

An EC pool (2+1, hdd, one shard per host) under its own rule; the shared rule
made from it (crush_rules/ec_rules.py) with the pool's flat weight set maps every
PG shard by shard as before, so the rule swap moves nothing; the planner's
pg_upmap_items (mgr_sla/core/upmap/ec_plan.py) move at most m shards of each PG
in place onto SSD OSDs, and the monitors keep them; under the pool's own rule the
monitors drop such an entry (its target is outside the rule's take). Every
object reads back with its checksum, shared and after; the entries removed and
the own rule back put every PG where it was, the own rule unchanged.
"""
from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from crush_rules.crushmap import crushmap_from_dump
from crush_rules.crushtext import parse_blocks, render_blocks, render_choose_args
from crush_rules.ec_rules import (
    ITEM_NONE,
    EcLayout,
    ec_shard_faults,
    ec_shared_rule,
    render_ec_rule,
)
from crush_rules.rules import DEFAULT_SCOPE, sizes_in_text
from crush_rules.topology import analyse
from crush_rules.weightsets import flat_choose_args
from harness.cephcluster import Cluster, PacedWriter, wait_for
from harness.objects import Objects
from harness.probes import InactiveWatch, OpProbe, assert_served
from mgr_sla.core.upmap.ec_plan import ec_target_share, plan_ec_pg
from mgr_sla.core.upmap.regions import current_items, regions_from_maps

pytestmark = pytest.mark.integration

K, M = 2, 1
PGS = 16
POOL, PROFILE = "ec21", "sla-ec21"


def pg_up(cluster: Cluster, pool_id: int) -> dict[str, list[int]]:
    """Each PG's up set by shard, as the monitors' current map gives it."""
    return {f"{pool_id}.{ps:x}": [int(o) for o in cluster.json("pg", "map", f"{pool_id}.{ps:x}")[
        "up"]] for ps in range(PGS)}


def set_crush_text(cluster: Cluster, text: str, work: Path) -> None:
    """Compile with the cluster's own crushtool and install."""
    (work / "crush.txt").write_text(text)
    subprocess.run(cluster.tool("crushtool", "-c", str(work / "crush.txt"), "-o",
                                str(work / "crush.bin")), check=True, timeout=60)
    done = cluster.ceph_raw("osd", "setcrushmap", "-i", str(work / "crush.bin"), cli=True)
    assert done.returncode == 0, done.stderr


def crush_text(cluster: Cluster, work: Path) -> str:
    got = cluster.ceph_raw("osd", "getcrushmap", "-o", str(work / "live.bin"), cli=True)
    assert got.returncode == 0, got.stderr
    return subprocess.run(cluster.tool("crushtool", "-d", str(work / "live.bin")),
                          check=True, timeout=60, capture_output=True, text=True).stdout


@pytest.fixture
def ec_pool(cluster: Cluster) -> Iterator[tuple[int, Path]]:
    work = cluster.path / "ec-live"  # under the cluster's dir: a release root sees it too
    work.mkdir(exist_ok=True)
    cluster.ceph("osd", "erasure-code-profile", "set", PROFILE, f"k={K}", f"m={M}",
                 "crush-device-class=hdd", "crush-failure-domain=host")
    cluster.ceph("osd", "pool", "create", POOL, str(PGS), str(PGS), "erasure", PROFILE)
    cluster.ceph("osd", "pool", "application", "enable", POOL, "rados")
    pool_id = next(int(p["pool_id"]) for p in cluster.json("osd", "pool", "ls", "detail")
                   if p["pool_name"] == POOL)
    # the balancer (on by default, upmap mode) would even out this unmanaged pool's
    # PGs onto the SSDs the shared rule admits, replacing the planner's entries; the
    # module keeps the pools it places out of the balancer's reach, so here it is off
    balancer_was_on = bool(cluster.json("balancer", "status").get("active"))
    cluster.ceph("balancer", "off")
    try:
        yield pool_id, work
    finally:
        if balancer_was_on:
            cluster.ceph_raw("balancer", "on")
        for pgid in current_items(cluster.json("osd", "dump")).get(pool_id, {}):
            cluster.ceph_raw("osd", "rm-pg-upmap-items", pgid)
        cluster.ceph_raw("osd", "crush", "weight-set", "rm", POOL)
        cluster.ceph_raw("osd", "pool", "rm", POOL, POOL, "--yes-i-really-really-mean-it")
        for rule in (f"sla_ec_{POOL}", POOL):
            cluster.ceph_raw("osd", "crush", "rule", "rm", rule)
        cluster.ceph_raw("osd", "erasure-code-profile", "rm", PROFILE)
        shutil.rmtree(work, ignore_errors=True)


def test_ec_shards_move_in_place_onto_ssds_and_come_back(cluster: Cluster,
                                                          ec_pool: tuple[int, Path]) -> None:
    pool_id, work = ec_pool
    cluster.wait_clean(300)
    objects = Objects(cluster, POOL, work)
    objects.write(12, "ec")
    dump = cluster.json("osd", "crush", "dump")
    crush = crushmap_from_dump(dump)
    own_rule = next(r for r in dump["rules"] if r["rule_name"] == POOL)
    own = pg_up(cluster, pool_id)
    assert all(len(up) == K + M and ITEM_NONE not in up for up in own.values()), own

    osd_map = cluster.json("osd", "dump")
    regions = regions_from_maps(osd_map, dump, "host", "hdd", "ssd")
    share = ec_target_share(regions, K, M)
    plan = {pg: plan_ec_pg(pg, up, regions, K, M, share) for pg, up in own.items()}
    assert any(plan.values()), (share, plan)

    # under its own rule (take default class hdd) the monitors drop an entry to an SSD
    pg, pairs = next((pg, pairs) for pg, pairs in plan.items() if pairs)
    cluster.ceph("osd", "pg-upmap-items", pg, *(str(o) for pair in pairs for o in pair))
    wait_for(f"the monitors to drop {pg}'s entry under the pool's own rule",
             lambda: pg not in current_items(cluster.json("osd", "dump")).get(pool_id, {})
             and pg_up(cluster, pool_id)[pg] == own[pg], 60)

    # the shared rule and the pool's flat weight set: the swap moves no shard
    shared = ec_shared_rule(crush.rule_named(POOL), crush, DEFAULT_SCOPE)
    blocks = parse_blocks(crush_text(cluster, work))
    rule_id = max(int(r["rule_id"]) for r in dump["rules"]) + 1
    release = os.environ.get("SLA_RELEASE", "pacific")
    blocks.insert(max(i for i, b in enumerate(blocks) if b.kind == "rule") + 1,
                  render_ec_rule(shared, rule_id, with_sizes=sizes_in_text(release)))
    flat = flat_choose_args(crush, analyse(crush, DEFAULT_SCOPE, 3))
    set_crush_text(cluster, render_blocks([*blocks, render_choose_args(pool_id, flat)]), work)
    cluster.ceph("osd", "pool", "set", POOL, "crush_rule", shared.name)
    assert pg_up(cluster, pool_id) == own

    # shared: at most m shards of a PG on SSDs, each in its own shard's place
    for pg, pairs in plan.items():
        if pairs:
            cluster.ceph("osd", "pg-upmap-items", pg, *(str(o) for pair in pairs for o in pair))
    layout = EcLayout(K, M, {o: p.cls for o, p in regions.osds.items()},
                      {o: p.domain for o, p in regions.osds.items()})

    def placed() -> bool:
        up = pg_up(cluster, pool_id)
        for pg, pairs in plan.items():
            want = [dict(pairs).get(o, o) for o in own[pg]]
            if up[pg] != want:
                raise AssertionError(f"{pg}: up {up[pg]}, planned {want}")
            faults = ec_shard_faults(own[pg], up[pg], layout)
            assert not faults, (pg, faults)
        return True
    wait_for("every planned shard on its SSD, in place", placed, 60)
    on_ssd = sum(1 for pairs in plan.values() for _ in pairs)
    assert 0 < on_ssd <= M * PGS
    cluster.wait_clean(300)
    objects.verify()

    # isolated again: the entries gone, the own rule back, every PG where it was
    for pg, pairs in plan.items():
        if pairs:
            cluster.ceph("osd", "rm-pg-upmap-items", pg)
    cluster.ceph("osd", "pool", "set", POOL, "crush_rule", POOL)
    wait_for("every PG back on its own mapping", lambda: pg_up(cluster, pool_id) == own, 60)
    cluster.wait_clean(300)
    objects.verify()
    after = next(r for r in cluster.json("osd", "crush", "dump")["rules"]
                 if r["rule_name"] == POOL)
    assert after == own_rule


def _status(cluster: Cluster) -> dict:
    return next(p for p in cluster.sla_status()["pools"] if p["name"] == POOL)


def test_the_module_shares_an_ec_pool_by_its_shards_and_takes_it_back(
        sla_pools: Cluster, ec_pool: tuple[int, Path]) -> None:
    """`pool set` takes the EC pool (the ec strategy, its own rule kept); shared
    under client load, at most m shards of a PG on SSDs, each in place; isolated,
    every PG back where its own rule puts it; every object read back; `pool rm`
    leaves the pool as before, its own rule unchanged."""
    cluster, (pool_id, work) = sla_pools, ec_pool
    cluster.wait_clean(300)
    objects = Objects(cluster, POOL, work)
    objects.write(12, "ec")
    own_rule = next(r for r in cluster.json("osd", "crush", "dump")["rules"]
                    if r["rule_name"] == POOL)
    own = pg_up(cluster, pool_id)
    cluster.ceph("sla", "mode", "isolated")
    load = ops = inactive = None
    try:
        out = cluster.ceph("sla", "pool", "set", POOL, "normal", timeout=300)
        assert "(ec)" in out and f"onto {POOL} " in out, out
        shared_rule = f"sla_ec_{POOL}"
        assert shared_rule in cluster.json("osd", "crush", "rule", "ls")
        assert POOL in cluster.ceph("osd", "crush", "weight-set", "ls")
        assert pg_up(cluster, pool_id) == own  # the weight set moved nothing
        osd_map = cluster.json("osd", "dump")
        regions = regions_from_maps(osd_map, cluster.json("osd", "crush", "dump"), "host",
                                    "hdd", "ssd")
        layout = EcLayout(K, M, {o: p.cls for o, p in regions.osds.items()},
                          {o: p.domain for o, p in regions.osds.items()})
        load = PacedWriter(cluster, POOL, secs=600, ops=40, reads=0.5)
        ops, inactive = OpProbe(cluster, [POOL]), InactiveWatch(cluster)
        cluster.ceph("sla", "mode", "shared")

        def shared() -> dict[str, list[int]] | None:
            if cluster.pool_rule(POOL) != shared_rule:
                return None
            up = pg_up(cluster, pool_id)
            if not any(layout.device_class[o] == "ssd" for u in up.values() for o in u
                       if o in layout.device_class):
                return None
            return up
        up = wait_for("shards of the EC pool on SSDs", shared, 120)
        for pg, shards in up.items():
            faults = ec_shard_faults(own[pg], shards, layout)
            assert not faults, (pg, own[pg], shards, faults)
        # status reads the placement the module judged at its last epoch: it
        # catches up with the map within a tick or two
        entry = wait_for("status to count the shards on SSDs", lambda: (
            e := _status(cluster)) and (e.get("upmaps") or {}).get("shards_on_urgent") and e, 30)
        assert entry["strategy"] == "ec" and entry["upmaps"]["shards_on_urgent"] > 0, entry
        cluster.ceph("sla", "mode", "isolated")
        wait_for("every shard back where the pool's own rule puts it",
                 lambda: cluster.pool_rule(POOL) == POOL and pg_up(cluster, pool_id) == own, 120)
        assert_served(ops.stop(), inactive.stop(), inactive.states)
        load.stop()
        cluster.wait_clean(300)
        objects.verify()
        cluster.ceph("sla", "pool", "rm", POOL, timeout=300)
        assert cluster.pool_rule(POOL) == POOL and pg_up(cluster, pool_id) == own
        assert POOL not in cluster.ceph("osd", "crush", "weight-set", "ls")
        assert not current_items(cluster.json("osd", "dump")).get(pool_id)
        assert next(r for r in cluster.json("osd", "crush", "dump")["rules"]
                    if r["rule_name"] == POOL) == own_rule
    finally:
        for probe in (ops, inactive, load):
            if probe is not None:
                probe.stop()
        cluster.ceph_raw("sla", "pool", "rm", POOL, timeout=300)
        cluster.ceph_raw("sla", "mode", "auto")
