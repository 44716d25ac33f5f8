"""ceph-mgr module `sla`: the thin shell.

It reads from the mgr, calls the pure core (activity -> decision -> gates),
and acts: `osd pool set POOL crush_rule RULE` for the managed pools, a
progress event while PGs move, a cluster log line per switch, health
warnings when a switch is blocked. State lives in the mon-backed store.
"""
# No `from __future__ import annotations` here: ceph-mgr reads the command
# handlers' annotations at import time to build the command signatures.
import errno
import json
import threading
import time
from typing import Any, Optional

from mgr_module import HandleCommandResult, MgrModule

from . import compat
from .activity import (
    PERF_QUERY,
    PerfTotals,
    PoolPeriod,
    PoolRates,
    merge_periods,
    pool_ops_from_df,
    pool_periods,
)
from .advice_commands import USAGE_KEY, AdviceMixin
from .cluster import (
    ClusterView,
    cluster_view,
)
from .decision import DecisionState, Mode, ThresholdError, Thresholds
from .gates import (
    GATE_NAMES,
    ClusterHealth,
    Gate,
    GateName,
    PgCounts,
    all_settled,
    holding_flags,
    pg_counts,
    pg_total,
    pool_pg_states,
    pools_with_unknown_pgs,
    projected_urgent_fill,
)
from .histogram import TickHistogram
from .latency import LatencyWindow, PoolLatency, Slo, SloError, Violations, parse_slo
from .metrics import MetricsBindError, MetricsServer
from .placement import PlacementMixin
from .pool_commands import PoolCommandsMixin
from .report import history_dicts, render_history, render_status
from .settings import DEFAULT_SIZE, SETTINGS_SPECS, Settings
from .shell_common import (
    MAP_REFRESH_SECS,
    PERF_POLL_SECS,
    REQUIRED_RULES,
    SLOW_READ_SECS,
    TICK_BUCKETS,
    UPMAP_PARALLEL,
    MapSnapshot,
    ModeArg,
    OutputFormat,
    SwitchTracking,
    _err,
    _merge_gates,
    _out,
)
from .state import (
    RULE_HYBRID,
    STATE_KEY,
    ModuleState,
    Role,
    StateError,
    SwitchRecord,
    UrgentPlacement,
    expected_rule,
)
from .tick import PoolNow, RuleChange, TickInputs, TickPlan, plan_tick
from .upmaps import (
    Regions,
    current_items,
    regions_from_maps,
    target_urgent_share,
)
from .usage import UsageHistory
from .worker import BatchSender, KeyedWorker


class Module(PlacementMixin, PoolCommandsMixin, AdviceMixin, MgrModule):
    MODULE_OPTIONS = [compat.option(spec.name, **spec.fields()) for spec in SETTINGS_SPECS]
    NOTIFY_TYPES: list[Any] = compat.notify_types("osd_map")
    if compat.COMMAND_REGISTRY is not None:
        CLICommand = compat.COMMAND_REGISTRY

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._stop = threading.Event()
        self._settings_read: Optional[Settings] = None
        self._saved: Optional[str] = None  # the state text last written to the store
        self._usage: Optional[UsageHistory] = None  # urgent IOPS per hour, for advise
        self._usage_saved_at = 0.0
        # Two locks: `_lock` guards what status and scrapes read and is never
        # held across a mon round trip; `_act_lock` makes the tick and the
        # commands that change pools take turns (a pool released by 'pool rm'
        # must not get an sla rule back from a tick that planned before it).
        self._lock = threading.RLock()
        self._act_lock = threading.RLock()
        self._state: Optional[ModuleState] = None
        self._rates = PoolRates(5.0)
        self._urgent_iops: Optional[float] = None
        self._gates: list[Gate] = []
        self._tracking: Optional[SwitchTracking] = None
        self._last_tti: Optional[float] = None
        self._misplaced: dict[int, float] = {}
        self._installing = False
        self._perf_query_id: Optional[int] = None
        self._perf_query_failed = False
        self._perf_totals = PerfTotals()
        self._perf_pending: dict[int, PoolPeriod] = {}  # read between ticks, for the next
        self._latency = LatencyWindow(60.0)
        self._violations = Violations()
        self._urgent_latency: Optional[tuple[int, PoolLatency]] = None
        self._repairs: list[str] = []  # the last drift repairs, for status
        self._dry_decision: Optional[DecisionState] = None  # the dry run's own decision state
        self._verifier: KeyedWorker[Optional[str]] = KeyedWorker(self._verify_rules,
                                                                 "sla-verify")
        self._upmap_sender = BatchSender(lambda cmd: compat.mon_command(self, cmd),
                                         UPMAP_PARALLEL, "sla-upmaps")
        self._metrics = MetricsServer(self._status_snapshot)
        self._metrics_where: Optional[tuple[str, int]] = None
        self._health: dict[str, Any] = {}
        self._pg_status: dict[str, Any] = {}
        self._pgs = PgCounts()
        self._pg_dump_at = 0.0
        self._pgs_without_normal: Optional[int] = None
        self._upmap_key: Optional[tuple[int, str]] = None
        self._maps_dirty = True
        self._maps: Optional[MapSnapshot] = None
        self._plan_cache: dict[Any, Any] = {}  # per-PG upmap plans, while the regions stay
        self._plan_cache_for: Optional[int] = None
        self._slow_at = 0.0
        self._fill: Optional[float] = None
        self._tick_hist = TickHistogram(TICK_BUCKETS)
        self._upmap_status: dict[int, dict[str, Any]] = {}
        self._upmaps_pending = 0

    # ---- options -----------------------------------------------------------
    @property
    def _settings(self) -> Settings:
        settings = self._settings_read
        if settings is None:
            settings = self._settings_read = Settings.read(self.get_module_option)
        return settings

    def config_notify(self) -> None:
        """An option changed (ceph config set, or our own commands): read them
        all again, once, typed."""
        self._settings_read = Settings.read(self.get_module_option)

    def _set_options(self, **values: Any) -> None:
        for name, value in values.items():
            self.set_module_option(name, value)
        self.config_notify()  # the next tick acts on them, not after the mon's round trip

    # ---- lifecycle ---------------------------------------------------------
    def serve(self) -> None:
        with self._lock:
            state = self._require_state()
        self.log.info("sla: starting in mode %s", state.decision.mode.value)
        next_tick = 0.0
        while not self._stop.is_set():
            try:
                if time.monotonic() >= next_tick or self._urgent_ops_arrived():
                    self._apply_metrics_options()
                    self.tick()
                    next_tick = time.monotonic() + self._settings.interval_secs
            except Exception as e:  # keep serving: one bad tick must not kill the module
                self.log.exception("sla: tick failed: %s", e)
                next_tick = time.monotonic() + self._settings.interval_secs
            self._stop.wait(max(0.0, min(PERF_POLL_SECS, next_tick - time.monotonic())))
        self._metrics.stop()

    def _urgent_ops_arrived(self) -> bool:
        """Between ticks, in shared mode: read the perf query (a few entries,
        no map work) and tick at once when an OSD report brought urgent ops,
        instead of up to interval_secs later. What was read is kept for the
        tick, so no report is lost."""
        state = self._state
        if state is None or state.decision.mode is not Mode.SHARED or self._perf_query_id is None:
            return False
        result = self.get_osd_perf_counters(self._perf_query_id)
        if result is None:
            return False
        with self._lock:  # commands change the roles
            managed = frozenset(state.roles)
            urgent = {p for p, r in state.roles.items() if r.role is Role.URGENT}
        periods = pool_periods(result, managed)
        self._perf_pending = merge_periods(self._perf_pending, periods)
        return any(periods[p].ops > 0 for p in urgent if p in periods)

    def shutdown(self) -> None:
        self._stop.set()
        self._upmap_sender.cancel()
        self._metrics.stop()
        self._remove_perf_query()
        super().shutdown()  # closes the librados handle compat.mon_command uses

    def _measure_latency(self, now: float, periods: dict[int, PoolPeriod]) -> None:
        """Per urgent pool: per-period mean latencies; the worst pool at the
        SLO percentile; seconds above the objective."""
        state = self._state
        urgent = [p for p, r in (state.roles if state else {}).items() if r.role is Role.URGENT]
        slo = self._settings.slo()
        self._latency.window_secs = self._settings.slo_window_secs
        self._latency.add(now, periods, urgent)
        self._urgent_latency = self._latency.worst(urgent, slo.percentile)
        over = [p for p in urgent if slo.on
                and (self._latency.pool(p, slo.percentile).worst() or 0.0) > slo.latency_ms]
        self._violations.add(now, over)

    def _managed_pools(self, view: ClusterView) -> frozenset[int]:
        state = self._state
        roles = state.roles if state is not None else {}
        return frozenset(p for p in roles if p in view.pools)

    def _read_perf_query(self, pools: frozenset[int]) -> Optional[dict[int, PoolPeriod]]:
        """Per-pool counters since the last read, or None when this mgr
        cannot run the perf query (then the df totals are used)."""
        if self._perf_query_id is None:
            if self._perf_query_failed:
                return None
            try:
                self._perf_query_id = self.add_osd_perf_query(PERF_QUERY)
            except Exception as e:  # an mgr without dynamic perf queries
                self.log.warning("sla: no OSD perf query (%s): using df totals", e)
            if self._perf_query_id is None:
                self._perf_query_failed = True
                return None
            self.log.info("sla: OSD perf query %s registered", self._perf_query_id)
        result = self.get_osd_perf_counters(self._perf_query_id)
        if result is None:  # the query is gone: register it again next tick
            self._perf_query_id = None
            return None
        pending, self._perf_pending = self._perf_pending, {}
        return merge_periods({p: v for p, v in pending.items() if p in pools},
                             pool_periods(result, pools))

    def _remove_perf_query(self) -> None:
        if self._perf_query_id is not None:
            try:
                self.remove_osd_perf_query(self._perf_query_id)
            except Exception as e:  # shutting down: nothing else to do about it
                self.log.debug("sla: removing the perf query failed: %s", e)
            self._perf_query_id = None

    def _apply_metrics_options(self) -> None:
        port = self._settings.metrics_port
        where = (self._settings.metrics_addr, port)
        if where == self._metrics_where and (self._metrics.running or port == 0):
            return  # else: a port that was taken is tried again every tick
        self._metrics.stop()
        self._metrics_where = where
        self._health.pop("SLA_METRICS_PORT", None)
        if port == 0:
            return
        try:
            self._metrics.start(*where)
        except MetricsBindError as e:
            self._health["SLA_METRICS_PORT"] = {
                "severity": "warning", "summary": f"sla metrics endpoint not served: {e}",
                "count": 1, "detail": [str(e)]}

    # ---- the loop ----------------------------------------------------------
    def _view(self) -> ClusterView:
        return cluster_view(self.get("osd_map"), self.get("osd_map_crush"))

    def notify(self, notify_type: Any, notify_id: str) -> None:
        if str(getattr(notify_type, "value", notify_type)) == "osd_map":
            self._maps_dirty = True

    def _current_maps(self, now: float) -> MapSnapshot:
        """The converted maps: converted again only after a new epoch."""
        maps = self._maps
        if maps is None or self._maps_dirty or now - maps.at >= MAP_REFRESH_SECS:
            self._maps_dirty = False
            osd_map, crush = self.get("osd_map"), self.get("osd_map_crush")
            maps = MapSnapshot(now, cluster_view(osd_map, crush), self._regions(osd_map, crush),
                               current_items(osd_map), holding_flags(str(osd_map.get("flags", ""))),
                               float(osd_map.get("nearfull_ratio") or 0.85))
            self._maps = maps
        return maps

    def _regions(self, osd_map: dict[str, Any], crush: dict[str, Any]) -> Regions:
        settings = self._settings
        return regions_from_maps(osd_map, crush, settings.failure_domain,
                                 settings.normal_class, settings.urgent_class)

    def tick(self) -> None:
        started = time.monotonic()
        try:
            with self._act_lock:
                self._tick(time.time())
        finally:
            self._tick_hist.observe(time.monotonic() - started)

    def _tick(self, now: float) -> None:
        maps = self._current_maps(now)
        view = maps.view
        new_epoch = self._upmap_key is None or self._upmap_key[0] != view.epoch
        self._rates.window_secs = self._settings.rate_window_secs
        self._pg_status = self.get("pg_status")
        summary = None if all_settled(self._pg_status) else self.get("pg_summary")
        # rates of the managed pools only: at 1,000 pools the others would
        # cost a thousand samples a tick for nothing
        managed = self._managed_pools(view)
        periods = self._read_perf_query(managed)
        df = None if periods is not None else self.get("df")
        with self._lock:  # status and scrapes read the windows
            if periods is not None:
                self._rates.add(now, self._perf_totals.add(periods, managed))
                self._measure_latency(now, periods)
            else:
                # The df totals: a pool with a PG without stats yet (a fresh
                # mgr after failover) is not measured until it has them.
                self._rates.add(now, [o for o in pool_ops_from_df(df or {})
                                      if o.pool_id in managed],
                                pools_with_unknown_pgs(summary or {}))
        if new_epoch:
            self._warn_positional(view)
        with self._lock:
            state = self._require_state()
            plan = self._plan(state, maps, summary, now)
            if plan is not None:
                self._record_plan(state, plan, view.epoch, now)
        # the mon round trips without `_lock`: status and scrapes never wait on them
        failed = self._apply_rule_changes(plan.rule_changes) if plan is not None else []
        with self._lock:
            self._gates = list(plan.gates) + failed if plan is not None else []
            place = plan is not None and not self._settings.dry_run
            batch = self._check_placement(state, self._current_maps(now), place=place)
        if batch:
            self._send_upmap_batch(batch)
        with self._lock:
            self._track(state, view, now)
            saved = state.to_json()
            usage = self._record_usage(now, self._urgent_iops if any(
                r.role is Role.URGENT for r in state.roles.values()) else None)
        self._save_text(saved)
        if usage is not None:
            self.set_store(USAGE_KEY, usage)
        self._publish_health()

    def _plan(self, state: ModuleState, maps: MapSnapshot, summary: Optional[dict[str, Any]],
              now: float) -> Optional[TickPlan]:
        """The pure step's inputs, read under `_lock`, and its plan; None when
        the module only measures ('ceph sla off', or thresholds invalid)."""
        view = maps.view
        self._forget_deleted_pools(state, view)
        # The gates look at the PGs of the managed pools only: an inactive
        # PG in a pool the module does not move must not hold a switch.
        # All PGs settled (the usual case): no per-pool read needed.
        self._pgs = PgCounts(total=pg_total(self._pg_status)) if summary is None \
            else pg_counts(pool_pg_states(summary, state.roles))
        urgent = [p for p, r in state.roles.items() if r.role is Role.URGENT]
        self._urgent_iops = self._rates.total_rate(urgent) if urgent else 0.0
        try:
            thresholds = self._settings.thresholds()
            self._health.pop("SLA_CONFIG_INVALID", None)
        except ThresholdError as e:
            self._health["SLA_CONFIG_INVALID"] = {
                "severity": "warning", "summary": f"sla thresholds invalid: {e}",
                "count": 1, "detail": [str(e)]}
            return None
        if not self._settings.active:
            return None  # 'ceph sla off': measure and report, change nothing
        dry_run = self._settings.dry_run
        # A dry run decides on a shadow of the decision state: the real
        # mode, and so the pools, stay as they are; when it ends, the
        # module carries on from the real state with real switch records.
        if not dry_run or self._dry_decision is None:
            self._dry_decision = state.decision
        decided_from = self._dry_decision if dry_run else state.decision
        return plan_tick(TickInputs(
            now=now, state=decided_from, urgent_iops=self._urgent_iops,
            thresholds=thresholds, min_dwell_secs=self._settings.min_dwell_secs,
            health=self._health_snapshot(view, state, maps, now),
            max_misplaced_ratio=self._max_misplaced(),
            pinned=state.pinned,
            isolating=self._tracking is not None and self._tracking.isolating,
            dry_run=dry_run, sustain_secs=self._settings.sustain_secs,
            urgent_latency_ms=(self._urgent_latency[1].worst()
                               if self._urgent_latency else None),
            slo=self._settings.slo(),
            pools=self._pools_now(state, view),
            blocked_before=frozenset(g.name.value for g in self._gates)))

    def _record_plan(self, state: ModuleState, plan: TickPlan, epoch: int, now: float) -> None:
        """The plan's decision into the state (or the dry run's shadow), its
        switch recorded, newly blocked gates counted."""
        dry_run = self._settings.dry_run
        decided_from = self._dry_decision if dry_run else state.decision
        if (decided_from is not None and decided_from.high_since is None
                and plan.state.high_since is not None and not plan.switch):
            # the sustain time starts: with the switch's own line, the log
            # shows each second of the reaction
            self.log.info("sla: %s", plan.decision.reason)
        if plan.switch and decided_from is not None:
            self._switch(state, SwitchRecord(now, decided_from.mode.value,
                                             plan.decision.target.value,
                                             plan.decision.reason, dry_run=dry_run), epoch)
        if dry_run:
            self._dry_decision = plan.state
        else:
            state.decision = plan.state
        for name in plan.newly_blocked:
            state.blocked_total[name] = state.blocked_total.get(name, 0) + 1

    def _pools_now(self, state: ModuleState, view: ClusterView) -> list[PoolNow]:
        return [PoolNow(pool_id, view.pools[pool_id].name, role,
                        view.rule_name(view.pools[pool_id].rule_id))
                for pool_id, role in sorted(state.roles.items()) if pool_id in view.pools]

    def _apply_rule_changes(self, changes: tuple[RuleChange, ...]) -> list[Gate]:
        """Set each pool's rule; a pool the mon refuses does not stop the others."""
        failed: list[Gate] = []
        for change in changes:
            rc, _, err = compat.mon_command(self, {
                "prefix": "osd pool set", "pool": change.pool, "var": "crush_rule",
                "val": change.to_rule})
            if rc != 0:
                self.log.error("sla: osd pool set %s crush_rule %s failed: %s", change.pool,
                               change.to_rule, err)
                failed.append(Gate(GateName.APPLY_FAILED, f"osd pool set {change.pool} crush_rule "
                                   f"{change.to_rule}: {err.strip()}"))
                continue
            self.log.info("sla: pool %s crush_rule %s -> %s", change.pool, change.from_rule,
                          change.to_rule)
            self._maps_dirty = True
        if changes and len(failed) < len(changes) and self._tracking is not None \
                and self._tracking.record.pgs_moved is None:
            rc, out, _ = compat.mon_command(self, {"prefix": "osd stat", "format": "json"})
            if rc == 0:
                self._tracking.record.epoch = int(json.loads(out).get("epoch", 0))
        return _merge_gates(failed)

    def _warn_positional(self, view: ClusterView) -> None:
        """sla installs flat weight sets only; anyone else's positional ones
        put every monitor at risk when a host or root is added."""
        self._health.pop("SLA_POSITIONAL_WEIGHT_SET", None)
        if view.positional_choose_args:
            keys = ", ".join("compat" if k < 0 else f"pool {k}"
                             for k in view.positional_choose_args)
            self._health["SLA_POSITIONAL_WEIGHT_SET"] = {
                "severity": "warning",
                "summary": f"positional CRUSH weight sets installed ({keys}): adding a host or "
                           "a root can abort every ceph-mon",
                "count": len(view.positional_choose_args),
                "detail": ["remove them before adding hosts or roots: 'ceph osd crush "
                           "weight-set rm <pool>' (or rm-compat); see the sla docs, "
                           "known-issues.md"]}

    def _require_state(self) -> ModuleState:
        if self._state is None:
            now = time.time()
            text = self.get_store(STATE_KEY)
            try:
                self._state = ModuleState.from_json(text, now)
            except StateError as e:
                # Never drop the pool roles silently: keep the record beside
                # the new one and say where.
                backup = f"{STATE_KEY}.unreadable.{int(now)}"
                self.set_store(backup, text)
                self.log.error("sla: %s; kept it as config-key mgr/sla/%s and started "
                               "fresh (isolated, no managed pools)", e, backup)
                self._health["SLA_STATE_RESET"] = {
                    "severity": "warning", "summary": "sla state unreadable: started fresh",
                    "count": 1, "detail": [f"{e}; the old record is mgr/sla/{backup}"]}
                self._state = ModuleState.initial(now)
        return self._state

    def _forget_deleted_pools(self, state: ModuleState, view: ClusterView) -> None:
        for pool_id in [p for p in state.roles if p not in view.pools]:
            self.log.info("sla: pool %d no longer exists; forgetting its role", pool_id)
            del state.roles[pool_id]

    def _health_snapshot(self, view: ClusterView, state: ModuleState, maps: MapSnapshot,
                         now: float) -> ClusterHealth:
        pg_status = self._pg_status
        classes = {self._settings.normal_class, self._settings.urgent_class}
        rule_osds = {o for o, c in view.device_class.items() if c in classes}
        missing = tuple(r for r in self._rules_needed(state) if r not in view.rules)
        return ClusterHealth(
            pgs=self._pgs,
            misplaced_ratio=float(pg_status.get("misplaced_ratio", 0.0)),
            down_osds=tuple(o for o in view.down_in_osds if o in rule_osds),
            missing_rules=missing,
            unverified=None if missing else self._unverified_reason(view, state),
            flags=maps.flags,
            urgent_fill_after=self._urgent_fill_after(view, state, maps, now),
            nearfull_ratio=maps.nearfull_ratio,
            switches_last_day=sum(1 for r in state.history
                                  if not r.dry_run and r.time >= now - 86400),
            max_switches_per_day=self._settings.max_switches_per_day,
            own_move_in_flight=bool(self._upmaps_pending) or (
                self._tracking is not None and not self._tracking.isolating),
        )

    def _max_misplaced(self) -> float:
        """Our option, or the balancer's target_max_misplaced_ratio (-1, default)."""
        value = self._settings.max_misplaced_ratio
        if value >= 0:
            return value
        try:
            return float(self.get_ceph_option("target_max_misplaced_ratio"))
        except Exception:  # an option this release does not have: Ceph's default
            return 0.05

    def _urgent_fill_after(self, view: ClusterView, state: ModuleState, maps: MapSnapshot,
                           now: float) -> Optional[float]:
        """The fullest urgent OSD once shared mode is placed (the capacity
        gate); OSD fill changes slowly: read every SLOW_READ_SECS."""
        if state.decision.mode is Mode.SHARED:
            return None  # the data is there already
        if self._fill is not None and now - self._slow_at < SLOW_READ_SECS:
            return self._fill
        regions = maps.regions
        urgent = regions.of_class(regions.urgent_class)
        stats = {int(o["osd"]): o for o in (self.get("osd_stats") or {}).get("osd_stats", [])}
        size = {o: float(stats[o].get("kb", 0)) * 1024 for o in urgent if o in stats}
        used = {o: float(stats[o].get("kb_used", 0)) * 1024 for o in urgent if o in stats}
        normal = set(self._normal_pools(state))
        df = {int(p["id"]): p.get("stats", {}) for p in (self.get("df") or {}).get("pools", [])}
        normal_bytes = sum(float(df.get(p, {}).get("bytes_used", 0)) for p in normal)
        sizes = [view.pools[p].size for p in normal if p in view.pools]
        share = target_urgent_share(regions, max(sizes, default=DEFAULT_SIZE))
        weights = {o: regions.osds[o].weight for o in urgent}
        self._fill = projected_urgent_fill(used, size, weights, normal_bytes, share)
        self._slow_at = now
        return self._fill

    def _rules_needed(self, state: ModuleState) -> list[str]:
        needed = list(REQUIRED_RULES)
        if any(r.placement is UrgentPlacement.HYBRID for r in state.roles.values()):
            needed.append(RULE_HYBRID)
        return needed

    def _normal_pools(self, state: ModuleState) -> list[int]:
        return sorted(p for p, r in state.roles.items() if r.role is Role.NORMAL)

    def _save(self, state: ModuleState) -> None:
        self._save_text(state.to_json())

    def _save_text(self, text: str) -> None:
        """Write the state to the mon store when it changed (a mon round trip)."""
        if text != self._saved:
            self.set_store(STATE_KEY, text)
            self._saved = text

    def _publish_health(self) -> None:
        checks = dict(self._health)
        if self._gates:
            checks["SLA_SWITCH_BLOCKED"] = {
                "severity": "warning",
                "summary": "sla mode switch blocked: "
                           + ", ".join(g.name.value for g in self._gates),
                "count": len(self._gates),
                "detail": [g.detail for g in self._gates],
            }
        self.set_health_checks(checks)

    # ---- status ------------------------------------------------------------
    def _status_snapshot(self) -> dict[str, Any]:
        # the maps the last tick converted: a status or a scrape converts nothing
        view = self._maps.view if self._maps is not None else self._view()
        with self._lock:
            state = self._require_state()
            settings = self._settings
            try:
                thresholds: Optional[Thresholds] = settings.thresholds()
            except ThresholdError:
                thresholds = None
            last = state.last_switch()
            slo = settings.slo()
            pools = []
            for pool_id, role in sorted(state.roles.items()):
                pool = view.pools.get(pool_id)
                if pool is None:
                    continue
                pools.append({
                    "pool_id": pool_id, "name": pool.name, "role": role.role.value,
                    "placement": role.placement.value,
                    "rule": view.rule_name(pool.rule_id),
                    "expected_rule": expected_rule(role, state.decision.mode),
                    "client_iops": self._rates.rate(pool_id),
                    "misplaced_ratio": self._misplaced.get(pool_id, 0.0),
                    "upmaps": self._upmap_status.get(pool_id),
                    "latency": (self._pool_latency(pool_id, slo)
                                if role.role is Role.URGENT else None),
                })
            return {
                "mode": state.decision.mode.value,
                "pinned": state.pinned is not None,
                "dry_run": settings.dry_run,
                "active": settings.active,
                "dry_run_mode": (self._dry_decision.mode.value
                                 if settings.dry_run and self._dry_decision else None),
                "urgent_iops": self._urgent_iops,
                "threshold_iops": thresholds.high_iops if thresholds else None,
                "threshold_low_iops": thresholds.low_iops if thresholds else None,
                "min_dwell_secs": settings.min_dwell_secs,
                "since": state.decision.mode_since,
                "quiet_since": state.decision.quiet_since,
                "switches_total": state.switches_total,
                "blocked_total": {**dict.fromkeys(GATE_NAMES, 0), **state.blocked_total},
                "last_switch": last.to_dict() if last else None,
                "time_to_isolation_secs": self._last_tti,
                "pgs_without_normal_replica": self._pgs_without_normal,
                "weight_set_repairs": list(self._repairs),
                "gates": [g.to_dict() for g in self._gates],
                "tick_seconds": self._tick_hist.to_dict(),
                "slo": ({"latency_ms": slo.latency_ms, "percentile": slo.percentile,
                         "low_fraction": slo.low_fraction} if slo.on else None),
                "pools": pools,
            }

    def _pool_latency(self, pool_id: int, slo: Slo) -> dict[str, Any]:
        lat = self._latency.pool(pool_id, slo.percentile)
        return {"percentile": slo.percentile, "periods": lat.periods,
                "write_ms": lat.write[0], "write_p99_ms": lat.write[1],
                "read_ms": lat.read[0], "read_p99_ms": lat.read[1],
                "slo_violation_seconds": round(self._violations.seconds.get(pool_id, 0.0), 1)}

    # ---- commands ----------------------------------------------------------
    @compat.read_command("sla status")
    def cmd_status(self, format: OutputFormat = OutputFormat.PLAIN) -> HandleCommandResult:
        """Show the SLA mode, urgent activity, thresholds and managed pools"""
        status = self._status_snapshot()
        return _out(format, status, render_status(status))

    @compat.read_command("sla history")
    def cmd_history(self, format: OutputFormat = OutputFormat.PLAIN) -> HandleCommandResult:
        """Show the last mode switches"""
        with self._lock:
            state = self._require_state()
            return _out(format, history_dicts(state), render_history(state))

    @compat.write_command("sla set-threshold")
    def cmd_set_threshold(self, high_iops: str, low_iops: Optional[str] = None,
                          format: OutputFormat = OutputFormat.PLAIN) -> HandleCommandResult:
        """Set the urgent IOPS thresholds (low defaults to half of high)"""
        try:
            thresholds = Thresholds.parse(high_iops, low_iops)
        except ThresholdError as e:
            return _err(errno.EINVAL, str(e))
        self._set_options(threshold_iops=thresholds.high_iops,
                          threshold_low_iops=thresholds.low_iops if low_iops else 0.0)
        data = {"threshold_iops": thresholds.high_iops,
                "threshold_low_iops": thresholds.low_iops}
        return _out(format, data, f"thresholds: high {thresholds.high_iops:g}, low "
                                  f"{thresholds.low_iops:g} IOPS\n")

    @compat.write_command("sla set-slo")
    def cmd_set_slo(self, latency_ms: str, percentile: Optional[str] = None,
                    format: OutputFormat = OutputFormat.PLAIN) -> HandleCommandResult:
        """Set the urgent pools' latency objective in ms (0: off) and its percentile"""
        try:
            slo = parse_slo(latency_ms, percentile)
        except SloError as e:
            return _err(errno.EINVAL, str(e))
        if percentile is not None:
            self._set_options(slo_latency_ms=slo.latency_ms, slo_percentile=slo.percentile)
        else:
            self._set_options(slo_latency_ms=slo.latency_ms)
        pct = self._settings.slo_percentile
        text = (f"latency objective: p{pct:g} of urgent latency <= {slo.latency_ms:g} ms\n"
                if slo.on else "latency objective: off\n")
        return _out(format, {"slo_latency_ms": slo.latency_ms, "slo_percentile": pct}, text)

    @compat.write_command("sla mode")
    def cmd_mode(self, mode: ModeArg, format: OutputFormat = OutputFormat.PLAIN
                 ) -> HandleCommandResult:
        """Pin the mode (isolated|shared) or let the module decide (auto)"""
        with self._lock:
            state = self._require_state()
            state.pinned = None if mode is ModeArg.AUTO else Mode(mode.value)
            self._save(state)
        text = "mode: auto\n" if mode is ModeArg.AUTO else f"mode pinned to {mode.value}\n"
        return _out(format, {"pinned": None if mode is ModeArg.AUTO else mode.value}, text)

    @compat.write_command("sla on")
    def cmd_on(self) -> HandleCommandResult:
        """Let the module switch modes and place the managed pools"""
        self._set_options(active=True)
        return HandleCommandResult(0, "sla is on\n", "")

    @compat.write_command("sla off")
    def cmd_off(self) -> HandleCommandResult:
        """Stop switching and placing (pools stay as they are); measure and report only"""
        self._set_options(active=False)
        return HandleCommandResult(0, "sla is off: pools stay as they are\n", "")
