"""The policy model: device queues, PG load shares, switches and their lookup tables
(the decision core that drives the modes over them is policy.py).

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
from dataclasses import dataclass

import numpy as np

from mgr_sla.core.switch_cost import COPY_ISOLATION_SECS  # the module's own figure

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


@dataclass(frozen=True)
class Tables:
    """A Table for each load case (solo: the urgent pool alone, no normal load)."""

    isolated: Table
    shared: Table
    isolated_backfill: Table
    shared_backfill: Table
    default: Table
    solo: Table


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
