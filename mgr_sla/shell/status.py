"""The facts `ceph sla status` is rendered from (core/status.py), read from
the module's collaborators under the status lock: plain data, so the
rendering never touches a live collaborator. What a normal pool is kept
isolated for, its gain and its next strategy are the admission's, the same
result the tick acts on and `ceph sla plan` shows."""
from __future__ import annotations

from dataclasses import dataclass, replace

from ..core.decision import Mode
from ..core.models.registry import target
from ..core.state import Role
from ..core.status import PoolFacts, StatusFacts
from ..placement.placer import Placer
from .admission_step import AdmissionStep
from .pool_activity import PoolActivity
from .switch_tracker import SwitchTracker


@dataclass(frozen=True)
class StatusParts:
    """The ones whose figures status shows."""

    activity: PoolActivity
    tracker: SwitchTracker
    placer: Placer
    admission: AdmissionStep


def gather(base: StatusFacts, parts: StatusParts) -> StatusFacts:
    """`base` (the module's own facts) with every figure the collaborators hold."""
    state, slo = base.state, base.settings.slo()
    mode = state.decision.mode
    admission = parts.admission.admission
    decided = admission.pools if admission is not None else {}
    kept = {pid: p.kept for pid, p in decided.items() if p.kept}
    kept.update(state.sent_back)
    held = parts.admission.isolation.held  # shared: its isolation would pass a PG limit
    pools = {pool_id: PoolFacts(
        # where the module takes the pool: a pool kept isolated stays so in shared mode
        target=target(role, Mode.SHARED if pool_id in held else
                      Mode.ISOLATED if pool_id in kept else mode),
        client_iops=parts.activity.rate(pool_id),
        read_fraction=parts.activity.read_fraction(pool_id),
        misplaced_ratio=parts.tracker.misplaced(pool_id),
        upmaps=parts.placer.status(pool_id),
        kept_isolated=kept.get(pool_id),
        gain=decided[pool_id].gain_view() if pool_id in decided else None,
        next_strategy=decided[pool_id].choice.to_dict() if pool_id in decided else None,
        latency=(parts.activity.pool_latency(pool_id, slo)
                 if role.role is Role.URGENT else None))
        for pool_id, role in state.roles.items() if pool_id in base.view.pools}
    return replace(base, pools=pools,
                   time_to_isolation_secs=parts.tracker.last_time_to_isolation,
                   isolating=parts.tracker.isolating,
                   pgs_without_normal=parts.placer.pgs_without_normal,
                   urgent_writes=parts.admission.write_budget.to_dict(),
                   isolation=parts.admission.isolation.status())
