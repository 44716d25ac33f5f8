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
from dataclasses import dataclass, replace
from typing import Any, Optional

from mgr_module import HandleCommandResult, MgrModule

from . import compat
from .activity import PoolRates, pool_ops_from_df
from .cluster import (
    ClusterView,
    cluster_view,
    mapping_change,
    pg_bytes_by_seed,
    pgs_acting_on,
    pgs_not_clean,
    pgs_without,
    pool_misplaced_ratios,
)
from .crush_bridge import load_crush_rules
from .decision import Mode, ThresholdError, Thresholds, decide, held
from .gates import GATE_NAMES, ClusterHealth, Gate, blocking_gates, pg_counts
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
    SwitchRecord,
    UrgentPlacement,
    expected_rule,
)

REQUIRED_RULES = (RULE_ISOLATED_NORMAL, RULE_SHARED, RULE_ISOLATED_URGENT)
PG_DUMP_IDLE_SECS = 30.0


class OutputFormat(str, enum.Enum):
    PLAIN = "plain"
    JSON = "json"
    JSON_PRETTY = "json-pretty"


class ModeArg(str, enum.Enum):
    AUTO = "auto"
    ISOLATED = "isolated"
    SHARED = "shared"


@dataclass
class SwitchTracking:
    """A switch whose data movement is still being watched."""

    record: SwitchRecord
    started: float
    before_up: dict[str, list[int]]
    progress_id: str
    isolating: bool
    moving_at_start: int | None = None


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
        compat.option("interval_secs", type="secs", default=5, min=1, runtime=True,
                      desc="how often the module measures and decides"),
        compat.option("rate_window_secs", type="secs", default=5, min=1, runtime=True,
                      desc="window of the per-pool op rate"),
        compat.option("max_misplaced_ratio", type="float", default=0.05, min=0.0, max=1.0,
                      runtime=True, desc="no switch to shared while more objects are misplaced"),
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
    NOTIFY_TYPES: list[Any] = []
    if compat.COMMAND_REGISTRY is not None:
        CLICommand = compat.COMMAND_REGISTRY

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._stop = threading.Event()
        self._lock = threading.RLock()
        self._state: ModuleState | None = None
        self._rates = PoolRates(5.0)
        self._urgent_iops: float | None = None
        self._gates: list[Gate] = []
        self._tracking: SwitchTracking | None = None
        self._last_tti: float | None = None
        self._misplaced: dict[int, float] = {}
        self._verified: tuple[Any, str | None] | None = None
        self._metrics = MetricsServer(self._status_snapshot)
        self._metrics_where: tuple[str, int] | None = None
        self._health: dict[str, Any] = {}
        self._pg_status: dict[str, Any] = {}
        self._pg_dump_at = 0.0
        self._pgs_without_normal: int | None = None

    # ---- options -----------------------------------------------------------
    def _opt(self, name: str) -> Any:
        return self.get_module_option(name)

    def _thresholds(self) -> Thresholds:
        low = float(self._opt("threshold_low_iops") or 0.0)
        return Thresholds.parse(self._opt("threshold_iops"), low if low > 0 else None)

    # ---- lifecycle ---------------------------------------------------------
    def serve(self) -> None:
        with self._lock:
            self._state = ModuleState.from_json(self.get_store(STATE_KEY), time.time())
        self.log.info("sla: starting in mode %s", self._state.decision.mode.value)
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
        super().shutdown()  # closes the librados handle compat.mon_command uses

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

    def tick(self) -> None:
        now = time.time()
        view = self._view()
        self._rates.window_secs = float(self._opt("rate_window_secs"))
        self._pg_status = self.get("pg_status")
        if pg_counts(self._pg_status.get("pgs_by_state", [])).unknown:
            # A PG without stats yet (a fresh mgr after failover) would make
            # its pool's running totals jump from 0 to their full value: a
            # huge false rate. Measure only once every PG has reported.
            self._rates.reset()
        else:
            self._rates.add(now, pool_ops_from_df(self.get("df")))
        with self._lock:
            state = self._require_state()
            self._forget_deleted_pools(state, view)
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
            isolating = self._tracking is not None and self._tracking.isolating
            decision = decide(state.decision, self._urgent_iops, now, thresholds,
                              float(self._opt("min_dwell_secs")), state.pinned, isolating)
            gates: list[Gate] = []
            if decision.switch:
                gates = blocking_gates(decision.target, self._health_snapshot(view, state),
                                       float(self._opt("max_misplaced_ratio")))
                if gates:
                    state.decision = held(decision, state.decision)
                    self._count_blocked(state, gates)
                else:
                    record = SwitchRecord(now, state.decision.mode.value, decision.target.value,
                                          decision.reason, dry_run=bool(self._opt("dry_run")))
                    state.decision = decision.state
                    self._switch(state, record)
            else:
                state.decision = decision.state
            # Pools converge to the mode in force even while a switch away from
            # it is blocked (a new urgent pool still goes to its own region).
            if not self._opt("dry_run"):
                gates += [g for g in self._converge(state, view, gates) if g not in gates]
            self._gates = gates
            self._track(state, view, now)
            self._save(state)
        self._publish_health()

    def _require_state(self) -> ModuleState:
        if self._state is None:
            self._state = ModuleState.from_json(self.get_store(STATE_KEY), time.time())
        return self._state

    def _forget_deleted_pools(self, state: ModuleState, view: ClusterView) -> None:
        for pool_id in [p for p in state.roles if p not in view.pools]:
            self.log.info("sla: pool %d no longer exists; forgetting its role", pool_id)
            del state.roles[pool_id]

    def _count_blocked(self, state: ModuleState, gates: list[Gate]) -> None:
        # One count per blocked episode and reason, not one per tick.
        new = {g.name for g in gates} - {g.name for g in self._gates}
        for name in new:
            state.blocked_total[name] = state.blocked_total.get(name, 0) + 1

    def _health_snapshot(self, view: ClusterView, state: ModuleState) -> ClusterHealth:
        pg_status = self._pg_status
        classes = {self._opt("normal_class"), self._opt("urgent_class")}
        rule_osds = {o for o, c in view.device_class.items() if c in classes}
        missing = tuple(r for r in self._rules_needed(state) if r not in view.rules)
        return ClusterHealth(
            pgs=pg_counts(pg_status.get("pgs_by_state", [])),
            misplaced_ratio=float(pg_status.get("misplaced_ratio", 0.0)),
            down_osds=tuple(o for o in view.down_in_osds if o in rule_osds),
            missing_rules=missing,
            unverified=None if missing else self._unverified_reason(view, state),
        )

    def _rules_needed(self, state: ModuleState) -> list[str]:
        needed = list(REQUIRED_RULES)
        if any(r.placement is UrgentPlacement.HYBRID for r in state.roles.values()):
            needed.append(RULE_HYBRID)
        return needed

    def _normal_pools(self, state: ModuleState) -> list[int]:
        return sorted(p for p, r in state.roles.items() if r.role is Role.NORMAL)

    def _unverified_reason(self, view: ClusterView, state: ModuleState) -> str | None:
        """Why the installed rules cannot be trusted for shared mode, if so.

        Verified on the real PG mappings (crush_rules, osdmaptool) once per
        CRUSH version and set of normal pools, not every tick."""
        normal = self._normal_pools(state)
        lacking = [p for p in normal if p not in view.choose_args_pools]
        if lacking:
            return (f"pools {lacking} have no sla choose_args: run 'ceph sla rules apply'")
        key = (view.crush_version, tuple(normal))
        if self._verified is not None and self._verified[0] == key:
            return self._verified[1]
        try:
            crush = load_crush_rules()
            report = crush.verify_live(self._cli(crush), crush.Tools(),
                                       self._generate_options(crush, state, view))
            reason = None if report.ok else "rules fail verification: " + "; ".join(
                report.failures)
        except Exception as e:
            reason = f"rules could not be verified: {e}"
        self._verified = (key, reason)
        return reason

    def _cli(self, crush: Any) -> Any:
        # The mgr's own identity: its mon caps ('allow profile mgr') include
        # osd rw, which getcrushmap/setcrushmap need.
        return crush.CephCli(conf=self.get_ceph_conf_path() or None,
                             name=f"mgr.{self.get_mgr_id()}",
                             keyring=str(self.get_ceph_option("keyring")))

    def _generate_options(self, crush: Any, state: ModuleState, view: ClusterView,
                          extra_normal: tuple[int, ...] = ()) -> Any:
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

    def _converge(self, state: ModuleState, view: ClusterView,
                  already_blocked: list[Gate]) -> list[Gate]:
        """Set every managed pool's rule to the one its role and the mode want."""
        mode = state.decision.mode
        changes = []
        for pool_id, role in sorted(state.roles.items()):
            pool = view.pools[pool_id]
            want = expected_rule(role, mode)
            if view.rules.get(want) != pool.rule_id:
                changes.append((pool, want))
        if not changes:
            return []
        # Moving normal pools to isolation, or urgent pools onto their own
        # region, protects the SLA: only the gates for isolation apply.
        target = Mode.SHARED if any(w == RULE_SHARED for _, w in changes) else Mode.ISOLATED
        gates = blocking_gates(target, self._health_snapshot(view, state),
                               float(self._opt("max_misplaced_ratio")))
        if gates:
            if not already_blocked:
                self._count_blocked(state, gates)
            return gates
        for pool, want in changes:
            rc, _, err = compat.mon_command(self, {"prefix": "osd pool set", "pool": pool.name,
                                                   "var": "crush_rule", "val": want})
            if rc != 0:
                self.log.error("sla: osd pool set %s crush_rule %s failed: %s", pool.name, want,
                               err)
                return [Gate("apply_failed", f"osd pool set {pool.name} crush_rule {want}: "
                             f"{err.strip()}")]
            self.log.info("sla: pool %s crush_rule %s -> %s", pool.name,
                          view.rule_name(pool.rule_id), want)
        rc, out, _ = compat.mon_command(self, {"prefix": "osd stat", "format": "json"})
        if rc == 0 and self._tracking is not None and self._tracking.record.epoch is None:
            self._tracking.record.epoch = int(json.loads(out).get("epoch", 0))
        return []

    def _track(self, state: ModuleState, view: ClusterView, now: float) -> None:
        """Progress of the data movement of the last switch, PGs moved, and
        time to isolation (no normal-pool PG acting on an urgent OSD)."""
        track = self._tracking
        # pg_dump walks every PG: read it each tick only while a switch is
        # being watched, otherwise now and then for the misplaced metrics.
        if track is None and now - self._pg_dump_at < PG_DUMP_IDLE_SECS:
            return
        pg_dump = self.get("pg_dump")
        self._pg_dump_at = now
        self._misplaced = pool_misplaced_ratios(pg_dump)
        self._check_inclusion(state, view, pg_dump.get("pg_stats", []))
        if track is None:
            return
        record = track.record
        if record.epoch is None or view.epoch < record.epoch:
            return  # the mgr has not seen the new rules yet
        normal = self._normal_pools(state)
        if record.pgs_moved is None:
            after: dict[str, list[int]] = {}
            osdmap = self.get_osdmap()
            for pool_id in normal:
                after.update(osdmap.map_pool_pgs_up(pool_id))
            record.pgs_moved, record.replicas_moved = mapping_change(track.before_up, after)
        stats = pg_dump.get("pg_stats", [])
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

    def _check_inclusion(self, state: ModuleState, view: ClusterView,
                         pg_stats: list[dict[str, Any]]) -> None:
        """Warn when a normal-pool PG has no replica on the normal class."""
        self._health.pop("SLA_NORMAL_INCLUSION", None)
        normal_osds = view.osds_of_class(str(self._opt("normal_class")))
        missing = pgs_without(pg_stats, self._normal_pools(state), normal_osds)
        self._pgs_without_normal = len(missing)
        if missing:
            self._health["SLA_NORMAL_INCLUSION"] = {
                "severity": "warning",
                "summary": f"{len(missing)} PGs of normal pools have no replica on class "
                           f"{self._opt('normal_class')}",
                "count": len(missing),
                "detail": [f"pg {pgid}: up set has no {self._opt('normal_class')} OSD "
                           "(a pg_upmap entry? exclude normal pools from the balancer)"
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
        view = self._view()
        with self._lock:
            state = self._require_state()
            try:
                thresholds: Thresholds | None = self._thresholds()
            except ThresholdError:
                thresholds = None
            last = state.last_switch()
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
                })
            return {
                "mode": state.decision.mode.value,
                "pinned": state.pinned is not None,
                "dry_run": bool(self._opt("dry_run")),
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
                "gates": [g.to_dict() for g in self._gates],
                "pools": pools,
            }

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
        new = PoolRole(role, placement or UrgentPlacement.ISOLATED)
        with self._lock:
            state = self._require_state()
            current = state.roles.get(info.pool_id)
            if current is not None and current.role is not role:
                return _err(errno.EINVAL, f"pool '{pool}' is already {current.role.value}: "
                            f"'ceph sla pool rm {pool}' first")
            needed = self._rules_needed(replace(state, roles={**state.roles,
                                                               info.pool_id: new}))
            missing = [r for r in needed if r not in view.rules]
            if missing:
                return _err(errno.ENOENT, f"CRUSH rules {', '.join(missing)} are missing: "
                            "run 'ceph sla rules apply' first")
            if role is Role.NORMAL and info.pool_id not in view.choose_args_pools:
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
                    self._install_rules(state, extra_normal=(info.pool_id,))
                except Exception as e:
                    return _err(errno.EIO, f"could not add pool '{pool}' to the sla rules: {e}")
            state.roles[info.pool_id] = new
            self._save(state)
        return _out(format, {"pool": pool, "pool_id": info.pool_id, "role": role.value,
                             "placement": new.placement.value},
                    f"pool '{pool}' is {role.value}\n")

    @compat.write_command("sla pool rm")
    def cmd_pool_rm(self, pool: str, format: OutputFormat = OutputFormat.PLAIN
                    ) -> HandleCommandResult:
        """Stop managing a pool (its crush_rule is left as it is)"""
        view = self._view()
        info = view.pool_by_name(pool)
        if info is None:
            return _err(errno.ENOENT, f"pool '{pool}' does not exist")
        with self._lock:
            state = self._require_state()
            if info.pool_id not in state.roles:
                return _err(errno.ENOENT, f"pool '{pool}' is not managed by sla")
            del state.roles[info.pool_id]
            self._save(state)
        return _out(format, {"pool": pool, "removed": True}, f"pool '{pool}' is not managed\n")

    @compat.read_command("sla plan")
    def cmd_plan(self, format: OutputFormat = OutputFormat.PLAIN) -> HandleCommandResult:
        """What the next switch would move: PGs, replicas and bytes per normal pool"""
        view = self._view()
        with self._lock:
            state = self._require_state()
            target = _other(state.decision.mode)
            normal = self._normal_pools(state)
        rule = RULE_SHARED if target is Mode.SHARED else RULE_ISOLATED_NORMAL
        try:
            crush = load_crush_rules()
            stats = self.get("pg_dump").get("pg_stats", [])
            plans = [crush.plan_switch(self._cli(crush), crush.Tools(), view.pools[p].name, rule,
                                       pg_bytes=pg_bytes_by_seed(stats, p)).to_dict()
                     for p in normal]
        except Exception as e:
            return _err(errno.EIO, f"could not plan the switch: {e}")
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
            try:
                result = self._install_rules(state)
            except Exception as e:
                return _err(errno.EINVAL, f"rules not installed: {e}")
            normal = self._normal_pools(state)
        data = result.to_dict()
        return _out(format, data, ("installed" if result.changed else "unchanged") +
                    f": sla CRUSH rules, shared weight sets for normal pools {normal}\n")

    def _install_rules(self, state: ModuleState, extra_normal: tuple[int, ...] = ()) -> Any:
        crush = load_crush_rules()
        result = crush.install(self._cli(crush), crush.Tools(),
                               self._generate_options(crush, state, self._view(), extra_normal))
        self._verified = None
        return result


def _other(mode: Mode) -> Mode:
    return Mode.SHARED if mode is Mode.ISOLATED else Mode.ISOLATED
