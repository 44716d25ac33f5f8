"""The watch over a switch's data movement: PGs moved, time to isolation
(no PG of a normal pool acting on an urgent OSD any more: protection starts
then, not when a command returns), progress events, per-pool misplaced
ratios for status."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from ..core.cluster import (
    mapping_change,
    pgs_acting_on,
    pgs_not_clean,
    pgs_reported_elsewhere,
    pool_misplaced_ratios,
    pool_pg_stats,
)
from ..core.decision import Mode
from ..core.state import SwitchRecord
from .mgr_port import MgrPort

# Per-pool misplaced ratios are read this often while no switch is watched.
SLOW_READ_SECS = 30.0


@dataclass
class _Watch:
    record: SwitchRecord
    started: float
    before_up: dict[str, list[int]]
    progress_id: str
    isolating: bool
    moving_at_start: int | None = None
    placed: bool = False  # a command of the switch changed the map
    # the progress module knows the event (an update went out): it answers a
    # complete or fail of one it never saw with a warning
    announced: bool = False


class SwitchTracker:
    def __init__(self, mgr: MgrPort) -> None:
        self._get = mgr.get
        self._remote = mgr.remote
        self._log = mgr.log
        self._watch: _Watch | None = None
        self._last_tti: float | None = None
        self._misplaced: dict[int, float] = {}
        self._misplaced_at = 0.0

    # ---- what the tick asks ------------------------------------------------
    @property
    def isolating(self) -> bool:
        """A switch to isolated is still moving normal data off urgent OSDs."""
        return self._watch is not None and self._watch.isolating

    @property
    def sharing(self) -> bool:
        """The module's own switch to shared is still moving data."""
        return self._watch is not None and not self._watch.isolating

    @property
    def last_time_to_isolation(self) -> float | None:
        return self._last_tti

    def misplaced(self, pool_id: int) -> float:
        return self._misplaced.get(pool_id, 0.0)

    # ---- events --------------------------------------------------------------
    def start(self, record: SwitchRecord, before_up: dict[str, list[int]]) -> None:
        """A switch was decided: watch it (a switch still watched is superseded)."""
        if self._watch is not None and self._watch.announced:
            self._progress("fail", self._watch.progress_id, "superseded by a newer switch")
        self._watch = _Watch(record, record.time, before_up,
                             f"sla-switch-{int(record.time * 1000)}",
                             record.to_mode == Mode.ISOLATED.value)

    def placed_at(self, epoch: int) -> None:
        """The switch's commands are in the map from `epoch` on."""
        watch = self._watch
        if watch is not None and watch.record.pgs_moved is None:
            watch.record.epoch = epoch
            watch.placed = True

    def track(self, epoch: int, normal: list[int], urgent_osds: frozenset[int],
              after_up: Callable[[], dict[str, list[int]]], placing: bool, now: float) -> None:
        """Once per tick: PGs moved, time to isolation, progress."""
        watch = self._watch
        if watch is None:
            if now - self._misplaced_at >= SLOW_READ_SECS:
                self._misplaced_at = now
                self._misplaced = pool_misplaced_ratios(self._get("pool_stats") or {})
            return
        record = watch.record
        if record.epoch is None or epoch < record.epoch:
            return  # the mgr has not seen the switch's commands yet
        if record.pgs_moved is None and placing:
            return  # the switch's placement is still being sent
        up_now: list[dict[str, list[int]]] = []  # the map's up sets, read once a tick

        def up() -> dict[str, list[int]]:
            if not up_now:
                up_now.append(after_up())
            return up_now[0]
        stats = pool_pg_stats(self._get("pg_stats") or {}, normal)
        moving = pgs_not_clean(stats, normal)
        if moving == 0:
            # clean by stats the OSDs sent before the map moved the PGs is no end
            # (while it counts as one, an isolation waits on the peering to come)
            moving = pgs_reported_elsewhere(stats, up())
        if watch.moving_at_start is None:
            watch.moving_at_start = max(moving, 1)
        done = moving == 0
        if watch.isolating and record.time_to_isolation_secs is None:
            if pgs_acting_on(stats, normal, urgent_osds) == 0:
                record.time_to_isolation_secs = round(now - watch.started, 2)
                self._last_tti = record.time_to_isolation_secs
                self._log.info("sla: isolated after %.1f s", record.time_to_isolation_secs)
            else:
                done = False
        # counted on the map that has the switch's commands (or, for a switch none of
        # whose commands moved a PG, when it ends)
        if record.pgs_moved is None and (watch.placed or done):
            record.pgs_moved, record.replicas_moved = mapping_change(watch.before_up, up())
        if done:
            self._watch = None
            if watch.announced:
                self._progress("complete", watch.progress_id)
            return
        self._announce(watch, moving, normal)

    def _announce(self, watch: _Watch, moving: int, normal: list[int]) -> None:
        start = watch.moving_at_start or 1
        watch.announced = True
        self._progress("update", watch.progress_id,
                       ev_msg=f"SLA switch to {watch.record.to_mode}: {moving} PGs of normal "
                              f"pools moving", ev_progress=1.0 - min(moving, start) / start,
                       refs=[("pool", p) for p in normal])

    def _progress(self, verb: str, *args: Any, **kwargs: Any) -> None:
        try:
            self._remote("progress", verb, *args, **kwargs)
        except Exception as e:  # progress is nice to have; never fail a switch on it
            self._log.debug("sla: progress %s failed: %s", verb, e)
