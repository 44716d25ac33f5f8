"""The move strategy at work (its model: core/models/move.py): the rule
swap, the module's pg_upmap_items planned on every epoch (core/upmap/planner.py;
the Placer's sender sends them), and `release`. Hybrid urgent pools use the
same entries to put their primary on the urgent class.
"""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

from ..core.cluster import ClusterView
from ..core.gates import Gate
from ..core.maps import MapSnapshot
from ..core.models.base import PoolUp
from ..core.models.move import MoveModel
from ..core.state import RULE_HYBRID, RULE_ISOLATED_NORMAL, RULE_SHARED, PoolRole, Role
from ..core.tick import PoolChange
from ..core.upmap.planner import commands, plan_pool
from ..core.upmap.regions import (
    MappingFaults,
    current_items,
    mapping_faults,
    pgs_stopping_without,
)
from .base import EntryPlan, MonCall, Released, remove_weight_set, restore_rule, set_pool

RELEASE_PARALLEL = 32  # `pool rm` / `release`: the operator waits for these
PLAN_CACHE_MAX = 1 << 20


class MoveStrategy(MoveModel):
    def __init__(self, mon: MonCall, log: Any) -> None:
        self._mon = mon
        self._log = log
        self._cache: dict[Any, Any] = {}  # per-PG plans, while the regions stay
        self._cache_for: int | None = None

    def apply(self, change: PoolChange) -> Gate | None:
        if not change.rule_changes:
            return None
        return set_pool(self._mon, change.pool, "crush_rule", change.to_rule)

    @staticmethod
    def _goal(pool: PoolUp) -> str | None:
        """What the pool's entries must do, by the rule it is on now: put a
        share on urgent OSDs (shared), a primary there (hybrid), or none (isolated)."""
        if pool.role.role is Role.NORMAL and pool.rule == RULE_SHARED:
            return "shared"
        if pool.role.role is Role.NORMAL and pool.rule == RULE_ISOLATED_NORMAL:
            return "isolated"
        if pool.role.role is Role.URGENT and pool.rule == RULE_HYBRID:
            return "hybrid"
        return None

    def entries(self, pool: PoolUp, maps: MapSnapshot, may_act: bool, hold: bool) -> EntryPlan:
        goal = self._goal(pool) if may_act else None
        if goal is None:
            return EntryPlan([], 0, None)
        regions = maps.regions
        if self._cache_for != regions.fingerprint or len(self._cache) > PLAN_CACHE_MAX:
            self._cache, self._cache_for = {}, regions.fingerprint
        plan = plan_pool(pool.pool_id, pool.up, pool.items, regions, pool.info.size,
                         goal, self._cache, pool=pool.info)
        replicas = sum(len(u) for u in pool.up.values())
        urgent = sum(1 for u in pool.up.values() for o in u
                     if o in regions.osds and regions.osds[o].cls == regions.urgent_class)
        status = {"placement": goal, "pgs_with_upmaps": len(plan.wanted),
                  "pending": plan.pending,
                  "urgent_replica_share": round(urgent / replicas, 4) if replicas else None,
                  "pgs_stopping_with_urgent": pgs_stopping_without(
                      pool.up, regions, regions.urgent_class, pool.info.min_size)}
        return EntryPlan(commands(plan, placing=not hold), plan.pending, status)

    def faults(self, pool: PoolUp, maps: MapSnapshot) -> MappingFaults:
        return mapping_faults(pool.up, maps.regions, need_normal=pool.role.role is Role.NORMAL)

    def release(self, pool_id: int, role: PoolRole, view: ClusterView,
                osd_map: dict[str, Any], urgent_osds: frozenset[int]) -> Released:
        return release_pool(self._mon, pool_id, role, view, osd_map, urgent_osds)


def release_pool(mon: MonCall, pool_id: int, role: PoolRole, view: ClusterView,
                 osd_map: dict[str, Any], urgent_osds: frozenset[int]) -> Released:
    """Entries first, then the rule, then the weight set: the pool is never
    left on urgent OSDs (the move and EC strategies' release)."""
    done: list[str] = []
    name = view.pools[pool_id].name
    entries = current_items(osd_map).get(pool_id, {})
    ours = sorted(pg for pg, pairs in entries.items()
                  if any(t in urgent_osds for _, t in pairs))
    # each command waits for a mon commit; sent together, the mon commits
    # them in a few rounds (one at a time: a second per PG)
    with ThreadPoolExecutor(RELEASE_PARALLEL) as workers:
        results = list(workers.map(lambda pg: mon(
            {"prefix": "osd rm-pg-upmap-items", "pgid": pg}), ours))
    failed = [(pg, err) for pg, (rc, _, err) in zip(ours, results) if rc != 0]
    if failed:
        return Released(done, "; ".join(f"osd rm-pg-upmap-items {pg}: {err.strip()}"
                                        for pg, err in failed[:5]))
    if ours:
        done.append(f"{len(ours)} upmap entries removed")
    back = restore_rule(mon, name, role, view, view.pools[pool_id].rule_id)
    if back.failed:
        return Released(done + back.done, back.failed)
    done += back.done
    weight_set = remove_weight_set(mon, pool_id, view)
    return Released(done + weight_set.done, weight_set.failed)

