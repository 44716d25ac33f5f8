"""What a switch costs, per normal pool and placement strategy. Pure.

For each pool and strategy: the bytes each switch moves, the expected time
to isolation, the mon commands and OSDMap epochs of a switch, the urgent
space shared mode needs, the expected gain, and whether isolation fits the
normal region. The module keeps a pool isolated when its time to isolation
would pass `max_isolation_secs`; `ceph sla plan` and `ceph sla advise` show
the figures and recommend a strategy.

The formulas of each strategy are its own (placement/*_strategy.py, `cost`);
this module holds what they share and what the module does with their figures.
The gain model counts normal-region (HDD) work per client op, which is what
caps normal throughput while the urgent region is idle. With read fraction r,
size N and a replica write costing an HDD W reads' worth (WRITE_COST), isolated:
a client op costs (1-r)NW + r.
Measured side by side (docs/benchmarks.md, "Placement strategies compared"):
copy 1.00x and move 1.24-1.66x at 70% reads, copy 0.9-1.0x and move 1.5-1.6x on
writes, copy 3.2-3.7x and move 1.7-2.1x on reads.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any, Protocol

from .state import Strategy

# Isolation of a copy pool is one `osd pool set size`: the PGs re-peer without
# the urgent copy and nothing is copied first. Measured on the mini cluster
# (8 memstore OSDs, 32 PGs): all PGs active again within 7 s.
COPY_ISOLATION_SECS = 10.0
# Backfill/recovery rate when the module has not yet timed a switch of its own.
DEFAULT_DRAIN_BYTES_PER_SEC = 100.0 * 2**20
# pg_upmap_items commands the module sends at once: the mon folds the commands
# that arrive together into one proposal, so a round costs about one OSDMap
# epoch. Measured on a mon-only rig (bench/upmap_scale.py, 6,000 entries):
# 8 at a time 750 epochs and 857 s; 256 at a time 24 epochs and 27 s.
UPMAP_PARALLEL = 256
# An entry with one pair in every full OSDMap: measured 29 bytes (bench/upmap_scale.py:
# 6,000 and 60,000 entries grew the map by 174,000 and 1,740,000 bytes).
UPMAP_ENTRY_BYTES = 29
DEFAULT_READ_FRACTION = 0.5  # a pool with no ops measured yet
# What a small replica write costs an HDD OSD in reads (BlueStore, measured on the
# emulated devices: about 36 client writes/s of size 3 against 320-460 reads/s)
WRITE_COST = 10.0
# A read-only pool on copy: the SSDs serve every read; the gain is capped at
# what the benchmark measured there rather than reported as unbounded
MAX_GAIN = 4.0


@dataclass(frozen=True)
class PoolCostInputs:
    pool_id: int
    name: str
    strategy: Strategy  # the one configured
    size: int  # the isolated size (copies on the normal region)
    stored_bytes: float  # one copy of the pool's data
    pg_num: int
    urgent_share: float  # move: share of replicas shared mode puts on urgent OSDs
    read_fraction: float | None = None
    shared_now: bool = False  # the pool is in shared placement now
    data_shards: int = 0  # an erasure-coded pool's k (size is k+m); 0: replicated


@dataclass(frozen=True)
class Capacity:
    urgent_free_bytes: float
    nearfull_ratio: float
    urgent_total_bytes: float
    normal_used_bytes: float
    normal_total_bytes: float
    backfillfull_ratio: float
    drain_bytes_per_sec: float = DEFAULT_DRAIN_BYTES_PER_SEC
    drain_basis: str = "default 100 MiB/s (no switch of the module timed yet)"


@dataclass(frozen=True)
class SwitchCost:
    strategy: str
    bytes_to_shared: float
    bytes_to_isolated: float
    time_to_isolation_secs: float
    time_to_isolation_basis: str
    mon_commands_to_shared: int
    mon_commands_to_isolated: int
    epochs_to_shared: int
    epochs_to_isolated: int
    osdmap_bytes_shared: int  # what shared mode adds to every full OSDMap
    urgent_bytes_needed: float
    fits_urgent: bool
    expected_gain: float  # normal throughput over isolated, urgent idle

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def entries_cost(strategy: str, moved: float, entries: int, what: str, cap: Capacity,
                 gain: float) -> SwitchCost:
    """A switch by the module's pg_upmap_items (move, ec): `moved` bytes onto
    urgent OSDs by `entries` entries (in rounds of UPMAP_PARALLEL) and the rule
    swap, and back by the rule swap alone; `what` names the bytes."""
    drain = max(cap.drain_bytes_per_sec, 1.0)
    return SwitchCost(
        strategy, moved, moved, round(moved / drain, 1),
        f"{moved / 2**30:.2f} GiB {what} / drain {cap.drain_basis}",
        entries + 1, 1, 1 + math.ceil(entries / UPMAP_PARALLEL), 1,
        entries * UPMAP_ENTRY_BYTES, moved, moved <= urgent_room(cap), gain)


@dataclass(frozen=True)
class PoolCost:
    pool_id: int
    name: str
    strategy: str
    read_fraction: float
    read_fraction_basis: str
    costs: tuple[SwitchCost, ...]
    recommended: str  # a strategy, or "keep isolated"
    reason: str
    read_fraction_known: bool = True  # False: no client ops measured, 50% assumed

    def cost(self, strategy: Strategy) -> SwitchCost:
        return next(c for c in self.costs if c.strategy == strategy.value)

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["costs"] = {c.strategy: c.to_dict() for c in self.costs}
        return out


class CostModel(Protocol):
    """A strategy's cost formulas (each strategy has its own, in placement/)."""

    kind: Strategy
    erasure: bool  # it shares erasure-coded pools (and only those); else replicated ones

    def cost(self, pool: PoolCostInputs, cap: Capacity, read_fraction: float) -> SwitchCost:
        """What a switch of the pool costs with this strategy."""


def isolated_hdd_work(read_fraction: float, size: int) -> float:
    """Normal-region work per client op in isolated mode: (1-r)NW + r."""
    return (1 - read_fraction) * size * WRITE_COST + read_fraction


def capped_gain(isolated: float, shared: float) -> float:
    """Isolated over shared normal-region work per op, capped at MAX_GAIN."""
    return round(min(isolated / shared, MAX_GAIN), 3) if shared > 0 else MAX_GAIN


def room_under(ratio: float, total: float, used: float) -> float:
    """The bytes that fit before `used` of `total` reaches `ratio` (nearfull,
    backfillfull): the one headroom formula of the module."""
    return max(0.0, ratio * total - used)


def urgent_room(cap: Capacity) -> float:
    """What fits on the urgent region under nearfull_ratio."""
    return room_under(cap.nearfull_ratio, cap.urgent_total_bytes,
                      cap.urgent_total_bytes - cap.urgent_free_bytes)


def pool_cost(pool: PoolCostInputs, cap: Capacity, max_isolation_secs: float,
              models: Sequence[CostModel], min_gain: float) -> PoolCost:
    """The pool's cost with each strategy, and the one its figures alone
    recommend (the offline tables; the module decides by core/admission.py,
    on every limit of the live cluster)."""
    if pool.read_fraction is None:
        r, basis = DEFAULT_READ_FRACTION, "no client ops measured yet: assumed 50% reads"
    else:
        r, basis = pool.read_fraction, "measured by the module's perf query"
    # a pool has the strategies of its kind only (erasure-coded or replicated)
    costs = tuple(m.cost(pool, cap, r) for m in models if m.erasure == (pool.data_shards > 0))
    fit = [c for c in costs if c.time_to_isolation_secs <= max_isolation_secs
           and c.fits_urgent and c.expected_gain >= min_gain]
    if fit:
        best = max(fit, key=lambda c: (c.expected_gain, -c.time_to_isolation_secs))
        recommended = best.strategy
        reason = (f"gain {best.expected_gain:.2f}x, isolation in "
                  f"{best.time_to_isolation_secs:g} s")
    else:
        recommended, reason = "keep isolated", _why_isolated(costs, max_isolation_secs,
                                                             min_gain)
    return PoolCost(pool.pool_id, pool.name, pool.strategy.value, round(r, 3), basis, costs,
                    recommended, reason, pool.read_fraction is not None)


def _why_isolated(costs: Sequence[SwitchCost], max_isolation_secs: float,
                  min_gain: float) -> str:
    reasons = []
    for c in costs:
        if c.time_to_isolation_secs > max_isolation_secs:
            reasons.append(f"{c.strategy}: isolation would take {c.time_to_isolation_secs:g} s "
                           f"> max_isolation_secs {max_isolation_secs:g}")
        elif not c.fits_urgent:
            reasons.append(f"{c.strategy}: needs {c.urgent_bytes_needed / 2**30:.1f} GiB on "
                           "the urgent region, more than its free space under nearfull_ratio")
        else:
            reasons.append(f"{c.strategy}: gain {c.expected_gain:.2f}x, under min_gain "
                           f"{min_gain:g}x")
    return "; ".join(reasons)


def normal_fill_after(back_bytes: float, cap: Capacity) -> float | None:
    """The normal region's fill once `back_bytes` (what the move pools have
    on urgent OSDs) come back to it."""
    if cap.normal_total_bytes <= 0:
        return None
    return (cap.normal_used_bytes + back_bytes) / cap.normal_total_bytes


def normal_fill_after_isolation(costs: Sequence[PoolCost], pools: Sequence[PoolCostInputs],
                                cap: Capacity) -> float | None:
    """The normal region's fill once every pool in shared placement is
    isolated again: the move pools' urgent replicas come back to it."""
    if cap.normal_total_bytes <= 0:
        return None
    back = sum(c.cost(p.strategy).bytes_to_isolated for c, p in zip(costs, pools)
               if p.shared_now)
    return (cap.normal_used_bytes + back) / cap.normal_total_bytes


def drain_rate(samples: Sequence[tuple[float, float]]) -> tuple[float, str]:
    """Bytes/s from the module's own isolations: (bytes moved back, seconds)."""
    rates = sorted(b / s for b, s in samples if b > 2**20 and s > 0)
    if not rates:
        return DEFAULT_DRAIN_BYTES_PER_SEC, "default 100 MiB/s (no switch of the module timed yet)"
    median = rates[len(rates) // 2]
    return median, f"{median / 2**20:.0f} MiB/s, median of the last {len(rates)} isolations"
