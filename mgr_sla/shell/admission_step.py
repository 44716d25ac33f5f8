"""The admission on the live module: the facts read (facts.py), the pure
decision (core/admission.py) and the check after the fact
(core/sharing_check.py) run, their one result published whole for the tick,
`pool set`, `plan`, `status` and the metrics, and the health checks that
come from them; with them, what isolating would do to the normal OSDs
(isolation_watch.py).
"""
from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

from ..core.activity import PoolPeriod
from ..core.admission import (
    Admission,
    AdmissionFacts,
    Placement,
    admit,
    choice_since,
    strategy_changes,
)
from ..core.cluster import PoolInfo
from ..core.decision import Mode, ThresholdError
from ..core.device_prior import devices_view
from ..core.gain import ISOLATED, KEPT, MOVING, GainLedger, is_loss
from ..core.health import HealthChecks
from ..core.maps import MapSnapshot
from ..core.models.registry import AUTO_ORDER, MODELS, auto_role
from ..core.settings import Settings
from ..core.sharing import placing_by_design, sharing_health
from ..core.sharing_check import (
    REPEER_EVERY_SECS,
    SharingNow,
    osd_faults,
    sharing_faults,
    to_repeer,
)
from ..core.state import ModuleState, PoolRole, Role, Strategy
from ..core.strategy_choice import StrategyChoice
from ..core.tick import PoolChange
from ..core.wear import WriteBudget, count_sharing
from .facts import FactReader
from .isolation_watch import IsolationWatch
from .mgr_port import MgrPort
from .state_store import StateStore


def snapshot_of(state: ModuleState, seen: ModuleState | None) -> ModuleState:
    """This tick's copy, with the roles as they are now (a strategy change)."""
    return seen if seen is not None and seen.roles == state.roles else state.snapshot()


LEDGER_KEY = "gain_ledger"  # the module's store: the measured gains' sums


class AdmissionStep:
    def __init__(self, mgr: MgrPort, health: HealthChecks, read_fraction: Any,
                 up_sets: Any) -> None:
        self._mgr = mgr
        self._health = health
        self.ledger = GainLedger()
        self._ledger_saved = -1  # the ledger's version in the store (-1: not read yet)
        self._ledger_saved_at = -math.inf
        self._ledger_due: tuple[int, str] | None = None  # (version, text) for write_ledger
        self.facts = FactReader(mgr, read_fraction, self.ledger, up_sets)
        self.isolation = IsolationWatch(mgr, health, self.facts.num_pgs)  # the normal OSDs
        # published whole: status, plan and metrics read them from other threads
        self.admission: Admission | None = None
        self._facts: AdmissionFacts | None = None
        self._since: dict[int, tuple[str, float]] = {}
        self._refused_drops: dict[int, str] = {}  # copy pools the mon would not let go
        self._size_locked: frozenset[int] | None = None  # nosizechange pools, by the last tick
        self._osd_faults: tuple[Any, dict[int, str]] = (None, {})
        self._repeered: dict[str, float] = {}  # pgid -> when the module re-peered it

    # ---- once per refresh ----------------------------------------------------
    def refresh(self, now: float, state: ModuleState, maps: MapSnapshot, settings: Settings,
                force: bool = False) -> None:
        """The admission again when a fact it depends on changed (state: a
        snapshot, read outside the status lock)."""
        self.facts.read_health()
        if not self.facts.due(now, state, maps, settings) and not force:
            self.isolation.refresh(now, state, maps, limits_only=True)  # a normal OSD read
            return
        facts = self.facts.admission_facts(now, state, maps, settings)
        admission = admit(facts)
        self._since = choice_since(admission, state.roles, self._since, now)
        self._facts, self.admission = facts, admission
        self._publish(admission, settings)
        self.isolation.refresh(now, state, maps)  # on the PG counts just read

    def _publish(self, admission: Admission, settings: Settings) -> None:
        lines = admission.health(self._backfillfull(), settings.normal_class)
        kept = sum(1 for line in lines["SLA_PG_LIMIT"] if line.startswith("pool"))
        self._health.update("SLA_PG_LIMIT", lines["SLA_PG_LIMIT"],
                            f"{kept} normal pools kept isolated: urgent OSDs at their PG limit"
                            if kept else "urgent OSDs past their PG limit")
        self._health.update("SLA_STRATEGY_REFUSED", lines["SLA_STRATEGY_REFUSED"],
                            f"{len(lines['SLA_STRATEGY_REFUSED'])} normal pools no longer fit "
                            "their strategy: kept isolated")
        self._health.update("SLA_NORMAL_REGION_FULL", lines["SLA_NORMAL_REGION_FULL"],
                            "normal data has outgrown the normal region it must return to")
        placing, beyond = sharing_health(self.facts.progress)
        self._health.update("SLA_COPY_PLACING", placing,
                            f"{len(placing)} normal pools placing the copy sharing adds: "
                            "their PGs are undersized by design until it is placed")
        self._health.update("SLA_SHARED_POOL_DEGRADED", beyond,
                            f"{len(beyond)} shared normal pools are degraded beyond what "
                            "sharing adds")
        self.copy_locked({}, None)

    def copy_locked(self, refused: Mapping[int, str], maps: MapSnapshot | None) -> None:
        """SLA_COPY_SIZE_LOCKED: pools on a strategy that changes their size
        (copy) that cannot drop their urgent copy, foreseen (the nosizechange
        flag) or met this tick (the mon refused the size change: the flag, or
        its PG projection; the tick tries again every tick while the pool is
        to drop it)."""
        admission = self.admission
        pools = admission.pools if admission is not None else {}
        if maps is not None:  # the tick's own word (None: a refresh, which keeps it)
            self._refused_drops = {p: why for p, why in refused.items() if p in pools}
            # the flag as the tick's map has it: the admission's facts may predate it
            self._size_locked = frozenset(
                pid for pid, info in maps.view.pools.items() if "nosizechange" in info.flags)
        flagged = {pid for pid, p in pools.items()
                   if MODELS[Strategy(p.strategy)].changes_size
                   and p.placement is not Placement.ISOLATED
                   and ("nosizechange" in p.isolated_info.flags if self._size_locked is None
                        else pid in self._size_locked)}
        lines = [f"pool {pools[pid].name}: shared by {pools[pid].strategy} (size "
                 f"{pools[pid].isolated_info.size + 1}) with the nosizechange flag: the mon "
                 "refuses the size change that takes its copy off the urgent OSDs; 'ceph osd "
                 f"pool set {pools[pid].name} nosizechange false'" for pid in sorted(flagged)]
        lines += [f"pool {pools[pid].name}: the mon refused to drop its urgent copy ({why}); "
                  "its clients keep using the urgent OSDs until it can: the mon's PG projection "
                  "counts a size decrease too up to Pacific (OSDs out or mon_max_pg_per_osd "
                  "lowered): bring the OSDs back in, or raise mon_max_pg_per_osd on the mons"
                  for pid, why in sorted(self._refused_drops.items()) if pid not in flagged]
        self._health.update("SLA_COPY_SIZE_LOCKED", lines,
                            f"{len(lines)} normal pools cannot leave the urgent region")

    def _backfillfull(self) -> float:
        return self._facts.capacity.backfillfull_ratio if self._facts else 0.9

    # ---- every tick ----------------------------------------------------------
    def settle(self, now: float, store: StateStore, state: ModuleState,
               seen: ModuleState | None, maps: MapSnapshot, settings: Settings
               ) -> dict[int, PoolRole] | None:
        """Auto pools whose choice held take it (a role change in the state:
        no mon command, no PG moved); the admission runs again at once, so
        every limit is judged on the strategy the pool now has. The roles
        then, or None when none changed (the usual tick: no lock taken)."""
        if self.admission is None:
            return None
        changes = strategy_changes(self.admission, snapshot_of(state, seen).roles,
                                   self._since, now, snapshot_of(state, seen).history)
        if not changes:
            return None
        with store.lock:
            for pid, (old, new) in changes.items():
                if state.roles.get(pid) != old:
                    continue  # `pool set` or `pool rm` changed it meanwhile
                self._mgr.log.info("sla: pool %s: strategy %s -> %s for the next switch to "
                                   "shared (%s)", maps.view.pools[pid].name, old.strategy.value,
                                   new.strategy.value, self.admission.pools[pid].choice.why)
                state.roles[pid] = new
            store.mark_dirty()  # written back at the tick's end
            roles, copy = dict(state.roles), state.snapshot()
        self.refresh(now, copy, maps, settings, force=True)
        return roles

    def send_back(self, now: float, store: StateStore, state: ModuleState,
                  seen: ModuleState | None, maps: MapSnapshot,
                  summary: Mapping[str, Any] | None) -> None:
        """What the sharing caused, checked after the fact: pools whose PGs
        Ceph did not take (stuck with an urgent OSD, an urgent OSD at its
        limit or past nearfull, PGs withheld) go back now and stay isolated
        (recorded in the state: a failover keeps them so)."""
        copy = snapshot_of(state, seen)
        facts = self.facts.sharing_now(now, copy, maps, summary, self.admission)
        # what the OSDs and Ceph's health say changes with a report, a limit or
        # a map only: judged again then, not every tick (10,000 OSDs)
        key = (id(facts.urgent), tuple(sorted(facts.sharing.items())), facts.withheld,
               facts.nearfull_ratio, facts.toofull)
        if self._osd_faults[0] != key:
            self._osd_faults = (key, osd_faults(facts))
        faults = sharing_faults(facts, self._osd_faults[1])
        # and what the pools measured while shared (no fault: a trial ended)
        for pid, pool in (self.admission.pools.items() if self.admission else ()):
            if pool.losing:
                faults.setdefault(pid, pool.losing)
        faults = {p: why for p, why in faults.items()
                  if p not in copy.sent_back and p in copy.roles}
        self._repeer(now, facts, bool(copy.sent_back or faults))
        if not faults:
            return
        with store.lock:
            for pid, why in sorted(faults.items()):
                if pid not in state.roles or pid in state.sent_back:
                    continue
                state.sent_back[pid] = why
                name = maps.view.pools[pid].name if pid in maps.view.pools else str(pid)
                message = f"sla: pool {name} goes back to isolated now: {why}"
                (self._mgr.log.info if is_loss(why) else self._mgr.log.warning)(message)
                self._mgr.cluster_log(message)
            store.mark_dirty()

    def _repeer(self, now: float, facts: SharingNow, sent_back: bool) -> None:
        """PGs still stuck with an urgent OSD once the pools went back: an OSD
        that withheld them may not take them up again by itself."""
        pgs = to_repeer(facts, sent_back, self._repeered, now)
        for pgid in pgs:
            rc, _, err = self._mgr.mon({"prefix": "pg repeer", "pgid": pgid})
            self._repeered[pgid] = now
            self._mgr.log.warning("sla: pg %s stuck with an urgent OSD since its pool went "
                                  "back: re-peered (%s)", pgid, "done" if rc == 0 else err)
        self._repeered = {pg: t for pg, t in self._repeered.items()
                          if now - t < REPEER_EVERY_SECS}

    def fold(self, now: float, periods: Mapping[int, PoolPeriod], roles: Mapping[int, PoolRole],
             urgent_iops: float | None, settings: Settings, moving: frozenset[int],
             shared_mode: bool) -> None:
        """One tick's counters of the normal pools into the gain ledger, under
        their placement (`moving`: pools whose data moves, and in `shared_mode`
        the pools kept isolated, filed apart);
        comparable only while the urgent clients are below the low threshold
        (then a normal pool's service is what its placement gives it). The
        ledger's text is taken as a window is filed (the caller holds the
        status lock) and written by write_ledger: a failover keeps it."""
        try:
            quiet = urgent_iops is not None and urgent_iops < settings.thresholds().low_iops
        except ThresholdError:
            quiet = False
        shared = self.shared_pools
        placement = {p: (r.strategy.value if p in shared else
                         ISOLATED + (KEPT if shared_mode else ""))
                     + (MOVING if p in moving else "")
                     for p, r in roles.items() if r.role is Role.NORMAL}
        self.ledger.window_secs = settings.gain_window_secs
        if self._ledger_saved < 0:  # the first fold: what the last mgr measured
            self.ledger.load_json(self._mgr.get_store(LEDGER_KEY))
            self._ledger_saved = self.ledger.version
        self.ledger.add(now, periods, placement, quiet)
        # one store write per window at most, whatever the pools (each files its
        # windows at its own tick): a failover loses a window's sums at most
        if self.ledger.version != self._ledger_saved \
                and now - self._ledger_saved_at >= settings.gain_window_secs:
            self._ledger_saved_at = now  # tried once a window while the mon does not take it
            self._ledger_due = (self.ledger.version, self.ledger.to_json())

    def write_ledger(self) -> None:
        """The ledger's text, taken by fold as a window was filed, into the
        store: a mon round trip, so never under the status lock. One the mon
        did not take is tried again with the next window's."""
        due, self._ledger_due = self._ledger_due, None
        if due is not None and self._mgr.set_store(LEDGER_KEY, due[1]) is not False:
            self._ledger_saved = due[0]

    @property
    def shared_pools(self) -> frozenset[int]:
        """The normal pools sharing for this period: on their shared rule and
        size, or taken toward it by the mon (the mgr's map may lag)."""
        if self.admission is None:
            return frozenset()
        return frozenset(p for p, a in self.admission.pools.items()
                         if a.placement is Placement.SHARED or (
                             a.sharing and a.placement is Placement.ISOLATED))

    def count_sharing(self, state: ModuleState, changes: Iterable[PoolChange]) -> None:
        """The pools whose change toward shared the mon took, in the urgent
        write budget (the caller holds the status lock)."""
        if self.admission is None:
            return
        count_sharing(state.history, {
            c.pool_id: self.admission.pools[c.pool_id].verdict(c.role.strategy.value)
            .cost.bytes_to_shared
            for c in changes if c.toward_shared and c.pool_id in self.admission.pools})

    def step_settled(self, state: ModuleState, now: float) -> bool:
        """The last step toward shared: its pools' PGs reported active after
        its own epoch (read only while a step is recorded)."""
        step = state.last_step
        if step is None or state.decision.mode is not Mode.SHARED:
            return True
        return self.facts.step_settled(step, now)

    def placing_by_design(self) -> list[int]:
        return placing_by_design(self.facts.progress)

    # ---- what the commands read ----------------------------------------------
    def first_strategy(self, now: float, state: ModuleState, maps: MapSnapshot,
                       settings: Settings, info: PoolInfo, original_rule: str | None
                       ) -> StrategyChoice:
        """The strategy an auto pool starts with: the admission's choice with
        the pool added (the same answer `plan` gives once it is managed)."""
        facts = self._facts
        if facts is None:
            self.facts.read_health()
            facts = self.facts.admission_facts(now, state, maps, settings)
        role = auto_role(info, original_rule, AUTO_ORDER[0])
        return admit(self.facts.candidate(facts, info, role, maps)).pools[info.pool_id].choice

    @property
    def write_budget(self) -> WriteBudget:
        return self.admission.write_budget if self.admission else WriteBudget(0.0, 0.0)

    def devices(self) -> dict[str, Any]:
        """Each region's op latencies the last admission was decided with."""
        a = self.admission
        return devices_view(a.devices, a.calibration) if a is not None else {}

    def report(self) -> list[dict[str, Any]]:
        """`ceph sla plan`'s and `ceph sla advise`'s entries, one per normal pool."""
        admission = self.admission
        if admission is None:
            return []
        return [p.to_dict(admission.nearfull_ratio)
                for _, p in sorted(admission.pools.items())]
