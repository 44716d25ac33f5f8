"""One tick of the module as one pure step: `plan_tick(TickInputs) -> TickPlan`.

The module gathers the inputs from the mgr, calls this, and applies the
plan (rule changes, a switch record, health); the policy simulation
(bench/sim/model.py) calls the same function, so the two cannot drift.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from .decision import DecisionState, Mode, ModeDecision, Thresholds, decide, held
from .gates import ClusterHealth, Gate, GateName, shared_gates
from .isolation_load import IsolationLoad, hold
from .latency import Slo
from .state import PoolRole, PoolTarget, Role


@dataclass(frozen=True)
class PoolNow:
    """A managed pool as the OSD map shows it now, and what its strategy
    wants it to be in each mode (a mode without a target leaves it alone)."""

    pool_id: int
    name: str
    role: PoolRole
    rule: str  # the name of the rule it is on
    size: int = 0
    targets: Mapping[Mode, PoolTarget] = field(default_factory=dict)
    min_size: int = 0
    pg_num: int = 0


@dataclass(frozen=True)
class TickInputs:
    now: float
    state: DecisionState
    urgent_iops: float | None
    thresholds: Thresholds
    min_dwell_secs: float
    health: ClusterHealth
    max_misplaced_ratio: float
    pinned: Mode | None = None
    isolating: bool = False  # a switch to isolated is still moving data
    dry_run: bool = False
    sustain_secs: float = 0.0  # urgent IOPS at or above high this long before isolating
    urgent_latency_ms: float | None = None  # the worst urgent pool, at the SLO percentile
    slo: Slo | None = None
    pools: Sequence[PoolNow] = ()
    blocked_before: frozenset[str] = frozenset()  # gate names that blocked last tick
    # normal pools the admission keeps isolated in shared mode (core/admission.py)
    keep_isolated: frozenset[int] = frozenset()
    # pools the module sends back for what their sharing caused
    # (core/sharing_check.py): isolated at once, whatever any gate says
    sent_back: frozenset[int] = frozenset()
    # a switch to shared in steps: at most max_step_pgs PGs a step (0: one
    # step), the next no sooner than step_wait_secs after the last one, and
    # only once the last step's PGs reported active after its own OSD map epoch
    max_step_pgs: int = 0
    step_wait_secs: float = 0.0
    last_step_at: float | None = None  # when the last step toward shared went out
    last_step_settled: bool = True
    # pools whose size or min_size an operator set and the module did not take
    # (core/by_hand.py): isolated, their size and min_size left as they are
    hands_off: frozenset[int] = frozenset()
    # what isolating brings back to each normal OSD (core/isolation_load.py):
    # a pool whose isolation would take one past its hard PG limit is held
    isolation: IsolationLoad | None = None


@dataclass(frozen=True)
class PoolChange:
    """What one pool must become: its rule, and for copy pools its size and
    min_size (a size change resets min_size; a failover or a failed command
    between the two would leave it so: it converges every tick)."""

    pool_id: int
    pool: str
    role: PoolRole
    from_rule: str
    to_rule: str
    from_size: int
    to_size: int | None  # None: the size stays as it is
    toward_shared: bool  # the change lets normal data onto the urgent region
    from_min_size: int = 0
    to_min_size: int | None = None  # None: the min_size stays as it is

    @property
    def rule_changes(self) -> bool:
        return self.from_rule != self.to_rule

    @property
    def size_changes(self) -> bool:
        return self.to_size is not None and self.to_size != self.from_size

    @property
    def min_size_changes(self) -> bool:
        return self.to_min_size is not None and self.to_min_size != self.from_min_size

    @property
    def drops_a_copy(self) -> bool:
        """A copy pool letting its urgent copy go: no data moves, no normal copy
        changes; the PGs re-peer on the N normal copies they had all along."""
        return self.to_size is not None and self.to_size < self.from_size


@dataclass(frozen=True)
class TickPlan:
    decision: ModeDecision
    state: DecisionState  # what to keep for the next tick
    switch: bool  # a switch is decided and goes ahead (record it)
    gates: tuple[Gate, ...]  # everything blocking now, switch and convergence alike
    pool_changes: tuple[PoolChange, ...]
    newly_blocked: tuple[str, ...]  # gate names to count once per blocked episode
    waiting: tuple[str, ...] = ()  # pools left for the next step toward shared
    holds: tuple[Gate, ...] = ()  # what would hold a switch to the other mode now
    # pools held on their shared placement: isolating them would take a normal
    # OSD past its hard PG limit (pool -> why)
    held: Mapping[int, str] = field(default_factory=dict)


def _changes(pools: Sequence[PoolNow], mode: Mode, keep_isolated: frozenset[int],
             hands_off: frozenset[int] = frozenset()) -> list[PoolChange]:
    out = []
    for pool in sorted(pools, key=lambda p: p.pool_id):
        pool_mode = Mode.ISOLATED if pool.pool_id in keep_isolated else mode
        target = pool.targets.get(pool_mode)
        if target is None:
            continue
        if pool.pool_id in hands_off:  # the operator's: no silent undo, no fight
            target = replace(target, size=None, min_size=None)
        # only a rule or a size lets normal data onto the urgent region
        moves = target.rule != pool.rule or target.size not in (None, pool.size)
        change = PoolChange(pool.pool_id, pool.name, pool.role, pool.rule, target.rule,
                            pool.size, target.size,
                            moves and pool.role.role is Role.NORMAL and pool_mode is Mode.SHARED,
                            pool.min_size, target.min_size if pool.min_size else None)
        if change.rule_changes or change.size_changes or change.min_size_changes:
            out.append(change)
    return out


def _paced(toward: Sequence[PoolChange], pools: Sequence[PoolNow], inputs: TickInputs
           ) -> tuple[list[PoolChange], tuple[str, ...]]:
    """The changes toward shared of this step, and the pools left for later ones.

    Every change toward shared starts a new interval for all PGs of its pool
    at once (peering, client ops resent); a step takes pools in order until
    max_step_pgs, and comes step_wait_secs after the last one at the
    earliest, once the last step's PGs reported active after its epoch."""
    if not toward or inputs.max_step_pgs <= 0:
        return list(toward), ()
    if inputs.last_step_at is not None and (
            inputs.now - inputs.last_step_at < inputs.step_wait_secs
            or not inputs.last_step_settled):
        return [], tuple(c.pool for c in toward)
    pgs = {p.pool_id: p.pg_num for p in pools}
    step: list[PoolChange] = []
    total = 0
    for change in toward:
        n = pgs.get(change.pool_id, 0)
        if step and total + n > inputs.max_step_pgs:
            break
        step.append(change)
        total += n
    return step, tuple(c.pool for c in toward[len(step):])


def _isolation_gates(change: PoolChange, inputs: TickInputs) -> list[Gate]:
    """What holds one change that is not toward shared: only what concerns
    that pool. A pool sent back, or a copy pool dropping its extra copy (the
    PGs re-peer on the normal copies they had all along), never waits; a rule
    change waits for its own rule to exist and, for a pool moving data, for
    its own PGs to be active (a rule change while they peer could leave a PG
    with no acting set), unless what peers is the module's own switch to
    shared, which isolation cancels."""
    health = inputs.health
    if change.pool_id in inputs.sent_back or change.drops_a_copy:
        return []
    gates = []
    if change.rule_changes and change.to_rule in health.missing_rules:
        gates.append(Gate(GateName.RULES_MISSING, f"CRUSH rule {change.to_rule} missing for "
                          f"pool {change.pool} (run 'ceph sla rules apply')"))
    inactive = health.inactive_by_pool.get(change.pool_id, 0)
    if change.rule_changes and inactive and not (
            health.own_move_in_flight and not health.down_osds):
        gates.append(Gate(GateName.PGS_INACTIVE,
                          f"{inactive} PGs of pool {change.pool} inactive"))
    return gates


def _gated(changes: Sequence[PoolChange], inputs: TickInputs, mode: Mode,
           keep: frozenset[int]
           ) -> tuple[list[PoolChange], list[PoolChange], list[Gate], dict[int, str]]:
    """(the changes that may go, the ones toward shared held back, the gates,
    the pools held on their shared placement): toward shared all wait for the
    shared gates; every other change only for its own (_isolation_gates,
    _kept_shared)."""
    toward = [c for c in changes if c.toward_shared]
    gates: list[Gate] = []
    go: list[PoolChange] = []
    for change in changes:
        if change.toward_shared:
            continue
        own = _isolation_gates(change, inputs)
        gates += own
        if not own:
            go.append(change)
    go, kept = _kept_shared(go, changes, inputs, lambda p: mode is Mode.ISOLATED or p in keep)
    if kept:
        names = ", ".join(c.pool for c in changes if c.pool_id in kept)
        gates.append(Gate(GateName.NORMAL_PG_LIMIT, (
            f"pools {names} held on their shared placement: isolating them would take a "
            "normal OSD past the most PGs it holds (SLA_ISOLATION_PG_LIMIT names each)")))
    if toward:
        shared = shared_gates(inputs.health, inputs.max_misplaced_ratio)
        if shared:
            return go, toward, list(_merge(shared, gates)), kept
    return go + toward, [], list(_merge(gates)), kept


def _kept_shared(go: list[PoolChange], changes: Sequence[PoolChange], inputs: TickInputs,
                 isolated: Callable[[int], bool]) -> tuple[list[PoolChange], dict[int, str]]:
    """The changes that go, less the isolations held (pool -> why): a pool's
    change off the urgent OSDs that would take a normal OSD past its hard PG
    limit, taken on top of the pools whose pairs go anyway (their mode is
    isolated and their rule already is: no change)."""
    load = inputs.isolation
    if load is None or not load.returning:
        return go, {}
    isolating = [c.pool_id for c in go if not c.toward_shared and c.pool_id in load.returning]
    if not isolating:
        return go, {}
    changing = {c.pool_id for c in changes}
    committed = [p.pool_id for p in inputs.pools if p.pool_id in load.returning
                 and p.pool_id not in changing and isolated(p.pool_id)]
    kept = hold(load, isolating, committed)
    return [c for c in go if c.pool_id not in kept], kept


def _merge(*lists: Sequence[Gate]) -> tuple[Gate, ...]:
    seen: dict[str, Gate] = {}
    for gates in lists:
        for gate in gates:
            seen.setdefault(gate.name.value, gate)
    return tuple(seen.values())


def plan_tick(inputs: TickInputs) -> TickPlan:
    """Decide the mode, gate the switch, and say which pools change rule or size.

    Pools converge to the mode in force even while a switch away from it is
    blocked (a new urgent pool still goes to its own region). A switch to
    isolated protects the SLA: it is never held; each pool's change is held
    only by what concerns that pool (_isolation_gates), never by another
    pool, by a change toward shared, or by a rule it does not need; a pool
    whose isolation would take a normal OSD past its hard PG limit stays on
    its shared placement (_kept_shared: a PG withheld is I/O that hangs)."""
    decision = decide(inputs.state, inputs.urgent_iops, inputs.now, inputs.thresholds,
                      inputs.min_dwell_secs, inputs.pinned, inputs.isolating,
                      inputs.sustain_secs, inputs.urgent_latency_ms, inputs.slo)
    switch_gates: list[Gate] = []
    state = decision.state
    switch = decision.switch
    if decision.switch and decision.target is Mode.SHARED:
        switch_gates = shared_gates(inputs.health, inputs.max_misplaced_ratio)
        if switch_gates:
            state = held(decision, inputs.state)
            switch = False
    keep = inputs.keep_isolated | inputs.sent_back | inputs.hands_off
    changes: list[PoolChange] = []
    change_gates: list[Gate] = []
    waiting: tuple[str, ...] = ()
    kept: dict[int, str] = {}
    if not inputs.dry_run:
        go, held_back, change_gates, kept = _gated(
            _changes(inputs.pools, state.mode, keep, inputs.hands_off), inputs, state.mode,
            keep)
        rest = [c for c in go if not c.toward_shared]
        step, later = _paced([c for c in go if c.toward_shared], inputs.pools, inputs)
        changes = rest + step
        waiting = tuple(c.pool for c in held_back) + later
    _, _, holds, _ = _gated(_changes(inputs.pools, state.mode.other(), keep,
                                     inputs.hands_off), inputs, state.mode.other(), keep)
    if state.mode.other() is Mode.SHARED and not holds:
        holds = list(shared_gates(inputs.health, inputs.max_misplaced_ratio))
    gates = _merge(switch_gates, change_gates)
    newly = tuple(sorted(g.name.value for g in gates
                         if g.name.value not in inputs.blocked_before))
    return TickPlan(decision, state, switch, gates, tuple(changes), newly, waiting,
                    tuple(holds), kept)
