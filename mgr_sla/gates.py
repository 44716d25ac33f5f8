"""Safety gates: when a decided switch must not be applied.

As balancer and pg_autoscaler do, nothing that moves data starts while the
cluster is not healthy. The switch to shared is optional (throughput), so it
waits for a clean cluster. The switch to isolated protects the SLA, so it
goes ahead with data still moving, but never while PGs are inactive: a rule
change then could leave a PG with no acting set to peer with.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from .decision import Mode

# Every gate's name, so counters of blocked switches exist (at 0) from the start.
GATE_NAMES = ("rules_missing", "pgs_inactive", "rules_unverified", "pgs_unknown", "pgs_degraded",
              "misplaced", "osd_down", "apply_failed")


@dataclass(frozen=True)
class Gate:
    name: str  # stable: a label of ceph_sla_blocked_switches_total{reason}
    detail: str

    def to_dict(self) -> dict[str, str]:
        return {"name": self.name, "detail": self.detail}


@dataclass(frozen=True)
class PgCounts:
    total: int = 0
    inactive: int = 0
    degraded: int = 0
    unknown: int = 0


@dataclass(frozen=True)
class ClusterHealth:
    """What the gates look at, read from the mgr by the module."""

    pgs: PgCounts
    misplaced_ratio: float
    down_osds: tuple[int, ...] = ()  # in but down, among the OSDs the sla rules use
    missing_rules: tuple[str, ...] = ()
    unverified: str | None = None  # why the installed rules do not verify, if so


def pg_counts(pgs_by_state: Iterable[Mapping[str, object]]) -> PgCounts:
    """Count PGs from `pg_status`'s pgs_by_state ([{state_name, count}])."""
    total = inactive = degraded = unknown = 0
    for entry in pgs_by_state:
        state = str(entry.get("state_name", ""))
        count = int(entry.get("count", 0))  # type: ignore[call-overload]
        parts = set(state.split("+"))
        total += count
        if "unknown" in parts:
            unknown += count
        if "active" not in parts:
            inactive += count
        if "degraded" in parts or "undersized" in parts:
            degraded += count
    return PgCounts(total, inactive, degraded, unknown)


def blocking_gates(target: Mode, health: ClusterHealth, max_misplaced_ratio: float) -> list[Gate]:
    """Every reason the switch to `target` must wait; empty means go."""
    gates: list[Gate] = []
    if health.missing_rules:
        gates.append(Gate("rules_missing", "CRUSH rules missing: " + ", ".join(
            health.missing_rules) + " (run 'ceph sla rules apply')"))
    if health.pgs.inactive:
        gates.append(Gate("pgs_inactive", f"{health.pgs.inactive} PGs inactive"))
    if target is Mode.ISOLATED:
        return gates
    if health.unverified:
        gates.append(Gate("rules_unverified", health.unverified))
    if health.pgs.unknown:
        gates.append(Gate("pgs_unknown", f"{health.pgs.unknown} PGs in unknown state"))
    if health.pgs.degraded:
        gates.append(Gate("pgs_degraded", f"{health.pgs.degraded} PGs degraded or undersized"))
    if health.misplaced_ratio > max_misplaced_ratio:
        gates.append(Gate("misplaced", (
            f"{health.misplaced_ratio:.1%} of objects misplaced, above "
            f"max_misplaced_ratio {max_misplaced_ratio:.1%}")))
    if health.down_osds:
        osds = ", ".join(f"osd.{i}" for i in health.down_osds)
        gates.append(Gate("osd_down", f"OSDs of the sla rules are down: {osds}"))
    return gates
