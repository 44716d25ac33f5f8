"""`ceph sla status` (and the metrics snapshot) as one dict, built from what
the module's collaborators hold. Rendering is report.py's."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..core.cluster import ClusterView
from ..core.decision import ThresholdError, Thresholds
from ..core.gates import GATE_NAMES, Gate, gate_status
from ..core.settings import Settings
from ..core.state import ModuleState, Role, expected_rule, expected_size
from ..placement.placer import Placer
from .cost_watch import CostWatch
from .pool_activity import PoolActivity
from .switch_tracker import SwitchTracker


@dataclass(frozen=True)
class StatusSource:
    state: ModuleState
    settings: Settings
    view: ClusterView
    version: str
    urgent_iops: float | None
    gates: list[Gate]
    holds: list[Gate]
    activity: PoolActivity
    tracker: SwitchTracker
    placement: Placer
    costs: CostWatch
    repairs: list[str]
    tick_seconds: dict[str, Any]
    dry_run_mode: str | None
    stats_period_secs: float | None


def _pools(src: StatusSource) -> list[dict[str, Any]]:
    state, view, slo = src.state, src.view, src.settings.slo()
    mode = state.decision.mode
    out = []
    for pool_id, role in sorted(state.roles.items()):
        pool = view.pools.get(pool_id)
        if pool is None:
            continue
        kept = src.costs.keep_isolated.get(pool_id)
        out.append({
            "pool_id": pool_id, "name": pool.name, "role": role.role.value,
            "placement": role.placement.value, "strategy": role.strategy.value,
            "rule": view.rule_name(pool.rule_id),
            "expected_rule": expected_rule(role, mode),
            "size": pool.size, "expected_size": expected_size(role, mode) or pool.size,
            "client_iops": src.activity.rate(pool_id),
            "read_fraction": src.activity.read_fraction(pool_id),
            "misplaced_ratio": src.tracker.misplaced(pool_id),
            "upmaps": src.placement.status(pool_id),
            "kept_isolated": kept,
            "latency": (src.activity.pool_latency(pool_id, slo)
                        if role.role is Role.URGENT else None),
        })
    return out


def status_dict(src: StatusSource) -> dict[str, Any]:
    state, settings = src.state, src.settings
    try:
        thresholds: Thresholds | None = settings.thresholds()
    except ThresholdError:
        thresholds = None
    last = state.last_switch()
    slo = settings.slo()
    return {
        "version": src.version,
        "epoch": src.view.epoch,  # the OSD map the figures below were taken from
        "mode": state.decision.mode.value,
        "pinned": state.pinned is not None,
        "dry_run": settings.dry_run,
        "active": settings.active,
        "dry_run_mode": src.dry_run_mode,
        "urgent_iops": src.urgent_iops,
        "threshold_iops": thresholds.high_iops if thresholds else None,
        "threshold_low_iops": thresholds.low_iops if thresholds else None,
        "min_dwell_secs": settings.min_dwell_secs,
        "max_isolation_secs": settings.max_isolation_secs,
        "since": state.decision.mode_since,
        "quiet_since": state.decision.quiet_since,
        "switches_total": state.switches_total,
        "blocked_total": {**dict.fromkeys(GATE_NAMES, 0), **state.blocked_total},
        "last_switch": last.to_dict() if last else None,
        "time_to_isolation_secs": src.tracker.last_time_to_isolation,
        "isolating": src.tracker.isolating,
        "pgs_without_normal_replica": src.placement.pgs_without_normal,
        "weight_set_repairs": src.repairs,
        "gates": [gate_status(g) for g in src.gates],
        "holds": [gate_status(g) for g in src.holds],
        "stats_period_secs": src.stats_period_secs,
        "tick_seconds": src.tick_seconds,
        "slo": ({"latency_ms": slo.latency_ms, "percentile": slo.percentile,
                 "low_fraction": slo.low_fraction} if slo.on else None),
        "pools": _pools(src),
    }
