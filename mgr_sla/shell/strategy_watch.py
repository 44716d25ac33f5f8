"""The strategy of each normal pool's next switch to shared, on the live
module (core/strategy_choice.py): each strategy's expected gain and what
blocks it, and, for an auto pool on its isolated placement, the change of
strategy (a role change in the module's state: no mon command, no CRUSH
change, no PG moves, since `pool set` installed what every strategy needs).

The module's limits (PG slots, the mon's own checks, urgent space, the write
budget) show only for the strategy a pool is on: one found against a
strategy is remembered for LIMIT_MEMORY_SECS, so the next choice takes
another instead of coming back to it at once. A pool takes another strategy
only once the choice has held for SETTLE_SECS: a burst of one kind of op (a
client writing the objects it will then read) does not flip it.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from ..core.cluster import PoolInfo
from ..core.decision import Mode
from ..core.gain import ExpectedGain
from ..core.maps import MapSnapshot
from ..core.state import ModuleState, PoolRole, Role, Strategy
from ..core.strategy_choice import StrategyChoice, StrategyOption, choose_strategy
from ..core.switch_cost import PoolCost, SwitchCost
from ..core.wear import counted_this_period
from ..placement.registry import MODELS, isolated_size, target, with_strategy

LIMIT_MEMORY_SECS = 600.0
SETTLE_SECS = 60.0


class StrategyWatch:
    def __init__(self) -> None:
        self.choices: dict[int, StrategyChoice] = {}
        self._limits: dict[tuple[int, str], tuple[str, float]] = {}  # -> (why, when)
        self._since: dict[int, tuple[str, float]] = {}  # pool -> (another choice, since)

    def refresh(self, now: float, state: ModuleState, maps: MapSnapshot,
                costs: Mapping[int, PoolCost],
                expected: Mapping[int, Mapping[str, ExpectedGain]],
                limited: Mapping[int, str], max_isolation_secs: float) -> None:
        """The choice for every normal pool; `limited`: the pools the module's
        limits keep isolated on their strategy at this refresh, and why."""
        for pid, why in limited.items():
            role = state.roles.get(pid)
            if role is not None:
                self._limits[(pid, role.strategy.value)] = (why, now)
        self._limits = {k: v for k, v in self._limits.items()
                        if now - v[1] <= LIMIT_MEMORY_SECS and k[0] in costs}
        self.choices = {}
        for pid, cost in costs.items():
            role, info = state.roles.get(pid), maps.view.pools.get(pid)
            if role is None or info is None or pid not in expected:
                continue
            options = [StrategyOption(c.strategy, expected[pid][c.strategy],
                                      self._blocked(pid, role, info, c, maps,
                                                    max_isolation_secs))
                       for c in cost.costs if c.strategy in expected[pid]]
            choice = self.choices[pid] = choose_strategy(
                role.strategy.value, role.auto, options, mix_known=cost.read_fraction_known)
            if choice.strategy == role.strategy.value:
                self._since.pop(pid, None)
            elif self._since.get(pid, ("", 0.0))[0] != choice.strategy:
                self._since[pid] = (choice.strategy, now)
        self._since = {p: v for p, v in self._since.items() if p in self.choices}

    def _blocked(self, pid: int, role: PoolRole, info: PoolInfo, cost: SwitchCost,
                 maps: MapSnapshot, max_isolation_secs: float) -> str | None:
        kind = Strategy(cost.strategy)
        # judged at the pool's isolated size: a pool shared by copy is one larger now
        isolated = replace(info, size=isolated_size(role, info.size))
        refusal = MODELS[kind].refusal(isolated)
        if refusal:
            return refusal
        if cost.time_to_isolation_secs > max_isolation_secs:
            return (f"isolation would take {cost.time_to_isolation_secs:g} s > "
                    f"max_isolation_secs {max_isolation_secs:g}")
        if not cost.fits_urgent:
            return (f"needs {cost.urgent_bytes_needed / 2**30:.1f} GiB on the urgent region, "
                    "more than its free space under nearfull_ratio")
        need = MODELS[kind].needs(with_strategy(role, kind, isolated) if role.auto else role)
        missing = [r for r in need.rules if r not in maps.view.rules]
        if need.weight_set and pid not in maps.view.choose_args_pools:
            missing.append("the pool's weight set")
        if missing:
            return f"{', '.join(missing)} not installed ('ceph sla rules apply')"
        limit = self._limits.get((pid, kind.value))
        return limit[0] if limit else None

    def changes(self, now: float, state: ModuleState, maps: MapSnapshot
                ) -> dict[int, tuple[PoolRole, PoolRole]]:
        """The auto pools to put on another strategy now: the choice held for
        SETTLE_SECS, each on its isolated rule and size (so the other
        strategy's isolated placement is the same), with no entry of the
        move strategy left on an urgent OSD, and not taken toward shared in
        the current shared period."""
        out = {}
        urgent = set(maps.regions.of_class(maps.regions.urgent_class))
        sharing = counted_this_period(state.history)  # the mgr's map may lag the mon
        for pid, choice in self.choices.items():
            role, info = state.roles.get(pid), maps.view.pools.get(pid)
            held = self._since.get(pid)
            if role is None or info is None or not role.auto or role.role is not Role.NORMAL \
                    or pid in sharing \
                    or choice.strategy == role.strategy.value or held is None \
                    or held[0] != choice.strategy or now - held[1] < SETTLE_SECS:
                continue
            isolated = target(role, Mode.ISOLATED)
            on_urgent = any(to in urgent for pairs in maps.upmap_items.get(pid, {}).values()
                            for _, to in pairs)
            if maps.view.rule_name(info.rule_id) == isolated.rule \
                    and isolated.size in (None, info.size) and not on_urgent:
                out[pid] = (role, with_strategy(role, Strategy(choice.strategy), info))
        return out
