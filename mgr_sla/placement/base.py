"""The placement strategy interface: how a strategy gets a managed pool to
what its model (core/models/) wants, checks it, and lets it go out of sla's
hands (`PlacementStrategy`: mon commands).

Three implementations: move_strategy.py (rule swap plus the module's
pg_upmap_items; also hybrid urgent pools), copy_strategy.py (a size toggle
on the sla_copy_N rule) and ec_strategy.py (an erasure-coded pool's rule swap
plus the module's shard entries), listed in registry.py. `Placer` (placer.py)
asks each pool's strategy and sends every pool's entries; nothing outside this
package knows how a strategy does its work.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Protocol

from ..core.cluster import ClusterView
from ..core.gates import Gate, GateName
from ..core.maps import MapSnapshot
from ..core.models.base import PoolUp, StrategyModel
from ..core.state import RULE_ISOLATED_NORMAL, RULE_SHARED, PoolRole
from ..core.tick import PoolChange
from ..core.upmap.regions import MappingFaults

MonCall = Callable[[dict[str, Any]], "tuple[int, str, str]"]


@dataclass(frozen=True)
class EntryPlan:
    """A pool's pg_upmap_items commands on this epoch, and its status."""

    commands: list[dict[str, Any]]
    pending: int
    status: dict[str, Any] | None


@dataclass(frozen=True)
class Released:
    done: list[str]
    failed: str | None = None


class PlacementStrategy(StrategyModel, Protocol):
    """A strategy at work: the mon commands that place a pool, check it, and let it go."""

    def apply(self, change: PoolChange) -> Gate | None:
        """Send the mon commands that take the pool to the change's rule and
        size; a Gate naming the failed command when the mon refuses."""

    def entries(self, pool: PoolUp, maps: MapSnapshot, may_act: bool, hold: bool) -> EntryPlan:
        """The pool's pg_upmap_items for this epoch (may_act: the module may
        act; hold: only removals and repairs, no new placement)."""

    def faults(self, pool: PoolUp, maps: MapSnapshot) -> MappingFaults:
        """What is wrong with the pool's real up sets (OSD or failure domain
        twice, no normal replica), by this strategy's own guarantees."""

    def release(self, pool_id: int, role: PoolRole, view: ClusterView,
                osd_map: dict[str, Any], urgent_osds: frozenset[int]) -> Released:
        """Undo what sla did to the pool, never leaving it on urgent OSDs."""


def set_pool(mon: MonCall, pool: str, var: str, val: Any) -> Gate | None:
    """`osd pool set POOL VAR VAL`; a Gate when the mon refuses."""
    rc, _, err = mon({"prefix": "osd pool set", "pool": pool, "var": var, "val": str(val)})
    if rc != 0:
        return Gate(GateName.APPLY_FAILED, f"osd pool set {pool} {var} {val}: {err.strip()}")
    return None


def merge_failed(gates: list[Gate]) -> list[Gate]:
    """One apply_failed gate naming every pool that failed."""
    if len(gates) <= 1:
        return gates
    return [Gate(GateName.APPLY_FAILED, "; ".join(g.detail for g in gates))]


def restore_rule(mon: MonCall, name: str, role: PoolRole, view: ClusterView, rule_id: int
                 ) -> Released:
    """The pool's original rule back, if sla recorded one."""
    rule_now = view.rule_name(rule_id)
    if not rule_now.startswith("sla_"):
        return Released([])
    if not role.original_rule:
        if rule_now != RULE_SHARED:
            return Released([f"crush_rule left on {rule_now} (no original rule recorded)"])
        # sla_shared without its weight set would spread the pool over every
        # class: the isolated rule is where sla found it
        gate = set_pool(mon, name, "crush_rule", RULE_ISOLATED_NORMAL)
        if gate is not None:
            return Released([], gate.detail)
        return Released([f"crush_rule {rule_now} -> {RULE_ISOLATED_NORMAL} (no original "
                         "rule recorded)"])
    if role.original_rule not in view.rules:
        return Released([], f"its original rule {role.original_rule} no longer exists: "
                            f"'ceph osd pool set {name} crush_rule <rule>' first")
    gate = set_pool(mon, name, "crush_rule", role.original_rule)
    if gate is not None:
        return Released([], gate.detail)
    return Released([f"crush_rule {rule_now} -> {role.original_rule}"])


def remove_weight_set(mon: MonCall, pool_id: int, view: ClusterView) -> Released:
    """The pool's own weight set (sla_shared's, sla_ec_<own rule>'s), if it has one."""
    if pool_id not in view.choose_args_pools:
        return Released([])
    name = view.pools[pool_id].name
    rc, _, err = mon({"prefix": "osd crush weight-set rm", "pool": name})
    if rc != 0:
        return Released([], f"osd crush weight-set rm {name}: {err.strip()}")
    return Released(["weight set removed"])
