"""bench/upmap_scale.py end to end at 1,000 PGs: its own mon-only rig, every
pacing, the way back; then the JSON it wrote.

The figures are not judged (docs/benchmarks.md reports them); what is checked
is that each run measured what it claims: every planned entry placed and kept
on down OSDs, epochs and CPU counted, the rule swap back clearing them, and
nothing left behind (mon process, temporary directory).
"""
import json
import os
import subprocess
import sys
from pathlib import Path

from bench_runner import own_processes

from bench import provenance

ROOT = Path(__file__).resolve().parents[2]
ENTRIES = 48
PACINGS = ["today", "burst16", "balancer"]


def test_upmap_scale_small(tmp_path):
    out = tmp_path / "upmap-scale.json"
    work = tmp_path / "work"
    work.mkdir()
    p = subprocess.run([sys.executable, "-m", "bench.upmap_scale", "--pgs", "1000",
                        "--hosts", "8", "--osds-per-host", "4", "--entries", str(ENTRIES),
                        "--pacings", ",".join(PACINGS), "--idle-epochs", "2",
                        "--out", str(out)],
                       cwd=ROOT, env={**os.environ, "TMPDIR": str(work)},
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-3000:]
    doc = json.loads(out.read_text())
    assert len(doc["runs"]) == 1 and doc["provenance"] == doc["runs"][0]["provenance"]
    assert len(doc["summary"]) == len(PACINGS)
    r = doc["runs"][0]

    # nothing left: the mon stopped, its directory removed
    assert own_processes(str(work)) == []
    assert list(work.iterdir()) == []

    prov = r["provenance"]
    assert provenance.check(prov) == [], prov
    assert prov["placement_design"] == provenance.CURRENT_DESIGN
    assert prov["command"].startswith("python3 -m bench.upmap_scale --pgs 1000"), prov
    assert prov["ceph_release"] != provenance.UNKNOWN, prov

    rig = r["rig"]
    assert rig["osds"] == 32 and rig["osds_up"] == 0 and rig["osds_in"] == 32, rig
    assert r["pgs"] == 1000 and r["entries"] == ENTRIES
    assert r["down_osds"]["entries_accepted"] and r["down_osds"]["entries_kept"]

    # epochs that carry no entry, with none and with all of them present
    idle = r["idle_epochs"]
    assert [i["entries_present"] for i in idle] == [0, ENTRIES], idle
    assert all(i["epochs"] == 2 and i["mon_cpu_secs_per_epoch"] >= 0 for i in idle), idle

    rows = {row["pacing"]: row for row in r["pacings"]}
    assert list(rows) == PACINGS
    for row in rows.values():
        assert row["entries_sent"] == ENTRIES and row["entries_before"] == 0, row
        assert row["commands_failed"] == 0, row["failures"]
        assert row["entries_present_after"] == ENTRIES, row
        assert 0 < row["epochs"] <= ENTRIES, row
        assert 0 < row["wall_secs"] < 60 and 0 <= row["mon_cpu_secs"] < 60, row
        # each entry is tens of bytes in the full map
        grew = row["osdmap_bytes_after"] - row["osdmap_bytes_before"]
        assert 10 * ENTRIES < grew < 200 * ENTRIES, row
        back = row["way_back"]
        assert back["entries_before"] == ENTRIES and back["entries_after"] == 0, back
        assert back["epochs"] >= 1 and back["rule_in_first_epoch"] == "isolated", back
        assert back["osdmap_bytes_after"] < row["osdmap_bytes_after"], back
    # today's rounds of 8, each waited for: one epoch a round at least
    assert rows["today"]["epochs"] >= ENTRIES // 8, rows["today"]
    # everything at once folds into far fewer epochs
    assert rows["balancer"]["epochs"] < rows["today"]["epochs"], rows
