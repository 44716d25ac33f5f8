"""Every script in bench/ at the smallest size that still runs its code path,
as a user runs it (`python3 -m bench.NAME`), each judged on the JSON (or the
plots) it writes: the keys, sane ranges and its provenance. The figures
themselves are not judged here (docs/benchmarks.md reports full runs).

The pure-CPU scripts (tick_bench, tick_report, crush_bench, policy_sim, policy_strategies,
strategy_table, suite_times, the plot scripts) take seconds. minicluster_start's
mini cluster is kept for module_bench and mgr_cpu (--conf): one cluster start for
the three. The benchmarks on emulated BlueStore clusters are test_emulated_smoke.py;
the SLA benchmark's quick run is test_sla_bench_smoke.py (tox -e bench).
"""
from __future__ import annotations

import shutil

import pytest
from bench_runner import ROOT, results, run_bench

from bench import provenance

DESIGN = provenance.CURRENT_DESIGN
NEEDS_CEPH = pytest.mark.skipif(shutil.which("ceph-mon") is None,
                                reason="Ceph packages missing: run deploy/install-deps.sh")
NEEDS_TOOLS = pytest.mark.skipif(shutil.which("osdmaptool") is None,
                                 reason="crushtool/osdmaptool missing: install ceph-common")


def png(path):
    assert path.exists() and path.stat().st_size > 10_000, path
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", path


# -- pure CPU ---------------------------------------------------------------------------

def test_tick_bench_and_report(tmp_path):
    runs = []
    for osds, pools, pgs in ((30, 4, 64), (60, 6, 256)):
        out = tmp_path / f"tick-{pgs}.json"
        p, _ = run_bench("tick_bench", "--osds", str(osds), "--pools", str(pools),
                         "--pgs", str(pgs), "--quiet-ticks", "20", "--epoch-ticks", "2",
                         "--out", str(out))
        r = results(out, "tick_bench", provenance.NO_CEPH, DESIGN)
        assert r["osds"] == osds and r["pools"] == pools and 0 < r["pgs"] <= pgs, r
        assert r["ticks"] == {"quiet": 20, "epoch": 2}
        for key in ("quiet_tick_ms_p50", "quiet_tick_ms_p99", "epoch_tick_ms_p50",
                    "admission_ms_p50", "admission_many_ms_p50", "pg_scan_ms_p50",
                    "scrape_ms_p50", "status_ms_p50"):
            assert 0 < r[key] < 5000, (key, r[key])
        assert r["quiet_tick_ms_p50"] <= r["quiet_tick_ms_p99"]
        # the module shared and placed its upmap entries; a quiet tick converts no map
        assert r["upmap_entries"] > 0 and 0 < r["normal_pool_urgent_share"] < 1, r
        assert r["expensive_gets_per_quiet_tick"] == 0, r["gets_in_quiet_ticks"]
        assert r["admission_many_normal_pools"] == pools - 1  # every pool but the urgent one
        assert "quiet_tick_ms_p99: " in p.stdout and "(target <= 5)" in p.stdout
        assert "admission_ms_p50: " in p.stdout and "(target <= 1000)" in p.stdout
        runs.append(out)
    report_dir = tmp_path / "report"
    p, _ = run_bench("tick_report", *map(str, runs), "--out-dir", str(report_dir))
    tick = results(report_dir / "tick.json", "tick_report", provenance.NO_CEPH, DESIGN)
    assert [r["pgs"] for r in tick["runs"]] == sorted(r["pgs"] for r in tick["runs"])
    assert tick["targets"]["quiet_tick_ms_p99"] == 5
    assert p.stdout.count("\n") == 2 + len(runs)  # the Markdown table
    png(report_dir / "tick-growth.png")



def test_tick_bench_with_an_erasure_coded_pool(tmp_path):
    out = tmp_path / "tick-ec.json"
    run_bench("tick_bench", "--osds", "30", "--pools", "4", "--pgs", "64", "--quiet-ticks",
              "20", "--epoch-ticks", "2", "--ec", "--out", str(out))
    r = results(out, "tick_bench", provenance.NO_CEPH, "ec")
    assert r["managed"]["normal_pool"] == "erasure-coded 2+1, ec", r["managed"]
    # the module shared the pool by its shards: entries placed, a share on urgent OSDs
    assert r["upmap_entries"] > 0 and 0 < r["normal_pool_urgent_share"] < 1, r
    assert r["expensive_gets_per_quiet_tick"] == 0, r["gets_in_quiet_ticks"]

@NEEDS_TOOLS
def test_crush_bench(tmp_path):
    out = tmp_path / "crush.json"
    p, _ = run_bench("crush_bench", "--pg-num", "32", "--skip-large", "--out", str(out))
    r = results(out, "crush_bench", "pacific", DESIGN)
    assert r["ok"] is True and r["pg_num"] == 32
    assert len(r["topologies"]) == 5  # every topology but the 10,000-OSD one
    for row in r["topologies"]:
        assert row["ok"] and row["failures"] == [], row
        assert row["r1_violations"] == 0 and row["pgs"] == 32, row
        assert 0.99 <= row["inclusion"] <= 1.0, row  # every normal PG keeps a normal replica
        assert 0 <= row["shared_same_as_isolated_pgs"] <= 32, row
        assert 0 <= row["different_roots_efficiency"] <= 1, row
        assert row["weight_set_positions"] == [1], row  # flat weight sets only
        assert row["generate_secs"] > 0 and row["verify_secs"] > 0, row
    assert p.stdout.count("\n| ") == 5


@NEEDS_TOOLS
def test_policy_sim(tmp_path):
    out = tmp_path / "policy.json"
    p, _ = run_bench("policy_sim", "--osds", "60", "--pgs-per-osd", "20", "--days", "0.05",
                     "--warmup-days", "0.02", "--step", "20", "--thresholds", "50", "200",
                     "--dwells", "300", "--hdd-ops", "116.3", "--ssd-ops", "355",
                     "--no-cache", "--out", str(out))
    r = results(out, "policy_sim", "pacific", DESIGN)
    assert r["map"]["osds"] == 60 and r["map"]["cached"] is False if "cached" in r["map"] \
        else r["map"]["osds"] == 60
    assert r["map"]["verify_ok"] is True
    assert 0 < r["placement"]["normal_load_share_on_ssd_shared"] < 1
    kinds = [x["kind"] for x in r["results"]]
    assert kinds == ["default", "isolated", "shared", "adaptive", "adaptive"]
    fixed = next(x for x in r["results"] if x["kind"] == "isolated")
    assert fixed["normal_vs_fixed"] == 1.0
    for x in r["results"]:
        assert x["normal_ops_per_day"] > 0 and 0 <= x["shared_fraction"] <= 1, x
        assert 0 <= x["sla_violation_minutes_per_day"] <= 1440, x
    assert r["devices"]["hdd_ops"] == 116.3 and r["devices"]["source"]["hdd_ops"] == "--hdd-ops"
    assert r["seconds"]["total"] > 0
    assert "| policy |" in p.stdout
    assert r["switch_cost"]["strategy"] == "move"
    assert r["switch_cost"]["to_isolated_secs"] == r["placement"]["full_switch_secs"]


def test_policy_sim_copy_strategy(tmp_path):
    out = tmp_path / "policy-copy.json"
    run_bench("policy_sim", "--osds", "60", "--pgs-per-osd", "20", "--days", "0.05",
              "--warmup-days", "0.02", "--step", "20", "--thresholds", "50",
              "--dwells", "300", "--hdd-ops", "116.3", "--ssd-ops", "355",
              "--strategy", "copy", "--read-fraction", "0.7", "--no-cache", "--out", str(out))
    r = results(out, "policy_sim", "pacific", DESIGN)
    assert r["switch_cost"]["strategy"] == "copy" and r["devices"]["read_fraction"] == 0.7
    assert r["switch_cost"]["to_isolated_secs"] == 10  # the size drop, not a backfill
    # every normal PG has its one ssd copy, the primary: it takes the reads
    assert r["placement"]["replicas_moved_per_switch"] == r["map"]["normal_pgs"]
    assert 0.3 < r["placement"]["normal_load_share_on_ssd_shared"] < 1
    adaptive = [x for x in r["results"] if x["kind"] == "adaptive"]
    assert adaptive and all(x["normal_ops_per_day"] > 0 for x in adaptive)


def test_policy_strategies(tmp_path):
    out = tmp_path / "policy-strategies.json"
    p, _ = run_bench("policy_strategies", "--volumes-tb", "1", "8", "--reads", "0.7",
                     "--osds", "60", "--pgs-per-osd", "20", "--days", "0.05",
                     "--warmup-days", "0.02", "--step", "20", "--thresholds", "50",
                     "--dwells", "300", "--hdd-ops", "116.3", "--ssd-ops", "355",
                     "--no-cache", "--out", str(out))
    r = results(out, "policy_strategies", "pacific", "upmap+copy")
    assert [(c["volume_tb"], c["strategy"]) for c in r["cells"]] == [
        (1.0, "move"), (1.0, "copy"), (8.0, "move"), (8.0, "copy")]
    for c in r["cells"]:
        assert c["read_fraction"] == 0.7 and c["fixed_shared"]["normal_vs_fixed"] > 0, c
        assert c["most_normal_ops"]["normal_vs_fixed"] > 0, c
    move, copy = r["cells"][2], r["cells"][3]
    # move isolates by backfill, which grows with the data; copy by peering, which does not
    assert move["switch"]["to_isolated_secs"] == move["switch"]["full_switch_secs"] > 0
    assert copy["switch"]["to_isolated_secs"] == r["cells"][1]["switch"]["to_isolated_secs"] == 10
    assert r["cells"][2]["switch"]["bytes_per_switch"] > r["cells"][0]["switch"]["bytes_per_switch"]
    assert "| normal data |" in p.stdout
    # auto's decision per volume: from both strategies' simulated gains and the
    # module's limits at its defaults (60 ssd OSDs: 10 hosts of 5 hdd + 1 ssd)
    auto = r["auto"]
    assert auto["urgent_raw_tb"] == round(10 * 3.84, 1)
    assert [(a["volume_tb"], a["read_fraction"]) for a in auto["pools"]] == [(1.0, 0.7), (8.0, 0.7)]
    for a, (move, copy) in zip(auto["pools"], (r["cells"][0:2], r["cells"][2:4])):
        by = {"move": move, "copy": copy}
        for name, cell in by.items():
            assert a["options"][name]["gain"] == cell["fixed_shared"]["normal_vs_fixed"], a
        assert (a["options"]["move"]["blocked"] is not None) == \
            (move["switch"]["to_isolated_secs"] > 60), a
        assert (a["shared_by"] is None) == (a["kept_isolated"] is not None), a
        if a["shared_by"]:
            assert a["options"][a["shared_by"]]["gain"] >= 1.05, a
            assert a["normal_vs_fixed"] == by[a["shared_by"]]["recommended"]["normal_vs_fixed"]
        else:
            assert a["normal_vs_fixed"] == 1.0 and a["urgent_bytes_per_switch"] == 0, a
    assert "| normal data | reads | auto shares it by |" in p.stdout


def test_strategy_table(tmp_path):
    out = tmp_path / "table.json"
    p, _ = run_bench("strategy_table", "--volumes-tb", "0.1", "100", "--reads", "0", "0.7",
                     "--out", str(out))
    r = results(out, "strategy_table", "none (the module's cost model, no Ceph)", "upmap+copy")
    assert [(c["volume_tb"], c["read_fraction"]) for c in r["cells"]] == [
        (0.1, 0.0), (0.1, 0.7), (100.0, 0.0), (100.0, 0.7)]
    for c in r["cells"]:
        assert c["recommended"] in ("copy", "move", "keep isolated") and c["reason"], c
        for strategy in ("copy", "move"):
            s = c[strategy]
            assert s["gain"] >= 1 and s["time_to_isolation_secs"] > 0, s
            assert isinstance(s["usable"], bool) and s["epochs_to_shared"] >= 0, s
    assert r["max_isolation_secs"] == 60 and r["cluster"]["ssd_osds"] == 200
    assert len(p.stdout.splitlines()) == 1 + len(r["cells"])


def test_suite_times(tmp_path):
    """What deploy/run-tests.sh calls with SLA_RECORD_SUITE=1, on made-up figures."""
    import json
    import subprocess
    import sys

    out = tmp_path / "suite.json"
    run_bench("suite_times", "--total", "100", "--cpu", "150", "--lane", "lint unit",
              "--lane", "integration", "--then", "bench", "--out", str(out),
              "lint=5", "unit=20", "integration=60", "bench=30")
    r = json.loads(out.read_text())
    assert provenance.check(r["provenance"]) == [], r["provenance"]
    assert r["provenance"]["command"] == "bash deploy/run-tests.sh"
    assert r["lanes"] == [["lint", "unit"], ["integration"]] and r["then"] == ["bench"]
    assert r["envs"]["integration"] == 60 and r["total_secs"] == 100
    assert r["cpu_busy_secs"] == 150
    # an environment in a lane without its time is refused, nothing written
    bad = tmp_path / "bad.json"
    p = subprocess.run([sys.executable, "-m", "bench.suite_times", "--total", "1", "--cpu", "1",
                        "--lane", "lint unit", "--out", str(bad), "lint=1"], cwd=ROOT,
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and "no time given for unit" in p.stderr and not bad.exists()


def test_plot_results(tmp_path):
    p, _ = run_bench("plot_results", str(ROOT / "docs/benchmarks/results.json"), str(tmp_path))
    for name in ("urgent-latency", "normal-throughput", "ssd-speedup", "slo-objective"):
        png(tmp_path / f"{name}.png")
    p, _ = run_bench("plot_results", "--tables", str(ROOT / "docs/benchmarks/results.json"))
    assert "| mapping | normal clients |" in p.stdout and "| to isolated |" in p.stdout


def test_plot_data_metadata(tmp_path):
    run_bench("plot_data_metadata", str(ROOT / "docs/benchmarks/data-metadata.json"),
              str(tmp_path))
    png(tmp_path / "data-metadata-perf.png")
    png(tmp_path / "data-metadata-cost.png")


def test_a_script_runs_as_a_file_too(tmp_path):
    """`python3 bench/NAME.py` (the older form) runs the same module."""
    import subprocess
    import sys
    p = subprocess.run([sys.executable, str(ROOT / "bench" / "tick_bench.py"), "--help"],
                       cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0 and "--quiet-ticks" in p.stdout, p.stderr


# -- on one mini cluster: its start measured, then module_bench and mgr_cpu on it ---------

@pytest.fixture(scope="module")
def mini(tmp_path_factory):
    """bench.minicluster_start's cluster, kept running for the next two scripts
    (--conf), stopped by its PIDs at the end: one cluster start instead of three."""
    from harness.cephcluster import Cluster

    if shutil.which("ceph-mon") is None:
        pytest.skip("Ceph packages missing: run deploy/install-deps.sh")
    base = tmp_path_factory.mktemp("mini")
    path, out = base / "c", base / "minicluster.json"
    try:
        run_bench("minicluster_start", "--dir", str(path), "--keep", "--out", str(out))
        yield path, out
    finally:
        if (path / "pids").exists():
            Cluster(path).down()


def test_minicluster_start(mini):
    path, out = mini
    r = results(out, "minicluster_start", "pacific", "n/a")
    assert set(r) == {"provenance", "osds", "objectstore", "up_secs", "rss_mib"}
    assert r["osds"] == 8 and r["objectstore"] == "memstore"
    assert 1 < r["up_secs"] < 180 and 100 < r["rss_mib"] < 3072, r
    assert len((path / "pids").read_text().splitlines()) == 10  # kept: mon, mgr, 8 OSDs


def test_module_bench(mini, tmp_path):
    out = tmp_path / "module.json"
    # both kinds of trial; OSD reports every 2 s (not 5): each wait is shorter
    run_bench("module_bench", "--trials", "2", "--stats-periods", "2",
              "--conf", str(mini[0] / "ceph.conf"), "--out", str(out), timeout=900)
    r = results(out, "module_bench", "pacific", DESIGN)
    rows = r["trials"]["2"]
    assert [t["kind"] for t in rows] == ["set-phase", "after-switch"]
    for t in rows:
        assert 0 < t["reaction_secs"] < 60 and 0 <= t["time_to_isolation_secs"] < 300, t
        assert 0 < t["reaction_record_secs"] < 60, t
        assert t["phase_secs"] is None or 0 <= t["phase_secs"] < 2, t
        assert "high threshold" in t["reason"], t
    # settled shared, every upmap entry placed: isolating moves the normal pool's
    # replicas off the SSDs, which takes time (right after a switch to shared its
    # entries may not be in yet: then nothing moves and isolation is at once)
    first = rows[0]
    assert first["pgs_moved"] > 0 and first["replicas_moved"] > 0, first
    assert first["time_to_isolation_secs"] > 0, first
    for key in ("reaction_secs", "reaction_record_secs", "time_to_isolation_secs"):
        s = r["summary"]["2"][key]
        assert s["min"] <= s["median"] <= s["p90"] <= s["max"], (key, s)


def test_mgr_cpu(mini, tmp_path):
    out = tmp_path / "mgr-cpu.json"
    run_bench("mgr_cpu", "--secs", "2", "--rounds", "1", "--write-secs", "2",
              "--conf", str(mini[0] / "ceph.conf"), "--out", str(out), timeout=900)
    r = results(out, "mgr_cpu", "pacific", DESIGN)
    assert r["mode_during_on"] == "shared" and r["rounds"] == 1 and r["secs_per_phase"] == 2
    for state in ("on", "off"):
        (ph,) = r["phases"][state]
        assert ph["client_ops_per_sec"] > 0 and 1.5 <= ph["wall_secs"] < 60, ph
        assert 0 <= ph["mgr_cpu_percent"] <= 200 and ph["osd_cpu_secs_per_kop"] > 0, ph
    assert 0 < r["client_ops_on_over_off"] < 10 and 0 < r["osd_cpu_per_op_on_over_off"] < 10
