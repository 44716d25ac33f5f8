"""The EC strategy at work (its model: core/models/ec.py): the rule swap
between the pool's own erasure rule and sla_ec_<own rule>, the module's
shard entries planned on every epoch (core/upmap/ec_plan.py; the Placer's
sender sends them with every other pool's), the shard checks, and `release`.
"""
from __future__ import annotations

from typing import Any

from ..core.cluster import ClusterView
from ..core.gates import Gate
from ..core.maps import MapSnapshot
from ..core.models.base import PoolUp
from ..core.models.ec import EcModel
from ..core.state import PoolRole
from ..core.tick import PoolChange
from ..core.upmap.ec_plan import ec_faults, plan_ec_pool
from ..core.upmap.planner import commands
from ..core.upmap.regions import MappingFaults, pgs_stopping_without
from ..crush_rules.ec_rules import ec_rule_name
from .base import EntryPlan, MonCall, Released, set_pool
from .move_strategy import release_pool


class EcStrategy(EcModel):
    def __init__(self, mon: MonCall, log: Any) -> None:
        self._mon = mon
        self._log = log

    def apply(self, change: PoolChange) -> Gate | None:
        if not change.rule_changes:
            return None
        return set_pool(self._mon, change.pool, "crush_rule", change.to_rule)

    def entries(self, pool: PoolUp, maps: MapSnapshot, may_act: bool, hold: bool) -> EntryPlan:
        own = pool.role.original_rule
        goal = None if not may_act or not own else (
            "shared" if pool.rule == ec_rule_name(own) else
            "isolated" if pool.rule == own else None)
        if goal is None:
            return EntryPlan([], 0, None)
        plan = plan_ec_pool(pool.up, pool.items, maps.regions, pool.info, goal)
        urgent = maps.regions.members(maps.regions.urgent_class)
        shards = sum(len(u) for u in pool.up.values())
        on_urgent = sum(1 for u in pool.up.values() for o in u if o in urgent)
        status = {"placement": goal, "pgs_with_upmaps": len(plan.wanted),
                  "pending": plan.pending,
                  "urgent_shard_share": round(on_urgent / shards, 4) if shards else None,
                  "shards_on_urgent": on_urgent,
                  "pgs_stopping_with_urgent": pgs_stopping_without(
                      pool.up, maps.regions, maps.regions.urgent_class, pool.info.min_size)}
        return EntryPlan(commands(plan, placing=not hold), plan.pending, status)

    def faults(self, pool: PoolUp, maps: MapSnapshot) -> MappingFaults:
        return ec_faults(pool.up, maps.regions, pool.info)

    def release(self, pool_id: int, role: PoolRole, view: ClusterView,
                osd_map: dict[str, Any], urgent_osds: frozenset[int]) -> Released:
        """Entries first, then the own rule, then the weight set (the move
        strategy's steps): the pool is never left on urgent OSDs."""
        return release_pool(self._mon, pool_id, role, view, osd_map, urgent_osds)
