"""The working strategies by name, beside their models
(core/models/registry.py): `Placer` builds them from here. A new strategy is
its model there, its working class here (and its name in core.state.Strategy).
"""
from __future__ import annotations

from typing import Any, Callable

from ..core.models.registry import kind_of
from ..core.state import Strategy
from .base import MonCall, PlacementStrategy
from .copy_strategy import CopyStrategy
from .ec_strategy import EcStrategy
from .move_strategy import MoveStrategy

STRATEGIES: dict[Strategy, Callable[[MonCall, Any], PlacementStrategy]] = {
    Strategy.MOVE: MoveStrategy, Strategy.COPY: CopyStrategy, Strategy.EC: EcStrategy}

__all__ = ["STRATEGIES", "kind_of"]
