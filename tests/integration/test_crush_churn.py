"""CRUSH churn in shared mode: the monitor survives, the module stays up,
normal inclusion holds, and urgent load still isolates.

Positional weight sets made `ceph osd crush add N 1 host=H root=NEWROOT`
abort ceph-mon (docs/known-issues.md); sla installs flat sets only. The
steps follow Ceph's own qa/workunits/mon/crush_ops.sh: buckets, roots,
OSD ids, classes, rules, reweights, weight sets.
"""
from __future__ import annotations

import os

import pytest

from harness.cephcluster import Cluster, PacedWriter, placed, wait_for, wait_mode

from .conftest import DWELL

pytestmark = pytest.mark.integration


def layout(cluster: Cluster) -> tuple[dict[int, str], dict[int, int]]:
    nodes = cluster.json("osd", "tree")["nodes"]
    cls = {n["id"]: n.get("device_class", "") for n in nodes if n["id"] >= 0}
    host = {c: n["id"] for n in nodes if n["type"] == "host" for c in n.get("children", [])}
    return cls, host


def mapping_faults(cluster: Cluster) -> list[str]:
    """Every PG of the normal pool: a hdd replica, no OSD or host twice."""
    cls, host = layout(cluster)
    bad = []
    for pg in cluster.json("pg", "ls-by-pool", "normal")["pg_stats"]:
        up = pg["up"]
        if not any(cls.get(o) == "hdd" for o in up):
            bad.append(f"{pg['pgid']} {up}: no hdd replica")
        if len(set(up)) != len(up) or len({host.get(o) for o in up}) != len(up):
            bad.append(f"{pg['pgid']} {up}: an OSD or a host twice")
    return bad


def no_faults(cluster: Cluster) -> bool:
    """True, or raises with the faults (wait_for reports them)."""
    bad = mapping_faults(cluster)
    if bad:
        raise AssertionError(bad[:10])
    return True


def test_crush_churn_in_shared_mode(sla_pools: Cluster) -> None:
    cluster = sla_pools
    cluster.wait_clean(240)
    wait_for("shared mode with upmaps placed", lambda: placed(cluster), DWELL + 180)
    mon = cluster.pids()["mon.a"]
    cls, _ = layout(cluster)
    ssd = min(o for o, c in cls.items() if c == "ssd")
    ssd_weight = next(n["crush_weight"] for n in cluster.json("osd", "tree")["nodes"]
                      if n["id"] == ssd)
    new = int(cluster.ceph("osd", "create").strip())
    steps = [
        ("osd", "crush", "add-bucket", "churnroot", "root"),
        ("osd", "crush", "add-bucket", "churnhost", "host"),
        ("osd", "crush", "move", "churnhost", "root=churnroot"),
        # with a positional weight set installed this aborted ceph-mon
        ("osd", "crush", "add", str(new), "1", "host=churnhost2", "root=churnroot2"),
        # what a new OSD on a new host does when it starts
        ("osd", "crush", "create-or-move", f"osd.{new}", "1", "host=churnhost3", "root=default"),
        ("osd", "crush", "set-device-class", "ssd", f"osd.{new}"),
        ("osd", "crush", "rule", "create-replicated", "churn_rule", "churnroot", "host"),
        ("osd", "crush", "rule", "rm", "churn_rule"),
        # a routine reweight of an urgent OSD: Ceph writes the weight into
        # every weight set (osd_crush_update_weight_set)
        ("osd", "crush", "reweight", f"osd.{ssd}", "0.37"),
        ("osd", "crush", "rename-bucket", "churnhost", "churnhost4"),
        ("osd", "crush", "weight-set", "create-compat"),
        ("osd", "crush", "weight-set", "rm-compat"),
        ("osd", "crush", "rm", f"osd.{new}"),
        ("osd", "crush", "rm", "churnhost3"),
        ("osd", "crush", "rm", "churnhost4"),
        ("osd", "crush", "rm", "churnhost2"),
        ("osd", "crush", "rm", "churnroot2"),
        ("osd", "crush", "rm", "churnroot"),
    ]
    try:
        for step in steps:
            cluster.ceph(*step, timeout=60)
            os.kill(mon, 0)  # raises if the monitor died
            cluster.ceph("mon", "stat")
        # after the churn, with the SSD's weight changed: still every PG
        # keeps a normal replica and no host twice, on the real up sets
        wait_for("normal inclusion and distinct hosts after the churn",
                 lambda: no_faults(cluster), 120)
    finally:
        cluster.ceph_raw("osd", "crush", "reweight", f"osd.{ssd}", str(ssd_weight))
        cluster.ceph_raw("osd", "purge", str(new), "--yes-i-really-mean-it")
    # Ceph wrote the reweights and the new host into the flat weight sets
    # (osd_crush_update_weight_set): the module finds and repairs the drift
    repairs = wait_for("the module to repair its drifted weight sets",
                       lambda: cluster.sla_status()["weight_set_repairs"], 120)
    print(f"\nweight set repairs: {repairs}")
    assert cluster.pids()["mon.a"] == mon
    os.kill(mon, 0)
    health = cluster.json("health", "detail")["checks"]
    assert "MGR_MODULE_ERROR" not in health, health
    cluster.wait_clean(240)
    wait_for("upmaps placed again", lambda: placed(cluster), 120)
    # the up sets come from the PG stats, a report (5 s) behind the map the
    # module placed on: wait for them, and fail with what was seen
    wait_for("normal inclusion with the repaired weight sets", lambda: no_faults(cluster), 60)
    bench = PacedWriter(cluster, "urgent")
    try:
        wait_mode(cluster, "isolated", 60)
    finally:
        bench.stop()
    wait_for("normal pool isolated: no ssd in any up set", lambda: all(
        layout(cluster)[0].get(o) == "hdd"
        for pg in cluster.json("pg", "ls-by-pool", "normal")["pg_stats"] for o in pg["up"]),
        120)
    wait_mode(cluster, "shared", DWELL + 120)
    cluster.wait_clean(240)
