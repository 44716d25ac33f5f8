"""ceph-mgr module `sla`: wiring and commands.

Each tick reads from the mgr, calls the pure step (tick.plan_tick), and hands
the plan to its collaborators: `Placer` (each pool's strategy: rules,
sizes, pg_upmap_items, placement checks), `SwitchTracker` (time to isolation,
progress), `RulesVerifier` (the CRUSH rules), `PoolActivity` (per-pool client
IOPS and latency), `AdmissionStep` (which normal pools may share and how:
the facts read, the pure admission, the check after the fact), `Advisor`
(`sla advise`). State lives in the mon-backed store (`StateStore`).
"""
# No `from __future__ import annotations` here: ceph-mgr reads the command
# handlers' annotations at import time to build the command signatures.
import errno
import threading
import time
from typing import Any, Optional

from mgr_module import HandleCommandResult, MgrModule

from . import __version__
from .core.decision import Mode, ThresholdError, Thresholds
from .core.health import HealthChecks
from .core.histogram import TickHistogram
from .core.latency import SloError, parse_slo
from .core.mon_link import HEALTH_CODE as MONS_SILENT
from .core.report import history_dicts, render_history, render_plan_costs, render_status
from .core.settings import SETTINGS_SPECS, Settings
from .core.state import Role, Strategy, UrgentPlacement
from .core.status import StatusFacts, status_dict
from .placement.placer import Placer
from .shell import compat, config_warnings
from .shell.admission_step import AdmissionStep
from .shell.advice_commands import Advisor
from .shell.balancer_guard import BalancerGuard
from .shell.commands_io import ModeArg, OutputFormat, refuse, reply
from .shell.map_reader import MapReader
from .shell.metrics_server import MetricsBindError, MetricsServer
from .shell.module_port import ModulePort
from .shell.pool_activity import PoolActivity
from .shell.pool_commands import PoolCommands
from .shell.rules_verifier import RulesVerifier
from .shell.state_store import StateStore
from .shell.status import StatusParts, gather
from .shell.switch_tracker import SwitchTracker
from .shell.tick_runner import Collaborators, TickRunner

# Between ticks, in shared mode, the perf query is read this often: an OSD
# report that brings urgent ops starts a tick at once.
PERF_POLL_SECS = 0.25
TICK_FAILURES_WARN = 3  # ticks failing in a row before SLA_TICK_FAILED
TICK_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5)


class Module(MgrModule):
    MODULE_OPTIONS = [compat.option(spec.name, **spec.fields()) for spec in SETTINGS_SPECS]
    NOTIFY_TYPES: list[Any] = compat.notify_types("osd_map")
    if compat.COMMAND_REGISTRY is not None:
        CLICommand = compat.COMMAND_REGISTRY

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._stop = threading.Event()
        self._settings_read: Optional[Settings] = None
        self._health = HealthChecks()
        # one typed port to the mgr, late-bound: a test harness (and ceph-mgr
        # itself) may provide the module's methods after __init__
        mgr = self._port = ModulePort(self, lambda: (self._settings.mon_command_timeout_secs,
                                                     self._settings.mon_map_timeout_secs))
        self._store = StateStore(mgr, self._health)
        self._maps = MapReader(mgr.get, mgr.get_osdmap)
        self._activity = PoolActivity(mgr)
        self._tracker = SwitchTracker(mgr)
        self._rules = RulesVerifier(mgr)
        self._placer = Placer(mgr.mon, self._maps.up_sets, self.log, self._health,
                                 lambda: self._settings.failure_domain,
                                 outages=mgr.mons.outages)
        self._admission = AdmissionStep(mgr, self._health, self._activity.read_fraction,
                                        self._maps.up_sets)
        self._balancer = BalancerGuard(mgr, self._health)
        self._pools = PoolCommands(mgr, self._store, self._maps, self._placer, self._rules,
                                   lambda: self._settings, self._balancer.release,
                                   self._first_strategy, lambda: self._admission.isolation.load)
        self._advisor = Advisor(mgr, self._store, lambda: self._settings)
        self._ticker = TickRunner(
            mgr, Collaborators(self._store, self._maps, self._activity, self._tracker,
                               self._rules, self._placer, self._admission, self._advisor,
                               self._health, self._balancer),
            lambda: self._settings)
        self._metrics = MetricsServer(self._status_snapshot)
        self._metrics_where: Optional[tuple[str, int]] = None
        self._tick_hist = TickHistogram(TICK_BUCKETS)
        self._tick_failures = 0  # in a row

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

    def _set_options(self, **values: Any) -> Optional[HandleCommandResult]:
        """None once every option is set; a refusal at the first the mon did
        not take in time (the mgr waits for its `config set`)."""
        try:
            for name, value in values.items():
                why = self._port.set_module_option(name, value)
                if why is not None:
                    return refuse(errno.ETIMEDOUT, f"{name} not set: {why}")
            return None
        finally:
            self.config_notify()  # the next tick acts on them, not after the mon's round trip

    # ---- lifecycle ---------------------------------------------------------
    def serve(self) -> None:
        self.log.info("sla %s: starting in mode %s", __version__,
                      self._store.state().decision.mode.value)
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
        """In shared mode, between ticks: did an OSD report bring urgent ops?"""
        with self._store.lock:  # commands change the roles
            state = self._store.state()
            if state.decision.mode is not Mode.SHARED:
                return False
            managed = frozenset(state.roles)
            urgent = state.pools(role=Role.URGENT)
        return self._activity.urgent_ops_arrived(managed, urgent)

    def shutdown(self) -> None:
        self._stop.set()
        self._placer.cancel_sends()
        self._metrics.stop()
        self._activity.stop()
        super().shutdown()  # closes the librados handle compat.mon_command uses

    def notify(self, notify_type: Any, notify_id: str) -> None:
        if str(getattr(notify_type, "value", notify_type)) == "osd_map":
            self._maps.mark_dirty()

    def _apply_metrics_options(self) -> None:
        port = self._settings.metrics_port
        where = (self._settings.metrics_addr, port)
        if where == self._metrics_where and (self._metrics.running or port == 0):
            return  # else: a port that was taken is tried again every tick
        self._metrics.stop()
        self._metrics_where = where
        self._health.clear("SLA_METRICS_PORT")
        if port == 0:
            return
        try:
            self._metrics.start(*where)
        except MetricsBindError as e:
            self._health.set("SLA_METRICS_PORT", f"sla metrics endpoint not served: {e}", [
                str(e), "free the port, or choose another: 'ceph config set mgr "
                "mgr/sla/metrics_port PORT' (and mgr/sla/metrics_addr; 0 turns it off)"])

    # ---- the tick ----------------------------------------------------------
    def tick(self) -> None:
        started = time.monotonic()
        self._health.clear("SLA_TICK_FAILED")  # a tick that ends publishes without it
        try:
            with self._store.act_lock:
                if self._mons_answer():
                    self._ticker.run(time.time())
                else:
                    self._ticker.watch(time.time())  # measure and report, send nothing
            self._tick_failures = 0
        except Exception as e:
            self._tick_failed(e)
            raise
        finally:
            self._tick_hist.observe(time.monotonic() - started)

    def _mons_answer(self) -> bool:
        """Under the act lock, so that no command is half way: whether the
        monitors answer for this tick (a probe's answer counts from here, the
        next probe starts when due), their health check set or cleared."""
        if self._port.refresh_mons():
            self.log.info("sla: the monitors answer again: planning afresh")
            self._maps.mark_dirty()
        check = self._port.mons.health()
        if check is None:
            self._health.clear(MONS_SILENT)
            return True
        self._health.set(MONS_SILENT, *check)
        return False

    def _mons_refusal(self) -> Optional[HandleCommandResult]:
        """A command that changes the cluster fails at once while the
        monitors are silent, rather than wait for them or half apply."""
        why = self._port.mons_waiting()
        return refuse(errno.ETIMEDOUT, why) if why else None

    def _tick_failed(self, e: Exception) -> None:
        """Ticks failing in a row: the mode and the pools are no longer looked
        after, so `ceph health` says it (the mgr log has the traceback)."""
        self._tick_failures += 1
        if self._tick_failures < TICK_FAILURES_WARN:
            return
        self._health.set("SLA_TICK_FAILED", f"sla: the last {self._tick_failures} ticks "
                         "failed; the mode and the pools are not looked after", [
                             f"{type(e).__name__}: {e}",
                             "the mgr log has each failure ('sla: tick failed'); "
                             "'ceph mgr fail' restarts the module"])
        self.set_health_checks(self._ticker.health_checks())

    # ---- status ------------------------------------------------------------
    def _status_snapshot(self) -> dict[str, Any]:
        maps = self._maps.last()  # status and scrapes convert nothing
        view = maps.view if maps is not None else self._maps.fresh_view()
        with self._store.lock:
            facts = StatusFacts(
                state=self._store.state(), settings=self._settings, view=view,
                version=__version__, urgent_iops=self._ticker.urgent_iops,
                gates=self._ticker.gates, holds=self._ticker.holds,
                repairs=self._rules.repairs, tick_seconds=self._tick_hist.to_dict(),
                dry_run_mode=(self._ticker.dry_decision.mode.value if self._settings.dry_run
                              and self._ticker.dry_decision else None),
                stats_period_secs=config_warnings.stats_period(self._port),
                monitors=self._port.mons.describe(),
                waiting_for_next_step=self._ticker.waiting)
            return status_dict(gather(facts, StatusParts(
                self._activity, self._tracker, self._placer, self._admission)))

    # ---- commands ----------------------------------------------------------
    @compat.read_command("sla status")
    def cmd_status(self, format: OutputFormat = OutputFormat.PLAIN) -> HandleCommandResult:
        """Show the SLA mode, urgent activity, thresholds, managed pools and what holds a switch"""
        status = self._status_snapshot()
        return reply(format, status, render_status(status))

    @compat.read_command("sla history")
    def cmd_history(self, format: OutputFormat = OutputFormat.PLAIN) -> HandleCommandResult:
        """Show the last mode switches"""
        with self._store.lock:
            state = self._store.state()
            return reply(format, history_dicts(state), render_history(state))

    @compat.write_command("sla set-threshold")
    def cmd_set_threshold(self, high_iops: str, low_iops: Optional[str] = None,
                          format: OutputFormat = OutputFormat.PLAIN) -> HandleCommandResult:
        """Set the urgent IOPS thresholds (low defaults to half of high)"""
        try:
            thresholds = Thresholds.parse(high_iops, low_iops)
        except ThresholdError as e:
            return refuse(errno.EINVAL, str(e))
        # low through 0 (half of high) first: every pair a reader sees on the way is valid
        refused = self._set_options(threshold_low_iops=0.0) or self._set_options(
            threshold_iops=thresholds.high_iops,
            threshold_low_iops=thresholds.low_iops if low_iops else 0.0)
        if refused:
            return refused
        data = {"threshold_iops": thresholds.high_iops,
                "threshold_low_iops": thresholds.low_iops}
        return reply(format, data, f"thresholds: high {thresholds.high_iops:g}, low "
                                   f"{thresholds.low_iops:g} IOPS\n")

    @compat.write_command("sla set-slo")
    def cmd_set_slo(self, latency_ms: str, percentile: Optional[str] = None,
                    format: OutputFormat = OutputFormat.PLAIN) -> HandleCommandResult:
        """Set the urgent pools' latency objective in ms (0: off) and its percentile"""
        try:
            slo = parse_slo(latency_ms, percentile)
        except SloError as e:
            return refuse(errno.EINVAL, str(e))
        values: dict[str, Any] = {"slo_latency_ms": slo.latency_ms}
        if percentile is not None:
            values["slo_percentile"] = slo.percentile
        refused = self._set_options(**values)
        if refused:
            return refused
        pct = self._settings.slo_percentile
        text = (f"latency objective: p{pct:g} of urgent latency <= {slo.latency_ms:g} ms\n"
                if slo.on else "latency objective: off\n")
        return reply(format, {"slo_latency_ms": slo.latency_ms, "slo_percentile": pct}, text)

    @compat.write_command("sla mode")
    def cmd_mode(self, mode: ModeArg, format: OutputFormat = OutputFormat.PLAIN
                 ) -> HandleCommandResult:
        """Pin the mode (isolated|shared) or let the module decide (auto)"""
        refused = self._mons_refusal()  # the pin must reach the store
        if refused:
            return refused
        with self._store.lock:
            state = self._store.state()
            state.pinned = None if mode is ModeArg.AUTO else Mode(mode.value)
            state.sent_back.clear()  # the operator's word: the admission decides afresh
            self._store.mark_dirty()
        self._store.write_back()  # outside the lock: a mon round trip
        text = "mode: auto\n" if mode is ModeArg.AUTO else f"mode pinned to {mode.value}\n"
        return reply(format, {"pinned": None if mode is ModeArg.AUTO else mode.value}, text)

    @compat.write_command("sla on")
    def cmd_on(self, format: OutputFormat = OutputFormat.PLAIN) -> HandleCommandResult:
        """Let the module switch modes and place the managed pools"""
        refused = self._set_options(active=True)
        if refused:
            return refused
        return reply(format, {"active": True}, "sla is on\n")

    @compat.write_command("sla off")
    def cmd_off(self, format: OutputFormat = OutputFormat.PLAIN) -> HandleCommandResult:
        """Stop switching and placing (pools stay as they are); measure and report only"""
        refused = self._set_options(active=False)
        if refused:
            return refused
        return reply(format, {"active": False}, "sla is off: pools stay as they are\n")

    @compat.write_command("sla pool set")
    def cmd_pool_set(self, pool: str, role: Role,
                     placement: Optional[UrgentPlacement] = None,
                     strategy: Optional[Strategy] = None,
                     format: OutputFormat = OutputFormat.PLAIN) -> HandleCommandResult:
        """Manage a pool as urgent (placement isolated|hybrid) or normal (strategy copy|move)"""
        refused = self._mons_refusal()
        if refused:
            return refused
        auto = strategy is None and role is Role.NORMAL \
            and self._settings.default_strategy not in {kind.value for kind in Strategy}
        if strategy is None and role is Role.NORMAL and not auto:
            strategy = Strategy(self._settings.default_strategy)
        return self._pools.pool_set(pool, role, placement, strategy, format, auto)

    def _first_strategy(self, info: Any, original_rule: Optional[str]) -> Any:
        """An auto pool's first strategy: the admission's choice with it added."""
        now, settings = time.time(), self._settings
        maps = self._maps.current(now, settings.region_spec())
        with self._store.lock:
            seen = self._store.state().snapshot()
        return self._admission.first_strategy(now, seen, maps, settings, info, original_rule)

    @compat.write_command("sla pool rm")
    def cmd_pool_rm(self, pool: str, format: OutputFormat = OutputFormat.PLAIN
                    ) -> HandleCommandResult:
        """Stop managing a pool: original rule, size and min_size back, sla upmaps gone"""
        return self._mons_refusal() or self._pools.pool_rm(pool, format)

    @compat.write_command("sla release")
    def cmd_release(self, format: OutputFormat = OutputFormat.PLAIN) -> HandleCommandResult:
        """Release every managed pool, as 'pool rm' does (before uninstalling the module)"""
        return self._mons_refusal() or self._pools.release(format)

    @compat.read_command("sla plan")
    def cmd_plan(self, format: OutputFormat = OutputFormat.PLAIN) -> HandleCommandResult:
        """What the next switch would move and cost, per normal pool and strategy"""
        with self._store.lock:
            target = Mode.SHARED if self._store.state().decision.mode is Mode.ISOLATED \
                else Mode.ISOLATED
        admission = self._admission.admission  # the tick's: the pools it keeps isolated
        moves = self._pools.switch_moves(target, admission.kept if admission else ())
        costs = self._admission.report()
        data = {"to_mode": target.value, "pools": moves, "costs": costs,
                "devices": self._admission.devices(),
                "pgs": sum(p["pgs_moving"] for p in moves),
                "replicas": sum(p["replicas"] for p in moves),
                "bytes": sum(p["bytes"] for p in moves)}
        return reply(format, data, f"next switch: -> {target.value}\n" + "".join(
            f"  {p['pool']} ({p['strategy']}): {p['pgs_moving']} of {p['pgs']} PGs, "
            f"{p['replicas']} replicas, {p['bytes']} bytes\n" for p in moves)
            + render_plan_costs(costs))

    @compat.write_command("sla rules apply")
    def cmd_rules_apply(self, format: OutputFormat = OutputFormat.PLAIN) -> HandleCommandResult:
        """Generate, verify and install the sla CRUSH rules from the live map"""
        return self._mons_refusal() or self._pools.rules_apply(format)

    @compat.write_command("sla advise")
    def cmd_advise(self, cost_ratio: Optional[float] = None, calibrate: bool = False,
                   format: OutputFormat = OutputFormat.PLAIN) -> HandleCommandResult:
        """Size the urgent region; thresholds, dwell, strategy per pool (--calibrate: osd bench)"""
        return self._advisor.advise(cost_ratio, calibrate, format, self._plan_costs)

    def _plan_costs(self) -> dict[str, Any]:
        pools = self._admission.report()
        return {"pools": pools, "text": render_plan_costs(pools)}
