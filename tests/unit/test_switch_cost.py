"""The switch-cost model: what each strategy moves, how long isolation takes,
what it costs the mon, and what it gains."""
from __future__ import annotations

import pytest

from mgr_sla.core.models.registry import MODELS
from mgr_sla.core.state import Strategy
from mgr_sla.core.switch_cost import (
    COPY_ISOLATION_SECS,
    DEFAULT_DRAIN_BYTES_PER_SEC,
    Capacity,
    PoolCost,
    PoolCostInputs,
    drain_rate,
    normal_fill_after_isolation,
    pool_cost,
)

GIB = 2.0**30
TIB = 2.0**40
CAP = Capacity(urgent_free_bytes=100 * TIB, nearfull_ratio=0.85, urgent_total_bytes=120 * TIB,
               normal_used_bytes=200 * TIB, normal_total_bytes=1000 * TIB,
               backfillfull_ratio=0.9)


def costs(inputs: PoolCostInputs, cap: Capacity, max_isolation_secs: float) -> PoolCost:
    """The module's call: every strategy's formulas, in the registry's order."""
    return pool_cost(inputs, cap, max_isolation_secs, list(MODELS.values()), 1.05)


def pool(stored: float, strategy: Strategy = Strategy.MOVE, reads: float | None = 0.7,
         pgs: int = 4096, share: float = 0.2, shared: bool = False) -> PoolCostInputs:
    return PoolCostInputs(1, "bulk", strategy, 3, stored, pgs, share, reads, shared)


@pytest.mark.parametrize("stored", [1 * GIB, 8 * GIB, 100 * TIB])
def test_copy_isolation_does_not_grow_with_the_data(stored: float) -> None:
    cost = costs(pool(stored), CAP, 60).cost(Strategy.COPY)
    assert cost.time_to_isolation_secs == COPY_ISOLATION_SECS
    assert cost.bytes_to_isolated == 0 and cost.bytes_to_shared == stored
    assert cost.epochs_to_shared <= 2 and cost.epochs_to_isolated <= 2


def test_move_isolation_grows_with_the_data_and_its_entries_cost_the_mon() -> None:
    small = costs(pool(1 * GIB), CAP, 60).cost(Strategy.MOVE)
    big = costs(pool(8 * GIB), CAP, 60).cost(Strategy.MOVE)
    assert big.time_to_isolation_secs == pytest.approx(8 * small.time_to_isolation_secs, rel=0.01)
    assert small.time_to_isolation_secs == pytest.approx(
        1 * GIB * 3 * 0.2 / DEFAULT_DRAIN_BYTES_PER_SEC, abs=0.1)
    at_scale = costs(pool(100 * TIB, pgs=100_000), CAP, 60).cost(Strategy.MOVE)
    # one entry a PG, 256 in flight a round: a round a proposal (bench/upmap_scale.py)
    assert at_scale.mon_commands_to_shared > 50_000 and 200 < at_scale.epochs_to_shared < 300
    assert at_scale.osdmap_bytes_shared > 1_000_000


def test_gain_follows_the_read_mix_as_measured() -> None:
    """The order the strategy benchmark measured: on writes and on a 70% read
    mix move gains and copy hardly (a replica write costs an HDD about ten
    reads); on reads only, copy gains most (the SSD copy is the primary)."""
    writes = costs(pool(GIB, reads=0.0), CAP, 60)
    mixed = costs(pool(GIB, reads=0.7), CAP, 60)
    reads = costs(pool(GIB, reads=1.0), CAP, 60)
    assert writes.cost(Strategy.COPY).expected_gain == 1.0  # every copy acks a write
    assert writes.cost(Strategy.MOVE).expected_gain == pytest.approx(1 / 0.8, rel=0.01)
    assert 1.0 < mixed.cost(Strategy.COPY).expected_gain < 1.2
    assert mixed.cost(Strategy.MOVE).expected_gain > mixed.cost(Strategy.COPY).expected_gain
    assert reads.cost(Strategy.COPY).expected_gain > reads.cost(Strategy.MOVE).expected_gain
    assert reads.recommended == "copy" and mixed.recommended == "move"


def test_keep_isolated_when_nothing_pays_within_the_budget() -> None:
    tight = Capacity(0.5 * GIB, 0.85, 1 * GIB, 0, 10 * GIB, 0.9)
    cost = costs(pool(100 * GIB, reads=0.0), tight, 60)
    assert cost.recommended == "keep isolated"
    assert "max_isolation_secs" in cost.reason and "copy" in cost.reason


def test_isolation_must_fit_the_normal_region() -> None:
    full = Capacity(100 * TIB, 0.85, 120 * TIB, 880 * TIB, 1000 * TIB, 0.9)
    shared = pool(100 * TIB, shared=True)
    fill = normal_fill_after_isolation([costs(shared, full, 60)], [shared], full)
    assert fill is not None and fill > 0.9
    copy = pool(100 * TIB, Strategy.COPY, shared=True)
    fill = normal_fill_after_isolation([costs(copy, full, 60)], [copy], full)
    assert fill == pytest.approx(0.88)


def test_drain_rate_is_learned_from_the_modules_own_isolations() -> None:
    assert drain_rate([])[0] == DEFAULT_DRAIN_BYTES_PER_SEC
    rate, basis = drain_rate([(10 * GIB, 100.0), (20 * GIB, 100.0), (30 * GIB, 100.0)])
    assert rate == pytest.approx(20 * GIB / 100) and "median of the last 3" in basis
