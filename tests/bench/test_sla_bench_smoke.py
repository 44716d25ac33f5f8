"""The SLA benchmark's --quick run end to end: its own real cluster, emulated
devices, all three mappings, real switches; then the plots from its results.

The figures are not judged here (docs/benchmarks.md reports them); what is
checked is that the run measured what it claims: the device caps held and the
CPU was not the limit, every run and switch is there, nothing is left behind.
"""
import os

from bench_runner import blkio_groups, own_processes, run_bench
from bench_runner import results as checked_results

from bench import plot_results, provenance
from bench import sla_bench as B


def test_quick_benchmark(tmp_path):
    groups_before = blkio_groups("sla-bench-")
    out = tmp_path / "results.json"
    work = tmp_path / "work"
    work.mkdir()
    run_bench("sla_bench", "--quick", "--out", str(out), env={**os.environ, "TMPDIR": str(work)},
              timeout=900)
    results = checked_results(out, "sla_bench", "pacific", provenance.CURRENT_DESIGN)

    # nothing left: daemons, cgroups, the work directory
    assert own_processes(str(work)) == []
    assert blkio_groups("sla-bench-") == groups_before
    assert list(work.iterdir()) == []

    # the emulation held: capped at the cap, far below what the CPU can do
    cal = results["emulation"]["calibration"]
    for cls in ("hdd", "ssd"):
        capped, uncapped = cal[cls]["capped"], cal[cls]["uncapped"]
        assert capped["device_iops"] <= 1.1 * cal[cls]["device_iops_cap"], cal
        assert capped["client_write_ops_per_sec"] < 0.5 * uncapped["client_write_ops_per_sec"], cal
        assert capped["cpu_busy_percent"] < 50, cal
    assert cal["ssd_over_hdd_client_writes"] > 1.5, cal

    # every run of the plan, each urgent run with all its ops
    plan = B.QUICK
    busiest = max(plan.urgent_n)
    want = {(m, n, True) for m in B.MODES for n in plan.urgent_n} | \
           {(m, n, False) for m in B.MODES for n in plan.idle_n} | \
           {("adaptive-mistuned", busiest, True), ("adaptive-slo", busiest, True)}
    runs = results["runs"]
    assert {(r["mode"], r["normal_clients"], r["urgent_active"]) for r in runs} == want
    ops = 2 * plan.urgent_mb * 1024 // plan.block_kb
    for r in runs:
        if r["urgent_active"]:
            assert r["urgent_ops"] == ops and 0 < r["urgent_p50_ms"] <= r["urgent_p99_ms"], r
        if r["normal_clients"] and not r["urgent_active"]:
            assert r["normal_ops_per_sec"] > 0, r

    # real switches: to shared when idle, to isolated when the urgent client came
    by_mode = {s["to"]: s for s in results["switches"]}
    assert set(by_mode) == {"shared", "isolated"}
    iso = by_mode["isolated"]
    assert iso["reaction_secs"] > 0 and iso["time_to_isolation_secs"] > 0, iso
    assert iso["replicas_moved"] > 0 and iso["bytes_moved"] > 0, iso
    for switch in results["switches"]:  # the module recorded what every switch moved
        assert switch["pgs_moved"] > 0 and switch["replicas_moved"] > 0, switch
    assert by_mode["shared"]["bytes_moved"] > 0, by_mode["shared"]
    assert set(results["targets"]) == {"default_urgent_p99_growth", "fixed_urgent_p99_growth",
                                       "adaptive_urgent_p99_growth", "adaptive_over_fixed_idle",
                                       "slo_urgent_p99"}

    # the latency objective isolated by itself, the IOPS threshold set out of reach
    runs_by_mode = {r["mode"]: r for r in runs}
    assert runs_by_mode["adaptive-mistuned"]["mode_after"] == "shared"
    assert runs_by_mode["adaptive-slo"]["mode_after"] == "isolated"
    assert "urgent latency" in results["slo"]["switch"]["reason"], results["slo"]

    made = plot_results.plot(results, tmp_path / "plots")
    assert [m.name for m in made] == ["urgent-latency.png", "normal-throughput.png",
                                      "ssd-speedup.png", "slo-objective.png"]
    assert all(m.stat().st_size > 10_000 for m in made)
    assert "adaptive-slo" in plot_results.tables(results)  # the objective's table
