"""The harness itself: the cluster the other tests rely on is what it claims."""
from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path

import pytest

from harness.cephcluster import MINICLUSTER, Cluster

pytestmark = pytest.mark.integration


def test_eight_osds_in_four_hosts_half_hdd_half_ssd(cluster: Cluster) -> None:
    tree = cluster.json("osd", "tree")
    nodes = {n["id"]: n for n in tree["nodes"]}
    hosts = [n for n in tree["nodes"] if n["type"] == "host"]
    assert len(hosts) == 4
    for host in hosts:
        classes = sorted(nodes[c]["device_class"] for c in host["children"])
        assert classes == ["hdd", "ssd"], host
    osds = [n for n in tree["nodes"] if n["type"] == "osd"]
    assert len(osds) == 8 and all(o["status"] == "up" for o in osds)


def test_sla_module_loaded_from_the_checkout_answers(cluster: Cluster) -> None:
    status = cluster.sla_status()
    assert status["mode"] in ("isolated", "shared")
    assert "threshold_iops" in status
    link = cluster.path / "mgr-modules" / "sla"
    assert link.resolve() == (Path(__file__).resolve().parents[2] / "mgr_sla")


def test_down_leaves_no_daemon_and_clusters_run_side_by_side(cluster: Cluster) -> None:
    # A second, small cluster next to the session's one: its own ports, its own pids.
    with tempfile.TemporaryDirectory(prefix="sla-it-2-") as tmp:
        second = Cluster.up(Path(tmp) / "c", osds=2)
        try:
            pids = second.pids()
            assert set(pids) == {"mon.a", "mgr.x", "osd.0", "osd.1"}
            assert not set(pids.values()) & set(cluster.pids().values())
            assert second.json("osd", "stat")["num_up_osds"] == 2
        finally:
            second.down()
        for name, pid in pids.items():
            assert not os.path.exists(f"/proc/{pid}") or \
                str(second.path) not in Path(f"/proc/{pid}/cmdline").read_text(), name
    # the session cluster is untouched
    assert cluster.json("osd", "stat")["num_up_osds"] == 8


def test_busy_dir_and_bad_options_are_refused_with_one_line(cluster: Cluster) -> None:
    p = subprocess.run([str(MINICLUSTER), "up", str(cluster.path)], capture_output=True,
                       text=True, timeout=30)
    assert p.returncode != 0 and "running cluster" in p.stderr
    p = subprocess.run([str(MINICLUSTER), "up", "/tmp/x", "--osds", "3"], capture_output=True,
                       text=True, timeout=30)
    assert p.returncode != 0 and "even number" in p.stderr
    p = subprocess.run([str(MINICLUSTER), "up", "/tmp/x", "--extra-conf", "/nonexistent.conf"],
                       capture_output=True, text=True, timeout=30)
    assert p.returncode != 0 and "cannot read '/nonexistent.conf'" in p.stderr
    assert not Path("/tmp/x").exists()
