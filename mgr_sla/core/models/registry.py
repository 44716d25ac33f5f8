"""The strategies' models by name: the one place that lists them. The
shell and the core ask here for a pool's model (what its strategy wants,
pure); placement/registry.py lists the working strategies beside them. A new
strategy is its model here and its working class there (and its name in
core.state.Strategy).
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace

from ..cluster import PoolInfo
from ..decision import Mode
from ..state import PoolRole, PoolTarget, Role, Strategy
from .base import RuleNeeds, StrategyModel
from .copy import CopyModel
from .ec import EcModel
from .move import MoveModel

MODELS: dict[Strategy, StrategyModel] = {Strategy.MOVE: MoveModel(), Strategy.COPY: CopyModel(),
                                         Strategy.EC: EcModel()}
# Urgent pools have no strategy of their own: their rules, and the entries
# that put a hybrid pool's primary on the urgent class, are the move strategy's.
URGENT_POOLS = Strategy.MOVE
# the strategies an auto pool may take, in the order a tie between them goes
AUTO_ORDER = (Strategy.COPY, Strategy.MOVE)


def strategies_for(info: PoolInfo) -> tuple[Strategy, ...]:
    """The strategies a pool's kind allows (AUTO_ORDER's first): ec for an
    erasure-coded pool, copy and move for a replicated one."""
    ordered = (*AUTO_ORDER, *(kind for kind in MODELS if kind not in AUTO_ORDER))
    return tuple(kind for kind in ordered if MODELS[kind].erasure == info.erasure)


def choices(role: PoolRole) -> tuple[Strategy, ...]:
    """The strategies a normal pool's next switch to shared may use: an auto
    pool's every one (AUTO_ORDER), else its own."""
    return AUTO_ORDER if role.auto else (role.strategy,)


def kind_of(role: PoolRole) -> Strategy:
    return role.strategy if role.role is Role.NORMAL else URGENT_POOLS


def model_of(role: PoolRole) -> StrategyModel:
    return MODELS[kind_of(role)]


def others_weight_set(role: PoolRole) -> bool:
    """The pool has a weight set its own strategy does not need: an auto
    pool's, installed for another of its strategies. A strategy's release
    removes what it needs, so this one is left for the caller to remove."""
    return role_needs(role).weight_set and not model_of(role).needs(role).weight_set


def target(role: PoolRole, mode: Mode) -> PoolTarget:
    return model_of(role).target(role, mode)


def targets(role: PoolRole) -> dict[Mode, PoolTarget]:
    return {mode: target(role, mode) for mode in Mode}


def role_needs(role: PoolRole) -> RuleNeeds:
    """What the pool needs installed: an auto pool what every strategy needs,
    so that changing its strategy while isolated changes no CRUSH map."""
    if not role.auto or role.role is not Role.NORMAL:
        return model_of(role).needs(role)
    each = [MODELS[kind].needs(replace(role, strategy=kind)) for kind in AUTO_ORDER]
    rules = [r for need in each for r in need.rules]
    return RuleNeeds(tuple(sorted(set(rules), key=rules.index)),
                     any(n.weight_set for n in each), any(n.hybrid_weight_set for n in each),
                     next((n.copy_size for n in each if n.copy_size), None))


def needs(roles: Mapping[int, PoolRole]) -> dict[int, RuleNeeds]:
    return {pool_id: role_needs(role) for pool_id, role in sorted(roles.items())}


def rules_needed(roles: Iterable[PoolRole], always: Iterable[str] = ()) -> list[str]:
    """The rules the pools need, `always` first, each once, in order."""
    needed = list(always)
    for role in roles:
        needed += role_needs(role).rules
    return sorted(set(needed), key=needed.index)


def isolated_size(role: PoolRole, size_now: int) -> int:
    """The pool's size while isolated: its strategy's, or the size it has."""
    return target(role, Mode.ISOLATED).size or size_now


def auto_role(info: PoolInfo, original_rule: str | None, first: Strategy) -> PoolRole:
    """An auto pool's role: its first strategy, and the size and min_size the
    copy strategy keeps while isolated (none when the pool cannot use copy)."""
    role = replace(MODELS[first].new_role(info, original_rule), auto=True)
    if MODELS[Strategy.COPY].refusal(info) is not None:
        return replace(role, base_size=None, base_min_size=None)
    return replace(role, base_size=info.size, base_min_size=info.min_size or None)


def with_strategy(role: PoolRole, kind: Strategy, info: PoolInfo) -> PoolRole:
    """An isolated auto pool on `kind`: copy keeps the size and min_size the
    pool has now (both strategies isolate at that size: nothing moves)."""
    if kind is Strategy.COPY:
        return replace(role, strategy=kind, base_size=info.size,
                       base_min_size=info.min_size or None)
    return replace(role, strategy=kind)


def weight_set_pools(roles: Mapping[int, PoolRole]) -> list[int]:
    """The pools whose rule maps through their own sla_shared weight set."""
    return [pool_id for pool_id, need in needs(roles).items() if need.weight_set]

