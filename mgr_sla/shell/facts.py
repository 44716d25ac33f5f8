"""The facts the module decides on, read from the mgr in one place.

`FactReader.admission_facts` reads, once per refresh (a new OSD map epoch, a
new PG limit on an OSD, new PGs withheld, a mapping worked out, the managed
pools changed, or every SLOW_READ_SECS): the pools' bytes (`df`), each
urgent OSD's PGs, bytes and PG limit (`osd_stats`, osd_limits.py), the up
sets of the pools off their isolated placement, where sharing would put the
others' PGs (CRUSH's mapping where a strategy's rule alone places them, from
shared_mapping.py's worker, as for copy; the module's own entries where they
place them, as for move and ec, planned on the pool's up sets by the
strategy's model), Ceph's health, the measured gains; and hands them to the
pure admission (core/admission.py) as plain data.

`FactReader.sharing_now` reads, every tick and cheaply, what the check after
the fact looks at (core/sharing_check.py): Ceph's health, the PGs of managed
pools that are not active (read only when pg_summary shows some), the PGs of
the last step toward shared (every STATS_SECS while it settles); each urgent
OSD's PG count and fill as the last refresh read them (`osd_stats`: 10,000
OSDs are not converted every tick).
"""
from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from ..core.admission import Admission
from ..core.admission_facts import (
    AdmissionFacts,
    MonFacts,
    NormalPool,
    Placement,
    Projection,
    largest_domain,
    per_osd,
    placement_of,
)
from ..core.by_hand import held
from ..core.cluster import PoolInfo, pool_pg_stats
from ..core.decision import Mode
from ..core.gain import GainLedger
from ..core.maps import MapSnapshot
from ..core.models.base import PoolUp
from ..core.models.registry import MODELS, choices, isolated_size
from ..core.mon_projection import PoolPgs
from ..core.pg_slots import UrgentOsd, withheld, withholding_osds
from ..core.settings import Settings
from ..core.sharing import SharingProgress, sharing_progress
from ..core.sharing_check import SharingNow, StuckPg, UrgentOsdNow, not_active_pools, toofull_pools
from ..core.state import ModuleState, PoolRole, Role, StepRecord, Strategy
from ..core.switch_cost import Capacity, drain_rate
from ..core.upmap.ec_plan import ec_target_share
from ..core.upmap.pg_plan import target_urgent_share, urgent_member_cap
from ..core.wear import counted_this_period, current_period
from .device_latency import DeviceReader
from .mgr_port import MgrPort
from .osd_limits import OsdLimits
from .shared_mapping import SharedMappings

SLOW_READ_SECS = 30.0  # df and the OSDs' fill change slowly
# a PG a step remapped reports its new OSDs within a stats period or two;
# one whose stats still show others after this long is not served by its new
# primary (it withheld the PG, and the old stats say active+clean)
UNREPORTED_SECS = 30.0
STATS_SECS = 5.0  # the OSDs report their PGs every mgr_stats_period
PLAN_CACHE_MAX = 1 << 20


class FactReader:
    def __init__(self, mgr: MgrPort, read_fraction: Callable[[int], float | None],
                 ledger: GainLedger,
                 up_sets: Callable[[int], Mapping[str, Sequence[int]]]) -> None:
        self._mgr = mgr
        self._up_sets = up_sets  # a pool's up sets, read once per map (MapReader)
        self._read_fraction = read_fraction
        self._ledger = ledger
        self.limits = OsdLimits(mgr)
        self.devices = DeviceReader(mgr)
        self.mappings = SharedMappings(mgr)
        self._key: tuple[Any, ...] = ()
        self._at = -SLOW_READ_SECS
        self._plans: dict[Any, Any] = {}
        self._plans_for: Any = None
        # osd -> (PGs it holds or None, KiB used, KiB in all), by its last report
        self._stats: dict[int, tuple[int | None, float, float]] = {}
        self._stats_at = -STATS_SECS
        self._inactive_since: dict[str, float] = {}
        self._step_read: tuple[Any, tuple[bool, list[StuckPg]]] = (None, (True, []))
        self._step_at = -STATS_SECS  # when the last step's PGs were last read
        self._unreported_since: dict[str, float] = {}
        self._urgent: tuple[Any, dict[int, UrgentOsdNow]] = (None, {})
        self.withheld: str | None = None  # as read this tick
        self.withheld_by: frozenset[int] = frozenset()  # the OSDs it names
        self.progress: list[SharingProgress] = []  # the sharing pools' copies, at the refresh

    # ---- every tick ----------------------------------------------------------
    def read_health(self) -> str | None:
        """Why no pool may share now, from Ceph's own health (read every tick)."""
        try:
            raw = self._mgr.get("health") or {}
            health = json.loads(raw["json"]) if isinstance(raw.get("json"), str) else raw
        except Exception:  # unreadable health is no evidence either way
            self.withheld, self.withheld_by = None, frozenset()
        else:
            self.withheld, self.withheld_by = withheld(health), withholding_osds(health)
        return self.withheld

    def due(self, now: float, state: ModuleState, maps: MapSnapshot, settings: Settings
            ) -> bool:
        """A refresh is due: something the admission depends on changed (an
        option the operator set, too: `plan` shows its effect at once)."""
        key = (maps.view.epoch, self.withheld, self.limits.version, state.pinned, settings,
               tuple(sorted((p, r.role.value, r.strategy.value, r.auto)
                            for p, r in state.roles.items())),
               tuple(sorted(state.sent_back)), tuple(sorted(held(state.sizes))))
        if key == self._key and now - self._at < SLOW_READ_SECS \
                and not self.mappings.news():
            return False
        self._key, self._at = key, now
        return True

    # ---- once per refresh ----------------------------------------------------
    def admission_facts(self, now: float, state: ModuleState, maps: MapSnapshot,
                        settings: Settings) -> AdmissionFacts:
        view, regions = maps.view, maps.regions
        self._stats = {int(o["osd"]): (None if o.get("num_pgs") is None else int(o["num_pgs"]),
                                       float(o.get("kb_used", 0) or 0),
                                       float(o.get("kb", 0) or 0))
                       for o in (self._mgr.get("osd_stats") or {}).get("osd_stats", [])}
        self._stats_at = now
        df = self._df()
        urgent_ids = regions.in_of_class(regions.urgent_class)
        up = frozenset(o for o, p in regions.osds.items() if p.up)
        limits = self.limits.limits(urgent_ids, up)
        urgent = {o: UrgentOsd(regions.osds[o].weight, regions.osds[o].domain,
                               self.num_pgs(o), self._used(o), self._size(o),
                               limits.get(o))
                  for o in urgent_ids}
        pools = [self._pool(pid, role, df.get(pid, {}), maps)
                 for pid, role in sorted(state.roles.items())
                 if role.role is Role.NORMAL and pid in view.pools]
        pools = self._with_mappings(pools, maps)
        self._read_progress(pools)
        drain, basis = drain_rate([(r.bytes_to_isolate, r.time_to_isolation_secs)
                                   for r in state.history[-10:]
                                   if r.bytes_to_isolate and r.time_to_isolation_secs])
        total = sum(u.total_bytes for u in urgent.values())
        normal_used, normal_total = self._class_bytes(regions.of_class(regions.normal_class))
        cap = Capacity(total - sum(u.used_bytes for u in urgent.values()), maps.nearfull_ratio,
                       total, normal_used, normal_total, maps.backfillfull_ratio, drain, basis)
        try:
            limit: int | None = int(self._mgr.get_ceph_option("mon_max_pg_per_osd"))
        except Exception:  # not readable: the mon's projection is not run
            limit = None
        mon = MonFacts(limit, self._mgr.crush_release(),
                       tuple(PoolPgs(p.pool_id, p.pg_num_target or p.pg_num, p.size, p.rule_id)
                             for p in view.pools.values()),
                       len(view.in_osds),
                       {rid: view.in_under_takes(rid) for rid in view.rules.values()},
                       dict(view.rules), largest_domain(maps))
        # read whatever the prior (plan shows them): two counters per OSD a minute
        normal_ids = regions.in_of_class(regions.normal_class)
        period = current_period(state.history) if state.decision.mode is Mode.SHARED else None
        devices = self.devices.latency(now, [o for o in normal_ids if o in up],
                                       [o for o in urgent_ids if o in up],
                                       (regions.normal_class, regions.urgent_class),
                                       period.time if period is not None else None)
        return AdmissionFacts(now, settings, state.decision.mode, state.pinned, tuple(pools),
                              urgent, cap, frozenset(view.rules), mon, tuple(state.history),
                              {**held(state.sizes), **state.sent_back}, self.withheld,
                              devices, len(normal_ids), self.devices.calibration)

    def _read_progress(self, pools: list[NormalPool]) -> None:
        off = [p for p in pools if p.placement is not Placement.ISOLATED]
        self.progress = sharing_progress(self._mgr.get("pool_stats"), self._mgr.get(
            "osd_pool_stats"), off) if off else []

    def candidate(self, facts: AdmissionFacts, info: PoolInfo, role: PoolRole,
                  maps: MapSnapshot) -> AdmissionFacts:
        """The facts with one more pool, as `pool set` would take it (its
        placement planned or estimated: a CRUSH mapping takes seconds)."""
        df = self._df()
        pool = self._pool(info.pool_id, role, df.get(info.pool_id, {}), maps)
        pool = self._with_mappings([pool], maps, wait=False)[0]
        others = tuple(p for p in facts.pools if p.pool_id != info.pool_id)
        # every other fact as the tick's admission has it (the devices, the
        # calibration): the same pool gets the same strategy from both
        return replace(facts, pools=(*others, pool))

    def _df(self) -> dict[int, Any]:
        return {int(p["id"]): p.get("stats", {})
                for p in (self._mgr.get("df") or {}).get("pools", [])}

    def num_pgs(self, osd: int) -> int | None:
        """The PGs the OSD holds by its last report (strays included), as the
        last refresh read them; None: not reported."""
        stat = self._stats.get(osd)
        return None if stat is None else stat[0]

    def _class_bytes(self, osds: list[int]) -> tuple[float, float]:
        """(bytes used, bytes in all) of the OSDs, by their reports."""
        used = total = 0.0
        stats = self._stats
        for osd in osds:
            stat = stats.get(osd)
            if stat is not None:
                used += stat[1]
                total += stat[2]
        return used * 1024, total * 1024

    def _used(self, osd: int) -> float:
        stat = self._stats.get(osd)
        return stat[1] * 1024 if stat is not None else 0.0

    def _size(self, osd: int) -> float:
        stat = self._stats.get(osd)
        return stat[2] * 1024 if stat is not None else 0.0

    def _pool(self, pid: int, role: PoolRole, stats: Mapping[str, Any], maps: MapSnapshot
              ) -> NormalPool:
        view, regions = maps.view, maps.regions
        info = view.pools[pid]
        rule = view.rule_name(info.rule_id)
        placement = placement_of(role, info, rule, maps)
        base = isolated_size(role, info.size)
        stored = float(stats.get("stored", 0) or
                       float(stats.get("bytes_used", 0) or 0) / max(info.size, 1))
        mix = self._read_fraction(pid)
        measured = {k.value: m for k in Strategy
                    if (m := self._ledger.measured(pid, k.value, mix)) is not None}
        projections: dict[str, Projection] = {}
        live: dict[int, int] = {}
        if placement is not Placement.ISOLATED:
            urgent = regions.members(regions.urgent_class)
            live = per_osd(self._up_sets(pid).values(), urgent)
        if placement is Placement.SHARED:
            projections[role.strategy.value] = Projection(live, "placed")
        else:
            projections.update(self._planned(role, info, base, maps))
        share = ec_target_share(regions, info.ec_k, info.ec_m, info.min_size) \
            if info.erasure else target_urgent_share(
                regions, base, urgent_member_cap(regions, base, info.min_size))
        return NormalPool(pid, info.name, role, info, placement, stored, mix, projections,
                          live, measured, pid in view.choose_args_pools, share)

    def _planned(self, role: PoolRole, info: PoolInfo, size: int, maps: MapSnapshot
                 ) -> dict[str, Projection]:
        """The module's own entries for the pool, by each strategy its next
        switch may use that places by them, planned on its up sets as they are
        (an isolated pool maps like its shared rule: the entries are what
        sharing would add)."""
        kinds = [kind for kind in choices(role) if MODELS[kind].places_by_entries]
        if not kinds:
            return {}
        regions, pid = maps.regions, info.pool_id
        if self._plans_for != regions.fingerprint or len(self._plans) > PLAN_CACHE_MAX:
            self._plans, self._plans_for = {}, regions.fingerprint
        pool = PoolUp(pid, role, info, maps.view.rule_name(info.rule_id), self._up_sets(pid),
                      maps.upmap_items.get(pid, {}))
        return {kind.value: Projection(MODELS[kind].planned_urgent_pgs(
            pool, size, maps, self._plans), "planned") for kind in kinds}

    def _with_mappings(self, pools: list[NormalPool], maps: MapSnapshot, wait: bool = True
                       ) -> list[NormalPool]:
        """The shared placement of the pools whose next switch may use a
        strategy CRUSH alone places (copy: sla_copy_N at N+1), as CRUSH maps
        it on their real PGs, where the worker has mapped it for this crush
        version, these pools and these OSD weights."""
        wanted = []
        kinds: dict[int, Strategy] = {}  # the strategy each pool is mapped for
        for p in pools:
            if p.placement is Placement.SHARED:
                continue
            for kind in choices(p.role):
                rule = MODELS[kind].shared_rule(p.cost_inputs())
                if rule is not None:
                    wanted.append((p.pool_id, rule[0], rule[1], p.info.pg_num, p.info.size))
                    kinds[p.pool_id] = kind
                    break
        if not wanted or not wait:
            return pools
        weights = tuple(sorted((o, round(place.weight, 4))
                               for o, place in maps.regions.osds.items()))
        key = (maps.view.crush_version, tuple(wanted), weights)
        mapped = self.mappings.pgs_per_osd(key, tuple(w[:3] for w in wanted))
        urgent = maps.regions.members(maps.regions.urgent_class)
        out = []
        for p in pools:
            per_osd, mapped_for = mapped.get(p.pool_id), kinds.get(p.pool_id)
            if per_osd is not None and mapped_for is not None:
                projections = {**p.projections, mapped_for.value: Projection(
                    {o: n for o, n in per_osd.items() if o in urgent}, "crush")}
                p = replace(p, projections=projections)
            out.append(p)
        return out

    # ---- the check after the fact, every tick --------------------------------
    def sharing_now(self, now: float, state: ModuleState, maps: MapSnapshot,
                    summary: Mapping[str, Any] | None, admission: Admission | None
                    ) -> SharingNow:
        counted, sharing = counted_this_period(state.history), {}
        in_period = current_period(state.history) is not None  # isolated: none to send back
        for pid, pool in (admission.pools.items() if admission and in_period else ()):
            between = pool.placement is not Placement.ISOLATED
            if pid not in state.roles or not (pool.sharing or pid in counted or between):
                continue
            placed = pool.live if between else None
            sharing[pid] = frozenset(placed) if placed else None
        by_pool = (summary or {}).get("by_pool") or {}
        managed = frozenset(state.roles)
        stuck = self._stuck(now, not_active_pools(by_pool, managed))
        step = state.last_step
        if step is not None:
            stuck += [pg for pg in self._step_pgs(step, now)[1]
                      if pg.secs >= UNREPORTED_SECS and pg.pgid not in {s.pgid for s in stuck}]
        return SharingNow(sharing, {p: maps.view.pools[p].name for p in sharing},
                          self._urgent_now(maps) if sharing else {}, stuck, self.withheld,
                          maps.nearfull_ratio, toofull_pools(by_pool), managed,
                          self.withheld_by)

    def _urgent_now(self, maps: MapSnapshot) -> dict[int, UrgentOsdNow]:
        """Each urgent OSD's PGs, limit and fill, built again only when one of
        them may have changed (a report read, a limit read, a new map)."""
        regions = maps.regions
        key = (self._stats_at, self.limits.version, maps.view.epoch)
        if self._urgent[0] != key:
            urgent_ids = regions.in_of_class(regions.urgent_class)
            up = frozenset(o for o, p in regions.osds.items() if p.up)
            limits = self.limits.limits(urgent_ids, up)
            self._urgent = (key, {o: UrgentOsdNow(self.num_pgs(o), limits.get(o),
                                                  self._used(o) / self._size(o)
                                                  if self._size(o) > 0 else None)
                                  for o in urgent_ids})
        return self._urgent[1]

    def _stuck(self, now: float, pools: frozenset[int]) -> list[StuckPg]:
        """The PGs of `pools` that are not active, and since when (by the
        module's clock: the PG stats' own stamps are the OSDs')."""
        if not pools:
            self._inactive_since = {}
            return []
        out = []
        seen: dict[str, float] = {}
        for pg in pool_pg_stats(self._mgr.get("pg_stats"), pools):
            state = str(pg.get("state", ""))
            if "active" in state.split("+"):
                continue
            pgid = str(pg["pgid"])
            since = seen[pgid] = self._inactive_since.get(pgid, now)
            out.append(StuckPg(pgid, int(pgid.split(".")[0]), state,
                               tuple(int(o) for o in pg.get("up", [])),
                               tuple(int(o) for o in pg.get("acting", [])), now - since))
        self._inactive_since = seen
        return out

    def step_settled(self, step: StepRecord, now: float) -> bool:
        """Every PG of the last step's pools reported active on the OSDs the
        map gives it now (a stats period after a step, the PG states may still
        predate it)."""
        return self._step_pgs(step, now)[0]

    def _step_pgs(self, step: StepRecord, now: float) -> tuple[bool, list[StuckPg]]:
        """(the step settled, its PGs whose stats still show other OSDs than
        the map gives them, for UNREPORTED_SECS), read once a stats period (the
        OSDs report no faster). A PG whose mapping the step did not change may
        report nothing new (its stats are republished only when they change, or
        every osd_pg_stat_report_interval_max): the up set, not the epoch, says
        whether it reported since."""
        if self._step_read[0] == step and now - self._step_at < STATS_SECS:
            return self._step_read[1]
        self._step_at = now
        up: dict[str, Sequence[int]] = {}
        for pid in step.pools:
            up.update(self._up_sets(pid))
        settled, unreported = True, []
        since: dict[str, float] = {}
        for pg in pool_pg_stats(self._mgr.get("pg_stats"), step.pools):
            pgid, state = str(pg["pgid"]), str(pg.get("state", ""))
            reported = [int(o) for o in pg.get("up", [])]
            if "active" not in state.split("+"):
                settled = False
            if pgid not in up or sorted(up[pgid]) == sorted(reported):
                continue
            settled = False
            first = since[pgid] = self._unreported_since.get(pgid, now)
            unreported.append(StuckPg(
                pgid, int(pgid.split(".")[0]),
                f"{state} on {reported} as last reported (epoch "
                f"{int(pg.get('reported_epoch', 0) or 0)}), the map has {up[pgid]}",
                tuple(up[pgid]), tuple(int(o) for o in pg.get("acting", [])), now - first,
                unreported=True))
        self._unreported_since = since
        self._step_read = (step, (settled, unreported))
        return self._step_read[1]
