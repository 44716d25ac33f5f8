"""The strategies by name: the one place that lists them. The shell asks
here for a pool's model (what its strategy wants, pure) and `Placer` builds
the working strategies from here; a new strategy is its module plus a line
in each table below (and its name in core.state.Strategy).
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Callable

from ..core.decision import Mode
from ..core.state import PoolRole, PoolTarget, Role, Strategy
from .base import MonCall, PlacementStrategy, RuleNeeds, StrategyModel
from .copy_strategy import CopyModel, CopyStrategy
from .move_strategy import MoveModel, MoveStrategy

MODELS: dict[Strategy, StrategyModel] = {Strategy.MOVE: MoveModel(), Strategy.COPY: CopyModel()}
STRATEGIES: dict[Strategy, Callable[[MonCall, Any], PlacementStrategy]] = {
    Strategy.MOVE: MoveStrategy, Strategy.COPY: CopyStrategy}
# Urgent pools have no strategy of their own: their rules, and the entries
# that put a hybrid pool's primary on the urgent class, are the move strategy's.
URGENT_POOLS = Strategy.MOVE
# default_strategy 'auto': the first whose urgent space fits the pool; the last
# is taken when none fits (the capacity gate still guards shared mode).
AUTO_ORDER = (Strategy.COPY, Strategy.MOVE)


def kind_of(role: PoolRole) -> Strategy:
    return role.strategy if role.role is Role.NORMAL else URGENT_POOLS


def model_of(role: PoolRole) -> StrategyModel:
    return MODELS[kind_of(role)]


def target(role: PoolRole, mode: Mode) -> PoolTarget:
    return model_of(role).target(role, mode)


def targets(role: PoolRole) -> dict[Mode, PoolTarget]:
    return {mode: target(role, mode) for mode in Mode}


def needs(roles: Mapping[int, PoolRole]) -> dict[int, RuleNeeds]:
    return {pool_id: model_of(role).needs(role) for pool_id, role in sorted(roles.items())}


def rules_needed(roles: Iterable[PoolRole], always: Iterable[str] = ()) -> list[str]:
    """The rules the pools need, `always` first, each once, in order."""
    needed = list(always)
    for role in roles:
        needed += model_of(role).needs(role).rules
    return sorted(set(needed), key=needed.index)


def weight_set_pools(roles: Mapping[int, PoolRole]) -> list[int]:
    """The pools whose rule maps through their own sla_shared weight set."""
    return [pool_id for pool_id, need in needs(roles).items() if need.weight_set]


def auto_strategy(room_for: Callable[[Strategy], bool]) -> Strategy:
    """default_strategy 'auto' for a pool: the first in AUTO_ORDER it has room for."""
    return next((kind for kind in AUTO_ORDER[:-1] if room_for(kind)), AUTO_ORDER[-1])
