"""What isolating the normal pools would do to the normal OSDs, on the live
module (the pure projection: core/isolation_load.py). Worked out at each
admission refresh (a new OSD map epoch, or every 30 s) from each normal OSD's
own PG count (`osd_stats`, as the fact reader read it), the managed normal
pools' pairs to urgent OSDs (the map as converted once per epoch) and each
normal OSD's limit (normal_limits.py), and published whole for the tick
(which holds the pools whose isolation would take a normal OSD past its hard
limit: core/tick.py), status, and SLA_ISOLATION_PG_LIMIT.

A PG brought back shows in its OSD's count only once the OSD reported it
(every mgr_stats_period: 5 s, up to 60 s where Ceph autotunes it). So the
PGs whose pairs left the map since the last refresh count as on their way
to their OSD for ARRIVE_SECS: a pool held is not let go on a count that
predates the pools isolated before it.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Callable

from ..core.health import HealthChecks
from ..core.isolation_load import IsolationLoad, Returns, load_of, returns_of
from ..core.maps import MapSnapshot
from ..core.state import ModuleState, Role
from .mgr_port import MgrPort
from .normal_limits import NormalLimits

CODE = "SLA_ISOLATION_PG_LIMIT"
ARRIVE_SECS = 60.0


class IsolationWatch:
    def __init__(self, mgr: MgrPort, health: HealthChecks,
                 pgs: Callable[[int], int | None]) -> None:
        self._health = health
        self._pgs = pgs  # an OSD's PGs by its last report, as the last refresh read them
        self.limits = NormalLimits(mgr)
        # published whole: the tick, status and the metrics read them from other threads
        self.load: IsolationLoad | None = None
        self.held: Mapping[int, str] = {}  # pools the last tick held shared, and why
        self._returns: tuple[Any, dict[int, dict[int, int]]] = (None, {})
        self._back: dict[int, int] = {}  # normal OSD -> PGs isolation brought back, last time
        self._arrivals: list[tuple[float, int, int]] = []  # (since, OSD, PGs) on their way
        self._version = -1  # the limits' version the load was worked out with

    def refresh(self, now: float, state: ModuleState, maps: MapSnapshot,
                limits_only: bool = False) -> None:
        """The load again (state: a snapshot, read outside the status lock);
        `limits_only`: nothing else changed, so only if a limit was read since."""
        if limits_only and self.limits.version == self._version:
            return
        self._version = self.limits.version
        view, regions = maps.view, maps.regions
        pools = tuple(sorted(p for p, r in state.roles.items()
                             if r.role is Role.NORMAL and p in view.pools))
        returning = self._returning(maps, pools)
        arriving = self._arriving(now, returning)
        counts = {o: self._pgs(o) or 0 for o in regions.members(regions.normal_class)}
        projected: dict[int, int] = {}
        for back in returning.values():
            for osd, n in back.items():
                projected[osd] = projected.get(
                    osd, counts.get(osd, 0) + arriving.get(osd, 0)) + n
        up = frozenset(o for o in projected if o in regions.osds and regions.osds[o].up)
        limits = self.limits.limits(projected, up)
        self.load = load_of(counts, returning, limits,
                            {p: view.pools[p].name for p in pools}, arriving)
        self._publish()

    def _returning(self, maps: MapSnapshot, pools: tuple[int, ...]) -> dict[int, dict[int, int]]:
        """Each pool's PGs isolation brings back per normal OSD, worked out
        once per map (100,000 pairs are read in a tenth of a second)."""
        regions = maps.regions
        key = (maps.view.epoch, regions.fingerprint, pools)
        if self._returns[0] != key:
            urgent = regions.members(regions.urgent_class)
            normal = regions.members(regions.normal_class)
            self._returns = (key, {p: back for p in pools if (back := returns_of(
                maps.upmap_items.get(p, {}), urgent, normal))})
        return self._returns[1]

    def _arriving(self, now: float, returning: Mapping[int, Returns]) -> dict[int, int]:
        """Per normal OSD, the PGs on their way there: those whose pairs left
        the map (an isolation, a plan that took a replica back) within ARRIVE_SECS."""
        total: dict[int, int] = {}
        for back in returning.values():
            for osd, n in back.items():
                total[osd] = total.get(osd, 0) + n
        self._arrivals = [a for a in self._arrivals if now - a[0] < ARRIVE_SECS]
        self._arrivals += [(now, osd, n - total.get(osd, 0)) for osd, n in self._back.items()
                           if n > total.get(osd, 0)]
        self._back = total
        out: dict[int, int] = {}
        for _, osd, n in self._arrivals:
            out[osd] = out.get(osd, 0) + n
        return out

    def hold(self, held: Mapping[int, str]) -> None:
        """The pools this tick holds on their shared placement (core/tick.py)."""
        self.held = dict(held)
        self._publish()

    def _publish(self) -> None:
        load, held = self.load, self.held
        over = load.over if load is not None else ()
        name = load.name if load is not None else str
        lines = [f"pool {name(p)}: {why}" for p, why in sorted(held.items())]
        lines += [a.reason() for a in over]
        summary = f"isolating the normal pools would take {len(over)} normal OSDs past the " \
                  "most PGs they hold"
        if held:
            summary += f"; {len(held)} normal pools held on their shared placement"
        self._health.update(CODE, lines, summary)

    def status(self) -> dict[str, Any] | None:
        """`ceph sla status`'s `isolation`: the normal OSD isolation loads most
        against its hard limit, how many would pass theirs, the pools held."""
        load = self.load
        if load is None or load.worst is None:
            return None
        return {**load.worst.to_dict(), "osds_over": len(load.over),
                "held": {load.name(p): why for p, why in sorted(self.held.items())}}
