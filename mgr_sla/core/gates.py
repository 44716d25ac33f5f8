"""Safety gates: when a switch to shared, or a pool's change toward it,
must wait.

As balancer and pg_autoscaler do, nothing that moves data starts while the
cluster is not healthy: the switch to shared is optional (throughput), so it
waits for a clean cluster (`shared_gates`). The switch to isolated protects
the SLA: it is never held as a whole; each pool's change toward isolation
waits only for what concerns that pool (core/tick.py `_isolation_gates`): its
own rule, and its own PGs active while it moves data (a rule change then
could leave a PG with no acting set to peer with), unless what peers is the
module's own switch to shared (its upmap entries still moving replicas, no
OSD of the rules down): isolation then cancels that move, the PGs go back to
OSDs that hold their data, and waiting would keep normal clients on the
urgent OSDs for as long as the stats show the peering (measured: 17 s); and
for a normal OSD it would take past the most PGs it holds (core/isolation_load.py:
the OSD would withhold PGs, whose I/O would hang).
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import Any


class GateName(str, Enum):
    """Stable names: labels of ceph_sla_blocked_switches_total{reason}."""

    RULES_MISSING = "rules_missing"
    PGS_INACTIVE = "pgs_inactive"
    RULES_UNVERIFIED = "rules_unverified"
    PGS_UNKNOWN = "pgs_unknown"
    PGS_DEGRADED = "pgs_degraded"
    MISPLACED = "misplaced"
    OSD_DOWN = "osd_down"
    APPLY_FAILED = "apply_failed"
    CLUSTER_FLAGS = "cluster_flags"
    URGENT_CAPACITY = "urgent_capacity"
    DAILY_CAP = "daily_cap"
    NORMAL_PG_LIMIT = "normal_pg_limit"  # a pool's isolation held: a normal OSD's PG limit


# Every gate's name, so counters of blocked switches exist (at 0) from the start.
GATE_NAMES = tuple(g.value for g in GateName)

# OSD map flags an operator sets for maintenance or to hold data movement:
# a switch to shared would start backfill behind their back.
HOLDING_FLAGS = ("noout", "norebalance", "nobackfill", "norecover", "pause")


@dataclass(frozen=True)
class Gate:
    name: GateName
    detail: str

    def to_dict(self) -> dict[str, str]:
        return {"name": self.name.value, "detail": self.detail}


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
    flags: tuple[str, ...] = ()  # HOLDING_FLAGS set on the OSD map
    urgent_fill_after: float | None = None  # fullest urgent OSD with the admitted pools shared
    nearfull_ratio: float = 0.85
    switches_last_day: int = 0  # real switches in the last 24 hours
    max_switches_per_day: int = 0  # 0: no cap
    own_move_in_flight: bool = False  # the module's switch to shared is still moving data
    # PGs undersized by design: the copy sharing adds, not yet placed, in
    # pools degraded no further (a step toward shared waits for active, not clean)
    degraded_by_design: int = 0
    inactive_by_pool: Mapping[int, int] = field(default_factory=dict)  # managed pools only


def pg_counts(pgs_by_state: Iterable[Mapping[str, object]]) -> PgCounts:
    """Count PGs from `pg_status`'s pgs_by_state ([{state_name, count}])."""
    total = inactive = degraded = unknown = 0
    for entry in pgs_by_state:
        state = str(entry.get("state_name", ""))
        count = int(entry.get("count", 0))  # type: ignore[call-overload]
        parts = set(state.split("+"))
        total += count
        # stale: its primary has not reported since it went down; whatever the
        # rest says (stale+active+clean), nothing is known of it now
        if "unknown" in parts or "stale" in parts:
            unknown += count
        if "active" not in parts:
            inactive += count
        if "degraded" in parts or "undersized" in parts:
            degraded += count
    return PgCounts(total, inactive, degraded, unknown)


def pool_pg_states(pg_summary: Mapping[str, object], pool_ids: Iterable[int]
                   ) -> list[dict[str, object]]:
    """`pg_summary`'s by_pool counts of the given pools, as pgs_by_state entries:
    the gates look only at the PGs of the pools the module manages."""
    by_pool = pg_summary.get("by_pool") or {}
    assert isinstance(by_pool, Mapping)
    counts: dict[str, int] = {}
    for pool in pool_ids:
        for state, n in (by_pool.get(str(pool)) or {}).items():
            counts[state] = counts.get(state, 0) + int(n)
    return [{"state_name": s, "count": n} for s, n in sorted(counts.items())]


def pools_with_unknown_pgs(pg_summary: Mapping[str, object]) -> frozenset[int]:
    by_pool = pg_summary.get("by_pool") or {}
    assert isinstance(by_pool, Mapping)
    return frozenset(int(p) for p, states in by_pool.items()
                     if any("unknown" in str(s).split("+") for s in states))


def inactive_by_pool(pg_summary: Mapping[str, object], pool_ids: Iterable[int]
                     ) -> dict[int, int]:
    """Each given pool's PGs not active (pg_summary's by_pool)."""
    by_pool = pg_summary.get("by_pool") or {}
    assert isinstance(by_pool, Mapping)
    out = {}
    for pool in pool_ids:
        n = sum(int(c) for s, c in (by_pool.get(str(pool)) or {}).items()
                if "active" not in str(s).split("+"))
        if n:
            out[pool] = n
    return out


def shared_gates(health: ClusterHealth, max_misplaced_ratio: float) -> list[Gate]:
    """Every reason the switch to shared, or a change toward it, must wait;
    empty means go."""
    gates: list[Gate] = []
    if health.missing_rules:
        gates.append(Gate(GateName.RULES_MISSING, "CRUSH rules missing: " + ", ".join(
            health.missing_rules) + " (run 'ceph sla rules apply')"))
    if health.pgs.inactive:
        gates.append(Gate(GateName.PGS_INACTIVE, f"{health.pgs.inactive} PGs inactive"))
    if health.unverified:
        gates.append(Gate(GateName.RULES_UNVERIFIED, health.unverified))
    if health.pgs.unknown:
        gates.append(Gate(GateName.PGS_UNKNOWN, f"{health.pgs.unknown} PGs in unknown state"))
    degraded = health.pgs.degraded - health.degraded_by_design
    if degraded > 0:
        gates.append(Gate(GateName.PGS_DEGRADED, f"{degraded} PGs degraded or undersized"
                          + (f" (besides {health.degraded_by_design} placing the copy "
                             "sharing adds)" if health.degraded_by_design else "")))
    if health.misplaced_ratio > max_misplaced_ratio:
        gates.append(Gate(GateName.MISPLACED, (
            f"{health.misplaced_ratio:.1%} of objects misplaced, above "
            f"max_misplaced_ratio {max_misplaced_ratio:.1%}")))
    if health.down_osds:
        osds = ", ".join(f"osd.{i}" for i in health.down_osds)
        gates.append(Gate(GateName.OSD_DOWN, f"OSDs of the sla rules are down: {osds}"))
    if health.flags:
        gates.append(Gate(GateName.CLUSTER_FLAGS, "OSD map flags " + ",".join(health.flags)
                          + " set: no switch to shared (it moves data) until they are unset"))
    if 0 < health.max_switches_per_day <= health.switches_last_day:
        gates.append(Gate(GateName.DAILY_CAP, (
            f"{health.switches_last_day} switches in the last 24 h, the cap "
            f"(max_switches_per_day) is {health.max_switches_per_day}: shared waits")))
    if health.urgent_fill_after is not None and health.urgent_fill_after > health.nearfull_ratio:
        gates.append(Gate(GateName.URGENT_CAPACITY, (
            f"shared mode would fill the fullest urgent OSD to {health.urgent_fill_after:.0%}, "
            f"above nearfull_ratio {health.nearfull_ratio:.0%}")))
    return gates


def holding_flags(osd_map_flags: str) -> tuple[str, ...]:
    """The HOLDING_FLAGS in an OSD map dump's comma-separated `flags`."""
    present = set(osd_map_flags.split(","))
    return tuple(f for f in HOLDING_FLAGS if f in present)


def all_settled(pg_status: Mapping[str, object]) -> bool:
    """Every PG of the cluster active+clean (scrubbing and the like allowed):
    then no pool's PGs can hold a switch, and pg_summary need not be read."""
    states = pg_status.get("pgs_by_state") or []
    assert isinstance(states, list)
    parts = [set(str(e.get("state_name", "")).split("+")) for e in states]
    return all({"active", "clean"} <= p and "stale" not in p for p in parts)


def pg_total(pg_status: Mapping[str, object]) -> int:
    states = pg_status.get("pgs_by_state") or []
    assert isinstance(states, list)
    return sum(int(e.get("count", 0)) for e in states)


# What releases each gate: status names it next to the gate.
RELEASE_HINTS = {
    GateName.RULES_MISSING: "'ceph sla rules apply'",
    GateName.PGS_INACTIVE: "wait for peering; 'ceph pg dump_stuck inactive' names the PGs",
    GateName.RULES_UNVERIFIED: "'ceph sla rules apply' (status shows the failed requirement)",
    GateName.PGS_UNKNOWN: "wait for the OSDs to report; 'ceph pg dump_stuck' names the PGs",
    GateName.PGS_DEGRADED: "wait for recovery ('ceph -s'); bring down OSDs back up",
    GateName.MISPLACED: "wait for backfill, or raise mgr/sla/max_misplaced_ratio",
    GateName.OSD_DOWN: "bring the OSD up, or mark it out ('ceph osd out N') so its data "
                       "recovers elsewhere",
    GateName.APPLY_FAILED: "fix what the mon refused (detail); the module retries every tick",
    GateName.CLUSTER_FLAGS: "'ceph osd unset FLAG' when the maintenance is over",
    GateName.URGENT_CAPACITY: "add urgent OSDs, or keep the largest pools isolated "
                              "('ceph sla plan' shows each pool's need)",
    GateName.DAILY_CAP: "wait, or raise mgr/sla/max_switches_per_day",
    GateName.NORMAL_PG_LIMIT: "raise mon_max_pg_per_osd or osd_max_pg_per_osd_hard_ratio on "
                              "the normal OSDs named, add normal OSDs, or lower the pools' "
                              "pg_num (SLA_ISOLATION_PG_LIMIT names them)",
}


def gate_status(gate: Gate) -> dict[str, str]:
    """A gate as status shows it: name, detail, and what releases it."""
    return {**gate.to_dict(), "release": RELEASE_HINTS.get(gate.name, "")}


def switch_blocked_check(gates: list[Gate]) -> dict[str, dict[str, Any]]:
    """SLA_SWITCH_BLOCKED while gates hold a decided switch (or a pool's
    change), each with what releases it; nothing when none does."""
    if not gates:
        return {}
    return {"SLA_SWITCH_BLOCKED": {
        "severity": "warning",
        "summary": "sla mode switch blocked: " + ", ".join(g.name.value for g in gates),
        "count": len(gates),
        "detail": [f"{g.detail} -> {gate_status(g)['release']}" for g in gates]}}
