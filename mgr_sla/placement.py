"""Placement on the real PG mappings: the module's pg_upmap_items for shared
mode and hybrid pools, the placement checks (normal inclusion, an OSD or a
failure domain twice), and the watch over a switch's data movement. The
planning itself is pure (upmaps.py); this mixin reads the mgr and acts.
"""
import json
from typing import Any

from . import compat
from .cluster import (
    ClusterView,
    mapping_change,
    pgs_acting_on,
    pgs_not_clean,
    pool_misplaced_ratios,
    pool_pg_stats,
)
from .decision import Mode
from .shell_common import (
    SLOW_READ_SECS,
    UPMAP_BATCH,
    MapSnapshot,
    ShellBase,
    SwitchTracking,
)
from .state import RULE_HYBRID, RULE_ISOLATED_NORMAL, RULE_SHARED, ModuleState, Role, SwitchRecord
from .upmaps import PoolPlan, commands, mapping_faults, plan_pool


class PlacementMixin(ShellBase):
    def _switch(self, state: ModuleState, record: SwitchRecord, epoch: int) -> None:
        """Record a decided switch; the rule changes and upmap entries move the
        pools. `epoch` is the OSD map the switch was decided on: the record's
        epoch until a command changes the map (a switch with nothing to move,
        e.g. pools already where the mode wants them, is done at once)."""
        record.epoch = epoch
        state.record_switch(record)
        verb = "would switch" if record.dry_run else "switching"
        self.log.info("sla: %s %s -> %s: %s", verb, record.from_mode, record.to_mode,
                      record.reason)
        self.cluster_log("cluster", self.ClusterLogPrio.INFO,
                         f"sla: {verb} normal pools {record.from_mode} -> {record.to_mode}: "
                         f"{record.reason}")
        if record.dry_run:
            return
        # the rest of a batch that placed the other mode's entries is not sent
        self._upmap_sender.cancel()
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

    def _check_placement(self, state: ModuleState, maps: MapSnapshot, place: bool
                         ) -> list[dict[str, Any]]:
        """On a new OSD map epoch: check every managed pool's real up sets
        (normal inclusion, an OSD or a failure domain twice) and, if `place`,
        return the upmap commands that bring the pg_upmap_items to what each
        pool's rule wants (the caller sends them, without the module lock).

        A reweight, a new OSD, the balancer's entries, the mon cancelling
        ours: each comes with a new epoch, so that is when to look again."""
        view, regions = maps.view, maps.regions
        placements = self._upmap_placements(state, view) if place else {}
        key = (view.epoch, json.dumps(sorted(placements.items())))
        if key == self._upmap_key and not self._upmaps_pending:
            return []
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
            faults += [f"pg {pg}: two replicas in one {self._settings.failure_domain}"
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
        return [c for p in plans for c in commands(p, placing=not hold)][:UPMAP_BATCH]

    def _send_upmap_batch(self, batch: list[dict[str, Any]]) -> None:
        """Hand the batch to the sender's thread (none while one is in flight:
        the next epoch replans from what the mon has then)."""
        self._upmap_sender.start(batch, self._upmap_batch_done)

    def _upmap_batch_done(self, batch: list[dict[str, Any]], results: list[Any]) -> None:
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
            try:
                rc, out, _ = compat.mon_command(self, {"prefix": "osd stat", "format": "json"})
            except Exception as e:  # shutting down: the next mgr tracks from its own start
                self.log.debug("sla: osd stat after an upmap batch failed: %s", e)
                return
            if rc == 0:  # the switch's placement is complete from this epoch on
                with self._lock:
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
            urgent_osds = view.osds_of_class(self._settings.urgent_class)
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
            normal = self._settings.normal_class
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
