"""Which normal pools may share, and how: one pure decision, `admit`.

The tick, `ceph sla pool set`, `ceph sla plan` and `ceph sla status` read the
same `Admission` (as Ceph's balancer shows and executes one Plan), built from
plain facts the shell reads once per refresh (shell/facts.py).

For every managed normal pool and every strategy it may use, the admission
prices a switch (the strategy's model), takes its expected gain (measured
once known, the model until then) and says what blocks it, each with the
sentence an operator reads:

- the pool's conditions for the strategy (its size, its flags);
- isolation taking longer than `max_isolation_secs`;
- a rule or weight set the strategy needs not installed;
- the mon's own projection on the size raise (copy);
- PG slots: the PGs each urgent OSD would hold, projected from the mapping
  Ceph will use (CRUSH's for copy, the module's planned entries for move,
  the real up sets for a pool already shared; an estimate by weight with a
  margin only until those are known), from what each OSD holds now (strays
  included) at the peak of the switch and with the worst urgent failure
  domain lost, against the limit each OSD runs with, with room to spare;
- space: the same mapping's bytes on each urgent OSD, against nearfull;
- the urgent OSDs' write budget (`max_urgent_drive_writes`).

Pools are admitted in order (those sharing now first, then the best
expected gains), each on top of those admitted before it. An auto pool's
next strategy is the best expected gain that fits (core/strategy_choice.py);
a pool is kept isolated when the strategy it has is blocked, when its gain
is under `min_gain`, while Ceph reports PGs withheld, or when the module sent
it back in this shared period (core/sharing_check.py), and the reason says
which. A pool sharing whose gain, measured in this period, is clear under
`min_gain` is `losing`: the shell sends it back for the rest of the period.
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .admission_facts import AdmissionFacts, NormalPool, Placement
from .admission_verdict import StrategyVerdict, UrgentLoad, verdict
from .cluster import PoolInfo
from .decision import Mode
from .device_prior import Calibration, DeviceLatency, device_gain
from .gain import (
    ExpectedGain,
    expected_gain,
    losing_share,
    not_worth_sharing,
    quiet_periods,
    usual_quiet_secs,
)
from .models.registry import MODELS, choices, strategies_for, target, with_strategy
from .pg_slots import SlotCheck
from .state import PoolRole, PoolTarget, Strategy, SwitchRecord
from .strategy_choice import StrategyChoice, choose_strategy
from .switch_cost import DEFAULT_READ_FRACTION, Capacity, SwitchCost, normal_fill_after
from .wear import WriteBudget, counted_this_period, current_period

__all__ = ["Admission", "AdmissionFacts", "NormalPool", "Placement", "PoolAdmission",
           "StrategyVerdict", "admit", "choice_since", "strategy_changes"]


@dataclass(frozen=True)
class PoolAdmission:
    pool_id: int
    name: str
    strategy: str  # the one the pool has: its next switch to shared uses it
    choice: StrategyChoice  # the best one for its next switch (an auto pool takes it)
    verdicts: tuple[StrategyVerdict, ...]
    kept: str | None  # why it stays isolated in shared mode (None: it shares)
    refused: str | None  # why its own strategy no longer fits it (its flags, its size)
    shared_target: PoolTarget
    sharing: bool  # on its shared placement, or its change toward it went out
    placement: Placement
    isolated_info: PoolInfo  # its map entry at its isolated size
    live: Mapping[int, int]  # per urgent OSD, its PGs there now
    read_fraction: float
    read_fraction_basis: str
    read_fraction_known: bool
    # why it goes back before the shared period ends: what it measured while shared
    losing: str | None = None

    def verdict(self, strategy: str | None = None) -> StrategyVerdict:
        name = strategy or self.strategy
        return next(v for v in self.verdicts if v.strategy == name)

    def gain_view(self) -> dict[str, Any]:
        """For status, plan and metrics: the model's gain, the measured one,
        and the one the module decides on."""
        mine = self.verdict()
        measured = mine.gain.measured
        return {"model": mine.cost.expected_gain,
                "measured": measured.gain if measured else None,
                "measured_interval": [measured.low, None if math.isinf(measured.high)
                                      else measured.high] if measured else None,
                "measured_basis": measured.basis() if measured else None,
                "expected": mine.gain.gain, "source": mine.gain.source}

    def to_dict(self, nearfull_ratio: float) -> dict[str, Any]:
        """`ceph sla plan`'s entry for the pool."""
        mine = self.verdict()
        recommended = "keep isolated" if self.kept else self.strategy
        return {
            "pool_id": self.pool_id, "name": self.name, "strategy": self.strategy,
            "read_fraction": round(self.read_fraction, 3),
            "read_fraction_basis": self.read_fraction_basis,
            "read_fraction_known": self.read_fraction_known,
            "costs": {v.strategy: v.cost.to_dict() for v in self.verdicts},
            "recommended": recommended,
            "reason": self.kept or f"{self.strategy}: expected gain {mine.gain.gain:.2f}x "
                                   f"({mine.gain.source}), isolation in "
                                   f"{mine.cost.time_to_isolation_secs:g} s",
            "kept_isolated": self.kept,
            "gain": self.gain_view(),
            "next_strategy": self.choice.to_dict(),
            "pg_slots_if_shared": None if mine.slots is None or mine.slots.limit is None else {
                "osd": mine.slots.osd, "pgs": mine.slots.pgs, "limit": mine.slots.limit.admit,
                "hard_limit": mine.slots.limit.hard, "limit_basis": mine.slots.limit.basis,
                "lost_failure_domain": mine.slots.lost_domain, "basis": mine.basis,
                "pool_pgs_per_urgent_osd": {str(o): n for o, n
                                            in sorted(mine.pgs_per_osd.items())}},
            "urgent_space_if_shared": None if mine.space is None else {
                "osd": mine.space[0], "fill": round(mine.space[1], 4),
                "nearfull_ratio": nearfull_ratio},
        }


@dataclass(frozen=True)
class Admission:
    pools: dict[int, PoolAdmission]
    # the worst urgent OSD with the admitted pools shared, at the peak, a domain lost
    projected: SlotCheck | None
    # (osd, PGs, the PGs it admits): urgent OSDs past their limit with only the
    # admitted pools shared (a domain lost)
    over_limit: tuple[tuple[int, int, int], ...]
    write_budget: WriteBudget
    urgent_fill_after: float | None  # the fullest urgent OSD with the admitted pools shared
    normal_fill_after_isolation: float | None
    nearfull_ratio: float
    unreported: tuple[int, ...] = ()  # urgent OSDs with no PG count reported
    devices: DeviceLatency = field(default_factory=dict)  # each region's op latencies, as read
    calibration: Calibration | None = None  # each region's calibrated IOPS

    @property
    def kept(self) -> dict[int, str]:
        return {pid: p.kept for pid, p in self.pools.items() if p.kept}

    def health(self, backfillfull_ratio: float, normal_class: str) -> dict[str, list[str]]:
        """The lines of the health checks the admission raises."""
        names = {pid: p.name for pid, p in self.pools.items()}
        slots = [f"pool {names[pid]}: {why}" for pid, why in sorted(self.kept.items())
                 if _is_slot_reason(why)]
        slots += [f"osd.{osd}: {n} PGs projected with a failure domain lost, over the {limit} "
                  "it admits, with no normal pool shared" for osd, n, limit in self.over_limit]
        refused = [p.refused for p in self.pools.values() if p.refused]
        fill = self.normal_fill_after_isolation
        full = [] if fill is None or fill <= backfillfull_ratio else [
            f"isolating now would fill the {normal_class} region to {fill:.0%}, above "
            f"backfillfull_ratio {backfillfull_ratio:.0%}: PGs would stay "
            "backfill_toofull/recovery_toofull with objects one copy short until space is "
            "added; add normal OSDs, or move pools to --strategy copy (its normal copies "
            "stay complete)"]
        return {"SLA_PG_LIMIT": slots, "SLA_STRATEGY_REFUSED": refused,
                "SLA_NORMAL_REGION_FULL": full}


# what a PG-slot reason says, for the health check that gathers them
_SLOT_WORDS = ("PGs on osd.", "the PG limit cannot be checked", "PENDING_CREATING_PGS")


def _is_slot_reason(why: str) -> bool:
    return any(w in why for w in _SLOT_WORDS)


def admit(facts: AdmissionFacts) -> Admission:
    """Every managed normal pool's strategy and whether it shares; see the module doc."""
    cap = facts.capacity
    counted = counted_this_period(list(facts.history))
    period = current_period(list(facts.history))
    usual = usual_quiet_secs(quiet_periods(list(facts.history)), facts.now)
    load = UrgentLoad(facts)
    costs = {p.pool_id: _costs(p, facts) for p in facts.pools}
    gains = {p.pool_id: _gains(p, costs[p.pool_id], facts) for p in facts.pools}

    def sharing_now(p: NormalPool) -> bool:
        """On its shared placement, or its change toward it went out in this
        shared period (the mgr's map may lag the mon): it shares for the period."""
        return p.placement is Placement.SHARED or p.pool_id in counted

    def order(p: NormalPool) -> tuple[bool, float, int]:
        return (not sharing_now(p), -max(g.gain for g in gains[p.pool_id].values()),
                p.pool_id)

    out: dict[int, PoolAdmission] = {}
    for pool in sorted(facts.pools, key=order):
        sharing = sharing_now(pool)
        verdicts = _verdicts(pool, costs[pool.pool_id], gains[pool.pool_id], facts, load,
                             sharing)
        r, basis, known = _mix(pool)
        choice = choose_strategy(pool.role.strategy.value, pool.role.auto,
                                 [v.option() for v in verdicts if pool.role.auto
                                  or v.strategy == pool.role.strategy.value],
                                 mix_known=known)
        mine = next(v for v in verdicts if v.strategy == pool.role.strategy.value)
        kept = _kept(pool, mine, facts, sharing, usual, cap)
        losing = losing_share(mine.gain.measured, facts.settings.min_gain, period.time) \
            if sharing and period is not None and facts.pinned is not Mode.SHARED else None
        if kept is None:
            load.admit(pool, mine, sharing, facts)
        out[pool.pool_id] = PoolAdmission(
            pool.pool_id, pool.name, pool.role.strategy.value, choice, verdicts, kept,
            MODELS[pool.role.strategy].refusal(pool.isolated_info),
            target(pool.role, Mode.SHARED), sharing, pool.placement, pool.isolated_info,
            pool.live, r, basis, known, losing)
    lost, _ = load.slots.after_losing()
    over = tuple((o, n, limit.admit) for o, n in sorted(lost.items())
                 if (limit := facts.urgent[o].limit) is not None and n > limit.admit)
    off_isolated = [p for p in facts.pools if p.placement is not Placement.ISOLATED]
    return Admission(
        out, load.slots.check(), over, load.budget,
        load.fullest[0] if load.fullest else None,
        normal_fill_after(sum(costs[p.pool_id][p.role.strategy.value].bytes_to_isolated
                              for p in off_isolated), cap),
        cap.nearfull_ratio, load.unreported, facts.devices, facts.calibration)


def _verdicts(pool: NormalPool, costs: Mapping[str, SwitchCost],
              gains: Mapping[str, ExpectedGain], facts: AdmissionFacts, load: UrgentLoad,
              sharing: bool) -> tuple[StrategyVerdict, ...]:
    """Each strategy the pool may use judged on the load so far; a pinned
    pool's other strategies with their figures only."""
    verdicts = [verdict(pool, kind, costs[kind.value], gains[kind.value], facts, load, sharing)
                for kind in choices(pool.role)]
    verdicts += [StrategyVerdict(kind.value, costs[kind.value], gains[kind.value],
                                 "not this pool's strategy (--strategy)")
                 for kind in strategies_for(pool.isolated_info)
                 if all(v.strategy != kind.value for v in verdicts)]
    return tuple(verdicts)


def _mix(pool: NormalPool) -> tuple[float, str, bool]:
    if pool.read_fraction is None:
        return DEFAULT_READ_FRACTION, "no client ops measured yet: assumed 50% reads", False
    return pool.read_fraction, "measured by the module's perf query", True


def _costs(pool: NormalPool, facts: AdmissionFacts) -> dict[str, SwitchCost]:
    r = _mix(pool)[0]
    inputs = pool.cost_inputs()
    kinds = (*strategies_for(pool.isolated_info), pool.role.strategy)
    return {kind.value: MODELS[kind].cost(inputs, facts.capacity, r)
            for kind in Strategy if kind in kinds}


def _gains(pool: NormalPool, costs: Mapping[str, SwitchCost], facts: AdmissionFacts
           ) -> dict[str, ExpectedGain]:
    s = facts.settings
    on = s.gain_prior == "devices"
    devices, calibration = (facts.devices, facts.calibration) if on else ({}, None)
    r, size = _mix(pool)[0], pool.isolated_info.size
    ratio = facts.normal_osds / len(facts.urgent) if facts.normal_osds and facts.urgent else 1.0
    return {kind: expected_gain(
        cost.expected_gain, kind, pool.read_fraction, pool.measured.get(kind), facts.now,
        s.gain_retry_secs, s.min_gain,
        device_gain(MODELS[Strategy(kind)], r, size, pool.urgent_share, cost.expected_gain,
                    devices, ratio, calibration))
        for kind, cost in costs.items()}


def _kept(pool: NormalPool, mine: StrategyVerdict, facts: AdmissionFacts, sharing: bool,
          usual: tuple[float, str] | None, cap: Capacity) -> str | None:
    """Why the pool stays isolated in shared mode, if so."""
    if pool.pool_id in facts.sent_back:
        return facts.sent_back[pool.pool_id]
    if facts.withheld and not sharing:
        return facts.withheld
    if mine.blocked:
        return mine.blocked
    s = facts.settings
    if sharing or facts.pinned is Mode.SHARED:
        return None  # shared for the period; a pinned shared mode shares whatever the gain
    place_secs = mine.cost.bytes_to_shared / max(cap.drain_bytes_per_sec, 1.0)
    return not_worth_sharing(mine.gain, s.min_gain, place_secs, usual)


# an auto pool takes another strategy only once the choice held this long: a
# burst of one kind of op (a client writing the objects it then reads) does
# not flip it
SETTLE_SECS = 60.0
Since = Mapping[int, "tuple[str, float]"]


def choice_since(admission: Admission, roles: Mapping[int, PoolRole], since: Since,
                 now: float) -> dict[int, tuple[str, float]]:
    """Since when each auto pool's choice has differed from its strategy (at
    each admission)."""
    out: dict[int, tuple[str, float]] = {}
    for pid, pool in admission.pools.items():
        role = roles.get(pid)
        if role is None or pool.choice.strategy == role.strategy.value:
            continue
        held = since.get(pid)
        out[pid] = held if held is not None and held[0] == pool.choice.strategy \
            else (pool.choice.strategy, now)
    return out


def strategy_changes(admission: Admission, roles: Mapping[int, PoolRole], since: Since,
                     now: float, history: Sequence[SwitchRecord]
                     ) -> dict[int, tuple[PoolRole, PoolRole]]:
    """The auto pools to put on another strategy now (pool -> (role, new
    role)): the choice held SETTLE_SECS, the pool on its isolated placement
    (both strategies isolate alike: the change moves nothing, sends nothing
    to the mon), and not taken toward shared in this shared period."""
    counted = counted_this_period(list(history))
    out = {}
    for pid, pool in admission.pools.items():
        role, held = roles.get(pid), since.get(pid)
        if role is None or not role.auto or pid in counted \
                or pool.placement is not Placement.ISOLATED \
                or held is None or held[0] == role.strategy.value \
                or now - held[1] < SETTLE_SECS:
            continue
        out[pid] = (role, with_strategy(role, Strategy(held[0]), pool.isolated_info))
    return out
