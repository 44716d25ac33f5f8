"""`sla-crush` against the live mini cluster: install is a verified
compare-and-swap, idempotent, and leaves existing rules alone; plan and
verify-live read the real PG mappings."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from harness.cephcluster import ROOT, Cluster

pytestmark = pytest.mark.integration


def sla_crush(cluster: Cluster, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "crush_rules.cli", *args, "--conf", cluster.conf],
                          capture_output=True, text=True, timeout=300, cwd=ROOT)


def test_install_twice_changes_nothing_the_second_time(cluster: Cluster) -> None:
    before = cluster.json("osd", "crush", "dump")
    old_rules = {r["rule_name"]: r for r in before["rules"]}
    first = sla_crush(cluster, "install")
    assert first.returncode == 0, first.stderr
    version = cluster.json("osd", "dump")["crush_version"]
    second = sla_crush(cluster, "install")
    assert second.returncode == 0, second.stderr
    assert cluster.json("osd", "dump")["crush_version"] == version, "second install changed the map"
    after = {r["rule_name"]: r for r in cluster.json("osd", "crush", "dump")["rules"]}
    for name, rule in old_rules.items():
        assert after[name] == rule, f"existing rule {name} changed"
    assert {"sla_isolated_normal", "sla_isolated_urgent", "sla_shared", "sla_hybrid",
            "sla_fast"} <= set(after)


def test_plan_and_verify_on_a_live_pool(cluster: Cluster) -> None:
    pool_id = cluster.create_pool("plan-me", 16)
    cluster.ceph("osd", "pool", "set", "plan-me", "crush_rule", "sla_isolated_normal")
    cluster.wait_clean(180)
    p = sla_crush(cluster, "install", "--pool-id", str(pool_id))
    assert p.returncode == 0, p.stderr
    # the pool's weight set is flat (one position: positional sets can abort ceph-mon)
    choose_args = cluster.json("osd", "crush", "dump")["choose_args"][str(pool_id)]
    assert choose_args and {len(a["weight_set"]) for a in choose_args} == {1}
    p = sla_crush(cluster, "plan", "--pool", "plan-me", "--to", "sla_shared")
    assert p.returncode == 0, p.stderr
    plan = json.loads(p.stdout)
    # with the flat weight set sla_shared maps every PG like sla_isolated_normal: a switch
    # moves nothing by itself (urgent use in shared mode comes from the module's upmaps)
    assert plan["pgs"] == 16 and plan["pgs_moving"] == 0 and plan["replicas"] == 0
    p = sla_crush(cluster, "verify-live", "--pool-id", str(pool_id))
    assert p.returncode == 0, p.stdout + p.stderr
    assert json.loads(p.stdout)["ok"] is True
    cluster.ceph("osd", "pool", "rm", "plan-me", "plan-me", "--yes-i-really-really-mean-it")


def test_bad_input_exits_2_and_changes_nothing(cluster: Cluster) -> None:
    version = cluster.json("osd", "dump")["crush_version"]
    for args, words in [(["install", "--normal-class", "nvme"], "nvme"),
                        (["install", "--failure-domain", "planet"], "planet"),
                        (["install", "--size", "9"], "size")]:
        p = sla_crush(cluster, *args)
        assert p.returncode == 2, (args, p.stderr)
        assert words in p.stderr and len(p.stderr.strip().splitlines()) == 1, p.stderr
    assert cluster.json("osd", "dump")["crush_version"] == version
