"""Every committed results file says where its figures come from (bench/provenance.py):
the commit, date, command, machine, Ceph release and placement design."""

import json
from pathlib import Path

import pytest

from bench import provenance as P

ROOT = Path(__file__).resolve().parents[2]
RESULTS = sorted((ROOT / "docs" / "benchmarks").glob("*.json")) + [
    ROOT / "docs" / "policy-simulation.json"]

COMPLETE = {"commit": "0123456789abcdef0123456789abcdef01234567", "date": "2026-11-24T03:00:00Z",
            "command": "python3 -m bench.tick_bench --osds 100 --out /tmp/t.json",
            "machine": {"cores": 2, "memory_gib": 23.5, "os": "Debian 12 bookworm"},
            "ceph_release": "none", "placement_design": "upmap"}


def test_the_results_files_are_found():
    names = {p.name for p in RESULTS}
    assert {"results.json", "tick.json", "module.json", "policy-simulation.json"} <= names


@pytest.mark.parametrize("path", RESULTS, ids=lambda p: p.name)
def test_every_results_file_has_a_complete_provenance_block(path):
    data = json.loads(path.read_text())
    assert P.check(data.get("provenance")) == [], path.name


def test_suite_and_minicluster_files_keep_their_format():
    suite = ROOT / "docs" / "benchmarks" / "suite.json"
    if suite.exists():
        data = json.loads(suite.read_text())
        assert set(data) == {"provenance", "envs", "lanes", "then", "cpu_busy_secs",
                             "total_secs"}
        envs = data["envs"]
        assert envs and all(isinstance(s, (int, float)) and s >= 0
                            for s in envs.values()), envs
        # every environment in exactly one lane or after them; the run at least as
        # long as its longest lane and what ran after
        placed = [e for lane in data["lanes"] for e in lane] + data["then"]
        assert sorted(placed) == sorted(envs), (placed, envs)
        longest = max(sum(envs[e] for e in lane) for lane in data["lanes"])
        assert data["total_secs"] >= longest + sum(envs[e] for e in data["then"]) - 1
        assert 0 < data["cpu_busy_secs"] <= data["provenance"]["machine"]["cores"] * \
            data["total_secs"]
    mini = ROOT / "docs" / "benchmarks" / "minicluster.json"
    if mini.exists():
        data = json.loads(mini.read_text())
        assert set(data) == {"provenance", "osds", "objectstore", "up_secs", "rss_mib"}
        assert data["osds"] >= 1 and data["up_secs"] > 0 and data["rss_mib"] > 0


def test_a_complete_block_passes_and_each_missing_key_is_named():
    assert P.check(COMPLETE) == []
    for key in P.KEYS:
        block = {k: v for k, v in COMPLETE.items() if k != key}
        assert P.check(block) == [f"no {key}"]
    block = dict(COMPLETE, machine={"cores": 2, "os": "Debian 12 bookworm"})
    assert P.check(block) == ["no machine.memory_gib"]
    assert P.check(None) == ["no provenance block"]


def test_wrong_values_are_refused():
    assert "is not a 40-hex sha" in P.check(dict(COMPLETE, commit="64264a8"))[0]
    assert "not ISO 8601 UTC" in P.check(dict(COMPLETE, date="2026-11-24T03:00:00+01:00"))[0]
    assert "not ISO 8601 UTC" in P.check(dict(COMPLETE, date="yesterday"))[0]
    assert "placement_design" in P.check(dict(COMPLETE, placement_design="magic"))[0]
    assert "machine.cores" in P.check(dict(COMPLETE, machine=dict(COMPLETE["machine"],
                                                                   cores=0)))[0]
    assert "command" in P.check(dict(COMPLETE, command=""))[0]


def test_unknown_fields_need_a_note():
    block = dict(COMPLETE, commit="unknown", machine=dict(COMPLETE["machine"], os="unknown"))
    assert P.check(block) == ["commit, machine.os unknown without a note saying why"]
    assert P.check(dict(block, note="measured before provenance was recorded")) == []


def test_the_block_a_benchmark_writes_now_is_complete():
    block = P.provenance("bench.tick_bench", ["--osds", "100", "--out", "/tmp/a b.json"],
                         P.NO_CEPH, P.CURRENT_DESIGN)
    assert P.check(block) == []
    assert block["command"] == "python3 -m bench.tick_bench --osds 100 --out '/tmp/a b.json'"
    assert block["commit"] == P.git_commit() and len(block["commit"]) in (40, len("unknown"))
    with pytest.raises(ValueError, match="placement design"):
        P.provenance("bench.x", [], P.NO_CEPH, "positional-ish")



def test_the_command_names_a_release_the_clusters_run_from_a_root():
    assert P.command("bench.ec_bench", ["--smoke"], {"SLA_RELEASE": "tentacle"}) == \
        "SLA_RELEASE=tentacle python3 -m bench.ec_bench --smoke"
    assert P.command("bench.ec_bench", [], {"SLA_RELEASE": "pacific"}) == \
        "python3 -m bench.ec_bench"
    assert P.command("bench.ec_bench", [], {}) == "python3 -m bench.ec_bench"

def test_machine_and_release_parsing():
    assert P.parse_ceph_version(
        "ceph version 16.2.15 (618f440892089921c3e944a991122ddc44e60516) pacific (stable)\n"
    ) == "16.2.15 pacific"
    assert P.parse_ceph_version("ceph version 20.2.4 (abc123) tentacle (stable)") == \
        "20.2.4 tentacle"
    assert P.parse_ceph_version("crushtool: no action specified") == "unknown"
    assert P.os_name('PRETTY_NAME="Debian GNU/Linux 12 (bookworm)"\nNAME="Debian GNU/Linux"\n'
                     'VERSION_ID="12"\nVERSION_CODENAME=bookworm\nID=debian\n') == \
        "Debian 12 bookworm"
    assert P.os_name('NAME="Rocky Linux"\nVERSION_ID="9.4"\n') == "Rocky 9.4"
    assert P.memory_gib("MemTotal:       24684084 kB\nMemFree: 1 kB\n") == 23.5
    assert P.memory_gib("") == "unknown"
    assert P.ceph_release(["false"]) == "unknown"
    assert P.ceph_release(["/nonexistent/ceph", "--version"]) == "unknown"
