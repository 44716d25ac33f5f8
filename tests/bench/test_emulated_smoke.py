"""The benchmarks on BlueStore clusters with emulated device speeds, each at its
smallest size, each starting its own cluster: primary_affinity, data_metadata
and the placement-strategy benchmark (both strategies at its one data volume,
real switches read from the OSD map). One file, so that a parallel run
(pytest-xdist --dist loadfile) gives them to one worker, one cluster after the
other, while the other worker takes the mini-cluster and pure scripts.

The figures are not judged here beyond sane ranges (docs/benchmarks.md reports
them); what is checked is that every round measured what it claims and that
nothing is left behind. Needs the cluster lock where other clusters may start.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from bench_runner import blkio_groups, own_processes, results, run_bench

from bench import provenance
from bench import strategy_bench as S
from bench.emulation import BLKIO
from bench.strategy_cluster import LOADS
from bench.strategy_figures import model_gain

DESIGN = provenance.CURRENT_DESIGN
NEEDS_CEPH = pytest.mark.skipif(shutil.which("ceph-mon") is None,
                                reason="Ceph packages missing: run deploy/install-deps.sh")

ROOT = Path(__file__).resolve().parents[2]

PROVENANCE = {"commit", "date", "command", "machine", "ceph_release", "placement_design"}


def test_model_gain_is_the_modules():
    from mgr_sla.core.models.registry import MODELS
    from mgr_sla.core.state import Strategy
    for strategy in S.STRATEGIES:
        for r in (0.0, 0.7, 1.0):
            assert model_gain(strategy, r, 3, 0.25) == MODELS[Strategy(strategy)].gain(
                r, 3, 0.25)
    assert model_gain("copy", 0.0, 3, 0.0) == 1.0  # every copy acks a write
    assert model_gain("copy", 0.7, 3, 0.0) > 1.0


def test_smoke_run(tmp_path):
    groups_before = blkio_groups("sla-strategy-")
    out = tmp_path / "strategies.json"
    work = tmp_path / "work"
    work.mkdir()
    p = subprocess.run([sys.executable, "-m", "bench.strategy_bench", "--smoke", "--out",
                        str(out)], cwd=ROOT, env={**os.environ, "TMPDIR": str(work)},
                       capture_output=True, text=True, timeout=900)
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-3000:]
    results = json.loads(out.read_text())

    # nothing left: daemons, cgroups, the work directory
    assert own_processes(str(work)) == []
    assert blkio_groups("sla-strategy-") == groups_before
    assert list(work.iterdir()) == []

    prov = results["provenance"]
    assert set(prov) >= PROVENANCE and prov["placement_design"] == "upmap+copy", prov
    assert prov["command"].startswith("python3 -m bench.strategy_bench --smoke"), prov

    rounds = results["rounds"]
    assert [(r["strategy"], r["volume_mb"]) for r in rounds] == [
        (s, mb) for mb in S.SMOKE.volumes_mb for s in S.STRATEGIES]
    for r in rounds:
        shared, sw = r["shared_placement"], r["switch"]
        # shared placement really used the ssd OSDs, isolation really left them
        assert shared["pgs_acting_on_ssd"] > 0, r
        if r["strategy"] == "copy":
            assert shared["size"] == 4 and shared["pgs_acting_on_ssd"] == shared["pgs"], r
        else:
            assert shared["size"] == 3 and 0 < shared["replica_share_on_ssd"] < 0.67, r
        assert sw["mode_after"] == "isolated", sw
        assert 0 < sw["map_first_isolated_secs"] <= sw["time_to_isolation_secs"] < 600, sw
        assert 0 < sw["epochs_to_isolation"] < 500, sw
        assert sw["urgent_ops_during_switch"] > 0, sw
        assert 0 < sw["urgent_p50_ms_during_switch"] <= sw["urgent_p99_ms_during_switch"], sw
        assert sw["degraded_pgs_seen"] >= 0
        for mode in ("shared", "isolated"):
            for load in LOADS:
                rate = r["throughput"][mode][load]
                assert rate["ops_per_sec"] > 0 and rate["mb_per_sec"] > 0, (mode, load, r)
            assert r["throughput"][mode]["write"]["read_share"] == 0
            assert r["throughput"][mode]["read"]["read_share"] == 1
            assert 0.6 < r["throughput"][mode]["mix70"]["read_share"] < 0.8
        for load in LOADS:
            assert 0.2 < r["gain_shared_over_isolated"][load] < 10, r
    # the copy strategy isolates without waiting for its data: never degraded
    for r in rounds:
        if r["strategy"] == "copy":
            assert r["switch"]["degraded_pgs_seen"] == 0, r["switch"]
    assert "| copy |" in S.table(results) and "| move |" in S.table(results)


def test_ec_smoke_run(tmp_path):
    """bench.ec_bench at its smallest: an erasure-coded pool shared by its
    shards (at most one of a PG's three on an ssd), isolated under urgent load."""
    groups_before = blkio_groups("sla-strategy-")
    out, work = tmp_path / "ec.json", tmp_path / "work"
    work.mkdir()
    p = subprocess.run([sys.executable, "-m", "bench.ec_bench", "--smoke", "--out", str(out)],
                       cwd=ROOT, env={**os.environ, "TMPDIR": str(work)},
                       capture_output=True, text=True, timeout=900)
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-3000:]
    results = json.loads(out.read_text())
    assert own_processes(str(work)) == [] and list(work.iterdir()) == []
    assert blkio_groups("sla-strategy-") == groups_before
    prov = results["provenance"]
    assert set(prov) >= PROVENANCE and prov["placement_design"] == "ec", prov
    assert prov["command"].startswith("python3 -m bench.ec_bench --smoke"), prov
    assert "erasure-coded k=2 m=1" in results["plan"]["pool"]
    [r] = results["rounds"]
    shared, sw = r["shared_placement"], r["switch"]
    assert r["strategy"] == "ec" and shared["size"] == 3, r
    assert shared["pgs_acting_on_ssd"] > 0 and 0 < shared["replica_share_on_ssd"] <= 1 / 3, r
    assert sw["mode_after"] == "isolated" and sw["urgent_ops_during_switch"] > 0, sw
    for mode in ("shared", "isolated"):
        for load in LOADS:
            assert r["throughput"][mode][load]["ops_per_sec"] > 0, (mode, load, r)
    assert "| ec |" in S.table(results)


# -- primary_affinity and data_metadata ------------------------------------------------

def blkio_throttle() -> bool:
    from bench.emulation import LIMIT_FILES
    return (BLKIO / LIMIT_FILES[1]).exists() and os.geteuid() == 0


NEEDS_THROTTLE = pytest.mark.skipif(not blkio_throttle(),
                                    reason="no cgroup v1 blkio throttle (or not root)")


@NEEDS_CEPH
@NEEDS_THROTTLE
def test_primary_affinity(tmp_path):
    out = tmp_path / "pa.json"
    work = tmp_path / "work"
    work.mkdir()
    run_bench("primary_affinity", "--rounds", "1", "--clients", "1", "--secs", "2",
              "--pg-num", "8", "--out", str(out), env={**os.environ, "TMPDIR": str(work)},
              timeout=900)
    r = results(out, "primary_affinity", "pacific", DESIGN)
    assert [row["mode"] for row in r["runs"]] == [
        "isolated", "shared", "isolated, hdd affinity 0", "shared, hdd affinity 0"]
    for row in r["runs"]:
        assert row["normal_ops_per_sec"] > 0 and row["hdd_primary_affinity"] in (0, 1), row
        assert row["hdd_device_use_max"] < 1.2, row  # the cap held
    shared = r["runs"][1]["pgs_with_ssd_replica_by_primary_class"]
    assert shared["hdd"] + shared["ssd"] > 0, shared  # shared: normal PGs hold ssd replicas
    # affinity 0 on every hdd OSD: each PG holding an ssd replica has an ssd primary
    assert r["runs"][3]["pgs_with_ssd_replica_by_primary_class"]["hdd"] == 0, r["runs"][3]
    assert r["pg_num"] == 8 and r["normal_secs"] == 2 and r["normal_clients"] == 1
    assert r["summary"]["ssd_primaries_held"] is True
    assert r["summary"]["median_over_isolated"]["isolated"] == 1.0
    assert list(work.iterdir()) == []  # nothing left behind


@NEEDS_CEPH
@NEEDS_THROTTLE
def test_data_metadata(tmp_path):
    """One layout with a separate DB device, hdd+ssd: its own cluster (the plain
    layouts' cluster is the same without --db-class), both workloads, the DB
    fraction. Performance per cost, which needs all four layouts, is unit-tested
    and plotted from the committed run above."""
    if shutil.which("losetup") is None:
        pytest.skip("losetup missing")
    out = tmp_path / "dm.json"
    # the OSDs' admin sockets live under the cluster's directory: a short path
    # (a Unix socket's path has at most 107 bytes)
    work = Path(tempfile.mkdtemp(prefix="dm-"))
    try:
        run_bench("data_metadata", "--quick", "--secs", "1", "--layouts", "hdd+ssd",
                  "--out", str(out), env={**os.environ, "TMPDIR": str(work)}, timeout=900)
        left = list(work.iterdir())
    finally:
        shutil.rmtree(work, ignore_errors=True)
    assert left == []  # block files and the cluster's directory: gone
    r = results(out, "data_metadata", "pacific", "n/a")
    rows = {row["workload"]: row for row in r["configs"]}
    assert [row["config"] for row in r["configs"]] == ["hdd+ssd", "hdd+ssd"]
    assert set(rows) == {"4m", "4k"}
    for row in rows.values():
        assert row["ops_per_sec"] > 0 and 0 < row["p50_ms"] <= row["p99_ms"], row
        assert row["block_cap_iops"] == 150 and row["db_cap_iops"] == 500, row
        assert row["block_iops_per_osd"] > 0 and row["db_iops_per_osd"] > 0, row
        # the caps held: no OSD's devices beyond their caps (slack for the kernel's accounting)
        assert row["block_iops_per_osd_max"] <= 1.1 * 150, row
        assert row["db_iops_per_osd_max"] <= 1.1 * 500, row
    for wl in ("4m", "4k"):  # RocksDB's SST bytes per stored byte, measured on the DB device
        f = r["db_fraction"][wl]
        assert set(f["measured"]) <= {"hdd+ssd"} and 0 < f["value"] < 1, f
    assert "perf_per_cost" not in r  # not all four layouts
    layout = r["emulation"]["bluestore_layout"]["db"]
    assert len(layout) == 8 and all(o["bluefs_dedicated_db"] == "1" for o in layout.values())
    assert r["plan"]["secs"] == 1 and r["plan"]["layouts"] == ["hdd+ssd"]
