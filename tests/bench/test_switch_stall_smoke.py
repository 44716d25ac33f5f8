"""bench/switch_stall.py at its smallest size, on its own BlueStore cluster with
emulated device speeds: two copy pools shared all at once and a pool a step
under normal clients, then isolated under an urgent client with the extra
copies to delete, and a control. The figures are not judged beyond sane
ranges (docs/benchmarks.md reports the full run); what is checked is that
each round measured what it claims and that nothing is left behind."""
import os
import shutil

import pytest
from bench_runner import blkio_groups, own_processes, results, run_bench

from bench import switch_stall as S
from bench.emulation import BLKIO, LIMIT_FILES

NEEDS = [pytest.mark.skipif(shutil.which("ceph-mon") is None,
                            reason="Ceph packages missing: run deploy/install-deps.sh"),
         pytest.mark.skipif(not ((BLKIO / LIMIT_FILES[1]).exists() and os.geteuid() == 0),
                            reason="no cgroup v1 blkio throttle (or not root)")]


@NEEDS[0]
@NEEDS[1]
def test_smoke_run(tmp_path):
    groups_before = blkio_groups("sla-stall-")
    out = tmp_path / "stall.json"
    work = tmp_path / "work"
    work.mkdir()
    run_bench("switch_stall", "--smoke", "--out", str(out), timeout=900,
              env={**os.environ, "TMPDIR": str(work)})
    data = results(out, "switch_stall", "pacific", "copy")
    assert own_processes(str(work)) == []
    assert blkio_groups("sla-stall-") == groups_before
    assert list(work.iterdir()) == []

    steps = [r["max_step_pgs"] for r in data["to_shared"]]
    assert steps == [0, S.SMOKE.pg_num], steps
    for r in data["to_shared"]:
        assert 0 < r["time_to_all_active_secs"] < 600, r
        assert r["normal_before"]["ops"] > 0 and r["normal_switch"]["ops"] > 0, r
        sw = r["normal_switch"]
        assert 0 < sw["p50_ms"] <= sw["p99_ms"] <= sw["max_ms"], r
    # a pool a step: two pools, so at least one step_wait_secs (5 s) between them
    assert data["to_shared"][1]["time_to_all_active_secs"] >= 5, data["to_shared"]
    assert data["resharing"]["normal_switch"]["ops"] > 0, data["resharing"]
    assert all(r["isolated_and_strays_deleted_secs"] > 0
               for r in data["to_shared"] + [data["resharing"]])
    strays, control = data["stray_deletion"]
    assert strays["with_strays"] and not control["with_strays"]
    for r in (strays, control):
        assert r["urgent_before"]["ops"] > 0 and r["urgent_after"]["ops"] > 0, r
    assert strays["pools_isolated_secs"] is not None, strays
    table = S.table(data)
    assert "| a pool a step |" in table and "right after isolating" in table
    assert "| control |" in table
