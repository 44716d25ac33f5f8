"""The policy model: device queues, PG load shares, switches, and the decision core.

Pure (numpy and mgr_sla only, no Ceph tools).  Simplifications, all on purpose:

* Each OSD is one M/M/1 queue with service rate mu (ops/s) by device class;
  mean latency S / (1 - rho), with rho capped at ``rho_cap``.
* Load is uniform over a pool's PGs.  A write costs one op on every replica,
  a read one op on the primary; a client op's latency is the max over the
  replicas it writes (the primary's for a read).
* Normal clients are best-effort and saturating: they push as many ops as the
  busiest OSD they use allows, up to ``normal_target_rho`` on it (a closed
  loop with a deep queue), so the slowest OSD sets the normal throughput.
* Switch cost: the replicas that differ between the two normal rules move;
  with osd_max_backfills=1 an OSD takes part in one backfill at a time, so a
  switch lasts (most replicas any one OSD sends or receives) x PG size /
  per-OSD backfill rate, and while it runs each OSD spends a fraction of an
  HDD's op capacity on it, in proportion to its share of that work.
* Handover at the end: the pool keeps serving from the layout it last fully
  reached until the backfill is done (the old OSDs serve through pg_temp), so
  isolation only protects urgent clients once the shared->isolated move ends.
* The copy strategy (size N+1 with one copy on an ssd OSD, its primary): the
  switch to shared backfills one copy of every PG onto the SSDs; isolation
  drops that copy at peering, with nothing to move (``isolate_secs``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from mgr_sla.core.decision import DecisionState, Mode, Thresholds
from mgr_sla.core.gates import ClusterHealth, PgCounts
from mgr_sla.core.switch_cost import COPY_ISOLATION_SECS  # the module's own figure
from mgr_sla.core.tick import TickInputs, plan_tick

TB = 1e12


@dataclass(frozen=True)
class Devices:
    """Service rates per OSD (ops/s).

    No defaults on purpose: bench/policy_sim.py takes them from bench/sla_bench.py's
    calibration (docs/benchmarks/results.json, ``emulation.calibration``): the
    client write ops/s of one BlueStore OSD per class whose device I/Os per
    second are capped by a cgroup blkio throttle, or from --hdd-ops/--ssd-ops.
    """

    hdd_ops: float
    ssd_ops: float
    rho_cap: float = 0.99  # latency of an overloaded queue is capped at S / (1 - rho_cap)
    normal_target_rho: float = 0.9  # saturating normal load drives its busiest OSD to this

    def rates(self, classes: Sequence[str]) -> np.ndarray:
        table = {"hdd": self.hdd_ops, "ssd": self.ssd_ops}
        try:
            return np.array([table[c] for c in classes], dtype=float)
        except KeyError as exc:
            raise ValueError(f"no service rate for device class {exc.args[0]}") from None


def queue_latency(service: np.ndarray | float, rho: np.ndarray | float,
                  rho_cap: float) -> np.ndarray:
    """M/M/1 mean response time S / (1 - rho), rho clipped to [0, rho_cap]."""
    r = np.clip(np.asarray(rho, dtype=float), 0.0, rho_cap)
    return np.asarray(np.asarray(service, dtype=float) / (1.0 - r))


def load_coefficients(pgs: np.ndarray, n_osds: int, write_fraction: float) -> np.ndarray:
    """Ops each OSD serves per client op of a pool whose load is uniform over its PGs.

    A write lands on every replica, a read on the primary (column 0).
    """
    if pgs.ndim != 2 or len(pgs) == 0:
        raise ValueError("pgs must be a non-empty (pgs, size) array")
    n = float(len(pgs))
    every = np.bincount(pgs.ravel(), minlength=n_osds)[:n_osds] / n
    primary = np.bincount(pgs[:, 0], minlength=n_osds)[:n_osds] / n
    return np.asarray(write_fraction * every + (1.0 - write_fraction) * primary)


def op_latency(pgs: np.ndarray, osd_latency: np.ndarray, write_fraction: float) -> np.ndarray:
    """Mean client op latency of a pool, for each row of ``osd_latency`` (..., osds)."""
    per_replica = osd_latency[..., pgs]  # (..., pgs, size)
    writes = per_replica.max(axis=-1).mean(axis=-1)
    reads = per_replica[..., 0].mean(axis=-1)
    return np.asarray(write_fraction * writes + (1.0 - write_fraction) * reads)


@dataclass(frozen=True)
class MoveStats:
    """What one full switch of the normal pool between its two rules moves."""

    replicas_moved: int
    work: np.ndarray  # per OSD: replicas it receives plus replicas it gives up

    @property
    def max_work(self) -> int:
        return int(self.work.max()) if self.work.size else 0


def move_stats(before: np.ndarray, after: np.ndarray, n_osds: int) -> MoveStats:
    """Replicas that change OSD between two mappings of the same PGs (as sets)."""
    if before.shape[0] != after.shape[0]:
        raise ValueError("the two mappings must cover the same PGs")
    work = np.zeros(n_osds, dtype=np.int64)
    moved = 0
    for old, new in zip(before.tolist(), after.tolist()):
        gained = set(new) - set(old)
        lost = set(old) - set(new)
        moved += len(gained)
        for osd in gained | lost:
            work[osd] += 1
    return MoveStats(moved, work)


def copy_layout(normal_isolated: np.ndarray, urgent_isolated: np.ndarray) -> np.ndarray:
    """The copy strategy's shared up sets: each normal PG's isolated set with one
    ssd OSD in front (its primary). The ssd OSD is CRUSH's choice over the ssd
    class; the urgent pool's primaries, taken in turn, are such choices."""
    ssd = urgent_isolated[np.arange(len(normal_isolated)) % len(urgent_isolated), 0]
    return np.column_stack([ssd, normal_isolated])


def copy_stats(normal_isolated: np.ndarray, shared: np.ndarray, n_osds: int) -> MoveStats:
    """The switch to shared of a copy pool: each PG's ssd OSD receives a copy that
    its hdd primary sends. Isolation moves nothing."""
    work = np.zeros(n_osds, dtype=np.int64)
    np.add.at(work, shared[:, 0], 1)
    np.add.at(work, normal_isolated[:, 0], 1)
    return MoveStats(len(shared), work)


@dataclass(frozen=True)
class SwitchModel:
    """Cost of switching the normal pool, derived from MoveStats and the pool size."""

    replicas_moved: int
    bytes_per_replica: float
    full_switch_secs: float  # one complete switch to shared (and back, for move)
    misplaced_full: float  # misplaced ratio at the start of a complete switch
    max_misplaced_ratio: float = 0.05  # the module's gate on switching to shared
    isolate_secs: float | None = None  # copy: the size drop; None: as full_switch_secs

    @property
    def bytes_per_switch(self) -> float:
        return self.replicas_moved * self.bytes_per_replica

    @property
    def to_isolated_secs(self) -> float:
        return self.full_switch_secs if self.isolate_secs is None else self.isolate_secs

    @property
    def isolation_moves_data(self) -> bool:
        return self.isolate_secs is None

    @staticmethod
    def build(stats: MoveStats, normal_pgs: int, normal_bytes: float, urgent_bytes: float,
              size: int, backfill_bytes_per_sec: float,
              max_misplaced_ratio: float = 0.05, strategy: str = "move") -> SwitchModel:
        per_replica = normal_bytes / normal_pgs
        secs = stats.max_work * per_replica / backfill_bytes_per_sec
        total_copies = size * (normal_bytes + urgent_bytes)
        misplaced = stats.replicas_moved * per_replica / total_copies if total_copies else 0.0
        return SwitchModel(stats.replicas_moved, per_replica, secs, misplaced, max_misplaced_ratio,
                           COPY_ISOLATION_SECS if strategy == "copy" else None)


def backfill_load(stats: MoveStats, devices: Devices, fraction: float) -> np.ndarray:
    """Backfill ops/s per OSD while a switch runs: ``fraction`` of an HDD's capacity
    on the busiest participant, the others in proportion to their share of the work."""
    if stats.max_work == 0:
        return np.zeros(stats.work.shape)
    return np.asarray(fraction * devices.hdd_ops * stats.work / stats.max_work)


# -- load cases and their lookup tables ---------------------------------------------


@dataclass(frozen=True)
class LoadCase:
    """One way the cluster can be laid out and loaded."""

    normal: np.ndarray | None  # ops per OSD per normal client op; None: no normal load
    urgent: np.ndarray  # ops per OSD per urgent client op
    urgent_pgs: np.ndarray  # the urgent pool's PGs, (pgs, size)
    backfill: np.ndarray  # backfill ops/s per OSD


@dataclass(frozen=True)
class Table:
    """Normal throughput and urgent latency over a grid of urgent demand."""

    grid: np.ndarray
    normal_ops: np.ndarray  # normal client ops/s
    urgent_latency: np.ndarray  # mean urgent op latency, s

    def lookup(self, demand: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return (np.interp(demand, self.grid, self.normal_ops),
                np.interp(demand, self.grid, self.urgent_latency))


def evaluate(case: LoadCase, urgent_iops: np.ndarray, mu: np.ndarray, devices: Devices,
             write_fraction: float) -> tuple[np.ndarray, np.ndarray]:
    """(normal ops/s, urgent latency s) for each urgent demand in ``urgent_iops``."""
    demand = np.asarray(urgent_iops, dtype=float)[:, None]
    fixed = demand * case.urgent[None, :] + case.backfill[None, :]
    if case.normal is None:
        normal = np.zeros(len(demand))
        load = fixed
    else:
        used = case.normal > 0
        headroom = devices.normal_target_rho * mu[None, used] - fixed[:, used]
        normal = np.maximum((headroom / case.normal[None, used]).min(axis=1), 0.0)
        load = fixed + normal[:, None] * case.normal[None, :]
    latency = queue_latency(1.0 / mu[None, :], load / mu[None, :], devices.rho_cap)
    return normal, op_latency(case.urgent_pgs, latency, write_fraction)


def build_table(case: LoadCase, max_demand: float, mu: np.ndarray, devices: Devices,
                write_fraction: float, points: int = 1024, chunk: int = 32) -> Table:
    grid = np.linspace(0.0, max(max_demand, 1.0) * 1.001, points)
    normal = np.empty(points)
    latency = np.empty(points)
    for i in range(0, points, chunk):
        normal[i:i + chunk], latency[i:i + chunk] = evaluate(
            case, grid[i:i + chunk], mu, devices, write_fraction)
    return Table(grid, normal, latency)


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
        remaining = abs(target - x) * switch.misplaced_full
        health = ClusterHealth(PgCounts(total=total_pgs), misplaced_ratio=remaining)
        # The module's own tick step: the same decision and gates, isolating included.
        plan = plan_tick(TickInputs(
            now=now, state=state, urgent_iops=float(seen[k]), thresholds=thresholds,
            min_dwell_secs=policy.dwell_secs, health=health,
            max_misplaced_ratio=switch.max_misplaced_ratio,
            isolating=target == 0.0 and x != target))
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
class Tables:
    isolated: Table
    shared: Table
    isolated_backfill: Table
    shared_backfill: Table
    default: Table
    solo: Table


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
