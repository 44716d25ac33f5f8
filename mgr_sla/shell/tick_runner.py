"""One tick in five steps: measure (read the mgr), plan (the pure step,
tick.plan_tick), act (mon commands), track (the switch under way), persist
(the mon store, outside the status lock; health). The tick runs under the
store's act lock (Module.tick); it takes the status lock once in each of
measure, plan and track, never across a mon round trip.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from ..core.cluster import moving_pools
from ..core.decision import DecisionState, Mode, ThresholdError, Thresholds
from ..core.gain import is_loss
from ..core.gates import (
    ClusterHealth,
    Gate,
    PgCounts,
    all_settled,
    inactive_by_pool,
    pg_counts,
    pg_total,
    pool_pg_states,
    switch_blocked_check,
)
from ..core.health import HealthChecks
from ..core.maps import MapSnapshot
from ..core.models.registry import targets, weight_set_pools
from ..core.settings import Settings
from ..core.state import ModuleState, PoolRole, Role, StepRecord, SwitchRecord
from ..core.tick import PoolChange, PoolNow, TickInputs, TickPlan, plan_tick
from ..placement.placer import Placer
from . import config_warnings
from .admission_step import AdmissionStep
from .advice_commands import USAGE_KEY, Advisor
from .balancer_guard import BalancerGuard
from .hand_sizes import HandSizes
from .map_reader import MapReader
from .mgr_port import MgrPort
from .pool_activity import PoolActivity
from .rules_verifier import RulesVerifier, rules_needed
from .state_store import StateStore, StateText
from .switch_tracker import SwitchTracker


@dataclass(frozen=True)
class Measured:
    """What the measure step read, for the steps after it."""

    now: float
    settings: Settings
    maps: MapSnapshot
    state: ModuleState  # the live record: read and written under the status lock
    roles: dict[int, PoolRole]  # the managed pools as of this tick (a copy)
    summary: dict[str, Any] | None  # pg_summary, unless every PG is active+clean
    periods: Any  # the perf query's periods, or None (then df's counters)
    df: dict[str, Any] | None


@dataclass(frozen=True)
class Collaborators:
    store: StateStore
    maps: MapReader
    activity: PoolActivity
    tracker: SwitchTracker
    rules: RulesVerifier
    placer: Placer
    admission: AdmissionStep
    advisor: Advisor
    health: HealthChecks
    balancer: BalancerGuard


class TickRunner:
    def __init__(self, mgr: MgrPort, parts: Collaborators,
                 settings: Callable[[], Settings]) -> None:
        self._mgr = mgr
        self._settings = settings
        self._store = parts.store
        self._maps = parts.maps
        self._activity = parts.activity
        self._tracker = parts.tracker
        self._rules = parts.rules
        self._placer = parts.placer
        self._admission = parts.admission
        self._advisor = parts.advisor
        self._health = parts.health
        self._balancer = parts.balancer
        self._hands = HandSizes(mgr, parts.health)  # an operator's size or min_size
        self.gates: list[Gate] = []  # what blocks a decided switch (or a pool's change)
        self.holds: list[Gate] = []  # what would block a switch to the other mode now
        self.urgent_iops: float | None = None
        self.dry_decision: DecisionState | None = None  # the dry run's own decision
        self._pg_status: dict[str, Any] = {}
        self._pgs = PgCounts()
        self._by_design = 0  # of those degraded: copies sharing adds, not yet placed
        self._inactive: dict[int, int] = {}  # managed pools' PGs not active
        self._seen: ModuleState | None = None  # this tick's copy of the state
        self._step: StepRecord | None = None  # this tick's step toward shared
        self._settled = True  # the last step's PGs reported active after its epoch
        self.waiting: tuple[str, ...] = ()  # pools left for the next step toward shared

    def run(self, now: float) -> None:
        seen = self._measure(now)
        plan, ahead = self._plan_step(seen)
        # a switch (or a size set) is on record before its first command: a mgr
        # that takes over mid-switch carries it on instead of switching back;
        # the tick's one write of the state (the rest waits for the next tick)
        self._store.write(ahead)
        failed, applied, maps = self._act(seen, plan)
        saved, usage = self._track_step(seen, maps, plan, failed, applied, ahead is None)
        self._persist(saved, usage)

    def watch(self, now: float) -> None:
        """The tick while the monitors are silent: measure, publish; decide, send, save nothing."""
        with self._store.lock:
            self._fold(self._measure(now, reads_only=True))
        self._mgr.set_health_checks(self.health_checks())

    # ---- measure -------------------------------------------------------------
    def _measure(self, now: float, reads_only: bool = False) -> Measured:
        """What the mgr holds now; the managed pools' roles as of this tick.
        Per-pool rates are read for the managed pools only (at 1,000 pools
        the others would cost a thousand samples a tick for nothing)."""
        settings = self._settings()
        maps = self._maps.current(now, settings.region_spec())
        self._pg_status = self._mgr.get("pg_status")
        summary = None if all_settled(self._pg_status) else self._mgr.get("pg_summary")
        with self._store.lock:
            state = self._store.state()
            for pool_id in state.forget_pools(maps.view.pools):
                self._mgr.log.info("sla: pool %d no longer exists; forgetting its role", pool_id)
            self._hands.judge(now, state, maps)  # before all else: the roles as they now are
            roles = dict(state.roles)
            seen = self._seen = state.snapshot()
        periods = self._activity.read(frozenset(roles))
        df = None if periods is not None else self._mgr.get("df")
        if reads_only:  # nothing below while the monitors are silent (watch)
            return Measured(now, settings, maps, state, roles, summary, periods, df)
        self._admission.refresh(now, seen, maps, settings)
        if settings.active and not settings.dry_run:
            # auto pools whose choice held take it (a role change, nothing sent)
            roles = self._admission.settle(now, self._store, state, seen, maps,
                                           settings) or roles
        # the check after the fact: pools whose sharing Ceph did not take go back
        self._admission.send_back(now, self._store, state, seen, maps, summary)
        self._settled = self._admission.step_settled(seen, now)  # the last step's PGs
        config_warnings.warn_positional(self._health, maps)
        config_warnings.warn_stats_period(self._health, self._mgr)
        self._balancer.guard_roles(roles, maps.view)
        return Measured(now, settings, maps, state, roles, summary, periods, df)

    def _fold(self, seen: Measured) -> None:
        """The reads into the rate and latency windows (status and scrapes read them)."""
        managed = frozenset(seen.roles)
        urgent = sorted(p for p, r in seen.roles.items() if r.role is Role.URGENT)
        settings = seen.settings
        if seen.periods is None:
            self._activity.measure_df(seen.now, seen.df or {}, managed, seen.summary,
                                      settings.rate_window_secs)
            self.urgent_iops = self._activity.total_rate(urgent)
            return
        self._activity.measure(seen.now, seen.periods, managed, urgent, settings.slo(),
                               settings.rate_window_secs, settings.slo_window_secs)
        self.urgent_iops = self._activity.total_rate(urgent)
        # latency per op (the perf query only): the gain of sharing each normal pool
        self._admission.fold(seen.now, seen.periods, seen.roles, self.urgent_iops, settings,
                             moving_pools((seen.summary or {}).get("by_pool")),
                             seen.state.decision.mode is Mode.SHARED)

    # ---- plan ----------------------------------------------------------------
    def _plan_step(self, seen: Measured) -> tuple[TickPlan | None, StateText | None]:
        """The plan, its decision recorded; the state to write ahead (a switch, a size set)."""
        with self._store.lock:
            self._fold(seen)
            plan = self._plan(seen.state, seen.maps, seen.summary, seen.now)
            if plan is None:
                return None, None
            self._record_plan(seen.state, plan, seen.maps.view.epoch, seen.now)
            sizes = self._hands.intend(seen.state, plan.pool_changes)  # on record first too
            if plan.switch or sizes:
                self._store.mark_dirty()
            return plan, self._store.take() if plan.switch or sizes else None

    def _plan(self, state: ModuleState, maps: MapSnapshot, summary: dict[str, Any] | None,
              now: float) -> TickPlan | None:
        """The pure step's inputs and its plan; None when the module only
        measures ('ceph sla off', or thresholds invalid)."""
        # The gates look at the PGs of the managed pools only: an inactive
        # PG in a pool the module does not move must not hold a switch.
        self._pgs = PgCounts(total=pg_total(self._pg_status)) if summary is None \
            else pg_counts(pool_pg_states(summary, state.roles))
        self._inactive = {} if summary is None else inactive_by_pool(summary, state.roles)
        self._by_design = 0 if summary is None else pg_counts(pool_pg_states(
            summary, self._admission.placing_by_design())).degraded
        try:
            thresholds = self._settings().thresholds()
            self._health.clear("SLA_CONFIG_INVALID")
        except ThresholdError as e:
            self._health.set("SLA_CONFIG_INVALID", f"sla thresholds invalid: {e}", [str(e)])
            return None
        health = self._health_snapshot(state, maps, now)
        plan = plan_tick(self._tick_inputs(state, maps, thresholds, health, now))
        self.holds = list(plan.holds)
        active = self._settings().active  # 'ceph sla off': measure and report, change nothing
        self._admission.isolation.hold(plan.held if active else {})
        return plan if active else None

    def _tick_inputs(self, state: ModuleState, maps: MapSnapshot, thresholds: Thresholds,
                     health: ClusterHealth, now: float) -> TickInputs:
        settings = self._settings()
        # A dry run decides on a shadow of the decision state: the real mode,
        # and so the pools, stay as they are; when it ends, the module carries
        # on from the real state with real switch records.
        if not settings.dry_run or self.dry_decision is None:
            self.dry_decision = state.decision
        view = maps.view
        return TickInputs(
            now=now, state=self.dry_decision if settings.dry_run else state.decision,
            urgent_iops=self.urgent_iops, thresholds=thresholds,
            min_dwell_secs=settings.min_dwell_secs, health=health,
            max_misplaced_ratio=self.max_misplaced(), pinned=state.pinned,
            isolating=self._tracker.isolating, dry_run=settings.dry_run,
            sustain_secs=settings.sustain_secs,
            urgent_latency_ms=self._activity.urgent_latency_ms(), slo=settings.slo(),
            pools=[PoolNow(p, view.pools[p].name, role, view.rule_name(view.pools[p].rule_id),
                           view.pools[p].size, targets(role), view.pools[p].min_size,
                           view.pools[p].pg_num)
                   for p, role in sorted(state.roles.items()) if p in view.pools],
            blocked_before=frozenset(g.name.value for g in self.gates),
            keep_isolated=frozenset(admission.kept if (admission := self._admission.admission)
                                    else ()),
            sent_back=frozenset(state.sent_back), hands_off=self._hands.hands_off(state),
            max_step_pgs=settings.max_step_pgs, step_wait_secs=settings.step_wait_secs,
            last_step_at=state.last_step.at if state.last_step else None,
            last_step_settled=self._settled, isolation=self._admission.isolation.load)

    def _record_plan(self, state: ModuleState, plan: TickPlan, epoch: int, now: float) -> None:
        """The plan's decision into the state (or the dry run's shadow), its
        switch recorded, newly blocked gates counted."""
        dry_run = self._settings().dry_run
        decided_from = self.dry_decision if dry_run else state.decision
        if (decided_from is not None and decided_from.high_since is None
                and plan.state.high_since is not None and not plan.switch):
            self._mgr.log.info("sla: %s", plan.decision.reason)  # the sustain time starts
        if plan.switch and decided_from is not None:
            self._switch(state, SwitchRecord(now, decided_from.mode.value,
                                             plan.decision.target.value,
                                             plan.decision.reason, dry_run=dry_run), epoch)
            if not dry_run:  # a new period: the admission decides afresh
                state.sent_back.clear()
                state.last_step = None
        if dry_run:
            self.dry_decision = plan.state
        else:
            state.decision = plan.state
        for name in plan.newly_blocked:
            state.blocked_total[name] = state.blocked_total.get(name, 0) + 1

    def _switch(self, state: ModuleState, record: SwitchRecord, epoch: int) -> None:
        """Record a decided switch and start watching it. `epoch` is the map
        it was decided on: the record's epoch until a command changes the map."""
        record.epoch = epoch
        if record.to_mode == Mode.ISOLATED.value and self._admission.admission is not None:
            record.bytes_to_isolate = sum(
                p.verdict().cost.bytes_to_isolated
                for p in self._admission.admission.pools.values() if p.sharing)
        state.record_switch(record)
        verb = "would switch" if record.dry_run else "switching"
        message = (f"sla: {verb} normal pools {record.from_mode} -> {record.to_mode}: "
                   f"{record.reason}")
        self._mgr.log.info(message)
        self._mgr.cluster_log(message)
        if record.dry_run:
            return
        self._placer.cancel_sends()
        osdmap = self._mgr.get_osdmap()
        before: dict[str, list[int]] = {}
        for pool_id in state.pools(role=Role.NORMAL):
            before.update(osdmap.map_pool_pgs_up(pool_id))
        self._tracker.start(record, before)

    # ---- act -----------------------------------------------------------------
    def _act(self, seen: Measured, plan: TickPlan | None
             ) -> tuple[list[Gate], list[PoolChange], MapSnapshot]:
        """The plan's pool changes, then each pool's placement on the maps as
        they are after them; mon round trips only, no status lock."""
        self.waiting = plan.waiting if plan is not None else ()  # seen with the step taken
        if plan is not None and any(not c.toward_shared for c in plan.pool_changes):
            self._placer.finish_sends()
        failed, applied = self._apply(plan.pool_changes) if plan is not None else ([], [])
        stepped = tuple(c.pool_id for c in applied if c.toward_shared)
        # the next step toward shared waits for these pools' PGs (recorded by track)
        self._step = StepRecord(seen.now, self._placer.current_epoch() or seen.maps.view.epoch,
                                stepped) if stepped else None
        maps = self._maps.current(seen.now, seen.settings.region_spec())
        self._place(seen.roles, maps, plan is not None and not seen.settings.dry_run)
        return failed, applied, maps

    def _apply(self, changes: Any) -> tuple[list[Gate], list[PoolChange]]:
        """The failures, and the changes the mon took."""
        if not changes:
            return [], []
        failed, applied = self._placer.apply(changes)
        if applied:
            self._maps.mark_dirty()
            epoch = self._placer.current_epoch()
            if epoch is not None:
                self._tracker.placed_at(epoch)
        return failed, applied

    def _place(self, roles: dict[int, PoolRole], maps: MapSnapshot, may_act: bool) -> None:
        pgs, misplaced = self._pgs, float(self._pg_status.get("misplaced_ratio", 0.0))
        # placing replicas on urgent OSDs moves data: as the balancer, only
        # with every PG active, none degraded, misplaced under the limit
        hold = bool(pgs.inactive or pgs.degraded or pgs.unknown
                    or misplaced > self.max_misplaced())
        batch = self._placer.check(roles, maps, may_act, hold, self._admission.isolation.held)
        if batch:
            self._placer.send(batch, self._tracker.placed_at, self._maps.mark_dirty)

    # ---- track and persist -----------------------------------------------------
    def _track_step(self, seen: Measured, maps: MapSnapshot, plan: TickPlan | None,
                    failed: list[Gate], applied: list[PoolChange], write: bool
                    ) -> tuple[StateText | None, str | None]:
        """The gates and the switch under way, the pools the mon took toward
        shared in the urgent write budget (one it refused wrote nothing
        there); the state (unless written ahead) and usage to write."""
        state = seen.state
        refused = [c for c in (plan.pool_changes if plan is not None else ())
                   if c.drops_a_copy and c not in applied]
        self._admission.copy_locked({c.pool_id: "; ".join(g.detail for g in failed)
                                     for c in refused}, maps)
        with self._store.lock:
            self._admission.count_sharing(state, applied)
            faults = [f"pool {maps.view.pools[p].name if p in maps.view.pools else p}: {why}"
                      for p, why in sorted(state.sent_back.items()) if not is_loss(why)]
            self._health.update("SLA_SHARING_FAULT", faults, f"{len(faults)} normal pools "
                                "sent back to isolated for what sharing them caused")
            if self._step is not None:
                state.last_step = self._step
            elif plan is not None and not plan.waiting and self._settled:
                state.last_step = None  # the step's PGs all reported: no PG scan for it
            self.gates = (list(plan.gates) if plan is not None else []) + failed
            self._track(state, maps, seen.now)
            usage = self._advisor.record_usage(seen.now, self.urgent_iops if any(
                r.role is Role.URGENT for r in state.roles.values()) else None)
            self._store.mark_dirty()  # this tick's changes, whatever they were
            return self._store.take() if write else None, usage

    def _persist(self, saved: StateText | None, usage: str | None) -> None:
        self._store.write(saved)
        if usage is not None:
            self._mgr.set_store(USAGE_KEY, usage)
        self._admission.write_ledger()
        self._mgr.set_health_checks(self.health_checks())

    def _track(self, state: ModuleState, maps: MapSnapshot, now: float) -> None:
        held = self._admission.isolation.held  # shared on purpose: no isolation to wait for
        normal = [p for p in state.pools(role=Role.NORMAL) if p not in held]
        osdmap = self._mgr.get_osdmap()

        def after_up() -> dict[str, list[int]]:
            return {pg: up for p in normal for pg, up in osdmap.map_pool_pgs_up(p).items()}
        self._tracker.track(maps.view.epoch, normal,
                            maps.view.osds_of_class(self._settings().urgent_class), after_up,
                            bool(self._placer.pending), now)

    def _health_snapshot(self, state: ModuleState, maps: MapSnapshot, now: float
                         ) -> ClusterHealth:
        view, settings = maps.view, self._settings()
        classes = {settings.normal_class, settings.urgent_class}
        missing = tuple(r for r in rules_needed(state) if r not in view.rules)
        unverified = None
        weighted = weight_set_pools(state.roles)
        # the weight sets (R4/R5) serve only the pools that map through them; a
        # copy rule was verified on its pool's PGs when `pool set` installed
        # it, and carries no weights to drift
        if not missing and weighted:
            unverified = self._rules.unverified_reason(
                view, weighted, self._rules.options(settings, state, view))
        return ClusterHealth(
            pgs=self._pgs, misplaced_ratio=float(self._pg_status.get("misplaced_ratio", 0.0)),
            down_osds=tuple(o for o in view.down_in_osds if view.device_class.get(o) in classes),
            missing_rules=missing, unverified=unverified, flags=maps.flags,
            urgent_fill_after=(admission.urgent_fill_after
                               if (admission := self._admission.admission) else None),
            nearfull_ratio=maps.nearfull_ratio,
            switches_last_day=sum(1 for r in state.history
                                  if not r.dry_run and r.time >= now - 86400),
            max_switches_per_day=settings.max_switches_per_day,
            own_move_in_flight=bool(self._placer.pending) or self._tracker.sharing,
            degraded_by_design=self._by_design, inactive_by_pool=self._inactive)

    def max_misplaced(self) -> float:
        return config_warnings.max_misplaced(self._settings(), self._mgr)

    def health_checks(self) -> dict[str, Any]:
        return {**self._health.snapshot(), **switch_blocked_check(self.gates)}
