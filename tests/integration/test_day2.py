"""Day 2 on a real cluster: an EC pool of the default profile refused, a custom-rule pool
given back its rule, isolation despite inactive PGs elsewhere, flags that hold
the switch to shared and say so, and `ceph sla off|on`."""
from __future__ import annotations

import time

import pytest

from harness.cephcluster import Cluster, PacedWriter, wait_for, wait_mode

from .conftest import DWELL

pytestmark = pytest.mark.integration


def drop_pool(cluster: Cluster, name: str) -> None:
    cluster.ceph_raw("sla", "pool", "rm", name)
    cluster.ceph_raw("osd", "pool", "rm", name, name, "--yes-i-really-really-mean-it")


def test_an_ec_pool_of_the_default_profile_is_refused_naming_its_rule(sla_pools: Cluster
                                                                         ) -> None:
    """Ceph's default EC profile names no device class: its rule takes the whole
    root, every class, so no normal region holds its shards; refused before
    anything is installed, naming the rule."""
    cluster = sla_pools
    cluster.ceph("osd", "pool", "create", "ecpool", "8", "8", "erasure")
    rules = cluster.json("osd", "crush", "rule", "ls")
    try:
        p = cluster.ceph_raw("sla", "pool", "set", "ecpool", "normal")
        assert p.returncode == 22 and "erasure-coded, and its own rule" in p.stderr, p
        assert "takes default, not default class hdd" in p.stderr, p
        assert cluster.json("osd", "crush", "rule", "ls") == rules  # nothing installed
        assert "ecpool" not in {x["name"] for x in cluster.sla_status()["pools"]}
    finally:
        drop_pool(cluster, "ecpool")


def test_custom_rule_pool_gets_its_rule_back_on_pool_rm(sla_pools: Cluster) -> None:
    cluster = sla_pools
    cluster.ceph("osd", "crush", "rule", "create-replicated", "custom_host", "default", "host")
    cluster.create_pool("custom", 8)
    try:
        cluster.ceph("osd", "pool", "set", "custom", "crush_rule", "custom_host")
        cluster.ceph("sla", "pool", "set", "custom", "normal", timeout=300)
        wait_for("custom on an sla rule", lambda: cluster.pool_rule("custom").startswith("sla_"),
                 60)
        out = cluster.ceph("sla", "pool", "rm", "custom")
        assert "custom_host" in out, out
        assert cluster.pool_rule("custom") == "custom_host"
        dump = cluster.json("osd", "dump")
        pool_id = next(p["pool"] for p in dump["pools"] if p["pool_name"] == "custom")
        assert not [e for e in dump["pg_upmap_items"] if e["pgid"].startswith(f"{pool_id}.")]
        choose_args = cluster.json("osd", "crush", "dump").get("choose_args", {})
        assert str(pool_id) not in choose_args, "the pool's sla weight set is still there"
    finally:
        drop_pool(cluster, "custom")
        cluster.ceph_raw("osd", "crush", "rule", "rm", "custom_host")
    cluster.wait_clean(240)


def test_isolation_despite_inactive_pgs_in_an_unmanaged_pool(sla_pools: Cluster) -> None:
    cluster = sla_pools
    wait_mode(cluster, "shared", DWELL + 180)
    cluster.create_pool("wide", 8)
    try:
        # size 6 on 4 hosts with min_size 5: every PG has 4 OSDs, none active
        cluster.ceph("osd", "pool", "set", "wide", "size", "6", "--yes-i-really-mean-it")
        cluster.ceph("osd", "pool", "set", "wide", "min_size", "5")
        wait_for("inactive PGs in pool wide", lambda: any(
            "active" not in pg["state"].split("+")
            for pg in cluster.json("pg", "ls-by-pool", "wide")["pg_stats"]), 60)
        bench = PacedWriter(cluster, "urgent")
        try:
            wait_mode(cluster, "isolated", 60)
        finally:
            bench.stop()
    finally:
        drop_pool(cluster, "wide")
    wait_mode(cluster, "shared", DWELL + 180)
    cluster.wait_clean(240)


def test_norebalance_holds_the_switch_to_shared_and_says_so(sla_pools: Cluster) -> None:
    cluster = sla_pools
    cluster.ceph("sla", "mode", "isolated")
    wait_mode(cluster, "isolated", 30)
    cluster.wait_clean(240)
    cluster.ceph("osd", "set", "norebalance")
    try:
        cluster.ceph("sla", "mode", "shared")
        status = wait_for("cluster_flags in status", lambda: (s := cluster.sla_status()) and any(
            g["name"] == "cluster_flags" for g in s["gates"]) and s, 30)
        gate = next(g for g in status["gates"] if g["name"] == "cluster_flags")
        assert "norebalance" in gate["detail"] and status["mode"] == "isolated"
        assert "norebalance" in cluster.ceph("sla", "status")
        assert cluster.pool_rule("normal") == "sla_isolated_normal"
    finally:
        cluster.ceph("osd", "unset", "norebalance")
    wait_mode(cluster, "shared", 60)
    cluster.ceph("sla", "mode", "auto")
    cluster.wait_clean(240)


def test_off_changes_nothing_and_on_resumes(sla_pools: Cluster) -> None:
    cluster = sla_pools
    wait_mode(cluster, "shared", DWELL + 180)
    cluster.ceph("sla", "off")
    bench = PacedWriter(cluster, "urgent")
    try:
        assert cluster.sla_status()["active"] is False
        # watch several ticks under urgent load: off means no switch
        wait_for("the module to see the urgent load",
                 lambda: (cluster.sla_status()["urgent_iops"] or 0) > 100, 30)
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            assert cluster.sla_status()["mode"] == "shared"
            time.sleep(0.2)
        assert cluster.pool_rule("normal") == "sla_shared"
        cluster.ceph("sla", "on")
        wait_mode(cluster, "isolated", 60)
    finally:
        bench.stop()
        cluster.ceph("sla", "on")
    wait_mode(cluster, "shared", DWELL + 180)
    cluster.wait_clean(240)
