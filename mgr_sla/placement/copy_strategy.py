"""The copy strategy: a normal pool of size N sits on sla_copy_N, which maps
N copies on the normal region exactly like sla_isolated_normal and, at size
N+1, one more copy on an urgent OSD in front (the primary). Shared mode is
`size N+1` (the extra copy is backfilled onto the urgent region); isolation
is `size N`: the PGs re-peer without it, and nothing is copied first, since
the N normal copies were complete all along. Normal inclusion holds by
construction, whatever the data volume.

Every `osd pool set size` may reset min_size to the release's default for
the new size; the pool's own min_size is set back at once.
"""
from __future__ import annotations

import json
from typing import Any

from ..core.cluster import ClusterView
from ..core.gates import Gate
from ..core.maps import MapSnapshot
from ..core.state import PoolRole, Strategy
from ..core.switch_cost import Capacity, PoolCostInputs, SwitchCost, strategy_cost
from ..core.tick import PoolChange
from ..core.upmap.regions import MappingFaults, mapping_faults
from .base import EntryPlan, MonCall, PoolUp, Released, restore_rule, set_pool


class CopyStrategy:
    kind = Strategy.COPY

    def __init__(self, mon: MonCall, log: Any) -> None:
        self._mon = mon
        self._log = log

    def apply(self, change: PoolChange) -> Gate | None:
        # Toward shared: the rule first (it maps alike at size N), then the
        # extra copy. Toward isolated: the extra copy goes first.
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
        return None

    def _keep_min_size(self, pool: str, min_size: int) -> Gate | None:
        rc, out, _ = self._mon({"prefix": "osd pool get", "pool": pool, "var": "min_size",
                                "format": "json"})
        if rc == 0 and int(json.loads(out).get("min_size", min_size)) == min_size:
            return None
        return set_pool(self._mon, pool, "min_size", min_size)

    def entries(self, pool: PoolUp, maps: MapSnapshot, place: bool, hold: bool) -> EntryPlan:
        return EntryPlan([], 0, None)  # CRUSH places the copy: no entries of ours

    def faults(self, pool: PoolUp, maps: MapSnapshot) -> MappingFaults:
        """The normal copies keep distinct failure domains and the pool keeps
        one at least; the urgent copy may share a failure domain with one of
        them (two takes in one rule do not see each other)."""
        regions = maps.regions
        normal = {pg: [o for o in up if o in regions.osds
                       and regions.osds[o].cls == regions.normal_class]
                  for pg, up in pool.up.items()}
        twice = tuple(pg for pg, up in sorted(pool.up.items()) if len(set(up)) != len(up))
        on_normal = mapping_faults(normal, regions, need_normal=False)
        no_normal = tuple(pg for pg, osds in sorted(normal.items()) if not osds)
        return MappingFaults(twice, on_normal.domain_twice, no_normal)

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

    def cost(self, pool: PoolCostInputs, capacity: Capacity) -> SwitchCost:
        return strategy_cost(Strategy.COPY, pool, capacity, pool.read_fraction or 0.5)
