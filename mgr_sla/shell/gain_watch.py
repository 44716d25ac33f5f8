"""The gain of sharing each normal pool on the live module: the ledger of
core/gain.py fed with the perf query's periods every tick, and at each cost
refresh the pools sharing would not pay for (kept isolated, with the reason).
"""
from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any

from ..core.activity import PoolPeriod
from ..core.decision import Mode, ThresholdError
from ..core.gain import (
    ISOLATED,
    ExpectedGain,
    GainLedger,
    MeasuredGain,
    expected_gain,
    not_worth_sharing,
    quiet_periods,
    usual_quiet_secs,
)
from ..core.settings import Settings
from ..core.state import PoolRole, Role, Strategy, SwitchRecord
from ..core.switch_cost import Capacity, PoolCost


class GainWatch:
    def __init__(self) -> None:
        self.ledger = GainLedger()
        self.expected: dict[int, ExpectedGain] = {}  # with the pool's strategy
        self.by_strategy: dict[int, dict[str, ExpectedGain]] = {}  # with each
        self.measured: dict[int, MeasuredGain] = {}  # as of the last refresh
        self.kept: dict[int, str] = {}

    def fold(self, now: float, periods: Mapping[int, PoolPeriod],
             roles: Mapping[int, PoolRole], shared: Collection[int],
             urgent_iops: float | None, settings: Settings) -> None:
        """One tick's counters of the normal pools, under their placement;
        comparable only while the urgent clients are below the low threshold
        (then a normal pool's service is what its placement gives it)."""
        try:
            quiet = urgent_iops is not None and urgent_iops < settings.thresholds().low_iops
        except ThresholdError:
            quiet = False
        placement = {p: r.strategy.value if p in shared else ISOLATED
                     for p, r in roles.items() if r.role is Role.NORMAL}
        self.ledger.add(now, periods, placement, quiet)

    def refresh(self, now: float, costs: Mapping[int, PoolCost], shared: Collection[int],
                read_fraction: Callable[[int], float | None], settings: Settings,
                history: Sequence[SwitchRecord], pinned: Mode | None, cap: Capacity
                ) -> dict[int, str]:
        """Each pool's expected gain; the pools not shared now that sharing
        would not pay for. A pool already shared stays so for the period (it
        is judged again at the next switch to shared), and a pinned shared
        mode shares whatever the gain: the operator asked for it."""
        usual = usual_quiet_secs(quiet_periods(history), now)
        self.expected, self.kept, self.measured, self.by_strategy = {}, {}, {}, {}
        for pid, cost in costs.items():
            mine = cost.cost(Strategy(cost.strategy))
            measured = {c.strategy: self.ledger.measured(pid, c.strategy) for c in cost.costs}
            mine_measured = measured[cost.strategy]
            if mine_measured is not None:
                self.measured[pid] = mine_measured
            self.by_strategy[pid] = {
                c.strategy: expected_gain(c.expected_gain, c.strategy, read_fraction(pid),
                                          measured[c.strategy], now, settings.gain_retry_secs)
                for c in cost.costs}
            exp = self.expected[pid] = self.by_strategy[pid][cost.strategy]
            if pid in shared or pinned is Mode.SHARED:
                continue
            place_secs = mine.bytes_to_shared / max(cap.drain_bytes_per_sec, 1.0)
            why = not_worth_sharing(exp, settings.min_gain, place_secs, usual)
            if why:
                self.kept[pid] = why
        return dict(self.kept)

    def view(self, pid: int, model: float | None) -> dict[str, Any]:
        """For status, plan and metrics: the model's gain, the measured one
        and its basis, and the one the module decides on (all as of the last
        cost refresh, so they agree)."""
        measured = self.measured.get(pid)
        exp = self.expected.get(pid)
        return {"model": model,
                "measured": measured.gain if measured else None,
                "measured_basis": measured.basis() if measured else None,
                "expected": exp.gain if exp else None,
                "source": exp.source if exp else None}
