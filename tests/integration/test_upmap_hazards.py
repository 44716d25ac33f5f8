"""The move strategy on a real cluster, against what production does to it:
a floor below luminous, primary affinity reordering up sets, an OSD going
down, the balancer on in upmap mode (as installed, and set by hand), a
pg_num split and merge. Each is checked on the OSD map itself: the pool's
pg_upmap_items and the epochs the mon publishes.
"""
from __future__ import annotations

import os
import re
import signal
import time
from collections.abc import Iterator
from typing import Any

import pytest

from harness.cephcluster import Cluster, placed, wait_for, wait_mode

from .conftest import DWELL

pytestmark = pytest.mark.integration


def _entries(cluster: Cluster, pool_id: int) -> dict[str, list[tuple[int, int]]]:
    dump = cluster.json("osd", "dump")
    return {e["pgid"]: [(m["from"], m["to"]) for m in e["mappings"]]
            for e in dump.get("pg_upmap_items", []) if e["pgid"].startswith(f"{pool_id}.")}


def _epoch(cluster: Cluster) -> int:
    return int(cluster.json("osd", "stat")["epoch"])


def _upmap_commands(cluster: Cluster, pool_id: int) -> list[str]:
    """The mon's audit log of pg-upmap commands on the pool's PGs, oldest first."""
    entries = cluster.json("log", "last", "1000", "debug", "audit")
    pgid = re.compile(rf'"pgid": ?"{pool_id}\.')
    return [str(e.get("message", "")) for e in entries
            if "pg-upmap" in str(e.get("message", "")) and pgid.search(str(e.get("message")))
            and "dispatch" in str(e.get("message"))]


def _seen(cluster: Cluster, epoch: int) -> dict[str, Any]:
    """Status once the module has checked placement on `epoch` or later."""
    return wait_for(f"the module at epoch {epoch}",
                    lambda: (s := cluster.sla_status())["epoch"] >= epoch and s, 60)


def _pool_id(cluster: Cluster, name: str) -> int:
    return next(int(p["pool_id"]) for p in cluster.json("osd", "pool", "ls", "detail")
                if p["pool_name"] == name)


def _changed(cluster: Cluster, before: dict[str, list[tuple[int, int]]],
             after: dict[str, list[tuple[int, int]]]) -> str:
    """What changed in the pool's entries, and what the module logged about it."""
    pgs = sorted(p for p in set(before) | set(after) if before.get(p) != after.get(p))
    diff = "; ".join(f"{p}: {before.get(p)} -> {after.get(p)}" for p in pgs)
    log = cluster.path / "log" / "mgr.x.log"
    said = [line for line in (log.read_text(errors="replace").splitlines() if log.exists()
                              else []) if "sla:" in line][-15:]
    dump = cluster.json("osd", "dump")
    pools = [(p["pool_name"], p["pg_num"], p["pg_placement_num"]) for p in dump["pools"]]
    osds = [(o["osd"], o["up"], o["in"], o["weight"]) for o in dump["osds"]]
    return (f"entries changed: {diff}\npools (name, pg_num, pgp_num): {pools}\n"
            f"osds (id, up, in, reweight): {osds}\nthe module's last log lines:\n"
            + "\n".join(said))


@pytest.fixture(scope="module")
def shared(sla_pools: Cluster) -> Iterator[Cluster]:
    cluster = sla_pools
    cluster.ceph("sla", "mode", "shared")
    wait_mode(cluster, "shared", DWELL + 120)
    wait_for("upmap entries placed", lambda: placed(cluster), 180)
    cluster.wait_clean(300)
    yield cluster
    cluster.ceph("sla", "mode", "auto")


@pytest.fixture
def fresh(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """A cluster of its own, sla enabled but nothing applied (6 OSDs, 3 hosts)."""
    path = tmp_path_factory.mktemp("sla-fresh-")
    c = Cluster.up(path, osds=6)
    try:
        c.enable_sla()
        yield c
    finally:
        c.down()


def test_a_cluster_below_luminous_is_refused_and_nothing_changes(fresh: Cluster) -> None:
    """pg_upmap_items and device classes need luminous clients. A cluster
    whose floor is still jewel (set before its OSDs got classes, as on a
    cluster upgraded from jewel) must get the command that fixes it, and no
    change, from `rules apply` and from `pool set ... normal`."""
    cluster = fresh
    cluster.create_pool("legacy", 16)
    cluster.ceph("osd", "set-require-min-compat-client", "jewel", "--yes-i-really-mean-it")
    assert cluster.json("osd", "dump")["require_min_compat_client"] == "jewel"
    rules = cluster.json("osd", "crush", "rule", "ls")
    pool_before = _pool(cluster, "legacy")
    for argv in (("sla", "rules", "apply"), ("sla", "pool", "set", "legacy", "normal")):
        r = cluster.ceph_raw(*argv, timeout=300)
        assert r.returncode != 0, (argv, r.stdout)
        assert "ceph osd set-require-min-compat-client luminous" in r.stderr, r.stderr
        assert "luminous" in r.stderr and "jewel" in r.stderr, r.stderr
    assert cluster.json("osd", "crush", "rule", "ls") == rules
    assert _pool(cluster, "legacy")["crush_rule"] == pool_before["crush_rule"]
    assert cluster.json("osd", "dump")["require_min_compat_client"] == "jewel"
    # the command the message names is the whole fix
    cluster.ceph("osd", "set-require-min-compat-client", "luminous")
    assert "sla CRUSH rules" in cluster.ceph("sla", "rules", "apply", timeout=300)


def _pool_ids_without(cluster: Cluster, pool: int) -> str:
    return wait_for(f"the balancer's pool_ids without pool {pool}", lambda: (
        v := cluster.ceph_raw("config", "get", "mgr", "mgr/balancer/pool_ids").stdout.strip()
    ) and str(pool) not in v.split(",") and v, 60)


def test_the_balancer_as_installed_is_kept_off_the_managed_pools(shared: Cluster) -> None:
    """Never configured, the balancer's options read as unset (None on recent
    releases), yet it is on in upmap mode: the module must see that."""
    cluster = shared
    set_options = [e["name"] for e in cluster.json("config", "dump")
                   if e["name"] in ("mgr/balancer/mode", "mgr/balancer/active")]
    assert not set_options, f"the suite set the balancer before this test: {set_options}"
    status = cluster.json("balancer", "status")
    assert status["active"] and status["mode"] == "upmap", status
    ids = _pool_ids_without(cluster, _pool_id(cluster, "normal"))
    print(f"\nbalancer pool_ids set by sla: {ids}")


def test_primary_affinity_changes_no_plan(shared: Cluster) -> None:
    cluster = shared
    pool = _pool_id(cluster, "normal")
    before = _entries(cluster, pool)
    assert before
    hdd = [n["id"] for n in cluster.json("osd", "tree")["nodes"]
           if n.get("device_class") == "hdd"]
    try:
        for osd in hdd:
            cluster.ceph("osd", "primary-affinity", f"osd.{osd}", "0")
        # the PGs re-peer with new primaries (Ceph may publish pg_temp epochs
        # meanwhile); the module must replan none of them: its entries stay
        for _ in range(10):
            _seen(cluster, _epoch(cluster))
            after = _entries(cluster, pool)
            assert after == before, _changed(cluster, before, after)
            time.sleep(1)
    finally:
        for osd in hdd:
            cluster.ceph("osd", "primary-affinity", f"osd.{osd}", "1")


def test_an_osd_going_down_changes_no_entry(shared: Cluster) -> None:
    cluster = shared
    pool = _pool_id(cluster, "normal")
    before = _entries(cluster, pool)
    ssd = next(n["id"] for n in cluster.json("osd", "tree")["nodes"]
               if n.get("device_class") == "ssd")
    pid = cluster.pids()[f"osd.{ssd}"]
    os.kill(pid, signal.SIGSTOP)  # frozen, then marked down: in, not up
    try:
        cluster.ceph("osd", "down", f"osd.{ssd}")
        wait_for(f"osd.{ssd} down", lambda: ssd not in {
            o["osd"] for o in cluster.json("osd", "dump")["osds"] if o["up"]}, 30)
        _seen(cluster, _epoch(cluster))
        after = _entries(cluster, pool)
        assert after == before, _changed(cluster, before, after)
    finally:
        os.kill(pid, signal.SIGCONT)
    wait_for(f"osd.{ssd} up", lambda: cluster.json("osd", "stat")["num_up_osds"] == 8, 120)
    _seen(cluster, _epoch(cluster))
    after = _entries(cluster, pool)
    assert after == before, _changed(cluster, before, after)
    cluster.wait_clean(300)


def test_the_balancer_leaves_the_managed_pools_alone(shared: Cluster) -> None:
    cluster = shared
    pool = _pool_id(cluster, "normal")
    cluster.ceph("config", "set", "mgr", "mgr/balancer/sleep_interval", "5")
    cluster.ceph("balancer", "mode", "upmap")
    cluster.ceph("balancer", "on")
    try:
        ids = _pool_ids_without(cluster, pool)
        print(f"\nbalancer pool_ids set by sla: {ids}")
        before, changes = _entries(cluster, pool), 0
        deadline = time.monotonic() + 45  # several balancer rounds
        while time.monotonic() < deadline:
            now = _entries(cluster, pool)
            changes += now != before
            before = now
            time.sleep(2)
        assert changes <= 2, changes
    finally:
        # back to the balancer as installed: on, in upmap mode, once a minute
        for option in ("sleep_interval", "mode", "active"):
            cluster.ceph("config", "rm", "mgr", f"mgr/balancer/{option}")


def _seed(ps: int, pgp_num: int) -> int:
    """Ceph's ceph_stable_mod: the PG whose CRUSH mapping PG `ps` takes."""
    mask = (1 << (pgp_num - 1).bit_length()) - 1
    return ps & mask if (ps & mask) < pgp_num else ps & (mask >> 1)


def _pool(cluster: Cluster, name: str) -> dict[str, Any]:
    return next(p for p in cluster.json("osd", "pool", "ls", "detail")
                if p["pool_name"] == name)


def test_the_children_of_a_split_keep_their_parents_entries(shared: Cluster) -> None:
    """A split's children hold their parent's data, where the parent's entry
    put it: they carry that entry while they map like their parent (pgp_num
    below pg_num), so their data does not move off and back."""
    cluster = shared
    pool_id = cluster.create_pool("splitting", 16)
    try:
        cluster.ceph("sla", "pool", "set", "splitting", "normal", "--strategy", "move",
                     timeout=300)
        # pgp_num set apart from pg_num stays where the operator put it (the
        # mon moves it with pg_num only while they are equal)
        cluster.ceph("osd", "pool", "set", "splitting", "pgp_num", "8")
        wait_for("pgp_num 8", lambda: _pool(cluster, "splitting")["pg_placement_num"] == 8,
                 120, interval=1)
        wait_for("splitting placed", lambda: placed(cluster, "splitting"), 180)
        cluster.wait_clean(300)
        cluster.ceph("osd", "pool", "set", "splitting", "pg_num", "32")
        wait_for("the split to 32 PGs", lambda: _pool(cluster, "splitting")["pg_num"] == 32,
                 300, interval=1)
        assert _pool(cluster, "splitting")["pg_placement_num"] == 8
        _seen(cluster, _epoch(cluster))  # the module has planned the split's epoch
        wait_for("splitting placed after the split", lambda: placed(cluster, "splitting"), 180)
        entries = _entries(cluster, pool_id)
        assert entries
        wrong = {f"{pool_id}.{ps:x}": (entries.get(f"{pool_id}.{ps:x}"),
                                       entries.get(f"{pool_id}.{_seed(ps, 8):x}"))
                 for ps in range(32)
                 if entries.get(f"{pool_id}.{ps:x}") != entries.get(f"{pool_id}.{_seed(ps, 8):x}")}
        assert not wrong, f"PGs whose entry is not their parent's (theirs, parent's): {wrong}"
        cluster.wait_clean(300)
        # placed on their own once pgp_num follows: every PG full, no host
        # twice, a hdd replica in each (the module's health checks say so)
        cluster.ceph("osd", "pool", "set", "splitting", "pgp_num", "32")
        wait_for("pgp_num 32", lambda: _pool(cluster, "splitting")["pg_placement_num"] == 32,
                 300, interval=1)
        _seen(cluster, _epoch(cluster))
        wait_for("splitting placed on 32 seeds", lambda: placed(cluster, "splitting"), 180)
        cluster.wait_clean(300)
        health = cluster.json("health", "detail")["checks"]
        assert not {"SLA_PLACEMENT_FAULT", "SLA_NORMAL_INCLUSION"} & set(health), health
    finally:
        cluster.ceph_raw("sla", "pool", "rm", "splitting", timeout=300)
        cluster.ceph_raw("osd", "pool", "rm", "splitting", "splitting",
                         "--yes-i-really-really-mean-it")


def test_a_pg_merge_in_shared_mode_ends_and_the_module_stops_sending(shared: Cluster) -> None:
    cluster = shared
    cluster.create_pool("merging", 16)
    try:
        cluster.ceph("sla", "pool", "set", "merging", "normal", "--strategy", "move",
                     timeout=300)
        wait_for("merging placed", lambda: placed(cluster, "merging"), 180)
        cluster.wait_clean(300)
        cluster.ceph("osd", "pool", "set", "merging", "pg_num", "12")
        # merged all the way: the mon steps pg_num and pgp_num down a few PGs per
        # epoch after the target is set, each step an epoch of its own
        wait_for("the merge to 12 PGs", lambda: {
            p.get(k) for p in cluster.json("osd", "pool", "ls", "detail")
            if p["pool_name"] == "merging"
            for k in ("pg_num", "pg_num_target", "pg_placement_num",
                      "pg_placement_num_target")} == {12}, 300, interval=1)
        # the merged PGs are placed again, once; then nothing is pending and
        # the mon publishes nothing more for the pool (a loop: an epoch a second)
        wait_for("merging placed after the merge", lambda: placed(cluster, "merging"), 180)
        cluster.wait_clean(300)
        pool_id = _pool_id(cluster, "merging")
        assert _upmap_commands(cluster, pool_id), \
            "no pg-upmap command for the pool in the audit log (placed by move)"

        def quiet_spell() -> bool:
            """10 s in which the module sent nothing for the pool and the mon
            published few epochs (its own after a merge: pg_temp cleared); a
            loop sends the pool's entries again each tick, an epoch a second."""
            sent, epoch = _upmap_commands(cluster, pool_id), _epoch(cluster)
            time.sleep(10)
            again = _upmap_commands(cluster, pool_id)[len(sent):]
            assert not again and _epoch(cluster) - epoch <= 5, (
                f"{len(again)} commands, {_epoch(cluster) - epoch} epochs in 10 s: "
                f"{again[:3]}")
            return True
        # a last entry may follow the merged PGs' stats; then the sending stops
        wait_for("the module to stop sending after the merge", quiet_spell, 90, interval=0)
    finally:
        cluster.ceph_raw("sla", "pool", "rm", "merging", timeout=300)
        cluster.ceph_raw("osd", "pool", "rm", "merging", "merging",
                         "--yes-i-really-really-mean-it")
