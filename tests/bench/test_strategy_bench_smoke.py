"""The placement-strategy benchmark's smallest run end to end: its own real
cluster with emulated devices, both strategies at its one data volume, real
switches read from the OSD map.

The figures are not judged here beyond sane ranges (docs/benchmarks.md reports
them); what is checked is that every round measured what it claims and that
nothing is left behind. Needs the cluster lock where other clusters may start.
"""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from bench_runner import own_processes

from bench import strategy_bench as S
from bench.emulation import BLKIO

ROOT = Path(__file__).resolve().parents[2]

PROVENANCE = {"commit", "date", "command", "machine", "ceph_release", "placement_design"}


def test_model_gain_is_the_modules():
    from mgr_sla import switch_cost
    from mgr_sla.state import Strategy
    for strategy in S.STRATEGIES:
        for r in (0.0, 0.7, 1.0):
            assert S.model_gain(strategy, r, 3, 0.25) == switch_cost._gain(
                Strategy(strategy), r, 3, 0.25)
    assert S.model_gain("copy", 0.0, 3, 0.0) == 1.0  # every copy acks a write
    assert S.model_gain("copy", 0.7, 3, 0.0) > 1.0


def blkio_groups(prefix: str = "sla-strategy-") -> set[str]:
    """This benchmark's blkio cgroups (named after its work directory; other
    benchmarks on the machine have their own, and the files are the kernel's)."""
    groups = BLKIO / "ceph-sla-bench"
    return {g.name for g in groups.iterdir() if g.is_dir() and g.name.startswith(prefix)} \
        if groups.exists() else set()


@pytest.mark.xdist_group("emulated")  # one emulated cluster at a time: no shared cgroups
def test_smoke_run(tmp_path):
    groups_before = blkio_groups()
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
    assert blkio_groups() == groups_before
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
            for load in S.LOADS:
                rate = r["throughput"][mode][load]
                assert rate["ops_per_sec"] > 0 and rate["mb_per_sec"] > 0, (mode, load, r)
            assert r["throughput"][mode]["write"]["read_share"] == 0
            assert r["throughput"][mode]["read"]["read_share"] == 1
            assert 0.6 < r["throughput"][mode]["mix70"]["read_share"] < 0.8
        for load in S.LOADS:
            assert 0.2 < r["gain_shared_over_isolated"][load] < 10, r
    # the copy strategy isolates without waiting for its data: never degraded
    for r in rounds:
        if r["strategy"] == "copy":
            assert r["switch"]["degraded_pgs_seen"] == 0, r["switch"]
    assert "| copy |" in S.table(results) and "| move |" in S.table(results)
