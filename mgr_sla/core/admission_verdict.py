"""One strategy for one pool, on top of the pools admitted before it: what
it costs, what it is expected to gain, and what blocks it (each with the
sentence an operator reads). `UrgentLoad` is what the admitted pools put on
each urgent OSD: PGs (at the peak of the switch, strays included) and bytes.
Pure; the admission (admission.py) runs it for every pool and strategy."""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from .admission_facts import BASES, AdmissionFacts, NormalPool, Placement
from .decision import Mode
from .gain import ExpectedGain
from .models.registry import MODELS, with_strategy
from .mon_projection import SizeRaise, size_refusals
from .pg_slots import SlotCheck, SlotLoad, spread
from .state import Strategy
from .strategy_choice import StrategyOption
from .switch_cost import SwitchCost
from .wear import write_budget


@dataclass(frozen=True)
class StrategyVerdict:
    """One strategy for one pool: its cost, expected gain, what blocks it,
    and the worst urgent OSD with it shared."""

    strategy: str
    cost: SwitchCost
    gain: ExpectedGain
    blocked: str | None = None
    slots: SlotCheck | None = None  # the worst urgent OSD's PGs with it shared
    space: tuple[int, float] | None = None  # the fullest urgent OSD with it shared
    basis: str = ""  # what its placement was projected from (admission_facts.BASES)
    pgs_per_osd: Mapping[int, int] = field(default_factory=dict)  # the pool's own

    def option(self) -> StrategyOption:
        return StrategyOption(self.strategy, self.gain, self.blocked, self.cost.bytes_to_shared)


class UrgentLoad:
    """What the pools admitted so far put on each urgent OSD: PGs (a SlotLoad:
    each candidate is checked as a delta, in two passes over the OSDs) and
    bytes (the fullest OSD kept as pools are admitted: bytes only grow)."""

    def __init__(self, facts: AdmissionFacts) -> None:
        self.urgent = facts.urgent
        base: dict[int, int] = {o: u.pgs or 0 for o, u in facts.urgent.items()}
        # the live PGs of the pools on their shared placement leave the base:
        # each brings them back as it is admitted (its placement is its target).
        # A pool between placements keeps them: they stay there as strays
        # until its PGs have moved, while the new ones arrive (the peak).
        for pool in facts.pools:
            if pool.placement is Placement.SHARED:
                for osd, n in pool.live.items():
                    if osd in base:
                        base[osd] = max(0, base[osd] - n)
        self.slots = SlotLoad(base, facts.urgent)
        self.bytes: dict[int, float] = {o: u.used_bytes for o, u in facts.urgent.items()}
        self.sizes = {o: u.total_bytes for o, u in facts.urgent.items() if u.total_bytes > 0}
        self.fullest = max(((self.bytes[o] / size, -o) for o, size in self.sizes.items()),
                           default=None)
        self.unreported = tuple(sorted(o for o, u in facts.urgent.items() if u.pgs is None))
        self.budget = write_budget(list(facts.history), facts.now,
                                   facts.settings.max_urgent_drive_writes,
                                   facts.capacity.urgent_total_bytes)
        self.budget_left = self.budget.left
        self.raises: list[SizeRaise] = []  # the size raises admitted, for the mon's projection
        self.unlimited = tuple(sorted(o for o, u in facts.urgent.items() if u.limit is None))

    def fullest_with(self, pgs: Mapping[int, int], bytes_per_pg: float, placed: bool
                     ) -> tuple[int, float] | None:
        """The fullest urgent OSD with the pool's bytes added (none if placed)."""
        best = self.fullest
        if not placed:
            for osd, n in pgs.items():
                if osd in self.sizes:
                    best = max(best or (0.0, 0), ((self.bytes[osd] + n * bytes_per_pg)
                                                  / self.sizes[osd], -osd))
        return None if best is None else (-best[1], best[0])

    def admit(self, pool: NormalPool, mine: StrategyVerdict, sharing: bool,
              facts: AdmissionFacts) -> None:
        """The pool shares: its PGs, bytes, writes and size raise count for the next."""
        self.slots.add(mine.pgs_per_osd)
        if not sharing:
            per_pg = bytes_per_pg(pool)
            for osd, n in mine.pgs_per_osd.items():
                if osd in self.bytes:
                    self.bytes[osd] += n * per_pg
                    if osd in self.sizes:
                        fill = (self.bytes[osd] / self.sizes[osd], -osd)
                        self.fullest = max(self.fullest or fill, fill)
            self.budget_left -= mine.cost.bytes_to_shared
            step = size_raise(pool, pool.role.strategy, facts)
            if step is not None:
                self.raises.append(step)


def bytes_per_pg(pool: NormalPool) -> float:
    """What one copy of a PG holds: a replica, or one shard (1/k) of an EC PG."""
    info = pool.info
    return pool.stored_bytes / info.pg_num / info.pieces_per_object if info.pg_num else 0.0


def _projection(pool: NormalPool, kind: Strategy, facts: AdmissionFacts
                ) -> tuple[dict[int, int], str]:
    """The pool's PGs per urgent OSD once shared by `kind`: its mapping when
    known, else an estimate by weight with a margin."""
    known = pool.projections.get(kind.value)
    if known is not None:
        return {o: n for o, n in known.pgs.items() if o in facts.urgent}, known.basis
    inputs = pool.cost_inputs()
    return spread(MODELS[kind].urgent_replicas(inputs), facts.urgent), "estimate"


def verdict(pool: NormalPool, kind: Strategy, cost: SwitchCost, gain: ExpectedGain,
            facts: AdmissionFacts, load: UrgentLoad, sharing: bool) -> StrategyVerdict:
    """What blocks `kind` for the pool, on top of the pools admitted so far."""
    s = facts.settings
    on_it = sharing and kind is pool.role.strategy
    pgs, basis = _projection(pool, kind, facts)
    slots = load.slots.check(pgs)
    space = load.fullest_with(pgs, bytes_per_pg(pool), on_it)
    blocked = MODELS[kind].refusal(pool.isolated_info)
    if blocked is None and cost.time_to_isolation_secs > s.max_isolation_secs:
        blocked = (f"isolating it again would take {cost.time_to_isolation_secs:g} s "
                   f"({cost.time_to_isolation_basis}) > max_isolation_secs "
                   f"{s.max_isolation_secs:g}")
    if blocked is None and not on_it:
        blocked = _not_installed(pool, kind, facts)
    if blocked is None and not on_it:
        blocked = _mon_refusal(pool, kind, facts, load.raises)
    if blocked is None and not on_it:
        blocked = _unknown(load.unreported, "no PG count reported") \
            or _unknown(load.unlimited, "the PG limit not read yet")
    if blocked is None and slots is not None and slots.over:
        blocked = slots.reason(f"sharing it by {kind.value}", BASES[basis])
    if blocked is None and not on_it and space is not None \
            and space[1] > facts.capacity.nearfull_ratio:
        blocked = (f"sharing it by {kind.value} would fill osd.{space[0]} of the urgent "
                   f"region to {space[1]:.0%} ({BASES[basis]}), past nearfull_ratio "
                   f"{facts.capacity.nearfull_ratio:.0%}")
    if blocked is None and not sharing and facts.pinned is not Mode.SHARED \
            and cost.bytes_to_shared > load.budget_left:
        blocked = _over_budget(cost.bytes_to_shared, load)
    return StrategyVerdict(kind.value, cost, gain, blocked, slots, space, basis, pgs)


def _unknown(osds: Sequence[int], what: str) -> str | None:
    """No count is not zero PGs, no limit read is not no limit: nothing is
    proved to fit, so no pool shares anew."""
    if not osds:
        return None
    more = len(osds) - 1
    return (f"{what} for osd.{osds[0]}{f' and {more} more urgent OSDs' if more else ''}: "
            "the PG limit cannot be checked")


def _not_installed(pool: NormalPool, kind: Strategy, facts: AdmissionFacts) -> str | None:
    role = with_strategy(pool.role, kind, pool.isolated_info) if pool.role.auto else pool.role
    need = MODELS[kind].needs(role)
    missing = [r for r in need.rules if r not in facts.rules]
    if need.weight_set and not pool.has_weight_set:
        missing.append("the pool's weight set")
    if missing:
        return f"{', '.join(missing)} not installed ('ceph sla rules apply')"
    return None


def size_raise(pool: NormalPool, kind: Strategy, facts: AdmissionFacts) -> SizeRaise | None:
    role = with_strategy(pool.role, kind, pool.isolated_info) if pool.role.auto else pool.role
    goal = MODELS[kind].target(role, Mode.SHARED)
    rule_id = facts.mon.rule_ids.get(goal.rule)
    if goal.size is None or goal.size <= pool.info.size or rule_id is None:
        return None
    return SizeRaise(pool.pool_id, pool.name, goal.size, rule_id)


def _mon_refusal(pool: NormalPool, kind: Strategy, facts: AdmissionFacts,
                 raises: Sequence[SizeRaise]) -> str | None:
    """The mon's own projection on the size raise, after the raises admitted
    before it (taken in the order the tick sends them)."""
    mon = facts.mon
    step = size_raise(pool, kind, facts)
    if step is None or mon.limit is None:
        return None
    refused = size_refusals(list(mon.pools), [*raises, step], mon.limit, mon.in_osds,
                            lambda rule: mon.osds_under.get(rule, mon.in_osds), mon.release,
                            mon.domain_osds)
    return refused.get(pool.pool_id)


def _over_budget(needed: float, load: UrgentLoad) -> str:
    budget, left = load.budget, load.budget_left
    return (f"sharing it would write {needed / 2**30:.1f} GiB to the urgent OSDs; the "
            f"switches of the last 24 h wrote {budget.written / 2**30:.1f} GiB of the "
            f"{budget.budget / 2**30:.1f} GiB a day max_urgent_drive_writes allows"
            + ("" if left >= budget.left else
               f" ({left / 2**30:.1f} GiB left after the pools that gain more)"))


