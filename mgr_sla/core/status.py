"""`ceph sla status` (and the metrics snapshot) as one dict, from plain
facts: what the shell read from its collaborators (shell/status.py) under
the status lock. Pure; rendering as text is report.py's."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .by_hand import by_hand_view
from .cluster import ClusterView
from .decision import ThresholdError, Thresholds
from .gates import GATE_NAMES, Gate, gate_status
from .settings import Settings
from .state import ModuleState, PoolTarget


@dataclass(frozen=True)
class PoolFacts:
    """One managed pool's figures, as measured and placed."""

    target: PoolTarget  # what its strategy wants of it in the mode in force
    client_iops: float | None = None
    read_fraction: float | None = None
    misplaced_ratio: float | None = None
    upmaps: dict[str, Any] | None = None  # the move strategy's entries, if any
    kept_isolated: str | None = None  # why the cost model keeps it isolated
    gain: dict[str, Any] | None = None  # normal pools: model, measured, decided on
    next_strategy: dict[str, Any] | None = None  # normal pools: the next switch's, and why
    latency: dict[str, Any] | None = None  # urgent pools


@dataclass(frozen=True)
class StatusFacts:
    state: ModuleState
    settings: Settings
    view: ClusterView
    version: str
    urgent_iops: float | None
    gates: list[Gate]
    holds: list[Gate]
    repairs: list[str]
    tick_seconds: dict[str, Any]
    dry_run_mode: str | None
    stats_period_secs: float | None
    time_to_isolation_secs: float | None = None
    isolating: bool = False
    pgs_without_normal: int | None = None
    pools: dict[int, PoolFacts] = field(default_factory=dict)
    waiting_for_next_step: tuple[str, ...] = ()  # pools a paced switch to shared has not reached
    urgent_writes: dict[str, Any] | None = None  # the urgent OSDs' write budget (core/wear.py)
    monitors: str = "answering"  # or since when they are silent (core/mon_link.py)
    # what isolating does to the normal OSDs: the one it loads most against its
    # hard PG limit, and the pools held shared (shell/isolation_watch.py)
    isolation: dict[str, Any] | None = None


def _pools(facts: StatusFacts) -> list[dict[str, Any]]:
    out = []
    for pool_id, role in sorted(facts.state.roles.items()):
        pool, figures = facts.view.pools.get(pool_id), facts.pools.get(pool_id)
        if pool is None or figures is None:
            continue
        # a base size or min_size taken from an operator, or a change not taken (then
        # the module leaves the pool's size as it is)
        hand = by_hand_view(role, facts.state.sizes.get(pool_id))
        expected_size = None if hand and "refused" in hand else figures.target.size
        out.append({
            "pool_id": pool_id, "name": pool.name, "role": role.role.value,
            "placement": role.placement.value, "strategy": role.strategy.value,
            "strategy_auto": role.auto, "next_strategy": figures.next_strategy,
            "rule": facts.view.rule_name(pool.rule_id),
            "expected_rule": figures.target.rule,
            "size": pool.size, "expected_size": expected_size or pool.size,
            "client_iops": figures.client_iops,
            "read_fraction": figures.read_fraction,
            "misplaced_ratio": figures.misplaced_ratio,
            "upmaps": figures.upmaps,
            "kept_isolated": figures.kept_isolated,
            "by_hand": hand,
            "gain": figures.gain,
            "latency": figures.latency,
        })
    return out


def status_dict(facts: StatusFacts) -> dict[str, Any]:
    state, settings = facts.state, facts.settings
    threshold_error = None
    try:
        thresholds: Thresholds | None = settings.thresholds()
    except ThresholdError as e:  # a pair set by `ceph config set`: the tick holds on it too
        thresholds, threshold_error = None, str(e)
    last = state.last_switch()
    slo = settings.slo()
    return {
        "version": facts.version,
        "epoch": facts.view.epoch,  # the OSD map the figures below were taken from
        "monitors": facts.monitors,
        "mode": state.decision.mode.value,
        "pinned": state.pinned is not None,
        "dry_run": settings.dry_run,
        "active": settings.active,
        "dry_run_mode": facts.dry_run_mode,
        "urgent_iops": facts.urgent_iops,
        "threshold_iops": thresholds.high_iops if thresholds else None,
        "threshold_low_iops": thresholds.low_iops if thresholds else None,
        "threshold_error": threshold_error,
        "min_dwell_secs": settings.min_dwell_secs,
        "max_isolation_secs": settings.max_isolation_secs,
        "since": state.decision.mode_since,
        "quiet_since": state.decision.quiet_since,
        "switches_total": state.switches_total,
        "blocked_total": {**dict.fromkeys(GATE_NAMES, 0), **state.blocked_total},
        "last_switch": last.to_dict() if last else None,
        "time_to_isolation_secs": facts.time_to_isolation_secs,
        "isolating": facts.isolating,
        "pgs_without_normal_replica": facts.pgs_without_normal,
        "weight_set_repairs": facts.repairs,
        "urgent_writes": facts.urgent_writes,
        "isolation": facts.isolation,
        "gates": [gate_status(g) for g in facts.gates],
        "holds": [gate_status(g) for g in facts.holds],
        "waiting_for_next_step": list(facts.waiting_for_next_step),
        "stats_period_secs": facts.stats_period_secs,
        "tick_seconds": facts.tick_seconds,
        "slo": ({"latency_ms": slo.latency_ms, "percentile": slo.percentile,
                 "low_fraction": slo.low_fraction} if slo.on else None),
        "pools": _pools(facts),
    }
