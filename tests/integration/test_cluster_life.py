"""Shared placements through a cluster's life, on BlueStore OSDs that restart.

A replicated pool on the move strategy, one on the copy strategy and an
erasure-coded 2+1 pool on the ec strategy, shared by the module (mode pinned
shared), each OSD a real process on a BlueStore file:
- no PG has more members on SSDs than leaves min_size on HDDs, so with every
  SSD OSD stopped at once every PG of both pools stays active and every object
  reads back;
- an HDD OSD and an SSD OSD each stopped and started again under `noout` (a
  reboot): the module's entries stay (at least 90% of them as before, once
  clean; none is rewritten while the OSD is away);
- pg_num doubled on every pool while shared: the entries of the PGs that were
  there stay, and the new PGs get theirs; every object reads back.
"""
from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from harness.cephcluster import Cluster, wait_for
from harness.objects import Objects
from mgr_sla.core.upmap.regions import CRUSH_ITEM_NONE, Pairs, current_items

from .conftest import HIGH, LOW, own_cluster

pytestmark = pytest.mark.integration

MOVE, EC, COPY = "lifemove", "lifeec", "lifecopy"
NORMAL = (MOVE, EC, COPY)
HDD, SSD = (0, 2, 4, 6), (1, 3, 5, 7)  # minicluster: host K holds osd.2K (hdd), osd.2K+1 (ssd)


@pytest.fixture(scope="module")
def life() -> Iterator[tuple[Cluster, dict[str, int], dict[str, Objects]]]:
    """Its own cluster on BlueStore (memstore OSDs do not survive a restart),
    the module's rules, an urgent pool and the two normal pools, with objects."""
    with own_cluster("sla-life-", objectstore="bluestore") as cluster:
        cluster.enable_sla()
        cluster.ceph("sla", "rules", "apply", timeout=300)
        for name, value in [("interval_secs", 1), ("min_dwell_secs", 12), ("min_gain", 0),
                            ("max_misplaced_ratio", 0.05)]:
            cluster.ceph("config", "set", "mgr", f"mgr/sla/{name}", str(value))
        cluster.ceph("sla", "set-threshold", str(HIGH), str(LOW))
        cluster.ceph("sla", "mode", "isolated")
        ids = {name: cluster.create_pool(name, 16) for name in ("urgent", MOVE, COPY)}
        cluster.ceph("osd", "erasure-code-profile", "set", "life21", "k=2", "m=1",
                     "crush-device-class=hdd", "crush-failure-domain=host")
        cluster.ceph("osd", "pool", "create", EC, "16", "16", "erasure", "life21")
        cluster.ceph("osd", "pool", "application", "enable", EC, "rados")
        ids[EC] = next(int(p["pool_id"]) for p in cluster.json("osd", "pool", "ls", "detail")
                       if p["pool_name"] == EC)
        cluster.ceph("sla", "pool", "set", "urgent", "urgent", timeout=120)
        cluster.ceph("sla", "pool", "set", MOVE, "normal", "--strategy", "move", timeout=300)
        cluster.ceph("sla", "pool", "set", EC, "normal", timeout=300)
        cluster.ceph("sla", "pool", "set", COPY, "normal", "--strategy", "copy", timeout=300)
        cluster.wait_clean(300)
        objects = {p: Objects(cluster, p, cluster.path) for p in NORMAL}
        for pool, objs in objects.items():
            objs.write(8, pool)
        yield cluster, ids, objects


def entries(cluster: Cluster, ids: dict[str, int]) -> dict[str, Pairs]:
    """The normal pools' pg_upmap_items as the mon has them now."""
    items = current_items(cluster.json("osd", "dump"))
    return {pg: pairs for p in (MOVE, EC) for pg, pairs in items.get(ids[p], {}).items()}


def kept(before: dict[str, Pairs], now: dict[str, Pairs], what: str = "") -> float:
    """The share of `before`'s entries unchanged in `now` (printed per pool,
    for the figures a run reports with -s)."""
    share = sum(1 for pg, pairs in before.items() if now.get(pg) == pairs) / max(len(before), 1)
    if what:
        by_pool: dict[str, list[int]] = {}
        for pg, pairs in before.items():
            counts = by_pool.setdefault(pg.split(".")[0], [0, 0])
            counts[0] += now.get(pg) == pairs
            counts[1] += 1
        print(f"\nentries kept {what}: {share:.0%} of {len(before)} (" + ", ".join(
            f"pool {p}: {n}/{total}" for p, (n, total) in sorted(by_pool.items())) + ")")
    return share


def pool_states(cluster: Cluster, ids: dict[str, int]) -> dict[str, str]:
    wanted = {str(ids[p]) for p in NORMAL}
    brief = cluster.json("pg", "dump", "pgs_brief")
    pgs: list[Any] = brief.get("pg_stats", []) if isinstance(brief, dict) else brief
    return {str(pg["pgid"]): str(pg["state"]) for pg in pgs
            if str(pg["pgid"]).split(".")[0] in wanted}


def shared_and_placed(cluster: Cluster) -> dict[str, Any]:
    status = cluster.sla_status()
    pools = {p["name"]: p for p in status["pools"]}
    ups = {name: pools[name].get("upmaps") or {} for name in (MOVE, EC)}
    copy = (pools[COPY]["rule"], pools[COPY]["size"])
    ok = status["mode"] == "shared" and copy == ("sla_copy_3", 4) and all(
        u.get("placement") == "shared" and u.get("pending") == 0 and u.get("pgs_with_upmaps")
        for u in ups.values())
    if not ok:
        raise AssertionError(f"mode {status['mode']}, upmaps {ups}, copy {copy}, gates "
                             f"{[g.get('name') for g in status.get('gates') or []]}")
    return ups


def up_sets(cluster: Cluster) -> dict[str, list[int]]:
    """Every normal PG's up set from the mon's map of now (a PG's own stats
    can be a map behind)."""
    pgids = [str(pg["pgid"]) for pool in NORMAL
             for pg in cluster.json("pg", "ls-by-pool", pool).get("pg_stats", [])]
    return {pg: list(cluster.json("pg", "map", pg)["up"]) for pg in pgids}


def moved(before: dict[str, list[int]], now: dict[str, list[int]], what: str) -> float:
    """The share of PGs whose up set changed (a replica or shard moved), printed."""
    changed = sorted(pg for pg, up in before.items() if now.get(pg) != up)
    print(f"\nPGs with a member moved {what}: {len(changed)} of {len(before)} "
          f"{[(pg, before[pg], now.get(pg)) for pg in changed]}")
    return len(changed) / max(len(before), 1)


def urgent_members(cluster: Cluster, ids: dict[str, int]) -> dict[str, int]:
    """Each PG's members on SSD OSDs, from the mon's map (a copy pool's one more
    copy among them)."""
    out = {}
    for pool in NORMAL:
        for pg in cluster.json("pg", "ls-by-pool", pool).get("pg_stats", []):
            up = cluster.json("pg", "map", str(pg["pgid"]))["up"]
            out[str(pg["pgid"])] = sum(1 for o in up if o in SSD)
    return out


def down_and_seen(cluster: Cluster, osds: tuple[int, ...]) -> None:
    """The OSDs stopped, marked down in the map, and the module's status taken
    from an epoch that has them down."""
    for osd in osds:
        cluster.stop_daemon(f"osd.{osd}")

    def down() -> int | None:
        dump = cluster.json("osd", "dump")
        states = {int(o["osd"]): o["up"] for o in dump["osds"]}
        return int(dump["epoch"]) if not any(states[o] for o in osds) else None
    epoch = wait_for(f"osd {osds} marked down", down, 120)
    wait_for("the module to judge the map with them down",
             lambda: int(cluster.sla_status().get("epoch") or 0) >= epoch, 60)


def back_up(cluster: Cluster, osds: tuple[int, ...]) -> None:
    for osd in osds:
        cluster.start_osd(osd)
    wait_for(f"osd {osds} up", lambda: all(
        o["up"] for o in cluster.json("osd", "dump")["osds"] if int(o["osd"]) in osds), 180)
    cluster.wait_settled(300)


def test_shared_pools_live_through_restarts_the_urgent_class_lost_and_a_split(
        life: tuple[Cluster, dict[str, int], dict[str, Objects]]) -> None:
    cluster, ids, objects = life
    cluster.ceph("sla", "mode", "shared")
    wait_for("both normal pools shared, their entries placed",
             lambda: shared_and_placed(cluster), 300)
    cluster.wait_settled(300)
    # at most size - min_size members of a PG on SSDs: 1 of 3 in both pools
    members = urgent_members(cluster, ids)
    assert max(members.values()) == 1 and sum(members.values()) >= 8, members
    placed = entries(cluster, ids)
    assert len(placed) >= 8, placed

    cluster.ceph("osd", "set", "noout")
    try:
        for osd in (HDD[0], SSD[0]):  # a reboot of each class
            ups = up_sets(cluster)
            down_and_seen(cluster, (osd,))
            assert entries(cluster, ids) == placed, f"entries changed with osd.{osd} down"
            back_up(cluster, (osd,))
            now = entries(cluster, ids)
            assert kept(placed, now, f"across osd.{osd}'s restart") >= 0.9, (osd, placed, now)
            # nothing moved while it was away, so a member that moves now moved once
            assert moved(ups, up_sets(cluster), f"across osd.{osd}'s restart") <= 0.1
            placed = now

        # the whole urgent class stopped: every PG of the normal pools stays active
        down_and_seen(cluster, SSD)

        def active() -> dict[str, str] | None:
            states = pool_states(cluster, ids)
            stuck = {pg: s for pg, s in states.items() if "active" not in s.split("+")}
            if stuck:
                raise AssertionError(f"not active: {stuck}")
            return states
        wait_for("every normal PG active with every SSD OSD stopped", active, 90)
        for objs in objects.values():
            objs.verify()
        back_up(cluster, SSD)
    finally:
        cluster.ceph("osd", "unset", "noout")
    now = entries(cluster, ids)
    assert kept(placed, now) >= 0.9, (placed, now)
    placed = now

    # a split while shared: the PGs that were there keep their entries, the new get theirs
    for pool in NORMAL:
        cluster.ceph("osd", "pool", "set", pool, "pg_num", "32")

    def split_and_placed() -> dict[str, Pairs]:
        for pool in NORMAL:
            p = next(x for x in cluster.json("osd", "pool", "ls", "detail")
                     if x["pool_name"] == pool)
            if int(p["pg_num"]) != 32 or int(p["pg_placement_num"]) != 32:
                raise AssertionError(f"{pool}: pg_num {p['pg_num']} pgp_num "
                                     f"{p['pg_placement_num']}")
        shared_and_placed(cluster)
        return entries(cluster, ids)
    after = wait_for("both pools split and placed", split_and_placed, 300)
    cluster.wait_settled(600)
    after = entries(cluster, ids)
    assert kept(placed, after, "across the split") >= 0.9, (placed, after)
    assert len(after) > len(placed), (placed, after)
    assert max(urgent_members(cluster, ids).values()) == 1
    for objs in objects.values():
        objs.verify()
    assert not any(CRUSH_ITEM_NONE in pairs for pairs in after.values())


def test_share_past_min_size_is_the_operators_choice_and_status_counts_what_it_stops(
        life: tuple[Cluster, dict[str, int], dict[str, Objects]]) -> None:
    """`share_past_min_size`: up to size - 1 replicas of a PG on SSDs; status
    counts the PGs that stop with the urgent class, and that many do stop when
    every SSD OSD does (the check above, failing as it must)."""
    cluster, ids, objects = life
    cluster.ceph("sla", "mode", "shared")
    cluster.ceph("config", "set", "mgr", "mgr/sla/share_past_min_size", "true")
    cluster.ceph("osd", "set", "noout")
    try:
        def two_on_ssds() -> dict[str, Any]:
            ups = shared_and_placed(cluster)
            members = urgent_members(cluster, ids)
            if max(members.values()) < 2 or not ups[MOVE].get("pgs_stopping_with_urgent"):
                raise AssertionError(f"SSD members {members}, upmaps {ups}")
            return ups
        wait_for("PGs with two replicas on SSDs", two_on_ssds, 300)

        def settled() -> tuple[dict[str, Any], dict[str, int]]:
            """The placement once every PG is clean on it: the same members on
            SSDs before and after a clean look (a later epoch's entries, still
            backfilling, have their data elsewhere)."""
            cluster.wait_clean(300)
            ups, members = shared_and_placed(cluster), urgent_members(cluster, ids)
            cluster.wait_clean(10)
            if urgent_members(cluster, ids) != members:
                raise AssertionError("the placement moved while it was read")
            return ups, members
        ups, members = wait_for("a settled placement", settled, 300)
        said = ups[MOVE]["pgs_stopping_with_urgent"] + ups[EC]["pgs_stopping_with_urgent"]
        assert said == sum(1 for pg, n in members.items()
                           if n >= 2), (said, members)
        cluster.ceph("sla", "off")  # nothing sent back yet: the PGs stay as the SSDs left them
        down_and_seen(cluster, SSD)
        two = {pg for pg, n in members.items() if n >= 2}
        assert len(two) == said, (sorted(two), said)

        def below() -> set[str] | None:
            """Every PG settled: active, or peered (not active) or down, below
            min_size; those only among the PGs status counted. Ceph may keep one
            of those active on a copy an HDD still holds from before the move
            (active+undersized+remapped: peering takes a stray whose log is
            current), so status's count is the most that stop."""
            states = pool_states(cluster, ids)
            now = {pg for pg, s in states.items() if {"peered", "down"} & set(s.split("+"))}
            moving = {pg: s for pg, s in states.items()
                      if pg not in now and "active" not in s.split("+")}
            if moving or not now or not now <= two:
                raise AssertionError(f"below min_size {sorted(now)}, counted {sorted(two)}, "
                                     f"not settled {moving}")
            return now
        stopped = wait_for("the PGs below min_size, each one status counted", below, 90)
        # on again: the check after the fact sends the move pool back (isolation lets
        # its PGs recover on the HDDs), and only it: the SSDs are down, not at their
        # PG limit
        cluster.ceph("sla", "on")
        sent = wait_for("the move pool sent back", lambda: {
            p["name"] for p in cluster.sla_status()["pools"]
            if "not active" in (p.get("kept_isolated") or "")} or None, 150)
        assert sent == {MOVE}, sent
        print(f"\nshare_past_min_size: {len(stopped)} PGs below min_size with the SSDs "
              f"stopped (status counted {said}), of {len(members)}")
        back_up(cluster, SSD)
    finally:
        cluster.ceph("sla", "on")
        cluster.ceph("osd", "unset", "noout")
        # set back, not removed: a running module is told of a `config set`
        cluster.ceph("config", "set", "mgr", "mgr/sla/share_past_min_size", "false")
    cluster.ceph("sla", "mode", "isolated")  # a new shared period: sent-back pools share again
    cluster.ceph("sla", "mode", "shared")
    wait_for("back to one replica of a PG on SSDs at most", lambda: shared_and_placed(
        cluster) and max(urgent_members(cluster, ids).values()) == 1, 300)
    for objs in objects.values():
        objs.verify()
