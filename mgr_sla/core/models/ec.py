"""The EC strategy's model: an erasure-coded normal pool's rule swaps between
its own erasure rule and sla_ec_<own rule> (the same steps from the whole
root, mapping alike under the pool's flat weight set: crush_rules/ec_rules.py),
and in shared mode the module's own pg_upmap_items move up to m of each PG's
k+m shards onto urgent OSDs, each in its own position (core/upmap/ec_plan.py).
The k shards left on the normal region read every object with all urgent
OSDs gone: normal inclusion for EC. Isolation is the rule swap back: the
monitors drop the entries whose targets leave the own rule's take, and the
moved shards backfill onto the normal region (time to isolation grows with
the data, as for move).

The work model counts shard I/Os on the normal region per client op: a read
reads the k data shards (whole stripes: Ceph's reads up to Squid, and
Tentacle's without allow_ec_optimizations), a write writes all k+m. Sharing
moves data shards first, so a read-heavy pool's reads leave the HDDs first.
"""
from __future__ import annotations

import math
from typing import Any

from ...crush_rules.ec_rules import ec_rule_name
from ..cluster import PoolInfo
from ..decision import Mode
from ..device_prior import UrgentPart
from ..maps import MapSnapshot
from ..state import RULE_ISOLATED_NORMAL, PoolRole, PoolTarget, Role, Strategy
from ..switch_cost import (
    WRITE_COST,
    Capacity,
    PoolCostInputs,
    SwitchCost,
    capped_gain,
    entries_cost,
)
from ..upmap.ec_plan import ec_urgent_pgs, plan_ec_pool
from .base import PoolUp, RuleNeeds


def ec_refusal(info: PoolInfo) -> str | None:
    """Why the EC strategy cannot take the pool (its own checks; the profile's
    fit to the cluster is core/ec_profile.py's)."""
    if not info.erasure:
        return (f"pool '{info.name}' is replicated: the ec strategy shares erasure-coded "
                "pools (--strategy copy or move for replicated ones)")
    if info.ec_k < 1 or info.ec_m < 1 or info.ec_k + info.ec_m != info.size:
        return (f"pool '{info.name}': its profile '{info.ec_profile}' gives k={info.ec_k} "
                f"m={info.ec_m} for {info.size} shards per PG; the ec strategy needs k+m")
    return None


def replicated_only(info: PoolInfo, strategy: Strategy) -> str | None:
    """The copy and move strategies' refusal of an erasure-coded pool."""
    if info.erasure:
        return (f"pool '{info.name}' is erasure-coded: the {strategy.value} strategy shares "
                "replicated pools (--strategy ec for erasure-coded ones)")
    return None


def ec_work(read_fraction: float, k: int, m: int, moved_shards: float) -> float:
    """Shard I/Os on the normal region per client op with `moved_shards` of each
    PG's k+m on urgent OSDs, data shards moved first."""
    moved = min(max(moved_shards, 0.0), float(m))
    data_moved = min(moved, float(k))
    return read_fraction * (k - data_moved) + (1 - read_fraction) * (k + m - moved) * WRITE_COST


class EcModel:
    """What the EC strategy wants: the pool's own rule while isolated,
    sla_ec_<own rule> and the module's shard entries while shared."""

    kind = Strategy.EC
    erasure = True
    changes_size = False
    rules_from_own_rule = True  # sla_ec_<own rule>, generated from the pool's own rule
    places_by_entries = True  # the module's shard entries

    def target(self, role: PoolRole, mode: Mode) -> PoolTarget:
        own = role.original_rule
        if not own:  # recorded without its own rule: nothing to swap, never shared
            return PoolTarget(RULE_ISOLATED_NORMAL)
        return PoolTarget(ec_rule_name(own) if mode is Mode.SHARED else own)

    def needs(self, role: PoolRole) -> RuleNeeds:
        if not role.original_rule:
            return RuleNeeds()
        return RuleNeeds((ec_rule_name(role.original_rule),), weight_set=True)

    def refusal(self, info: PoolInfo) -> str | None:
        return ec_refusal(info)

    def new_role(self, info: PoolInfo, original_rule: str | None) -> PoolRole:
        return PoolRole(Role.NORMAL, original_rule=original_rule, strategy=self.kind)

    def cost(self, pool: PoolCostInputs, cap: Capacity, read_fraction: float) -> SwitchCost:
        """Both switches move the shards shared mode puts on urgent OSDs, each
        1/k of its PG's data: entries to shared, the rule swap back."""
        k = max(pool.data_shards, 1)
        shards = pool.size * pool.urgent_share  # per PG, on urgent OSDs once shared
        moved = pool.stored_bytes / k * shards
        entries = min(pool.pg_num, math.ceil(pool.pg_num * shards))
        return entries_cost(self.kind.value, moved, entries, "of shards on urgent OSDs", cap,
                            self.gain(read_fraction, pool.size, pool.urgent_share, k))

    def gain(self, read_fraction: float, size: int, share: float, data_shards: int = 0
             ) -> float:
        k = data_shards if 0 < data_shards < size else size - 1
        m = size - k
        return capped_gain(ec_work(read_fraction, k, m, 0.0),
                           ec_work(read_fraction, k, m, size * share))

    def copies_while_sharing(self, objects: int) -> int:
        return 0  # shards move (misplaced, never missing)

    def urgent_replicas(self, pool: PoolCostInputs) -> int:
        """The shards moved: up to m per PG."""
        m = pool.size - max(pool.data_shards, 1)
        return min(pool.pg_num * m, math.ceil(pool.pg_num * pool.size * pool.urgent_share))

    def shared_rule(self, pool: PoolCostInputs) -> tuple[str, int] | None:
        return None  # the module's entries place the moved shards

    def switch_moves(self, pool: PoolUp, maps: MapSnapshot, target: Mode) -> dict[str, int]:
        """Per PG, the shards a switch moves: those its plan puts on urgent
        OSDs (to shared), those its entries put there now (to isolated)."""
        regions, info = maps.regions, pool.info
        urgent = regions.members(regions.urgent_class)
        if target is Mode.ISOLATED:
            moved = {pg: sum(1 for _, to in pairs if to in urgent)
                     for pg, pairs in pool.items.items()}
            return {pg: n for pg, n in moved.items() if n}
        plan = plan_ec_pool(pool.up, pool.items, regions, info, "shared")
        moved = {pg: sum(1 for pair in pairs if pair not in set(pool.items.get(pg, ())))
                 for pg, pairs in plan.wanted.items()}
        return {pg: n for pg, n in moved.items() if n}

    def urgent_part(self, read_fraction: float, size: int, urgent_share: float
                    ) -> UrgentPart:
        """A read reads whole stripes and a write writes every shard: an op
        has a member on the urgent region on share x size of the PGs (at most
        all) and waits for every shard it touches, on both regions."""
        touched = min(1.0, urgent_share * size)
        return UrgentPart(urgent_share, touched, touched, reads_wait_for_all=True)

    def planned_urgent_pgs(self, pool: PoolUp, size: int, maps: MapSnapshot,
                           cache: dict[Any, Any]) -> dict[int, int]:
        """The shard entries planned for the pool (its size is its k+m)."""
        return ec_urgent_pgs(pool.up, pool.items, maps.regions, pool.info)
