"""auto's decision for one pool in the policy simulation (bench/policy_auto.py):
the module's own choice and gain test over both strategies' simulated runs."""
from __future__ import annotations

from typing import Any

from bench.policy_auto import auto_decision
from mgr_sla.core.settings import Settings

TB = 1e12


def cell(shared_gain: float, to_isolated: float, bytes_per_switch: float = 1 * TB,
         best: float = 1.2, switches: float = 4.0) -> dict[str, Any]:
    return {"fixed_shared": {"normal_vs_fixed": shared_gain},
            "recommended": {"normal_vs_fixed": best, "switches_per_day": switches},
            "switch": {"to_isolated_secs": to_isolated, "full_switch_secs": 600,
                       "bytes_per_switch": bytes_per_switch}}


def test_the_best_gain_that_fits_wins_and_gives_its_best_setting() -> None:
    got = auto_decision({"move": cell(1.3, 30, best=1.15), "copy": cell(1.8, 10, best=1.4)},
                        volume_tb=1, urgent_raw_tb=100)
    assert got["shared_by"] == "copy" and got["kept_isolated"] is None
    assert got["normal_vs_fixed"] == 1.4 and got["urgent_bytes_per_switch"] == 1 * TB
    assert got["urgent_bytes_per_day"] == 4 * TB and got["budget_limit"] is None


def test_a_move_slower_to_isolate_than_allowed_is_blocked() -> None:
    got = auto_decision({"move": cell(1.6, 107), "copy": cell(1.3, 10)}, 1, 100)
    assert got["shared_by"] == "copy"
    assert "isolation takes about 107 s, over max_isolation_secs 60" in \
        got["options"]["move"]["blocked"]


def test_a_copy_that_does_not_fit_on_the_urgent_region_is_blocked() -> None:
    got = auto_decision({"move": cell(1.6, 107), "copy": cell(1.9, 10)}, 100, 100)
    assert got["shared_by"] is None and got["normal_vs_fixed"] == 1.0
    assert "does not fit on the urgent region" in got["kept_isolated"]
    assert got["urgent_bytes_per_switch"] == 0


def test_under_min_gain_the_pool_stays_isolated_and_says_why() -> None:
    # a new pool starts on copy; move is not 10% better: copy's gain decides
    got = auto_decision({"move": cell(1.02, 30), "copy": cell(0.98, 10)}, 1, 100)
    assert got["shared_by"] is None
    assert got["kept_isolated"].startswith("expected gain 0.98x (simulated: ")
    assert got["kept_isolated"].endswith("under min_gain 1.05x")


def test_the_write_budget_blocks_a_switch_over_it_and_bounds_the_switches_a_day() -> None:
    # 10 TB raw urgent region: a budget of 3 TB a day at 0.3 drive writes
    over = auto_decision({"move": cell(1.5, 30, bytes_per_switch=4 * TB),
                          "copy": cell(1.0, 10)}, 1, 10)
    assert over["shared_by"] is None and "over the day's budget of 3.0 TB" in \
        over["options"]["move"]["blocked"]
    bounded = auto_decision({"move": cell(1.5, 30, bytes_per_switch=1 * TB, switches=6),
                             "copy": cell(1.0, 10)}, 1, 10)
    assert bounded["shared_by"] == "move"
    assert bounded["budget_limit"] == "the write budget allows 3 of its 6.0 switches a day"
    unbounded = auto_decision({"move": cell(1.5, 30, bytes_per_switch=4 * TB),
                               "copy": cell(1.0, 10)}, 1, 10,
                              Settings(max_urgent_drive_writes=0.0))
    assert unbounded["shared_by"] == "move" and unbounded["budget_limit"] is None
