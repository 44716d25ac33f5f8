"""What the module's `auto` does with one normal pool in the policy simulation
(bench/policy_strategies.py): the module's own choice (core/strategy_choice.py)
and gain test (core/gain.py) at its default settings, given each strategy's
simulated runs of that pool (one data volume, one read fraction).

Each strategy's gain is the simulation's normal ops always shared over always
isolated (what the module measures once the pool has been shared); a strategy
is blocked, as in the module, when its isolation takes longer than
max_isolation_secs, when a copy does not fit on the urgent region, or when one
switch would write more to the urgent OSDs than the day's budget.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mgr_sla.core.gain import ExpectedGain, not_worth_sharing
from mgr_sla.core.settings import Settings
from mgr_sla.core.strategy_choice import StrategyOption, choose_strategy

TB = 1e12
# the share of the urgent region's raw bytes a copy may fill: the module
# refuses one that would take an urgent OSD past nearfull_ratio (Ceph's default)
COPY_ROOM = 0.85


def _blocked(strategy: str, cell: Mapping[str, Any], volume_tb: float, urgent_raw_tb: float,
             settings: Settings) -> str | None:
    isolation = float(cell["switch"]["to_isolated_secs"])
    if isolation > settings.max_isolation_secs:
        return (f"isolation takes about {isolation:.0f} s, over max_isolation_secs "
                f"{settings.max_isolation_secs:g}")
    if strategy == "copy" and volume_tb > COPY_ROOM * urgent_raw_tb:
        return (f"a copy of {volume_tb:g} TB does not fit on the urgent region "
                f"({urgent_raw_tb:g} TB raw)")
    budget = settings.max_urgent_drive_writes * urgent_raw_tb * TB
    written = _bytes_to_urgent(strategy, cell, volume_tb)
    if budget > 0 and written > budget:
        return (f"one switch writes {written / TB:.1f} TB to urgent OSDs, over the day's "
                f"budget of {budget / TB:.1f} TB")
    return None


def _bytes_to_urgent(strategy: str, cell: Mapping[str, Any], volume_tb: float) -> float:
    """What one switch to shared writes to the urgent OSDs: a whole copy, or
    the moved share."""
    return volume_tb * TB if strategy == "copy" else float(cell["switch"]["bytes_per_switch"])


def auto_decision(cells: Mapping[str, Mapping[str, Any]], volume_tb: float,
                  urgent_raw_tb: float, settings: Settings | None = None) -> dict[str, Any]:
    """The pool's fate under `auto` (`cells`: strategy -> its simulation
    summary): the strategy it is shared by, or why it is kept isolated, and the
    normal ops against fixed isolation that follow (the chosen strategy's
    best adaptive setting within the SLA budget; 1.0 when kept)."""
    settings = settings or Settings()
    options = [StrategyOption(s, ExpectedGain(
        float(c["fixed_shared"]["normal_vs_fixed"]), "simulated",
        "always shared over always isolated"),
        _blocked(s, c, volume_tb, urgent_raw_tb, settings)) for s, c in cells.items()]
    # a new auto pool starts on copy where the urgent region has room
    first = "copy" if any(o.strategy == "copy" and o.blocked is None for o in options) \
        else "move"
    choice = choose_strategy(first, True, options)
    picked = next(o for o in options if o.strategy == choice.strategy)
    kept = choice.why if picked.blocked else not_worth_sharing(
        picked.gain, settings.min_gain, float(cells[picked.strategy]["switch"]
                                              ["full_switch_secs"]), None)
    best = cells[picked.strategy]["recommended"]
    per_switch = 0.0 if kept else _bytes_to_urgent(picked.strategy, cells[picked.strategy],
                                                    volume_tb)
    budget = settings.max_urgent_drive_writes * urgent_raw_tb * TB
    return {"shared_by": None if kept else picked.strategy,
            "kept_isolated": kept,
            "why": choice.why,
            "normal_vs_fixed": 1.0 if kept or best is None else best["normal_vs_fixed"],
            "urgent_bytes_per_switch": round(per_switch),
            # the best setting's switches a day against the write budget: past
            # it the module keeps the pool isolated for the rest of the day
            "urgent_bytes_per_day": round(per_switch * (best or {}).get("switches_per_day", 0)),
            "urgent_budget_bytes_per_day": round(budget),
            "budget_limit": _budget_limit(per_switch, (best or {}).get("switches_per_day", 0),
                                          budget),
            "options": {o.strategy: {"gain": o.gain.gain, "blocked": o.blocked}
                        for o in options}}


def _budget_limit(per_switch: float, switches_per_day: float, budget: float) -> str | None:
    """What the write budget does to the chosen setting, if it bounds it."""
    if per_switch <= 0 or budget <= 0 or per_switch * switches_per_day <= budget:
        return None
    return (f"the write budget allows {int(budget // per_switch)} of its "
            f"{switches_per_day:.1f} switches a day")
