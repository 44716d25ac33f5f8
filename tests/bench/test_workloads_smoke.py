"""The workloads benchmark (the module's default configuration, three normal
pools of different mixes) at its smallest size: one cycle of two cases (SSDs
as fast as the HDDs with the read- and write-heavy pools' mixes swapped, and a
slow urgent region), on its own cluster with emulated devices. Its
figures are not judged here (docs/benchmarks.md reports them); what is checked
is that each cycle measured what it claims, that the module's decisions are
those it reported, and that nothing is left behind."""
import os
import shutil

import pytest
from bench_runner import blkio_groups, own_processes, results, run_bench

from bench import sla_workloads as W
from bench import workload_rounds as R

NEEDS_CEPH = pytest.mark.skipif(shutil.which("ceph-mon") is None,
                                reason="Ceph packages missing: run deploy/install-deps.sh")


@NEEDS_CEPH
def test_smoke_run(tmp_path):
    groups_before = blkio_groups("sla-bench-")
    out = tmp_path / "workloads.json"
    work = tmp_path / "work"
    work.mkdir()
    p, _ = run_bench("sla_workloads", "--smoke", "--out", str(out),
                     env={**os.environ, "TMPDIR": str(work)}, timeout=1500)
    r = results(out, "sla_workloads", "pacific", "upmap+copy")
    assert own_processes(str(work)) == []
    assert blkio_groups("sla-bench-") == groups_before
    assert list(work.iterdir()) == []

    # the module ran at its defaults for what is decided here
    defaults = r["plan"]["module_defaults"]
    assert defaults.pop("default_strategy") == "auto"
    assert defaults.pop("gain_prior") == "devices"
    assert {k: float(v) for k, v in defaults.items()} == {
        "min_gain": 1.05, "gain_retry_secs": 7 * 86400, "max_urgent_drive_writes": 0.3}
    assert [c["case"] for c in r["cases"]] == list(W.SMOKE.cases)
    mix = dict(W.SMOKE.mix)
    for case in r["cases"]:
        assert len(case["cycles"]) == W.SMOKE.cycles
        mixes = [R.cycle_mix(case["case"], i, mix) for i in range(W.SMOKE.cycles)]
        # the urgent devices read at this case's speeds before its first switch
        assert all(case["urgent_devices_read"][k]["ops"] >= 100 for k in ("read", "write")), case
        # and both classes calibrated by osd bench, as the prior compares them
        iops = case["urgent_devices_read"]["calibrated_iops"]
        assert iops["normal"] > 0 and iops["urgent"] > 0, iops
        if case["case"] == "slow-urgent":
            assert iops["urgent"] < iops["normal"], iops
        check_cycles(case["cycles"], mixes)
    devices = {c["case"]: c["devices"] for c in r["cases"]}
    hdd = r["emulation"]["hdd_device_iops"]
    # the slow case ran on SSDs a third of an HDD, with its own thresholds; the
    # mix change on SSDs as fast as the HDDs
    slow = devices["slow-urgent"]
    assert slow["ssd_device_iops"] == hdd // 3, slow
    assert slow["threshold_iops"] == list(R.THRESHOLDS["slow-urgent"]), slow
    assert devices["mix-change"]["ssd_device_iops"] == hdd, devices
    # one summary row per case and pool, its sharing as the cycles saw it
    assert [(s["case"], s["pool"]) for s in r["summary"]] == [
        (c, pool) for c in W.SMOKE.cases for pool in mix]
    for s, case in zip(r["summary"], [c for c in r["cases"] for _ in mix]):
        seen = [c["switch"]["pools"][s["pool"]] for c in case["cycles"]]
        assert s["shared_by_cycle"] == [x["strategy"] if x["shared"] else None for x in seen]
    # the table printed is the one its results give
    assert W.table(r) in p.stdout


def check_cycles(cycles, mixes):
    assert len(cycles) == len(mixes), cycles
    for cycle, mix in zip(cycles, mixes):
        assert cycle["mix"] == mix, cycle["mix"]
        # each pool's client kept its cycle's mix
        for spell in ("isolated", "shared"):
            for pool, f in cycle[spell]["clients"].items():
                assert f["ops"] > 0 and abs(f["read_fraction"] - mix[pool] / 100) < 0.1, f
                assert (f["read_ms"] or 0) >= 0 and (f["write_ms"] or 0) >= 0, f
        switch = cycle["switch"]
        assert switch["to"] == "shared" and set(switch["pools"]) == set(mix)
        for seen in switch["pools"].values():
            # auto pools; shared by their strategy, or kept with a reason
            assert seen["auto"] and seen["strategy"] in ("copy", "move"), seen
            assert seen["shared"] == (seen["kept_isolated"] is None), seen
            if seen["strategy"] == "copy" and seen["shared"]:
                assert seen["size"] == 4, seen
            if seen["strategy"] == "move" and seen["shared"]:
                assert seen["rule"] == "sla_shared" and seen["size"] == 3, seen
        shared = {pool for pool, seen in switch["pools"].items() if seen["shared"]}
        # each pool it shared counted once against the urgent write budget
        assert len(switch["pools_to_urgent"] or []) == len(shared), switch
        assert ((switch["bytes_to_urgent"] or 0) > 0) == bool(shared), switch
        # the urgent client came: isolated, measured with every op
        urgent = cycle["urgent"]
        assert urgent["switch"]["to"] == "isolated" and urgent["reaction_secs"] > 0, urgent
        assert urgent["urgent_ops"] == 2 * 8 * 1024 // W.SMOKE.block_kb, urgent
        assert 0 < urgent["urgent_p50_ms"] <= urgent["urgent_p99_ms"], urgent
        assert set(cycle["client_gain"]) == set(mix)
        # every pool shared has its gain check: the module's and its clients' at the mix
        assert set(cycle["gain_check"]) == {
            p for p, seen in cycle["shared"]["pools"].items() if seen["shared"]}, cycle
        # the module's ledger beside it: every pool's isolated windows, by name
        ledger = cycle["shared"]["ledger"]
        assert {e["pool"] for e in ledger if e["placement"] == "isolated"} == set(mix), ledger
        for check in cycle["gain_check"].values():
            assert check["clients_at_mix"] is None or check["clients_at_mix"] > 0, check
