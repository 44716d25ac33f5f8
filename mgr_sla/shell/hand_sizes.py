"""An operator's size or min_size on the live module (core/by_hand.py
judges): each tick, before the plan, every managed pool is judged under the
status lock; a change taken becomes the pool's base in its role, one refused
holds the pool (SLA_POOL_CHANGED_BY_HAND), each said once in the mgr log and
the cluster log. Before the tick's size or min_size commands go out, what
they set is on record (saved with the state), so that a failover between
them is not taken for an operator.
"""
from __future__ import annotations

from collections.abc import Iterable

from ..core.by_hand import HEALTH_CODE, Judgement, PoolSizes, hands_off, intended, judge
from ..core.health import HealthChecks
from ..core.maps import MapSnapshot
from ..core.state import ModuleState
from ..core.tick import PoolChange
from .mgr_port import MgrPort


class HandSizes:
    def __init__(self, mgr: MgrPort, health: HealthChecks) -> None:
        self._mgr = mgr
        self._health = health

    def judge(self, now: float, state: ModuleState, maps: MapSnapshot) -> None:
        """Every managed pool's size and min_size against what the module
        last set (the caller holds the status lock: pure work, no round trip)."""
        view = maps.view
        for pool_id, role in sorted(state.roles.items()):
            pool = view.pools.get(pool_id)
            if pool is None:
                continue
            sizes = PoolSizes(pool.name, pool.size, pool.min_size)
            self._take(state, pool_id, pool.name,
                       judge(sizes, role, state.sizes.get(pool_id), view.rules, now))
        held = [r.refused for _, r in sorted(state.sizes.items()) if r.refused]
        self._health.update(HEALTH_CODE, held,
                            f"{len(held)} managed pools' size or min_size set by hand and not "
                            "taken: left alone, kept isolated")

    def _take(self, state: ModuleState, pool_id: int, name: str, judged: Judgement) -> None:
        """The judgement into the state; said when it is news."""
        old = state.sizes.get(pool_id)
        if judged.record is None:
            state.sizes.pop(pool_id, None)
        else:
            state.sizes[pool_id] = judged.record
        if judged.role is not None:
            state.roles[pool_id] = judged.role
        change, refused = judged.change, judged.record.refused if judged.record else None
        if change is not None and change.refusal is None:
            self._tell(f"sla: {change.line()}", warn=False)
        elif refused is not None and (old is None or old.refused != refused):
            self._tell(f"sla: {refused}", warn=True)
        elif old is not None and old.refused and refused is None:
            self._tell(f"sla: pool {name}: no longer held by a size or min_size set by hand: "
                       "the module keeps them again", warn=False)

    def _tell(self, message: str, warn: bool) -> None:
        (self._mgr.log.warning if warn else self._mgr.log.info)(message)
        self._mgr.cluster_log(message)

    @staticmethod
    def intend(state: ModuleState, changes: Iterable[PoolChange]) -> bool:
        """What the plan's size and min_size commands set, on record before
        they go out (the caller holds the status lock, and writes the state
        once it is released, before the commands); whether any was recorded."""
        recorded = False
        for change in changes:
            record = intended(change, state.sizes.get(change.pool_id))
            if record is not None:
                state.sizes[change.pool_id] = record
                recorded = True
        return recorded

    @staticmethod
    def hands_off(state: ModuleState) -> frozenset[int]:
        return hands_off(state.sizes)
