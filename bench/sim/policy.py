"""Policies, the mode trajectory and its score: the module's real decision core
(mgr_sla.core.tick.plan_tick) drives the normal pool's mode over the urgent rate it
measures, and each trajectory is scored on model.py's lookup tables.

Pure (numpy and mgr_sla only, no Ceph tools).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from bench.sim.model import SwitchModel, Table, Tables
from mgr_sla.core.decision import DecisionState, Mode, Thresholds
from mgr_sla.core.gates import ClusterHealth, PgCounts
from mgr_sla.core.tick import TickInputs, TickPlan, plan_tick

# -- policies and the mode trajectory ------------------------------------------------

Kind = Literal["default", "isolated", "shared", "adaptive"]


@dataclass(frozen=True)
class Policy:
    name: str
    kind: Kind
    high_iops: float = 0.0
    low_iops: float = 0.0
    dwell_secs: float = 0.0


@dataclass
class Trajectory:
    """Per step: the layout serving normal I/O and whether a backfill runs."""

    serving_shared: np.ndarray  # bool per step
    backfilling: np.ndarray  # bool per step
    switches: int = 0  # switches applied (pool rule changed), counted after warm-up
    blocked: int = 0  # episodes in which a gate held a decided switch
    bytes_moved: float = 0.0
    isolation_delays: list[float] = field(default_factory=list)  # decision -> isolated, s


def advance(x: float, target: float, dt: float, full_secs: float) -> float:
    """Backfill progress: x is the fraction of the moving replicas at their shared place."""
    if full_secs <= 0:
        return target
    rate = dt / full_secs
    return min(x + rate, target) if target > x else max(x - rate, target)


def module_tick(policy: Policy, thresholds: Thresholds, state: DecisionState, now: float,
                urgent_iops: float, switch: SwitchModel, total_pgs: int, x: float,
                target: float) -> TickPlan:
    """The module's own tick step: the same decision and gates, isolating included.

    ``x`` and ``target`` are the normal pool's placement progress and target
    (1 = shared); what is left to move is the misplaced ratio the gates see.
    """
    remaining = abs(target - x) * switch.misplaced_full
    health = ClusterHealth(PgCounts(total=total_pgs), misplaced_ratio=remaining)
    return plan_tick(TickInputs(
        now=now, state=state, urgent_iops=urgent_iops, thresholds=thresholds,
        min_dwell_secs=policy.dwell_secs, health=health,
        max_misplaced_ratio=switch.max_misplaced_ratio,
        isolating=target == 0.0 and x != target))


def run_policy(policy: Policy, seen: np.ndarray, step: float, switch: SwitchModel,
               count_from: int = 0, total_pgs: int = 0) -> Trajectory:
    """Drive the modes with the module's own tick step (plan_tick); start isolated.

    ``seen`` is the urgent rate the module measures at the start of each step.
    Steps before ``count_from`` are warm-up: simulated, not counted.
    """
    steps = len(seen)
    if policy.kind != "adaptive":
        shared = policy.kind == "shared"
        return Trajectory(np.full(steps, shared), np.zeros(steps, dtype=bool))
    thresholds = Thresholds(policy.high_iops, policy.low_iops)
    state = DecisionState(Mode.ISOLATED, 0.0)
    x = target = 0.0  # progress and target of the normal pool's placement (1 = shared)
    settled = False  # serving layout: the last one fully reached
    traj = Trajectory(np.zeros(steps, dtype=bool), np.zeros(steps, dtype=bool))
    was_blocked = False
    isolate_asked: float | None = None
    for k in range(steps):
        now = k * step
        plan = module_tick(policy, thresholds, state, now, float(seen[k]), switch, total_pgs,
                           x, target)
        state = plan.state
        blocked = bool(plan.gates)
        if plan.switch:
            target = 1.0 if plan.decision.target is Mode.SHARED else 0.0
            if k >= count_from:
                traj.switches += 1
            isolate_asked = now if target == 0.0 else None
        if blocked and not was_blocked and k >= count_from:
            traj.blocked += 1
        was_blocked = blocked
        moving = x != target
        sharing = target > x
        new_x = advance(x, target, step, switch.full_switch_secs if sharing
                        else switch.to_isolated_secs)
        if k >= count_from and (sharing or switch.isolation_moves_data):
            traj.bytes_moved += abs(new_x - x) * switch.bytes_per_switch
        x = new_x
        traj.serving_shared[k] = settled
        traj.backfilling[k] = moving
        if x == target:
            settled = target == 1.0
            if isolate_asked is not None and target == 0.0:
                if k >= count_from:
                    traj.isolation_delays.append((k + 1) * step - isolate_asked)
                isolate_asked = None
    return traj


# -- scoring -------------------------------------------------------------------------


@dataclass(frozen=True)
class Result:
    policy: Policy
    sla_violation_minutes_per_day: float
    urgent_ops_violating: float  # fraction of urgent ops issued while violated
    urgent_latency_ratio_mean: float  # ops-weighted mean of latency / solo latency
    normal_ops_per_day: float
    switches_per_day: float
    blocked_per_day: float
    bytes_moved_per_day: float
    shared_fraction: float  # of time serving from the shared layout
    backfill_hours_per_day: float
    mean_time_to_isolation_secs: float | None
    # SLA-violation minutes a day by what the cluster was doing at the time
    violation_minutes_by_state: dict[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict[str, object]:
        p = self.policy
        return {
            "policy": p.name, "kind": p.kind, "high_iops": p.high_iops, "low_iops": p.low_iops,
            "dwell_secs": p.dwell_secs,
            "sla_violation_minutes_per_day": round(self.sla_violation_minutes_per_day, 2),
            "urgent_ops_violating": round(self.urgent_ops_violating, 5),
            "urgent_latency_ratio_mean": round(self.urgent_latency_ratio_mean, 4),
            "normal_ops_per_day": round(self.normal_ops_per_day),
            "switches_per_day": round(self.switches_per_day, 3),
            "blocked_switches_per_day": round(self.blocked_per_day, 3),
            "bytes_moved_per_day": round(self.bytes_moved_per_day),
            "shared_fraction": round(self.shared_fraction, 4),
            "backfill_hours_per_day": round(self.backfill_hours_per_day, 3),
            "mean_time_to_isolation_secs": (None if self.mean_time_to_isolation_secs is None
                                            else round(self.mean_time_to_isolation_secs)),
            "violation_minutes_by_state": {k: round(v, 2) for k, v in
                                           self.violation_minutes_by_state.items()},
        }


def score(policy: Policy, traj: Trajectory, demand: np.ndarray, tables: Tables, step: float,
          count_from: int, sla_factor: float) -> Result:
    """SLA minutes, normal ops, switches and bytes of one trajectory (warm-up excluded)."""
    d = demand[count_from:]
    shared = traj.serving_shared[count_from:]
    backfill = traj.backfilling[count_from:]
    days = len(d) * step / 86_400.0
    normal = np.zeros(len(d))
    latency = np.zeros(len(d))
    masks: dict[str, np.ndarray] = {}
    if policy.kind == "default":
        normal, latency = tables.default.lookup(d)
        masks["default"] = np.ones(len(d), dtype=bool)
    else:
        cases = (("isolated", False, False, tables.isolated),
                 ("shared", True, False, tables.shared),
                 ("isolated+backfill", False, True, tables.isolated_backfill),
                 ("shared+backfill", True, True, tables.shared_backfill))
        for name, is_shared, is_backfill, table in cases:
            mask = (shared == is_shared) & (backfill == is_backfill)
            masks[name] = mask
            if mask.any():
                normal[mask], latency[mask] = table.lookup(d[mask])
    _, solo = tables.solo.lookup(d)
    ratio = latency / solo
    violated = (ratio > sla_factor) & (d > 0)
    by_state = {name: float((violated & mask).sum()) * step / 60.0 / days
                for name, mask in masks.items()}
    urgent_ops = float(d.sum())
    delays = traj.isolation_delays
    return Result(
        policy=policy,
        sla_violation_minutes_per_day=float(violated.sum()) * step / 60.0 / days,
        urgent_ops_violating=float(d[violated].sum()) / urgent_ops if urgent_ops else 0.0,
        urgent_latency_ratio_mean=float((ratio * d).sum()) / urgent_ops if urgent_ops else 1.0,
        normal_ops_per_day=float(normal.sum()) * step / days,
        switches_per_day=traj.switches / days,
        blocked_per_day=traj.blocked / days,
        bytes_moved_per_day=traj.bytes_moved / days,
        shared_fraction=float(shared.mean()),
        backfill_hours_per_day=float(backfill.sum()) * step / 3600.0 / days,
        mean_time_to_isolation_secs=float(np.mean(delays)) if delays else None,
        violation_minutes_by_state=by_state,
    )


def harm_point(table: Table, solo: Table, factor: float) -> float | None:
    """The least urgent demand at which ``table``'s urgent latency exceeds factor x solo."""
    ratio = table.urgent_latency / np.interp(table.grid, solo.grid, solo.urgent_latency)
    over = np.flatnonzero(ratio > factor)
    return float(table.grid[over[0]]) if len(over) else None


def recommend(results: Sequence[Result], budget_minutes: float = 5.0,
              same_normal: float = 0.005) -> Result | None:
    """The adaptive setting to suggest.

    Among adaptive settings with at most ``budget_minutes`` of SLA violation a
    day, the most normal ops; settings within ``same_normal`` (relative) of
    that count as equal, and among them the fewest bytes moved, then the
    fewest switches, then the longest dwell and the highest threshold.
    """
    adaptive = [r for r in results if r.policy.kind == "adaptive"]
    ok = [r for r in adaptive if r.sla_violation_minutes_per_day <= budget_minutes]
    if not ok:
        return None
    top = max(r.normal_ops_per_day for r in ok)
    near = [r for r in ok if r.normal_ops_per_day >= top * (1.0 - same_normal)]
    return min(near, key=lambda r: (r.bytes_moved_per_day, r.switches_per_day,
                                    -r.policy.dwell_secs, -r.policy.high_iops))
