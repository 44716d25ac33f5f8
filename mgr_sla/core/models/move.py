"""The move strategy's model: a normal pool's rule swaps between
sla_isolated_normal and sla_shared (which map alike), and in shared mode the
module's own pg_upmap_items move a weight-proportional share of the replicas
onto urgent OSDs (planned in core/upmap/planner.py). Isolation is the rule
swap: the mon drops the urgent-targeted entries in the same epoch. Hybrid
urgent pools use the same entries to put their primary on the urgent class.
"""
from __future__ import annotations

import math
from typing import Any

from ..cluster import PoolInfo
from ..decision import Mode
from ..device_prior import UrgentPart
from ..maps import MapSnapshot
from ..state import (
    RULE_HYBRID,
    RULE_ISOLATED_NORMAL,
    RULE_ISOLATED_URGENT,
    RULE_SHARED,
    PoolRole,
    PoolTarget,
    Role,
    Strategy,
    UrgentPlacement,
)
from ..switch_cost import (
    Capacity,
    PoolCostInputs,
    SwitchCost,
    capped_gain,
    entries_cost,
    isolated_hdd_work,
)
from ..upmap.planner import plan_pool, switch_moves
from .base import PoolUp, RuleNeeds
from .ec import replicated_only


class MoveModel:
    """What the move strategy wants: normal pools on sla_shared in shared mode
    (a weight-proportional share of their replicas moved onto urgent OSDs by
    the module's entries), sla_isolated_normal otherwise; urgent pools on
    their own rule in both modes (hybrid: the primary moved onto the urgent
    class by the same entries)."""

    kind = Strategy.MOVE
    erasure = False
    changes_size = False
    rules_from_own_rule = False
    places_by_entries = True  # the planner's pg_upmap_items

    def target(self, role: PoolRole, mode: Mode) -> PoolTarget:
        if role.role is Role.URGENT:
            hybrid = role.placement is UrgentPlacement.HYBRID
            return PoolTarget(RULE_HYBRID if hybrid else RULE_ISOLATED_URGENT)
        return PoolTarget(RULE_SHARED if mode is Mode.SHARED else RULE_ISOLATED_NORMAL)

    def needs(self, role: PoolRole) -> RuleNeeds:
        if role.role is Role.URGENT:
            hybrid = role.placement is UrgentPlacement.HYBRID
            return RuleNeeds((RULE_HYBRID,), hybrid_weight_set=True) if hybrid else \
                RuleNeeds((RULE_ISOLATED_URGENT,))
        return RuleNeeds((RULE_ISOLATED_NORMAL, RULE_SHARED), weight_set=True)

    def refusal(self, info: PoolInfo) -> str | None:
        return replicated_only(info, self.kind)

    def new_role(self, info: PoolInfo, original_rule: str | None) -> PoolRole:
        return PoolRole(Role.NORMAL, original_rule=original_rule, strategy=self.kind)

    def cost(self, pool: PoolCostInputs, cap: Capacity, read_fraction: float) -> SwitchCost:
        """Both switches move the urgent share of the replicas: entries to
        shared (in rounds of UPMAP_PARALLEL), the rule swap back."""
        moved = pool.stored_bytes * pool.size * pool.urgent_share
        entries = min(pool.pg_num, math.ceil(pool.pg_num * pool.size * pool.urgent_share))
        return entries_cost(self.kind.value, moved, entries, "on urgent OSDs", cap,
                            self.gain(read_fraction, pool.size, pool.urgent_share))

    def gain(self, read_fraction: float, size: int, share: float, data_shards: int = 0
             ) -> float:
        """A share s of the replicas (primaries included) sits on urgent OSDs:
        the writes and the reads the HDDs serve both shrink by (1-s)."""
        isolated = isolated_hdd_work(read_fraction, size)
        return capped_gain(isolated, isolated * (1 - share))

    def copies_while_sharing(self, objects: int) -> int:
        return 0  # replicas move (misplaced, never missing)

    def urgent_replicas(self, pool: PoolCostInputs) -> int:
        """Moved, not added: the urgent share of the pool's replicas."""
        return min(pool.pg_num * pool.size, math.ceil(pool.pg_num * pool.size * pool.urgent_share))

    def shared_rule(self, pool: PoolCostInputs) -> tuple[str, int] | None:
        return None  # the planner's upmap entries place the moved replicas

    def switch_moves(self, pool: PoolUp, maps: MapSnapshot, target: Mode) -> dict[str, int]:
        return switch_moves(pool.up, pool.items, maps.regions, pool.info.size, target.value,
                            pool=pool.info)

    def urgent_part(self, read_fraction: float, size: int, urgent_share: float
                    ) -> UrgentPart:
        """The urgent share of the replicas, primaries included: that share
        of the work and of the reads; a write waits on the PGs with one of
        their replicas there (share x size of them, at most all)."""
        return UrgentPart(urgent_share, urgent_share, min(1.0, urgent_share * size))

    def planned_urgent_pgs(self, pool: PoolUp, size: int, maps: MapSnapshot,
                           cache: dict[Any, Any]) -> dict[int, int]:
        """The planner's entries for the pool (an isolated pool maps like
        sla_shared: the entries are what sharing would add)."""
        regions = maps.regions
        plan = plan_pool(pool.pool_id, pool.up, pool.items, regions, size, "shared", cache,
                         pool=pool.info)
        return plan.urgent_pgs(regions.members(regions.urgent_class))
