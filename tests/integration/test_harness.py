"""The harness itself: the cluster the other tests rely on is what it claims."""
from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path

import pytest

from harness import ceph_commands
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


def test_the_command_channel_answers_as_the_cli_does(cluster: Cluster) -> None:
    """The tests' `ceph` calls go over one librados connection of the cluster's
    release (harness/ceph_command_server.py): same bytes and return codes as the
    CLI, for mon and mgr commands, JSON and plain, successes and errors."""
    calls = [("osd", "pool", "ls", "detail", "-f", "json"), ("osd", "crush", "rule", "ls"),
             ("osd", "pool", "get", "no-such-pool", "size"),
             ("config", "get", "mgr", "mgr/sla/interval_secs"),
             ("sla", "set-threshold", "abc"), ("mgr", "module", "ls", "-f", "json-pretty"),
             ("osd", "pool", "set", "no-such-pool", "size", "3")]
    for args in calls:
        channel, cli = cluster.ceph_raw(*args), cluster.ceph_raw(*args, cli=True)
        assert (channel.returncode, channel.stdout, channel.stderr) == \
            (cli.returncode, cli.stdout, cli.stderr), args
    assert ceph_commands.channel_for(cluster.prefix, cluster.conf).proc is not None
    # what the channel does not take runs the CLI: a daemon's command, an output file
    version = cluster.ceph_raw("tell", "osd.0", "version")
    assert version.returncode == 0 and "version" in version.stdout, version


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


def test_busy_dir_and_bad_options_are_refused_with_one_line(cluster: Cluster,
                                                            tmp_path: Path) -> None:
    new = str(tmp_path / "new")  # a directory of this run's own: refused before it exists
    p = subprocess.run([str(MINICLUSTER), "up", str(cluster.path)], capture_output=True,
                       text=True, timeout=30)
    assert p.returncode != 0 and "running cluster" in p.stderr
    p = subprocess.run([str(MINICLUSTER), "up", new, "--osds", "3"], capture_output=True,
                       text=True, timeout=30)
    assert p.returncode != 0 and "even number" in p.stderr
    p = subprocess.run([str(MINICLUSTER), "up", new, "--extra-conf", "/nonexistent.conf"],
                       capture_output=True, text=True, timeout=30)
    assert p.returncode != 0 and "cannot read '/nonexistent.conf'" in p.stderr
    # one daemon stopped or started: only a recorded one, only an OSD started, never twice
    for argv, words in ((["start", str(cluster.path), "osd.0"], "is running"),
                        (["start", str(cluster.path), "mon.a"], "takes an OSD"),
                        (["stop", str(cluster.path), "osd.99"], "not running"),
                        (["stop", new, "osd.1"], "no cluster recorded")):
        p = subprocess.run([str(MINICLUSTER), *argv], capture_output=True, text=True,
                           timeout=30)
        assert p.returncode != 0 and words in p.stderr, (argv, p.stderr)
    assert not Path(new).exists()


def _loops_backed_by(marker: str) -> list[str]:
    """Attached loop devices whose backing file path contains `marker`."""
    out = subprocess.run(["losetup", "--list", "--noheadings", "--output", "NAME,BACK-FILE"],
                         capture_output=True, text=True, timeout=30, check=True).stdout
    return [line for line in out.splitlines() if marker in line]


def test_db_class_gives_each_osd_its_own_block_db_and_down_detaches_it(tmp_path: Path) -> None:
    # a DIR name of its own: the DB files live in /dev/shm/ceph-sla-db.<name>.XXXXXX
    c = Cluster.up(tmp_path / "dbclass", osds=2, objectstore="bluestore", db_class="ssd")
    try:
        devs = c.db_devices()
        assert set(devs) == {0, 1} and len(set(devs.values())) == 2
        files = [line.split()[1] for line in (c.path / "dbdevs").read_text().splitlines()
                 if line.startswith("file ")]
        assert len(files) == 2 and all(f.startswith("/dev/shm/") for f in files)
        for osd, dev in devs.items():
            meta = c.json("osd", "metadata", str(osd))
            assert meta["bluefs_dedicated_db"] == "1", meta
            assert meta["bluefs_db_rotational"] == "0", meta
            assert Path(dev).name in meta["bluefs_db_devices"], meta
        assert len(_loops_backed_by("ceph-sla-db.dbclass.")) == 2
    finally:
        c.down()
    assert _loops_backed_by("ceph-sla-db.dbclass.") == []
    assert not any(Path(f).exists() for f in files)
    assert not (c.path / "dbdevs").exists()


def test_db_class_failed_up_leaves_no_loop_device(tmp_path: Path) -> None:
    # osd.0's mkfs fails after its DB device is attached (its data dir is a file): `up`
    # must undo it
    (tmp_path / "not-a-dir").write_text("")
    bad = tmp_path / "bad.conf"
    bad.write_text(f"osd data = {tmp_path / 'not-a-dir'}\n")
    release = os.environ.get("SLA_RELEASE", "pacific")
    p = subprocess.run([str(MINICLUSTER), "up", str(tmp_path / "dbfail"), "--osds", "2",
                        "--objectstore", "bluestore", "--db-class", "ssd",
                        "--extra-conf", str(bad), "--release", release],
                       capture_output=True, text=True, timeout=300)
    if p.returncode == 0:  # never leave a cluster behind, even when the test fails
        subprocess.run([str(MINICLUSTER), "down", str(tmp_path / "dbfail")], timeout=120)
    assert p.returncode != 0 and "mkfs of osd.0 failed" in p.stderr, p.stderr[-2000:]
    assert _loops_backed_by("ceph-sla-db.dbfail.") == []
    assert not list(Path("/dev/shm").glob("ceph-sla-db.dbfail.*"))
    assert Cluster(tmp_path / "dbfail").pids() == {}  # every daemon it started is stopped


def test_db_class_is_refused_without_bluestore_or_for_another_class(tmp_path: Path) -> None:
    new = str(tmp_path / "new")
    p = subprocess.run([str(MINICLUSTER), "up", new, "--db-class", "ssd"],
                       capture_output=True, text=True, timeout=30)
    assert p.returncode != 0 and "needs --objectstore bluestore" in p.stderr
    p = subprocess.run([str(MINICLUSTER), "up", new, "--objectstore", "bluestore",
                        "--db-class", "nvme"], capture_output=True, text=True, timeout=30)
    assert p.returncode != 0 and "only 'ssd'" in p.stderr
    assert not Path(new).exists()


def test_down_leaves_no_directory_in_the_release_root(cluster: Cluster) -> None:
    """A release root is a shared cache: the mount points made in it for one
    cluster (its dir, the checkout) go with the cluster."""
    if not cluster.prefix:
        pytest.skip("the host's release runs without a root")
    root = Path(subprocess.run(
        ["bash", "deploy/release-root.sh", "path", cluster.release], capture_output=True,
        text=True, check=True, cwd=MINICLUSTER.parent.parent).stdout.split()[-1])
    with tempfile.TemporaryDirectory(prefix="sla-it-root-") as tmp:
        inside = root / tmp.lstrip("/")
        second = Cluster.up(Path(tmp) / "c", osds=2)
        try:
            assert (inside / "c").is_dir()  # mounted there while it runs
        finally:
            second.down()
        assert not inside.exists(), sorted(str(p) for p in inside.rglob("*"))[:5]
