"""The copy strategy: in shared mode a normal pool of size N sits on
sla_copy_N at size N+1: N copies on the normal region exactly as
sla_isolated_normal maps them, and one more on an urgent OSD in front (the
primary), backfilled there. Isolation is `size N`: the PGs re-peer without
it, and nothing is copied first, since the N normal copies were complete all
along; then the rule goes back to sla_isolated_normal, which at size N maps
every PG alike (the rules' R8 check), so the swap moves no PG. Off the urgent
take when isolated, a full urgent OSD never flags the pool full, and `ceph
df` and the pg_autoscaler see the normal root. Normal inclusion holds by
construction, whatever the data volume.

Every `osd pool set size` may reset min_size to the release's default for
the new size; the pool's own min_size is set back at once.
"""
from __future__ import annotations

from typing import Any

from ...crush_rules.rules import MAX_COPY_SIZE, copy_rule_name
from ..cluster import PoolInfo
from ..decision import Mode
from ..device_prior import UrgentPart
from ..maps import MapSnapshot
from ..state import RULE_ISOLATED_NORMAL, PoolRole, PoolTarget, Role, Strategy, UrgentPlacement
from ..switch_cost import (
    COPY_ISOLATION_SECS,
    WRITE_COST,
    Capacity,
    PoolCostInputs,
    SwitchCost,
    capped_gain,
    isolated_hdd_work,
    urgent_room,
)
from .base import PoolUp, RuleNeeds
from .ec import replicated_only

# base sizes the module shares by one more copy: N+1 stays within the
# generator's largest copy size
MAX_BASE_SIZE = MAX_COPY_SIZE - 1


class CopyModel:
    """What the copy strategy wants: sla_copy_N at size N+1 in shared mode,
    sla_isolated_normal at size N (the size it had) in isolated mode."""

    kind = Strategy.COPY
    erasure = False
    changes_size = True  # N+1 while shared
    rules_from_own_rule = False
    places_by_entries = False  # CRUSH places the extra copy (sla_copy_N)

    def target(self, role: PoolRole, mode: Mode) -> PoolTarget:
        base = role.base_size
        if not base:  # recorded without its size: nothing to toggle, never shared
            return PoolTarget(RULE_ISOLATED_NORMAL)
        if mode is Mode.SHARED:
            return PoolTarget(copy_rule_name(base), base + 1, role.base_min_size)
        return PoolTarget(RULE_ISOLATED_NORMAL, base, role.base_min_size)

    def needs(self, role: PoolRole) -> RuleNeeds:
        if not role.base_size:
            return RuleNeeds()
        return RuleNeeds((copy_rule_name(role.base_size),), copy_size=role.base_size)

    def refusal(self, info: PoolInfo) -> str | None:
        """Sizes the pool could not go back to (the mon refuses size 1 without
        a flag), and pools whose size the mon must not change."""
        if info.erasure:
            return replicated_only(info, self.kind)
        if not 2 <= info.size <= MAX_BASE_SIZE:
            return (f"pool '{info.name}' has size {info.size}; the copy strategy needs a "
                    f"size of 2 to {MAX_BASE_SIZE} (size 1 could never be set back)")
        if "nosizechange" in info.flags:
            return (f"pool '{info.name}' has the nosizechange flag: the copy strategy changes "
                    f"its size ('ceph osd pool set {info.name} nosizechange false', or --strategy "
                    "move)")
        return None

    def new_role(self, info: PoolInfo, original_rule: str | None) -> PoolRole:
        """The pool's size and min_size are what isolated mode keeps."""
        return PoolRole(Role.NORMAL, UrgentPlacement.ISOLATED, original_rule, self.kind,
                        info.size, info.min_size or None)

    def cost(self, pool: PoolCostInputs, cap: Capacity, read_fraction: float) -> SwitchCost:
        """To shared: a whole copy backfilled onto the urgent region; to
        isolated: one `osd pool set size`, nothing copied back."""
        moved = pool.stored_bytes
        return SwitchCost(
            self.kind.value, moved, 0.0, COPY_ISOLATION_SECS,
            "one 'osd pool set size': the PGs re-peer without the urgent copy",
            2, 2, 2, 2, 0, moved, moved <= urgent_room(cap),
            self.gain(read_fraction, pool.size, 0.0))

    def gain(self, read_fraction: float, size: int, share: float, data_shards: int = 0
             ) -> float:
        """The extra copy on an urgent OSD is the primary: a write still
        costs NW (every copy acks), a read none."""
        return capped_gain(isolated_hdd_work(read_fraction, size),
                           (1 - read_fraction) * size * WRITE_COST)

    def copies_while_sharing(self, objects: int) -> int:
        return objects  # one more copy of every object

    def urgent_replicas(self, pool: PoolCostInputs) -> int:
        """One extra copy per PG."""
        return pool.pg_num

    def shared_rule(self, pool: PoolCostInputs) -> tuple[str, int] | None:
        """sla_copy_N at N + 1: CRUSH alone places the extra copy."""
        if not 2 <= pool.size <= MAX_BASE_SIZE:
            return None
        return copy_rule_name(pool.size), pool.size + 1

    def switch_moves(self, pool: PoolUp, maps: MapSnapshot, target: Mode) -> dict[str, int]:
        """Shared adds one copy to every PG; isolation drops it, moving nothing."""
        return {pg: 1 for pg in pool.up} if target is Mode.SHARED else {}

    def urgent_part(self, read_fraction: float, size: int, urgent_share: float
                    ) -> UrgentPart:
        """The extra copy is every PG's primary: the urgent region serves every
        read and takes one copy of every write (of the pool's isolated work);
        every op has a member there."""
        moved = (read_fraction + (1 - read_fraction) * WRITE_COST) / isolated_hdd_work(
            read_fraction, size)
        return UrgentPart(moved, 1.0, 1.0)

    def planned_urgent_pgs(self, pool: PoolUp, size: int, maps: MapSnapshot,
                           cache: dict[Any, Any]) -> dict[int, int]:
        return {}  # no entries of its own: CRUSH maps the copy (`shared_rule`)
