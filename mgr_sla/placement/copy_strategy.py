"""The copy strategy at work (its model: core/models/copy.py): the rule and
the size toggled with `osd pool set`, the pool's own min_size kept through
every size change (a size change may reset it), and `release`.
"""
from __future__ import annotations

import json
from typing import Any

from ..core.cluster import ClusterView
from ..core.gates import Gate
from ..core.maps import MapSnapshot
from ..core.models.base import PoolUp
from ..core.models.copy import CopyModel
from ..core.state import PoolRole
from ..core.tick import PoolChange
from ..core.upmap.regions import MappingFaults, mapping_faults
from .base import EntryPlan, MonCall, Released, restore_rule, set_pool


class CopyStrategy(CopyModel):
    def __init__(self, mon: MonCall, log: Any) -> None:
        self._mon = mon
        self._log = log

    def apply(self, change: PoolChange) -> Gate | None:
        # Toward shared: the rule first (at size N the copy rule maps like
        # sla_isolated_normal: nothing moves), then the extra copy. Toward
        # isolated: the extra copy goes first, then the rule: no PG is ever
        # mapped onto the urgent region at size N.
        steps: list[tuple[str, Any]] = []
        if change.rule_changes:
            steps.append(("crush_rule", change.to_rule))
        if change.size_changes:
            size_step = ("size", change.to_size)
            steps = steps + [size_step] if change.toward_shared else [size_step] + steps
        for var, val in steps:
            gate = set_pool(self._mon, change.pool, var, val)
            if gate is not None:
                return gate
            self._log.info("sla: pool %s %s -> %s", change.pool, var, val)
        if change.size_changes and change.role.base_min_size:
            return self._keep_min_size(change.pool, change.role.base_min_size)
        if change.min_size_changes and change.to_min_size:
            gate = set_pool(self._mon, change.pool, "min_size", change.to_min_size)
            if gate is None:
                self._log.info("sla: pool %s min_size %s -> %s", change.pool,
                               change.from_min_size, change.to_min_size)
            return gate
        return None

    def _keep_min_size(self, pool: str, min_size: int) -> Gate | None:
        rc, out, _ = self._mon({"prefix": "osd pool get", "pool": pool, "var": "min_size",
                                "format": "json"})
        if rc == 0 and int(json.loads(out).get("min_size", min_size)) == min_size:
            return None
        return set_pool(self._mon, pool, "min_size", min_size)

    def entries(self, pool: PoolUp, maps: MapSnapshot, may_act: bool, hold: bool) -> EntryPlan:
        return EntryPlan([], 0, None)  # CRUSH places the copy: no entries of ours

    def faults(self, pool: PoolUp, maps: MapSnapshot) -> MappingFaults:
        """The normal copies keep distinct failure domains and the pool keeps
        one at least; the urgent copy may share a failure domain with one of
        them (two takes in one rule do not see each other)."""
        return mapping_faults(pool.up, maps.regions, need_normal=True,
                              domains_of=maps.regions.normal_class)

    def release(self, pool_id: int, role: PoolRole, view: ClusterView,
                osd_map: dict[str, Any], urgent_osds: frozenset[int]) -> Released:
        """Size and min_size first (the urgent copy goes), then the rule."""
        done: list[str] = []
        info = view.pools[pool_id]
        if role.base_size and info.size != role.base_size:
            gate = set_pool(self._mon, info.name, "size", role.base_size)
            if gate is not None:
                return Released(done, gate.detail)
            done.append(f"size {info.size} -> {role.base_size}")
        if role.base_min_size:
            gate = self._keep_min_size(info.name, role.base_min_size)
            if gate is not None:
                return Released(done, gate.detail)
        back = restore_rule(self._mon, info.name, role, view, info.rule_id)
        return Released(done + back.done, back.failed)
