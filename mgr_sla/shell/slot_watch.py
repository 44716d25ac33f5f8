"""PG slots on the live cluster (core/pg_slots.py): each urgent OSD's PG count
with the managed normal pools shared, read with the switch-cost model's
inputs. A pool that would take an urgent OSD past mon_max_pg_per_osd (a
failure domain lost included) stays isolated; while Ceph reports OSDs
withholding PGs (PENDING_CREATING_PGS), none is shared.
"""
from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ..core.health import HealthChecks
from ..core.maps import MapSnapshot
from ..core.pg_slots import PoolSlots, SlotVerdict, UrgentOsd, plan_slots, withheld
from ..core.switch_cost import PoolCostInputs
from ..placement.registry import MODELS
from .mgr_port import MgrPort
from .shared_mapping import SharedMappings


class SlotWatch:
    def __init__(self, mgr: MgrPort, health: HealthChecks) -> None:
        self._mgr = mgr
        self._health = health
        self.verdict: SlotVerdict | None = None
        self.mappings = SharedMappings(mgr)
        # isolated pools counted from CRUSH's own mapping: their PGs per urgent OSD
        self.mapped: dict[int, dict[int, int]] = {}

    def refresh(self, pools: Sequence[PoolCostInputs], maps: MapSnapshot,
                osd_stats: Sequence[Mapping[str, Any]], withheld_now: str | None,
                limit: int | None) -> dict[int, str]:
        """Why each pool stays isolated for PG slots (pool id -> reason);
        osd_stats: the mgr's, as the cost model read them; withheld_now and
        limit: `withheld()` and `limit()` of this tick."""
        regions = maps.regions
        urgent = {o: UrgentOsd(regions.osds[o].weight, regions.osds[o].domain)
                  for o in regions.in_of_class(regions.urgent_class)}
        self.verdict = None
        if limit is not None and urgent and pools:
            self.verdict = self._verdict(pools, maps, urgent, osd_stats, limit)
        kept = dict(self.verdict.kept) if self.verdict else {}
        if withheld_now:
            kept = {p.pool_id: withheld_now for p in pools}
        names = {p.pool_id: p.name for p in pools}
        lines = [f"pool {names[pid]}: {reason}" for pid, reason in sorted(kept.items())]
        lines += [f"osd.{osd}: {n} PGs projected with a failure domain lost, over "
                  f"mon_max_pg_per_osd {limit}, with no normal pool shared"
                  for osd, n in (self.verdict.over_limit() if self.verdict else [])]
        self._health.update("SLA_PG_LIMIT", lines,
                            f"{len(kept)} normal pools kept isolated: urgent OSDs at their PG "
                            "limit" if kept else "urgent OSDs past their PG limit")
        return kept

    def _verdict(self, pools: Sequence[PoolCostInputs], maps: MapSnapshot,
                 urgent: dict[int, UrgentOsd],
                 osd_stats: Sequence[Mapping[str, Any]], limit: int) -> SlotVerdict:
        counts = {int(s["osd"]): int(s.get("num_pgs", 0) or 0) for s in osd_stats}
        osdmap = self._mgr.get_osdmap() if any(p.shared_now for p in pools) else None
        self.mapped = {pid: {o: n for o, n in per_osd.items() if o in urgent}
                       for pid, per_osd in self._crush_mapped(pools, maps).items()}
        slots = []
        for p in pools:
            if osdmap is not None and p.shared_now:
                on_urgent = _on_urgent(osdmap.map_pool_pgs_up(p.pool_id).values(), urgent)
            else:
                on_urgent = self.mapped.get(p.pool_id, {})
            slots.append(PoolSlots(p.pool_id, p.name, p.shared_now, on_urgent,
                                   MODELS[p.strategy].urgent_replicas(p),
                                   p.pool_id in self.mapped and not p.shared_now))
        return plan_slots(counts, slots, urgent, limit)

    def _crush_mapped(self, pools: Sequence[PoolCostInputs], maps: MapSnapshot
                      ) -> dict[int, dict[int, int]]:
        """The isolated pools' shared placement as CRUSH maps it, where
        CRUSH alone places it and the worker has mapped it for this crush
        version, these pools and these OSD weights."""
        wanted = []
        for p in pools:
            rule = MODELS[p.strategy].shared_rule(p)
            info = maps.view.pools.get(p.pool_id)
            if rule is not None and not p.shared_now and info is not None:
                wanted.append((p.pool_id, rule[0], rule[1], info.pg_num, info.size))
        weights = tuple(sorted((o, round(place.weight, 4))
                               for o, place in maps.regions.osds.items()))
        key = (maps.view.crush_version, tuple(wanted), weights)
        return self.mappings.pgs_per_osd(key, tuple(w[:3] for w in wanted))

    def limit(self) -> int | None:
        """mon_max_pg_per_osd as the mgr runs with it (read every tick)."""
        try:
            return int(self._mgr.get_ceph_option("mon_max_pg_per_osd"))
        except Exception:  # not readable: no projection, and say nothing
            return None

    def withheld(self) -> str | None:
        """Why no pool may share now, from Ceph's own health (read every tick)."""
        try:
            raw = self._mgr.get("health") or {}
            health = json.loads(raw["json"]) if isinstance(raw.get("json"), str) else raw
        except Exception:  # unreadable health is no evidence either way
            return None
        return withheld(health)


def _on_urgent(up_sets: Iterable[Sequence[int]], urgent: dict[int, UrgentOsd]
               ) -> dict[int, int]:
    """Per urgent OSD, the pool's PGs with a replica on it."""
    out: dict[int, int] = {}
    for osds in up_sets:
        for osd in set(osds):
            if osd in urgent:
                out[osd] = out.get(osd, 0) + 1
    return out
