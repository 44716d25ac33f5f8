"""The switch-cost model on the live cluster: per normal pool, what a switch
costs with each strategy (switch_cost.py), read every SLOW_READ_SECS from
`df` and `osd_stats`. The tick keeps a pool isolated when its time to
isolation would pass max_isolation_secs; the capacity gate asks what shared
mode would put on the urgent OSDs; a health warning says when isolation no
longer fits the normal region.
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from typing import Any, Callable

from ..core.decision import Mode
from ..core.gates import projected_urgent_fill
from ..core.health import HealthChecks
from ..core.maps import MapSnapshot
from ..core.mon_projection import PoolPgs, SizeRaise, size_refusals
from ..core.settings import Settings
from ..core.sharing import SharingProgress, sharing_health
from ..core.space import (
    fullest_if_added,
    shared_space_faults,
    spread_bytes,
    toofull_pools,
    urgent_fills,
)
from ..core.state import ModuleState, Role, Strategy
from ..core.switch_cost import (
    DEFAULT_READ_FRACTION,
    Capacity,
    PoolCost,
    PoolCostInputs,
    drain_rate,
    normal_fill_after_isolation,
    pool_cost,
    too_slow_to_isolate,
    urgent_room,
)
from ..core.tick import PoolChange
from ..core.upmap.pg_plan import target_urgent_share
from ..core.wear import WriteBudget, count_sharing, counted_this_period, over_budget, write_budget
from ..placement.registry import MODELS, isolated_size, target
from . import cost_report
from .gain_watch import GainWatch
from .mgr_port import MgrPort
from .slot_watch import SlotWatch
from .strategy_watch import StrategyWatch

SLOW_READ_SECS = 30.0


class CostWatch:
    def __init__(self, mgr: MgrPort, health: HealthChecks,
                 read_fraction: Callable[[int], float | None]) -> None:
        self._get = mgr.get
        self._release = mgr.crush_release
        self._health = health
        self._read_fraction = read_fraction
        self._at = -SLOW_READ_SECS
        self._epoch = -1
        self.costs: dict[int, PoolCost] = {}
        self.urgent_fill_after: float | None = None
        self.keep_isolated: dict[int, str] = {}  # pool id -> why
        self._keep_next: dict[int, str] = {}  # the same, while a refresh builds it
        self._shared: set[int] = set()  # off their isolated placement: data on urgent OSDs
        self._on_shared: set[int] = set()  # on their shared rule and size
        self._capacity: Capacity | None = None
        self._maps: MapSnapshot | None = None
        self.slots = SlotWatch(mgr, health)
        self.gains = GainWatch()
        self.strategies = StrategyWatch()
        self.write_budget = WriteBudget(0.0, 0.0)
        self._seen: tuple[Any, ...] = ()
        self._space_kept: dict[int, str] = {}  # pool id -> why, this shared period
        self._space_period = 0.0  # when that shared period began (mode_since)
        self._degraded_beyond: frozenset[str] = frozenset()  # shared pools missing more
        # bytes used, bytes in total and CRUSH weight of each urgent OSD
        self._urgent_space: tuple[dict[int, float], dict[int, float], dict[int, float]] = (
            {}, {}, {})

    def refresh(self, now: float, state: ModuleState, maps: MapSnapshot, settings: Settings
                ) -> None:
        """Recompute on a new epoch or every SLOW_READ_SECS (df and the OSD
        fill change slowly; a quiet tick reads nothing)."""
        # OSDs withholding PGs, a new PG limit: acted on at the tick they show
        # (and a pin of the mode: a pinned shared mode shares whatever the gain;
        # and the managed pools: one managed since is judged before it moves)
        seen = (self.slots.withheld(), self.slots.limit(), state.pinned,
                tuple(sorted((p, r.role.value, r.strategy.value)
                             for p, r in state.roles.items())))
        if maps.view.epoch == self._epoch and now - self._at < SLOW_READ_SECS \
                and seen == self._seen and not self.slots.mappings.news():
            return
        self._at, self._epoch, self._seen = now, maps.view.epoch, seen
        withheld, limit = seen[0], seen[1]
        osd_stats = (self._get("osd_stats") or {}).get("osd_stats", [])
        summary = self._get("pg_summary") or {}
        pools, cap, urgent_space = self._inputs(state, maps, osd_stats)
        self._capacity, self._maps = cap, maps
        self._shared = {p.pool_id for p in pools if p.shared_now}
        models = list(MODELS.values())
        self.costs = {p.pool_id: pool_cost(p, cap, settings.max_isolation_secs, models)
                      for p in pools}
        self._keep_next = {pid: why for pid, c in self.costs.items()
                           if (why := too_slow_to_isolate(c, settings.max_isolation_secs))}
        slots = self.slots.refresh(pools, maps, osd_stats, withheld, limit)
        self._on_shared = self._on_shared_target(state, maps)
        gains = self.gains.refresh(now, self.costs, self._sharing(state), self._read_fraction,
                                   settings, state.history, state.pinned, cap)
        used, size, _ = self._urgent_space = urgent_space
        kept_before = set(self._keep_next) | set(slots) | set(gains)
        limits = [slots, self._mon_refusals(state, maps, limit, kept_before),
                  self._space_faults(state, used, size, maps, summary)]
        for kept in (self._refused(state, maps), gains, *limits):
            self._keep(kept)
        limits.append(self._over_budget(now, state, cap, settings))
        self._keep(limits[-1])
        self.strategies.refresh(now, state, maps, self.costs, self.gains.by_strategy,
                                {pid: why for kept in limits for pid, why in kept.items()},
                                settings.max_isolation_secs)
        # published whole: status, plan and metrics read it from other threads
        self.keep_isolated = self._keep_next
        self._project_urgent_fill(state)
        self._sharing_health(pools)
        self._warn_normal_full(pools, cap, settings)

    def _project_urgent_fill(self, state: ModuleState) -> None:
        """What the pools still to share would add (all of them before a
        switch; while shared, a pool sent back for space is not re-shared
        past nearfull)."""
        used, size, weights = self._urgent_space
        placed = self._shared if state.decision.mode is Mode.SHARED else set()
        added = sum(c.cost(Strategy(c.strategy)).urgent_bytes_needed
                    for pid, c in self.costs.items()
                    if pid not in self.keep_isolated and pid not in placed)
        self.urgent_fill_after = projected_urgent_fill(used, size, weights, added, 1.0)

    def _sharing(self, state: ModuleState) -> set[int]:
        """The pools on their shared placement, and those the mon took toward
        it in this shared period (the mgr's map may not show them yet): each
        shares for the period."""
        return self._on_shared | counted_this_period(state.history)

    def _warn_normal_full(self, pools: list[PoolCostInputs], cap: Capacity,
                          settings: Settings) -> None:
        fill = normal_fill_after_isolation(list(self.costs.values()), pools, cap)
        problems = [] if fill is None or fill <= cap.backfillfull_ratio else [
            f"isolating now would fill the {settings.normal_class} region to {fill:.0%}, above "
            f"backfillfull_ratio {cap.backfillfull_ratio:.0%}: PGs would stay "
            "backfill_toofull/recovery_toofull with objects one copy short until space is "
            "added; add normal OSDs, or move pools to --strategy copy (its normal copies "
            "stay complete)"]
        self._health.update("SLA_NORMAL_REGION_FULL", problems,
                            "normal data has outgrown the normal region it must return to")

    def _mon_refusals(self, state: ModuleState, maps: MapSnapshot, limit: int | None,
                      kept: set[int]) -> dict[int, str]:
        """Pools whose size raise the mon would refuse with its own PG
        projection, taken in the order the tick sends them."""
        view = maps.view
        if limit is None:
            return {}
        raises = []
        for pool_id, role in sorted(state.roles.items()):
            info = view.pools.get(pool_id)
            if info is None or role.role is not Role.NORMAL:
                continue
            goal = target(role, Mode.SHARED)
            rule_id = view.rules.get(goal.rule)
            if goal.size is not None and goal.size > info.size and rule_id is not None:
                raises.append(SizeRaise(pool_id, info.name, goal.size, rule_id,
                                        pool_id not in kept))
        pools = [PoolPgs(p.pool_id, p.pg_num_target or p.pg_num, p.size, p.rule_id)
                 for p in view.pools.values()]
        return size_refusals(pools, raises, limit, len(view.in_osds), view.in_under_takes,
                             self._release())

    def placing_by_design(self, state: ModuleState, maps: MapSnapshot) -> list[int]:
        """Managed pools whose degraded PGs are the copy sharing adds: their
        size is above their isolated size, and no copy is missing beyond it
        (SLA_SHARED_POOL_DEGRADED names those, and the gates count them)."""
        out = []
        for pool_id, role in state.roles.items():
            info = maps.view.pools.get(pool_id)
            isolated = target(role, Mode.ISOLATED).size
            if info is not None and isolated is not None and info.size > isolated \
                    and info.name not in self._degraded_beyond:
                out.append(pool_id)
        return out

    def _space_faults(self, state: ModuleState, used: dict[int, float],
                      size: dict[int, float], maps: MapSnapshot,
                      summary: dict[str, Any]) -> dict[int, str]:
        """Shared pools sent back for space (an urgent OSD past nearfull, their
        PGs toofull); kept isolated for the rest of the shared period, so the
        space freed by isolating them does not share them again at once."""
        period = state.decision.mode_since  # a new shared period starts afresh
        if state.decision.mode is Mode.ISOLATED or period != self._space_period:
            self._space_kept, self._space_period = {}, period
        if state.decision.mode is Mode.ISOLATED:
            return {}
        faults = shared_space_faults(urgent_fills(used, size), maps.nearfull_ratio,
                                     self._shared, toofull_pools(summary.get("by_pool") or {}))
        self._space_kept.update(faults)
        return dict(self._space_kept)

    def _sharing_health(self, pools: list[PoolCostInputs]) -> None:
        """The copies sharing adds, missing until placed (Ceph's PG_DEGRADED
        counts them), apart from degradation sharing does not explain."""
        sums = {int(e["poolid"]): e.get("stat_sum", {})
                for e in (self._get("pool_stats") or {}).get("pool_stats", [])}
        rates = {int(e["pool_id"]): e.get("recovery_rate") or {}
                 for e in (self._get("osd_pool_stats") or {}).get("pool_stats", [])}
        progress = []
        for pool in pools:
            stat = sums.get(pool.pool_id)
            if not pool.shared_now or stat is None:
                continue
            objects = int(stat.get("num_objects", 0) or 0)
            rate = float(rates.get(pool.pool_id, {}).get("recovering_bytes_per_sec", 0) or 0)
            progress.append(SharingProgress(
                pool.name, MODELS[pool.strategy].copies_while_sharing(objects),
                int(stat.get("num_objects_degraded", 0) or 0),
                pool.stored_bytes / objects if objects else 0.0, rate or None))
        placing, beyond = sharing_health(progress)
        self._degraded_beyond = frozenset(p.pool for p in progress if p.beyond)
        self._health.update("SLA_COPY_PLACING", placing,
                            f"{len(placing)} normal pools placing the copy sharing adds: "
                            "their PGs are undersized by design until it is placed")
        self._health.update("SLA_SHARED_POOL_DEGRADED", beyond,
                            f"{len(beyond)} shared normal pools are degraded beyond what "
                            "sharing adds")

    def _keep(self, kept: dict[int, str]) -> None:
        for pid, why in kept.items():
            self._keep_next[pid] = "; ".join(filter(None, (self._keep_next.get(pid), why)))

    def _over_budget(self, now: float, state: ModuleState, cap: Capacity, settings: Settings
                     ) -> dict[int, str]:
        """The pools whose sharing would pass the urgent OSDs' write budget
        (a pinned shared mode shares anyway: the operator decided)."""
        self.write_budget = write_budget(state.history, now, settings.max_urgent_drive_writes,
                                         cap.urgent_total_bytes)
        if state.pinned is Mode.SHARED:
            return {}
        counted = counted_this_period(state.history)
        return over_budget({pid: (c.cost(Strategy(c.strategy)).bytes_to_shared,
                                  self.gains.expected[pid].gain)
                            for pid, c in self.costs.items() if pid not in self._keep_next
                            and pid not in self._shared and pid not in counted},
                           self.write_budget)

    def count_sharing(self, state: ModuleState, changes: Iterable[PoolChange]) -> None:
        """The pools whose change toward shared goes out now, in the urgent
        write budget (the caller holds the status lock)."""
        count_sharing(state.history, {
            c.pool_id: self.costs[c.pool_id].cost(Strategy(c.role.strategy.value)).bytes_to_shared
            for c in changes if c.toward_shared and c.pool_id in self.costs})

    def _refused(self, state: ModuleState, maps: MapSnapshot) -> dict[int, str]:
        """Pools that no longer meet their strategy's conditions (a flag set
        since `pool set`): kept isolated, and a health check says why."""
        refused = {}
        for pool_id, role in state.roles.items():
            info = maps.view.pools.get(pool_id)
            if info is None or role.role is not Role.NORMAL:
                continue
            why = MODELS[role.strategy].refusal(replace(info, size=isolated_size(role, info.size)))
            if why:
                refused[pool_id] = why
        self._health.update("SLA_STRATEGY_REFUSED", list(refused.values()),
                            f"{len(refused)} normal pools no longer fit their strategy: kept "
                            "isolated")
        return refused

    def _inputs(self, state: ModuleState, maps: MapSnapshot, osd_stats: list[dict[str, Any]]
                ) -> tuple[list[PoolCostInputs], Capacity, tuple[dict[int, float],
                                                                dict[int, float],
                                                                dict[int, float]]]:
        regions, view = maps.regions, maps.view
        df = {int(p["id"]): p.get("stats", {}) for p in (self._get("df") or {}).get("pools", [])}
        stats = {int(o["osd"]): o for o in osd_stats}
        urgent = regions.of_class(regions.urgent_class)
        normal = regions.of_class(regions.normal_class)

        def kib(osds: list[int], key: str) -> dict[int, float]:
            return {o: float(stats[o].get(key, 0)) * 1024 for o in osds if o in stats}
        used, size = kib(urgent, "kb_used"), kib(urgent, "kb")
        weights = {o: regions.osds[o].weight for o in urgent}
        pools = []
        for pool_id, role in sorted(state.roles.items()):
            info = view.pools.get(pool_id)
            if info is None or role.role is not Role.NORMAL:
                continue
            base = isolated_size(role, info.size)
            stored = float(df.get(pool_id, {}).get("stored", 0) or
                           float(df.get(pool_id, {}).get("bytes_used", 0)) / max(info.size, 1))
            rule = view.rule_name(info.rule_id)
            shared = rule != target(role, Mode.ISOLATED).rule or info.size != base
            pools.append(PoolCostInputs(pool_id, info.name, role.strategy, base, stored,
                                        int(getattr(info, "pg_num", 0) or 0),
                                        target_urgent_share(regions, base),
                                        self._read_fraction(pool_id), shared))
        drain, basis = drain_rate([(r.bytes_to_isolate, r.time_to_isolation_secs)
                                   for r in state.history[-10:]
                                   if r.bytes_to_isolate and r.time_to_isolation_secs])
        cap = Capacity(sum(size.values()) - sum(used.values()), maps.nearfull_ratio,
                       sum(size.values()), sum(kib(normal, "kb_used").values()),
                       sum(kib(normal, "kb").values()), maps.backfillfull_ratio, drain, basis)
        return pools, cap, (used, size, weights)

    def gain_view(self, pid: int) -> dict[str, Any] | None:
        """The pool's gain of sharing: its strategy's model, what the module
        measured, and the one it decides on."""
        cost = self.costs.get(pid)
        if cost is None:
            return None
        return self.gains.view(pid, cost.cost(Strategy(cost.strategy)).expected_gain)

    def next_strategy(self, pid: int) -> dict[str, Any] | None:
        """The strategy of the pool's next switch to shared, and why."""
        choice = self.strategies.choices.get(pid)
        return choice.to_dict() if choice is not None else None

    @property
    def shared_pools(self) -> frozenset[int]:
        """The normal pools on their shared rule and size at the last refresh
        (a pool not yet on its isolated rule, just managed, is not one)."""
        return frozenset(self._on_shared)

    @staticmethod
    def _on_shared_target(state: ModuleState, maps: MapSnapshot) -> set[int]:
        out = set()
        for pool_id, role in state.roles.items():
            info = maps.view.pools.get(pool_id)
            goal = target(role, Mode.SHARED)
            if info is not None and role.role is Role.NORMAL \
                    and maps.view.rule_name(info.rule_id) == goal.rule \
                    and goal.size in (None, info.size):
                out.add(pool_id)
        return out

    def bytes_on_urgent(self) -> float:
        """What the pools in shared placement have on urgent OSDs now (what
        isolating them drains)."""
        return sum(c.cost(Strategy(c.strategy)).bytes_to_isolated
                   for pid, c in self.costs.items() if pid in self._shared)

    def room_for(self, pool: str, kind: Strategy) -> bool:
        """Room on the urgent region under nearfull for what `kind` would put
        there of the pool, besides what the managed pools of that kind need?"""
        cap, maps = self._capacity, self._maps
        if cap is None or maps is None:
            stats = (self._get("osd_stats") or {}).get("osd_stats", [])
            return bool(stats)  # not measured yet: the capacity gate still guards
        info = maps.view.pool_by_name(pool)
        if info is None:
            return False
        df = {str(p.get("name")): p.get("stats", {})
              for p in (self._get("df") or {}).get("pools", [])}
        inputs = PoolCostInputs(info.pool_id, pool, kind, info.size,
                                float(df.get(pool, {}).get("stored", 0) or 0),
                                int(getattr(info, "pg_num", 0) or 0),
                                target_urgent_share(maps.regions, info.size))
        needed = MODELS[kind].cost(inputs, cap, DEFAULT_READ_FRACTION).urgent_bytes_needed
        needed += sum(c.cost(kind).urgent_bytes_needed for c in self.costs.values()
                      if c.strategy == kind.value)
        return needed <= urgent_room(cap)

    def space_if_shared(self, pid: int) -> tuple[int, float] | None:
        """The urgent OSD the pool's sharing alone would fill most, and how full."""
        cost, maps = self.costs.get(pid), self._maps
        if cost is None or maps is None or pid not in maps.view.pools:
            return None
        used, size, weights = self._urgent_space
        needed = 0.0 if pid in self._shared else \
            cost.cost(Strategy(cost.strategy)).urgent_bytes_needed
        added = spread_bytes(needed, weights, self.slots.mapped.get(pid),
                             maps.view.pools[pid].pg_num)
        return fullest_if_added(used, size, added)

    @property
    def off_isolated(self) -> frozenset[int]:
        """The normal pools off their isolated placement at the last refresh."""
        return frozenset(self._shared)

    @property
    def maps(self) -> MapSnapshot | None:
        return self._maps

    def render(self) -> str:
        """The cost table of `sla plan` / `sla advise`."""
        return cost_report.render(self)

    def report(self) -> list[dict[str, Any]]:
        return cost_report.report(self)
