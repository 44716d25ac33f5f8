"""ceph-mgr module `sla`: the thin shell.

It reads from the mgr, calls the pure core (activity -> decision -> gates),
and acts: `osd pool set POOL crush_rule RULE` for the managed pools, a
progress event while PGs move, a cluster log line per switch, health
warnings when a switch is blocked. State lives in the mon-backed store.
"""
# No `from __future__ import annotations` here: ceph-mgr reads the command
# handlers' annotations at import time to build the command signatures.
import enum
import errno
import json
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import Any, Optional

from mgr_module import HandleCommandResult, MgrModule

from . import compat
from .activity import (
    PERF_QUERY,
    PerfTotals,
    PoolPeriod,
    PoolRates,
    pool_ops_from_df,
    pool_periods,
)
from .cluster import (
    ClusterView,
    cluster_view,
    mapping_change,
    pg_bytes_by_seed,
    pgs_acting_on,
    pgs_not_clean,
    pool_misplaced_ratios,
    pool_pg_stats,
    pool_refusal,
)
from .crush_bridge import load_crush_rules
from .decision import DecisionState, Mode, ThresholdError, Thresholds
from .gates import (
    GATE_NAMES,
    ClusterHealth,
    Gate,
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
from .report import history_dicts, render_history, render_status
from .state import (
    RULE_HYBRID,
    RULE_ISOLATED_NORMAL,
    RULE_ISOLATED_URGENT,
    RULE_SHARED,
    STATE_KEY,
    ModuleState,
    PoolRole,
    Role,
    StateError,
    SwitchRecord,
    UrgentPlacement,
    expected_rule,
)
from .tick import PoolNow, RuleChange, TickInputs, plan_tick
from .upmaps import (
    PoolPlan,
    Regions,
    commands,
    current_items,
    mapping_faults,
    parse_pgid,
    plan_pool,
    regions_from_maps,
    switch_moves,
    target_urgent_share,
)
from .worker import KeyedWorker

REQUIRED_RULES = (RULE_ISOLATED_NORMAL, RULE_SHARED, RULE_ISOLATED_URGENT)
# Map work (converting the OSD and CRUSH maps, planning upmap entries) runs on
# a new OSD map epoch (notify 'osd_map', or our own commands), and at the
# latest every MAP_REFRESH_SECS; a quiet tick reads counters only.
MAP_REFRESH_SECS = 300.0
# Slow-changing inputs of the gates (per-pool misplaced, OSD fill) are read
# this often while no switch is being watched.
SLOW_READ_SECS = 30.0
TICK_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5)
# pg_upmap_items commands sent per tick, and how many at once: the mon folds
# concurrent commands into one proposal, so a batch costs about one epoch.
UPMAP_BATCH = 256
UPMAP_PARALLEL = 8


class RulesBusy(RuntimeError):
    """An install of the rules is already running."""


class OutputFormat(str, enum.Enum):
    PLAIN = "plain"
    JSON = "json"
    JSON_PRETTY = "json-pretty"


class ModeArg(str, enum.Enum):
    AUTO = "auto"
    ISOLATED = "isolated"
    SHARED = "shared"


@dataclass(frozen=True)
class MapSnapshot:
    """What the module needs of the OSD and CRUSH maps, as last converted.

    Only the derived views are kept, not the dumps: everything the module
    holds is walked by the garbage collector of its interpreter."""

    at: float
    view: ClusterView
    regions: Regions
    upmap_items: dict[int, dict[str, tuple[tuple[int, int], ...]]]
    flags: tuple[str, ...]
    nearfull_ratio: float


@dataclass
class SwitchTracking:
    """A switch whose data movement is still being watched."""

    record: SwitchRecord
    started: float
    before_up: dict[str, list[int]]
    progress_id: str
    isolating: bool
    moving_at_start: Optional[int] = None


def _out(fmt: OutputFormat, data: Any, text: str) -> HandleCommandResult:
    if fmt is OutputFormat.JSON:
        return HandleCommandResult(0, json.dumps(data, sort_keys=True), "")
    if fmt is OutputFormat.JSON_PRETTY:
        return HandleCommandResult(0, json.dumps(data, sort_keys=True, indent=2), "")
    return HandleCommandResult(0, text, "")


def _err(code: int, message: str) -> HandleCommandResult:
    return HandleCommandResult(-code, "", message)


class Module(MgrModule):
    MODULE_OPTIONS = [
        compat.option("threshold_iops", type="float", default=100.0, min=0.0, runtime=True,
                      desc="urgent client IOPS at or above which normal pools are isolated"),
        compat.option("threshold_low_iops", type="float", default=0.0, min=0.0, runtime=True,
                      desc="urgent IOPS below which normal pools may share all OSDs "
                           "(0: half of threshold_iops)"),
        compat.option("min_dwell_secs", type="secs", default=7200, min=0, runtime=True,
                      desc="how long urgent activity must stay below the low threshold "
                           "before normal pools go back to shared"),
        compat.option("interval_secs", type="secs", default=1, min=1, runtime=True,
                      desc="how often the module measures and decides (a quiet tick reads "
                           "counters only: map work happens once per OSD map epoch)"),
        compat.option("sustain_secs", type="secs", default=1, min=0, runtime=True,
                      desc="urgent IOPS must stay at or above threshold_iops this long "
                           "before normal pools are isolated (0: at once)"),
        compat.option("rate_window_secs", type="secs", default=5, min=1, runtime=True,
                      desc="window of the per-pool op rate"),
        compat.option("max_misplaced_ratio", type="float", default=-1.0, min=-1.0, max=1.0,
                      runtime=True,
                      desc="no switch to shared, no upmap placement while more objects are "
                           "misplaced (-1: the balancer's target_max_misplaced_ratio)"),
        compat.option("slo_latency_ms", type="float", default=0.0, min=0.0, runtime=True,
                      desc="latency objective of the urgent pools in ms (0: off): above it "
                           "normal pools are isolated whatever the urgent IOPS"),
        compat.option("slo_percentile", type="float", default=75.0, min=1.0, max=100.0,
                      runtime=True, desc="percentile of the per-period mean latencies that "
                                         "the objective applies to (EAFC: 75)"),
        compat.option("slo_low_fraction", type="float", default=0.5, min=0.0, max=1.0,
                      runtime=True, desc="back to shared only below this fraction of the "
                                         "objective (the band's lower edge)"),
        compat.option("slo_window_secs", type="secs", default=60, min=5, runtime=True,
                      desc="window of the per-period latencies the percentile is taken over"),
        compat.option("max_switches_per_day", type="int", default=48, min=0, runtime=True,
                      desc="no switch to shared after this many switches in 24 hours "
                           "(isolation is never capped; 0: no cap)"),
        compat.option("active", type="bool", default=True, runtime=True,
                      desc="switch modes and place pools ('ceph sla on|off'); off: measure "
                           "and report only"),
        compat.option("dry_run", type="bool", default=False, runtime=True,
                      desc="decide and report, but change no pool"),
        compat.option("normal_class", type="str", default="hdd", runtime=True,
                      desc="device class of the normal region"),
        compat.option("urgent_class", type="str", default="ssd", runtime=True,
                      desc="device class of the urgent region"),
        compat.option("failure_domain", type="str", default="host", runtime=True,
                      desc="CRUSH type that replicas never share"),
        compat.option("metrics_addr", type="str", default="::", runtime=True,
                      desc="address of the Prometheus endpoint (Ceph's prometheus module "
                           "default)"),
        compat.option("metrics_port", type="int", default=9284, min=0, max=65535, runtime=True,
                      desc="port of the Prometheus endpoint (0: no endpoint)"),
    ]
    NOTIFY_TYPES: list[Any] = compat.notify_types("osd_map")
    if compat.COMMAND_REGISTRY is not None:
        CLICommand = compat.COMMAND_REGISTRY

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._stop = threading.Event()
        self._lock = threading.RLock()
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
        self._latency = LatencyWindow(60.0)
        self._violations = Violations()
        self._urgent_latency: Optional[tuple[int, PoolLatency]] = None
        self._repairs: list[str] = []  # the last drift repairs, for status
        self._dry_decision: Optional[DecisionState] = None  # the dry run's own decision state
        self._verifier: KeyedWorker[Optional[str]] = KeyedWorker(self._verify_rules,
                                                                 "sla-verify")
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
    def _opt(self, name: str) -> Any:
        return self.get_module_option(name)

    def _thresholds(self) -> Thresholds:
        low = float(self._opt("threshold_low_iops") or 0.0)
        return Thresholds.parse(self._opt("threshold_iops"), low if low > 0 else None)

    # ---- lifecycle ---------------------------------------------------------
    def serve(self) -> None:
        with self._lock:
            state = self._require_state()
        self.log.info("sla: starting in mode %s", state.decision.mode.value)
        while not self._stop.is_set():
            try:
                self._apply_metrics_options()
                self.tick()
            except Exception as e:  # keep serving: one bad tick must not kill the module
                self.log.exception("sla: tick failed: %s", e)
            self._stop.wait(float(self._opt("interval_secs")))
        self._metrics.stop()

    def shutdown(self) -> None:
        self._stop.set()
        self._metrics.stop()
        self._remove_perf_query()
        super().shutdown()  # closes the librados handle compat.mon_command uses

    def _slo(self) -> Slo:
        return Slo(float(self._opt("slo_latency_ms")), float(self._opt("slo_percentile")),
                   float(self._opt("slo_low_fraction")))

    def _measure_latency(self, now: float, periods: dict[int, PoolPeriod]) -> None:
        """Per urgent pool: per-period mean latencies; the worst pool at the
        SLO percentile; seconds above the objective."""
        state = self._state
        urgent = [p for p, r in (state.roles if state else {}).items() if r.role is Role.URGENT]
        slo = self._slo()
        self._latency.window_secs = float(self._opt("slo_window_secs"))
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
        return pool_periods(result, pools)

    def _remove_perf_query(self) -> None:
        if self._perf_query_id is not None:
            try:
                self.remove_osd_perf_query(self._perf_query_id)
            except Exception as e:  # shutting down: nothing else to do about it
                self.log.debug("sla: removing the perf query failed: %s", e)
            self._perf_query_id = None

    def _apply_metrics_options(self) -> None:
        port = int(self._opt("metrics_port"))
        where = (str(self._opt("metrics_addr")), port)
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
        return regions_from_maps(osd_map, crush, str(self._opt("failure_domain")),
                                 str(self._opt("normal_class")), str(self._opt("urgent_class")))

    def tick(self) -> None:
        started = time.monotonic()
        try:
            self._tick(time.time())
        finally:
            self._tick_hist.observe(time.monotonic() - started)

    def _tick(self, now: float) -> None:
        maps = self._current_maps(now)
        view = maps.view
        new_epoch = self._upmap_key is None or self._upmap_key[0] != view.epoch
        self._rates.window_secs = float(self._opt("rate_window_secs"))
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
            self._forget_deleted_pools(state, view)
            # The gates look at the PGs of the managed pools only: an inactive
            # PG in a pool the module does not move must not hold a switch.
            # All PGs settled (the usual case): no per-pool read needed.
            self._pgs = PgCounts(total=pg_total(self._pg_status)) if summary is None \
                else pg_counts(pool_pg_states(summary, state.roles))
            urgent = [p for p, r in state.roles.items() if r.role is Role.URGENT]
            self._urgent_iops = self._rates.total_rate(urgent) if urgent else 0.0
            try:
                thresholds = self._thresholds()
                self._health.pop("SLA_CONFIG_INVALID", None)
            except ThresholdError as e:
                self._health["SLA_CONFIG_INVALID"] = {
                    "severity": "warning", "summary": f"sla thresholds invalid: {e}",
                    "count": 1, "detail": [str(e)]}
                self._publish_health()
                return
            if not self._opt("active"):
                # 'ceph sla off': measure and report, change nothing
                self._gates = []
                self._check_placement(state, maps, place=False)
                self._track(state, view, now)
                self._save(state)
                self._publish_health()
                return
            dry_run = bool(self._opt("dry_run"))
            # A dry run decides on a shadow of the decision state: the real
            # mode, and so the pools, stay as they are; when it ends, the
            # module carries on from the real state with real switch records.
            if not dry_run or self._dry_decision is None:
                self._dry_decision = state.decision
            decided_from = self._dry_decision if dry_run else state.decision
            plan = plan_tick(TickInputs(
                now=now, state=decided_from, urgent_iops=self._urgent_iops,
                thresholds=thresholds, min_dwell_secs=float(self._opt("min_dwell_secs")),
                health=self._health_snapshot(view, state, maps, now),
                max_misplaced_ratio=self._max_misplaced(),
                pinned=state.pinned,
                isolating=self._tracking is not None and self._tracking.isolating,
                dry_run=dry_run, sustain_secs=float(self._opt("sustain_secs")),
                urgent_latency_ms=(self._urgent_latency[1].worst()
                                   if self._urgent_latency else None),
                slo=self._slo(),
                pools=self._pools_now(state, view),
                blocked_before=frozenset(g.name for g in self._gates)))
            if plan.switch:
                record = SwitchRecord(now, decided_from.mode.value,
                                      plan.decision.target.value, plan.decision.reason,
                                      dry_run=dry_run)
            if dry_run:
                self._dry_decision = plan.state
            else:
                state.decision = plan.state
            if plan.switch:
                self._switch(state, record)
            for name in plan.newly_blocked:
                state.blocked_total[name] = state.blocked_total.get(name, 0) + 1
            self._gates = list(plan.gates) + self._apply_rule_changes(plan.rule_changes)
            self._check_placement(state, self._current_maps(now), place=not dry_run)
            self._track(state, view, now)
            self._save(state)
        self._publish_health()

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
                failed.append(Gate("apply_failed", f"osd pool set {change.pool} crush_rule "
                                   f"{change.to_rule}: {err.strip()}"))
                continue
            self.log.info("sla: pool %s crush_rule %s -> %s", change.pool, change.from_rule,
                          change.to_rule)
            self._maps_dirty = True
        if changes and len(failed) < len(changes) and self._tracking is not None \
                and self._tracking.record.epoch is None:
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
        classes = {self._opt("normal_class"), self._opt("urgent_class")}
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
            max_switches_per_day=int(self._opt("max_switches_per_day")),
        )

    def _max_misplaced(self) -> float:
        """Our option, or the balancer's target_max_misplaced_ratio (-1, default)."""
        value = float(self._opt("max_misplaced_ratio"))
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
        share = target_urgent_share(regions, max(sizes, default=3))
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

    def _unverified_reason(self, view: ClusterView, state: ModuleState) -> Optional[str]:
        """Why the installed rules cannot be trusted for shared mode, if so.

        Verified on the real PG mappings (crush_rules, osdmaptool) once per
        CRUSH version and set of normal pools, not every tick."""
        normal = self._normal_pools(state)
        lacking = [p for p in normal if p not in view.choose_args_pools]
        if lacking:
            return (f"pools {lacking} have no sla choose_args: run 'ceph sla rules apply'")
        key = (view.crush_version, tuple(normal))
        done, reason = self._verifier.result(key, self._generate_options(state, view))
        if not done:
            return f"rules being verified (crush version {view.crush_version})"
        return reason

    def _verify_rules(self, options: Any) -> Optional[str]:
        """Runs in the verifier's thread: crushtool and osdmaptool on the live
        maps, without the module lock. Weight sets that drifted (a reweight or
        a new OSD writes its weight into every weight set) are regenerated,
        verified and installed (compare-and-swap), then checked again."""
        try:
            crush = load_crush_rules()
            report = crush.verify_live(self._cli(crush), crush.Tools(), options)
            drift = drifted(report.failures)
            if drift:
                self.log.warning("sla: weight sets drifted (%s); repairing", drift[0])
                result = crush.install(self._cli(crush), crush.Tools(), options, repair=True)
                self._repairs.append(f"{time.strftime('%Y-%m-%d %H:%M:%S')}: {drift[0]}")
                del self._repairs[:-5]
                self.log.info("sla: weight sets repaired; PGs remapped back: %s",
                              dict(result.upgraded_pools))
                report = crush.verify_live(self._cli(crush), crush.Tools(), options)
        except Exception as e:  # any failure to verify is a reason not to share
            return f"rules could not be verified: {e}"
        return None if report.ok else "rules fail verification: " + "; ".join(report.failures)

    def _cli(self, crush: Any) -> Any:
        # The mgr's own identity: its mon caps ('allow profile mgr') include
        # osd rw, which getcrushmap/setcrushmap need.
        return crush.CephCli(conf=self.get_ceph_conf_path() or None,
                             name=f"mgr.{self.get_mgr_id()}",
                             keyring=str(self.get_ceph_option("keyring")))

    def _generate_options(self, state: ModuleState, view: ClusterView,
                          extra_normal: tuple[int, ...] = ()) -> Any:
        crush = load_crush_rules()
        normal = tuple(sorted({*self._normal_pools(state), *extra_normal}))
        hybrid = tuple(sorted(p for p, r in state.roles.items()
                              if r.role is Role.URGENT and r.placement is UrgentPlacement.HYBRID))
        sizes = [view.pools[p].size for p in normal if p in view.pools]
        return crush.GenerateOptions(
            normal_class=str(self._opt("normal_class")),
            urgent_class=str(self._opt("urgent_class")),
            failure_domain=str(self._opt("failure_domain")),
            size=max(sizes, default=3),
            pool_ids=normal,
            urgent_pool_ids=hybrid,
            release=compat.crush_release(self),
        )

    def _switch(self, state: ModuleState, record: SwitchRecord) -> None:
        """Record a decided switch; `_converge` moves the pools."""
        state.record_switch(record)
        verb = "would switch" if record.dry_run else "switching"
        self.log.info("sla: %s %s -> %s: %s", verb, record.from_mode, record.to_mode,
                      record.reason)
        self.cluster_log("cluster", self.ClusterLogPrio.INFO,
                         f"sla: {verb} normal pools {record.from_mode} -> {record.to_mode}: "
                         f"{record.reason}")
        if record.dry_run:
            return
        normal = self._normal_pools(state)
        before: dict[str, list[int]] = {}
        osdmap = self.get_osdmap()
        for pool_id in normal:
            before.update(osdmap.map_pool_pgs_up(pool_id))
        if self._tracking is not None:
            self._finish_progress(self._tracking, failed=True)
        self._tracking = SwitchTracking(record, record.time, before,
                                        f"sla-switch-{int(record.time * 1000)}",
                                        record.to_mode == Mode.ISOLATED.value)

    def _upmap_placements(self, state: ModuleState, view: ClusterView) -> dict[int, str]:
        """Pool id -> what its pg_upmap_items must do, by the rule it is on now:
        'shared' and 'hybrid' place replicas on urgent OSDs (upmaps.py),
        'isolated' removes every entry that reaches an urgent OSD."""
        out: dict[int, str] = {}
        for pool_id, role in state.roles.items():
            pool = view.pools.get(pool_id)
            if pool is None:
                continue
            rule = view.rule_name(pool.rule_id)
            if role.role is Role.NORMAL and rule == RULE_SHARED:
                out[pool_id] = "shared"
            elif role.role is Role.NORMAL and rule == RULE_ISOLATED_NORMAL:
                out[pool_id] = "isolated"
            elif role.role is Role.URGENT and rule == RULE_HYBRID:
                out[pool_id] = "hybrid"
        return out

    def _check_placement(self, state: ModuleState, maps: MapSnapshot, place: bool) -> None:
        """On a new OSD map epoch: check every managed pool's real up sets
        (normal inclusion, an OSD or a failure domain twice) and, if `place`,
        bring the pg_upmap_items to what each pool's rule wants.

        A reweight, a new OSD, the balancer's entries, the mon cancelling
        ours: each comes with a new epoch, so that is when to look again."""
        view, regions = maps.view, maps.regions
        placements = self._upmap_placements(state, view) if place else {}
        key = (view.epoch, json.dumps(sorted(placements.items())))
        if key == self._upmap_key and not self._upmaps_pending:
            return
        self._upmap_key = key
        items = maps.upmap_items
        osdmap = self.get_osdmap()
        plans: list[PoolPlan] = []
        faults: list[str] = []
        no_normal: list[str] = []
        self._upmap_status = {}
        for pool_id, role in sorted(state.roles.items()):
            if pool_id not in view.pools:
                continue
            up = osdmap.map_pool_pgs_up(pool_id)
            found = mapping_faults(up, regions, need_normal=role.role is Role.NORMAL)
            faults += [f"pg {pg}: one OSD twice in the up set" for pg in found.osd_twice]
            faults += [f"pg {pg}: two replicas in one {self._opt('failure_domain')}"
                       for pg in found.domain_twice]
            no_normal += list(found.no_normal)
            placement = placements.get(pool_id)
            if placement is None:
                continue
            if self._plan_cache_for != regions.fingerprint or len(self._plan_cache) > 1 << 20:
                self._plan_cache, self._plan_cache_for = {}, regions.fingerprint
            plan = plan_pool(pool_id, up, items.get(pool_id, {}), regions,
                             view.pools[pool_id].size, placement, self._plan_cache)
            plans.append(plan)
            replicas = sum(len(u) for u in up.values())
            urgent = sum(1 for u in up.values() for o in u
                         if o in regions.osds and regions.osds[o].cls == regions.urgent_class)
            self._upmap_status[pool_id] = {
                "placement": placement, "pgs_with_upmaps": len(plan.wanted),
                "pending": plan.pending,
                "urgent_replica_share": round(urgent / replicas, 4) if replicas else None}
        self._set_fault_health(faults)
        self._set_inclusion_health(no_normal)
        self._upmaps_pending = sum(p.pending for p in plans)
        hold = self._upmap_hold()
        batch = [c for p in plans for c in commands(p, placing=not hold)][:UPMAP_BATCH]
        if batch:
            self._send_upmap_batch(batch)

    def _send_upmap_batch(self, batch: list[dict[str, Any]]) -> None:
        with ThreadPoolExecutor(UPMAP_PARALLEL) as pool:
            results = list(pool.map(lambda c: compat.mon_command(self, c), batch))
        self._maps_dirty = True
        failed = [(c, err) for c, (rc, _, err) in zip(batch, results) if rc != 0]
        for cmd, err in failed[:5]:
            self.log.warning("sla: %s %s failed: %s", cmd["prefix"], cmd["pgid"], err.strip())
        self.log.info("sla: upmap entries: %d set, %d removed, %d failed",
                      sum(1 for c in batch if c["prefix"] == "osd pg-upmap-items"),
                      sum(1 for c in batch if c["prefix"] == "osd rm-pg-upmap-items"),
                      len(failed))
        track = self._tracking
        if track is not None and track.record.pgs_moved is None:
            rc, out, _ = compat.mon_command(self, {"prefix": "osd stat", "format": "json"})
            if rc == 0:  # the switch's placement is complete from this epoch on
                track.record.epoch = int(json.loads(out).get("epoch", 0))

    def _upmap_hold(self) -> bool:
        """Placing replicas on urgent OSDs moves data: as the balancer, only
        on a cluster with every PG active and not degraded, and misplaced
        objects under max_misplaced_ratio."""
        pgs = self._pgs
        misplaced = float(self._pg_status.get("misplaced_ratio", 0.0))
        return bool(pgs.inactive or pgs.degraded or pgs.unknown
                    or misplaced > self._max_misplaced())

    def _set_fault_health(self, faults: list[str]) -> None:
        self._health.pop("SLA_PLACEMENT_FAULT", None)
        if faults:
            self._health["SLA_PLACEMENT_FAULT"] = {
                "severity": "warning",
                "summary": f"{len(faults)} PGs of sla pools break a placement rule",
                "count": len(faults), "detail": faults[:20]}

    def _track(self, state: ModuleState, view: ClusterView, now: float) -> None:
        """Progress of the data movement of the last switch, PGs moved, and
        time to isolation (no normal-pool PG acting on an urgent OSD)."""
        track = self._tracking
        if track is None:
            # per-pool misplaced ratios for status and metrics, now and then
            if now - self._pg_dump_at >= SLOW_READ_SECS:
                self._pg_dump_at = now
                self._misplaced = pool_misplaced_ratios(self.get("pool_stats") or {})
            return
        record = track.record
        if record.epoch is None or view.epoch < record.epoch:
            return  # the mgr has not seen the new rules yet
        normal = self._normal_pools(state)
        if record.pgs_moved is None and self._upmaps_pending:
            return  # the switch's upmap entries are still being placed
        if record.pgs_moved is None:
            after: dict[str, list[int]] = {}
            osdmap = self.get_osdmap()
            for pool_id in normal:
                after.update(osdmap.map_pool_pgs_up(pool_id))
            record.pgs_moved, record.replicas_moved = mapping_change(track.before_up, after)
        # while a switch is watched: the PG stats of the normal pools, each tick
        stats = pool_pg_stats(self.get("pg_stats") or {}, normal)
        moving = pgs_not_clean(stats, normal)
        if track.moving_at_start is None:
            track.moving_at_start = max(moving, 1)
        done = moving == 0
        if track.isolating and record.time_to_isolation_secs is None:
            urgent_osds = view.osds_of_class(str(self._opt("urgent_class")))
            if pgs_acting_on(stats, normal, urgent_osds) == 0:
                record.time_to_isolation_secs = round(now - track.started, 2)
                self._last_tti = record.time_to_isolation_secs
                self.log.info("sla: isolated after %.1f s", record.time_to_isolation_secs)
            else:
                done = False
        fraction = 1.0 - min(moving, track.moving_at_start) / track.moving_at_start
        if done:
            self._finish_progress(track, failed=False)
            self._tracking = None
        else:
            self._progress("update", track.progress_id,
                           ev_msg=f"SLA switch to {record.to_mode}: {moving} PGs of normal "
                                  f"pools moving", ev_progress=fraction,
                           refs=[("pool", p) for p in normal])

    def _set_inclusion_health(self, missing: list[str]) -> None:
        """Warn when a normal-pool PG has no replica on the normal class."""
        self._health.pop("SLA_NORMAL_INCLUSION", None)
        self._pgs_without_normal = len(missing)
        if missing:
            normal = self._opt("normal_class")
            self._health["SLA_NORMAL_INCLUSION"] = {
                "severity": "warning",
                "summary": f"{len(missing)} PGs of normal pools have no replica on class "
                           f"{normal}",
                "count": len(missing),
                "detail": [f"pg {pgid}: up set has no {normal} OSD (a pg_upmap entry from "
                           "outside sla? exclude normal pools from the balancer)"
                           for pgid in missing[:20]]}

    def _finish_progress(self, track: SwitchTracking, failed: bool) -> None:
        if failed:
            self._progress("fail", track.progress_id, "superseded by a newer switch")
        else:
            self._progress("complete", track.progress_id)

    def _progress(self, verb: str, *args: Any, **kwargs: Any) -> None:
        try:
            self.remote("progress", verb, *args, **kwargs)
        except Exception as e:  # progress is nice to have; never fail a switch on it
            self.log.debug("sla: progress %s failed: %s", verb, e)

    def _save(self, state: ModuleState) -> None:
        text = state.to_json()
        if text != getattr(self, "_saved", None):
            self.set_store(STATE_KEY, text)
            self._saved = text

    def _publish_health(self) -> None:
        checks = dict(self._health)
        if self._gates:
            checks["SLA_SWITCH_BLOCKED"] = {
                "severity": "warning",
                "summary": "sla mode switch blocked: " + ", ".join(g.name for g in self._gates),
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
            try:
                thresholds: Optional[Thresholds] = self._thresholds()
            except ThresholdError:
                thresholds = None
            last = state.last_switch()
            slo = self._slo()
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
                "dry_run": bool(self._opt("dry_run")),
                "active": bool(self._opt("active")),
                "dry_run_mode": (self._dry_decision.mode.value
                                 if self._opt("dry_run") and self._dry_decision else None),
                "urgent_iops": self._urgent_iops,
                "threshold_iops": thresholds.high_iops if thresholds else None,
                "threshold_low_iops": thresholds.low_iops if thresholds else None,
                "min_dwell_secs": float(self._opt("min_dwell_secs")),
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
        self.set_module_option("threshold_iops", thresholds.high_iops)
        self.set_module_option("threshold_low_iops", thresholds.low_iops if low_iops else 0.0)
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
        self.set_module_option("slo_latency_ms", slo.latency_ms)
        if percentile is not None:
            self.set_module_option("slo_percentile", slo.percentile)
        pct = slo.percentile if percentile is not None else float(self._opt("slo_percentile"))
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

    @compat.write_command("sla pool set")
    def cmd_pool_set(self, pool: str, role: Role,
                     placement: Optional[UrgentPlacement] = None,
                     format: OutputFormat = OutputFormat.PLAIN) -> HandleCommandResult:
        """Manage a pool as urgent or normal (urgent placement: isolated|hybrid)"""
        view = self._view()
        info = view.pool_by_name(pool)
        if info is None:
            return _err(errno.ENOENT, f"pool '{pool}' does not exist")
        if placement is not None and role is not Role.URGENT:
            return _err(errno.EINVAL, "placement applies to urgent pools only")
        crush_dump = self.get("osd_map_crush")
        refusal = pool_refusal(info, crush_dump, str(self._opt("failure_domain")))
        if refusal:
            return _err(errno.EINVAL, refusal)
        rule_now = view.rule_name(info.rule_id)
        with self._lock:
            state = self._require_state()
            current = state.roles.get(info.pool_id)
            original = current.original_rule if current is not None else (
                None if rule_now.startswith("sla_") else rule_now)
            new = PoolRole(role, placement or UrgentPlacement.ISOLATED, original)
            if current is not None and current.role is not role:
                return _err(errno.EINVAL, f"pool '{pool}' is already {current.role.value}: "
                            f"'ceph sla pool rm {pool}' first")
            needed = self._rules_needed(replace(state, roles={**state.roles,
                                                               info.pool_id: new}))
            missing = [r for r in needed if r not in view.rules]
            if missing:
                return _err(errno.ENOENT, f"CRUSH rules {', '.join(missing)} are missing: "
                            "run 'ceph sla rules apply' first")
            needs_args = role is Role.NORMAL and info.pool_id not in view.choose_args_pools
            options = self._generate_options(state, view, (info.pool_id,)) if needs_args \
                else None
        if options is not None:
            # sla_shared needs this pool's own choose_args. Adding them must
            # not remap the pool, so it first moves onto sla_isolated_normal
            # (which the choose_args do not touch); the loop takes it on to
            # sla_shared if that is the mode.
            try:
                if view.rule_name(info.rule_id) != RULE_ISOLATED_NORMAL:
                    rc, _, err = compat.mon_command(self, {
                        "prefix": "osd pool set", "pool": pool, "var": "crush_rule",
                        "val": RULE_ISOLATED_NORMAL})
                    if rc != 0:
                        raise RuntimeError(err.strip())
                self._install_rules(options)
            except RulesBusy as e:
                return _err(errno.EBUSY, str(e))
            except Exception as e:  # CrushError or a failed mon command: say which
                return _err(errno.EIO, f"could not add pool '{pool}' to the sla rules: {e}")
        with self._lock:
            state = self._require_state()
            state.roles[info.pool_id] = new
            self._save(state)
        return _out(format, {"pool": pool, "pool_id": info.pool_id, "role": role.value,
                             "placement": new.placement.value},
                    f"pool '{pool}' is {role.value}\n")

    @compat.write_command("sla pool rm")
    def cmd_pool_rm(self, pool: str, format: OutputFormat = OutputFormat.PLAIN
                    ) -> HandleCommandResult:
        """Stop managing a pool: sla upmap entries and weight set removed, original rule back"""
        view = self._view()
        info = view.pool_by_name(pool)
        if info is None:
            return _err(errno.ENOENT, f"pool '{pool}' does not exist")
        with self._lock:
            state = self._require_state()
            role = state.roles.get(info.pool_id)
            if role is None:
                return _err(errno.ENOENT, f"pool '{pool}' is not managed by sla")
        done, failed = self._release_pool(info.pool_id, info.name, role, view)
        if failed:
            return _err(errno.EIO, f"pool '{pool}' is still managed: {failed}")
        with self._lock:
            state.roles.pop(info.pool_id, None)
            self._save(state)
        return _out(format, {"pool": pool, "removed": True, "steps": done},
                    f"pool '{pool}' is not managed: " + "; ".join(done) + "\n")

    @compat.write_command("sla release")
    def cmd_release(self, format: OutputFormat = OutputFormat.PLAIN) -> HandleCommandResult:
        """Release every managed pool: original rules back, sla upmaps and weight sets gone"""
        view = self._view()
        with self._lock:
            state = self._require_state()
            roles = dict(state.roles)
        report: dict[str, Any] = {}
        errors = []
        for pool_id, role in sorted(roles.items()):
            info = view.pools.get(pool_id)
            if info is None:
                continue
            done, failed = self._release_pool(pool_id, info.name, role, view)
            report[info.name] = done
            if failed:
                errors.append(f"{info.name}: {failed}")
                continue
            with self._lock:
                state.roles.pop(pool_id, None)
                self._save(state)
        if errors:
            return _err(errno.EIO, "not released: " + "; ".join(errors))
        text = "".join(f"{name}: {'; '.join(steps)}\n" for name, steps in report.items())
        return _out(format, {"released": report}, text or "no managed pools\n")

    def _release_pool(self, pool_id: int, name: str, role: PoolRole, view: ClusterView
                      ) -> tuple[list[str], Optional[str]]:
        """Undo what sla did to one pool, in an order that never leaves it on
        urgent OSDs: its upmap entries, its rule, its weight set."""
        done: list[str] = []
        osd_map = self.get("osd_map")
        urgent = view.osds_of_class(str(self._opt("urgent_class")))
        entries = current_items(osd_map).get(pool_id, {})
        ours = sorted(pg for pg, pairs in entries.items() if any(t in urgent for _, t in pairs))
        for pgid in ours:
            rc, _, err = compat.mon_command(self, {"prefix": "osd rm-pg-upmap-items",
                                                   "pgid": pgid})
            if rc != 0:
                return done, f"osd rm-pg-upmap-items {pgid}: {err.strip()}"
        if ours:
            done.append(f"{len(ours)} upmap entries removed")
        rule_now = view.rule_name(view.pools[pool_id].rule_id)
        if role.original_rule and rule_now.startswith("sla_"):
            if role.original_rule not in view.rules:
                return done, (f"its original rule {role.original_rule} no longer exists: "
                              f"'ceph osd pool set {name} crush_rule <rule>' first")
            rc, _, err = compat.mon_command(self, {"prefix": "osd pool set", "pool": name,
                                                   "var": "crush_rule",
                                                   "val": role.original_rule})
            if rc != 0:
                return done, f"osd pool set crush_rule {role.original_rule}: {err.strip()}"
            done.append(f"crush_rule {rule_now} -> {role.original_rule}")
        elif rule_now.startswith("sla_"):
            done.append(f"crush_rule left on {rule_now} (no original rule recorded)")
        if pool_id in view.choose_args_pools:
            rc, _, err = compat.mon_command(self, {"prefix": "osd crush weight-set rm",
                                                   "pool": name})
            if rc != 0:
                return done, f"osd crush weight-set rm {name}: {err.strip()}"
            done.append("weight set removed")
        return done, None

    @compat.write_command("sla on")
    def cmd_on(self) -> HandleCommandResult:
        """Let the module switch modes and place the managed pools"""
        self.set_module_option("active", True)
        return HandleCommandResult(0, "sla is on\n", "")

    @compat.write_command("sla off")
    def cmd_off(self) -> HandleCommandResult:
        """Stop switching and placing (pools stay as they are); measure and report only"""
        self.set_module_option("active", False)
        return HandleCommandResult(0, "sla is off: pools stay as they are\n", "")

    @compat.read_command("sla plan")
    def cmd_plan(self, format: OutputFormat = OutputFormat.PLAIN) -> HandleCommandResult:
        """What the next switch would move: PGs, replicas and bytes per normal pool"""
        osd_map, crush = self.get("osd_map"), self.get("osd_map_crush")
        view = cluster_view(osd_map, crush)
        with self._lock:
            state = self._require_state()
            target = _other(state.decision.mode)
            normal = self._normal_pools(state)
        rule = RULE_SHARED if target is Mode.SHARED else RULE_ISOLATED_NORMAL
        regions = self._regions(osd_map, crush)
        items = current_items(osd_map)
        osdmap = self.get_osdmap()
        stats = self.get("pg_dump").get("pg_stats", [])
        plans: list[dict[str, Any]] = []
        for pool_id in normal:
            moves = switch_moves(osdmap.map_pool_pgs_up(pool_id), items.get(pool_id, {}),
                                 regions, view.pools[pool_id].size, target.value)
            pg_bytes = pg_bytes_by_seed(stats, pool_id)
            plans.append({
                "pool": view.pools[pool_id].name, "pool_id": pool_id,
                "pgs": len(osdmap.map_pool_pgs_up(pool_id)), "pgs_moving": len(moves),
                "replicas": sum(moves.values()),
                "bytes": sum(n * pg_bytes.get(parse_pgid(pg)[1], 0) for pg, n in moves.items())})
        data = {"to_mode": target.value, "rule": rule, "pools": plans,
                "pgs": sum(p["pgs_moving"] for p in plans),
                "replicas": sum(p["replicas"] for p in plans),
                "bytes": sum(p["bytes"] for p in plans)}
        text = f"next switch: -> {target.value} ({rule})\n" + "".join(
            f"  {p['pool']}: {p['pgs_moving']} of {p['pgs']} PGs, {p['replicas']} replicas, "
            f"{p['bytes']} bytes\n" for p in plans)
        return _out(format, data, text)

    @compat.write_command("sla rules apply")
    def cmd_rules_apply(self, format: OutputFormat = OutputFormat.PLAIN) -> HandleCommandResult:
        """Generate, verify and install the sla CRUSH rules from the live map"""
        with self._lock:
            state = self._require_state()
            options = self._generate_options(state, self._view())
            normal = self._normal_pools(state)
        try:
            result = self._install_rules(options)
        except RulesBusy as e:
            return _err(errno.EBUSY, str(e))
        except Exception as e:  # CrushError or a failed mon command: say which
            return _err(errno.EINVAL, f"rules not installed: {e}")
        data = result.to_dict()
        return _out(format, data, ("installed" if result.changed else "unchanged") +
                    f": sla CRUSH rules, shared weight sets for normal pools {normal}\n")

    def _install_rules(self, options: Any) -> Any:
        """crush_rules.install (getcrushmap, crushtool, osdmaptool, setcrushmap):
        seconds of work, run without the module lock, one at a time."""
        with self._lock:
            if self._installing:
                raise RulesBusy("another 'ceph sla rules apply' or 'pool set' is installing "
                                "the rules; try again when it ends")
            self._installing = True
        try:
            crush = load_crush_rules()
            result = crush.install(self._cli(crush), crush.Tools(), options)
        finally:
            with self._lock:
                self._installing = False
        self._verifier.forget()
        return result


def _other(mode: Mode) -> Mode:
    return Mode.SHARED if mode is Mode.ISOLATED else Mode.ISOLATED


def drifted(failures: Any) -> list[str]:
    """The verification failures that mean our flat weight sets drifted from
    the tree (R4: a pool no longer maps like sla_isolated_normal; R5: a switch
    would move replicas; R6: a set with positions, from an older version)."""
    return [f for f in failures if str(f).split(" ", 1)[0] in ("R4", "R5", "R6")]


def _merge_gates(gates: list[Gate]) -> list[Gate]:
    """One apply_failed gate naming every pool that failed."""
    if len(gates) <= 1:
        return gates
    return [Gate("apply_failed", "; ".join(g.detail for g in gates))]
