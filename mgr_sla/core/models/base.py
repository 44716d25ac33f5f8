"""The interface of a strategy's pure model (`StrategyModel`: plain data in
and out, no mgr, no state of its own) and the plain data it speaks in.

Three models: copy.py (a size toggle on sla_copy_N), move.py (a rule swap
plus the module's pg_upmap_items) and ec.py (an erasure-coded pool's rule
swap plus the module's shard entries), listed in registry.py. The acting half
of each strategy (placement/) builds on its model. What the rest of the module
needs to know of a strategy it asks here, so that nothing outside the models,
the strategies and the registries names one."""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from ..cluster import PoolInfo
from ..decision import Mode
from ..device_prior import UrgentPart
from ..maps import MapSnapshot
from ..state import PoolRole, PoolTarget, Strategy
from ..switch_cost import Capacity, PoolCostInputs, SwitchCost
from ..upmap.regions import Pairs


@dataclass(frozen=True)
class PoolUp:
    """A managed pool on one epoch: its role, its map entry, its up sets."""

    pool_id: int
    role: PoolRole
    info: PoolInfo
    rule: str
    up: Mapping[str, Sequence[int]]
    items: dict[str, Pairs]


@dataclass(frozen=True)
class RuleNeeds:
    """What one managed pool needs installed before the module places it."""

    rules: tuple[str, ...] = ()  # CRUSH rules by name
    weight_set: bool = False  # its own weight set, which sla_shared maps through
    hybrid_weight_set: bool = False  # its own sla_hybrid weight set (urgent pools)
    copy_size: int | None = None  # the sla_copy_N rule of this N


class StrategyModel(Protocol):
    """What a strategy wants of a pool: pure, no mgr, no state of its own."""

    kind: Strategy
    erasure: bool  # it shares erasure-coded pools (and only those); else replicated ones
    changes_size: bool  # shared mode changes the pool's size: the nosizechange flag blocks it
    # its rules are generated from each pool's own rule: the verifier needs those pools
    rules_from_own_rule: bool
    # the module's own pg_upmap_items place the pool once shared (`planned_urgent_pgs`);
    # else CRUSH alone does (`shared_rule`)
    places_by_entries: bool

    def target(self, role: PoolRole, mode: Mode) -> PoolTarget:
        """The pool's rule and size in `mode`."""

    def needs(self, role: PoolRole) -> RuleNeeds:
        """The rules and weight sets the pool needs installed."""

    def refusal(self, info: PoolInfo) -> str | None:
        """Why the pool cannot use this strategy, if so."""

    def new_role(self, info: PoolInfo, original_rule: str | None) -> PoolRole:
        """The role a normal pool gets when `pool set` takes it."""

    def cost(self, pool: PoolCostInputs, cap: Capacity, read_fraction: float) -> SwitchCost:
        """What a switch of the pool costs with this strategy."""

    def gain(self, read_fraction: float, size: int, share: float, data_shards: int = 0
             ) -> float:
        """Normal throughput shared over isolated (the module's gain model);
        `data_shards`: an erasure-coded pool's k."""

    def urgent_replicas(self, pool: PoolCostInputs) -> int:
        """The PG replicas sharing the pool adds to the urgent region, for an
        estimate where no mapping of its shared placement is known yet."""

    def shared_rule(self, pool: PoolCostInputs) -> tuple[str, int] | None:
        """The rule and size whose CRUSH mapping is the pool's shared placement,
        when CRUSH alone places it (None: the module's own entries place it)."""

    def copies_while_sharing(self, objects: int) -> int:
        """Object copies sharing adds, missing (degraded) until they are placed."""

    def switch_moves(self, pool: PoolUp, maps: MapSnapshot, target: Mode) -> dict[str, int]:
        """Per PG, the replicas a switch to `target` moves."""

    def urgent_part(self, read_fraction: float, size: int, urgent_share: float
                    ) -> UrgentPart:
        """The pool's part on the urgent region once shared, at its mix, as
        the device prior weighs it (core/device_prior.py)."""

    def planned_urgent_pgs(self, pool: PoolUp, size: int, maps: MapSnapshot,
                           cache: dict[Any, Any]) -> dict[int, int]:
        """Per urgent OSD, the pool's PGs the module's entries would put there
        once shared, planned on its up sets as they are (`size`: its isolated
        size; `cache`: per-PG plans, kept while the regions stay). Asked only
        of a strategy that `places_by_entries`."""
