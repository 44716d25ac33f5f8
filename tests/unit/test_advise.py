"""`ceph sla advise`: urgent sizing, overfill, thresholds, dwell and layout."""
from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest

from mgr_sla.core.advise import AdviseError, AdviseInputs, Measured, advise
from mgr_sla.core.report import render_advice as render

SSD = Measured(850.0, "ceph tell osd.3 bench")
HDD = Measured(120.0, "calibrated default")
PAPER_SSD = Measured(2.95, "paper: SSD only 2.95x HDD only")
PAPER_DB = Measured(2.0, "paper: HDD + SSD metadata about 2x")


def inputs(**kw: Any) -> AdviseInputs:
    base: dict[str, Any] = dict(urgent_osds=4, normal_osds=12, urgent_osd_iops=SSD,
                                normal_osd_iops=HDD, urgent_peak_iops=412.0,
                                quiet_rate_iops=5.0, history_hours=36)
    base.update(kw)
    return AdviseInputs(**base)


def test_needed_osds_worked_example() -> None:
    # 1000 IOPS x size 3 = 3000 OSD IOPS; 850 x (1 - 0.3) = 595 per OSD; 5.04 -> 6
    a = advise(inputs(urgent_peak_iops=1000.0))
    assert a.urgent_osds_needed == 6 and a.verdict == "too few: add 2"
    assert "1000 IOPS over 36 h" in a.urgent_osds_basis and "ceph tell osd.3 bench" in (
        a.urgent_osds_basis) and "5.04 -> 6" in a.urgent_osds_basis


def test_needed_osds_exact_multiple_is_not_rounded_up() -> None:
    # 980 x 3 = 2940 = 6 x (700 x 0.7) exactly, though floats make it 6.000000000000001
    a = advise(inputs(urgent_peak_iops=980.0, urgent_osds=6,
                      urgent_osd_iops=Measured(700.0, "bench")))
    assert a.urgent_osds_needed == 6 and a.verdict == "enough"


def test_needed_osds_with_reads_and_at_least_size() -> None:
    # half reads: 0.5 + 0.5 x 3 = 2 OSD ops per client op; 1000 x 2 / 595 = 3.36 -> 4
    assert advise(inputs(urgent_peak_iops=1000.0, read_fraction=0.5)).urgent_osds_needed == 4
    small = advise(inputs(urgent_peak_iops=10.0))  # 0.05 OSDs of load: still one per replica
    assert small.urgent_osds_needed == 3 and "raised to size 3" in small.urgent_osds_basis


def test_no_history_yet() -> None:
    for a in (advise(inputs(urgent_peak_iops=None)), advise(inputs(history_hours=0))):
        assert a.urgent_osds_needed is None and a.verdict == "no history yet"
    short = advise(inputs(history_hours=5))
    assert any("only 5 h" in n for n in short.notes)
    assert not any("only" in n for n in advise(inputs()).notes)


def test_thresholds_are_5_percent_of_client_capacity() -> None:
    # docs/policy-simulation.md: 200 SSDs of ~355 ops/s at size 3 -> about 1,200 IOPS
    a = advise(inputs(urgent_osds=200, urgent_osd_iops=Measured(355.0, "sim"),
                      quiet_rate_iops=100.0))
    assert a.urgent_client_capacity_iops == pytest.approx(200 * 355 / 3)
    assert a.threshold_iops == 1183 and a.threshold_low_iops == 591.5


def test_low_threshold_raised_to_twice_the_quiet_rate() -> None:
    a = advise(inputs(urgent_osds=200, urgent_osd_iops=Measured(355.0, "sim"),
                      quiet_rate_iops=400.0))
    assert a.threshold_iops == 1183 and a.threshold_low_iops == 800
    assert "raised to 2x the quiet-hours rate 400" in a.threshold_low_iops_basis


def test_band_cannot_sit_above_the_quiet_rate_high_goes_to_4x_quiet() -> None:
    a = advise(inputs(urgent_osds=200, urgent_osd_iops=Measured(355.0, "sim"),
                      quiet_rate_iops=600.0))  # 2 x 600 >= 1183
    assert a.threshold_iops == 2400 and a.threshold_low_iops == 1200
    assert any("cannot sit above the quiet rate" in n and "rarely share" in n for n in a.notes)
    assert not any("isolates too late" in n for n in a.notes)  # 2400 is 10% of capacity
    hot = advise(inputs(urgent_osds=200, urgent_osd_iops=Measured(355.0, "sim"),
                        quiet_rate_iops=1500.0))  # 4 x 1500 = 25% of capacity
    assert hot.threshold_iops == 6000 and any("isolates too late" in n for n in hot.notes)


def test_thresholds_without_quiet_rate_or_urgent_osds() -> None:
    a = advise(inputs(urgent_osds=200, urgent_osd_iops=Measured(355.0, "sim"),
                      quiet_rate_iops=None))
    assert a.threshold_low_iops == 591.5 and "no quiet-hours rate" in a.threshold_low_iops_basis
    none = advise(inputs(urgent_osds=0))
    assert none.threshold_iops is None and none.threshold_low_iops is None
    assert none.verdict == "too few: add 3"


def test_current_low_below_twice_quiet_is_noted() -> None:
    a = advise(inputs(threshold_iops=100.0, threshold_low_iops=0.0, quiet_rate_iops=30.0))
    assert a.current_threshold_low_iops == 50.0  # 0: half of high, as in the module
    assert any("current low threshold 50" in n for n in a.notes)


def test_dwell_is_7200_and_at_least_one_switch() -> None:
    assert advise(inputs()).min_dwell_secs == 7200
    assert advise(inputs(last_switch_secs=95.0)).min_dwell_secs == 7200
    slow = advise(inputs(last_switch_secs=10_800.0))
    assert slow.min_dwell_secs == 10_800 and any("fixed isolation" in n for n in slow.notes)


TB = 1e12


def empty(total: float) -> dict[str, float]:
    """An urgent region of `total` bytes with nothing on it."""
    return {"urgent_free_bytes": total, "urgent_total_bytes": total}


def test_shared_overfill_by_capacity() -> None:
    # 10 TB of normal replicas x 25% = 2.5 TB against 0.85 x 2 TB - 0 used = 1.7 TB
    over = advise(inputs(normal_bytes=10 * TB, **empty(2 * TB), urgent_share=0.25))
    assert over.shared_overfill is True and "IOPS: not checked" in over.shared_overfill_basis
    fits = advise(inputs(normal_bytes=10 * TB, **empty(3 * TB), urgent_share=0.25))
    assert fits.shared_overfill is False  # 2.5 TB <= 2.55 TB
    # room is under the ratio of the total, not a share of what is free: 3 TB free
    # of 4 TB is 0.85 x 4 - 1 = 2.4 TB of room (free x ratio said 2.55)
    used = advise(inputs(normal_bytes=10 * TB, urgent_free_bytes=3 * TB,
                         urgent_total_bytes=4 * TB, urgent_share=0.25))
    assert used.shared_overfill is True and "used = 2.2 TiB" in used.shared_overfill_basis


def test_shared_overfill_by_iops() -> None:
    # usable: 4 x 850 x 0.7 = 2380 OSD IOPS; urgent quiet 100 x 3 = 300
    # normal peak 2000 writes x 3 x 25% = 1500: 1800 fits; at 3000: 2550 does not
    fits = advise(inputs(quiet_rate_iops=100.0, normal_peak_iops=2000.0, urgent_share=0.25))
    assert fits.shared_overfill is False and "= 1800 OSD IOPS <=" in fits.shared_overfill_basis
    over = advise(inputs(quiet_rate_iops=100.0, normal_peak_iops=3000.0, urgent_share=0.25))
    assert over.shared_overfill is True
    # normal reads stay on the normal primaries: all reads, no load from the normal side
    reads = advise(inputs(quiet_rate_iops=100.0, normal_peak_iops=4000.0, urgent_share=0.25,
                          read_fraction=1.0))  # as writes: 100 + 4000 x 3 x 25% > 2380
    assert reads.shared_overfill is False


def test_shared_overfill_either_check_and_unknown() -> None:
    both = advise(inputs(quiet_rate_iops=100.0, normal_peak_iops=3000.0, urgent_share=0.25,
                         normal_bytes=1 * TB, **empty(3 * TB)))
    assert both.shared_overfill is True  # bytes fit, IOPS do not
    assert advise(inputs(normal_bytes=TB, **empty(TB))).shared_overfill is None
    assert advise(inputs(urgent_share=0.25)).shared_overfill is None


def layout(ratio: float, **kw: Any) -> Any:
    a = advise(inputs(ssd_hdd_cost_ratio=ratio, ssd_speedup=PAPER_SSD,
                      hdd_ssd_db_speedup=PAPER_DB, **kw))
    assert a.data_metadata is not None
    return a.data_metadata


def test_data_metadata_with_the_papers_figures() -> None:
    at2, at10 = layout(2.0), layout(10.0)
    per2 = {la.name: la.perf_per_cost for la in at2.layouts}
    per10 = {la.name: la.perf_per_cost for la in at10.layouts}
    # 1:2 -> hdd 1, ssd 2.95 / 2, hdd+ssd db 2 / (1 + 0.04 x 2)
    assert per2["ssd"] == pytest.approx(1.475) and per2["hdd+ssd db"] == pytest.approx(2 / 1.08)
    assert per2["ssd+ssd db"] is None  # not measured: left out
    # SSD only beats HDD only at 1:2 and loses to it at 1:10 ...
    assert per2["ssd"] > per2["hdd"] and per10["ssd"] < per10["hdd"]
    # ... but with block.db at 4%, HDD + SSD db wins at both
    assert at2.winner == at10.winner == "hdd+ssd db"
    assert per10["hdd+ssd db"] == pytest.approx(2 / 1.4)


def test_data_metadata_winner_flips_with_the_cost_ratio() -> None:
    # SSD only wins while r < 2.95 / (2 - 2.95 x 0.04) = 1.57
    assert layout(1.5).winner == "ssd" and layout(1.6).winner == "hdd+ssd db"
    assert layout(10.0).winner == "hdd+ssd db"
    # with the DB on whole SSDs (block.db as big as block), HDD only wins at 1:10
    assert layout(2.0, db_fraction=0.9).winner == "ssd"
    assert layout(10.0, db_fraction=0.9).winner == "hdd"


def test_data_metadata_ssd_ssd_counts_when_measured() -> None:
    dm = layout(1.2, ssd_ssd_db_speedup=Measured(3.3, "measured"))
    assert dm.winner == "ssd+ssd db"  # 3.3 / 1.248 = 2.64 > 2.95 / 1.2 = 2.46


def test_data_metadata_without_figures_says_why() -> None:
    a = advise(inputs(ssd_hdd_cost_ratio=5.0, ssd_speedup=PAPER_SSD))
    assert a.data_metadata is None and "hdd_ssd_db_speedup not given" in a.data_metadata_basis
    b = advise(inputs())
    assert b.data_metadata is None and "ssd_hdd_cost_ratio" in b.data_metadata_basis


@pytest.mark.parametrize("field, value, error", [
    ("urgent_osds", -1, ">= 0"),
    ("normal_osds", 2.5, "whole number"),
    ("history_hours", -3, ">= 0"),
    ("size", 0, ">= 1"),
    ("headroom", 1.0, r"\[0, 1\)"),
    ("headroom", -0.1, r"\[0, 1\)"),
    ("read_fraction", 1.5, r"\[0, 1\]"),
    ("urgent_osd_iops", Measured(0.0, "x"), r"\(0, inf\)"),
    ("normal_osd_iops", 120.0, "Measured"),
    ("urgent_peak_iops", float("nan"), "finite"),
    ("quiet_rate_iops", -1.0, ">= 0|\\[0"),
    ("urgent_share", 1.2, r"\[0, 1\]"),
    ("ssd_hdd_cost_ratio", 0.0, r"\(0"),
    ("ssd_speedup", Measured(-2.0, "x"), r"\(0"),
    ("threshold_iops", 0.0, r"\(0"),
    ("db_fraction", 1.0, r"\[0, 1\)"),
])
def test_bad_inputs_name_the_field(field: str, value: Any, error: str) -> None:
    with pytest.raises(AdviseError, match=f"^{field}: .*({error})"):
        inputs(**{field: value})


def test_advise_error_is_a_value_error_and_replace_validates() -> None:
    assert issubclass(AdviseError, ValueError)
    with pytest.raises(AdviseError, match="^size"):
        replace(inputs(), size=0)


def test_to_dict_is_json_and_render_lists_every_figure() -> None:
    a = advise(inputs(threshold_iops=100.0, threshold_low_iops=0.0, min_dwell_secs=1800.0,
                      normal_bytes=TB, **empty(TB), urgent_share=0.25,
                      ssd_hdd_cost_ratio=5.0, ssd_speedup=PAPER_SSD,
                      hdd_ssd_db_speedup=PAPER_DB))
    d = json.loads(json.dumps(a.to_dict()))
    assert d["urgent_osds_needed"] == 3 and d["verdict"] == "enough"
    assert d["data_metadata"]["winner"] == "hdd+ssd db"
    assert len(d["data_metadata"]["layouts"]) == 4 and isinstance(d["notes"], list)
    text = render(a)
    for word in ("urgent OSDs", "threshold_iops", "threshold_low_iops", "min_dwell_secs",
                 "shared mode", "fits", "hdd+ssd db", "PERF/COST", "ceph tell osd.3 bench"):
        assert word in text
    assert "unknown" in render(advise(inputs()))
