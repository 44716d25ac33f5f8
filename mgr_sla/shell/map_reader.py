"""Reads the OSD and CRUSH maps from the mgr and converts them once per epoch.

Map work (converting the maps, planning placement) runs on a new OSD map
epoch (notify 'osd_map', or the module's own commands) and at the latest
every MAP_REFRESH_SECS; a quiet tick reads counters only. A managed pool's up
sets are read once per converted map too, whoever asks first (the admission's
facts, the placement check).
"""
from __future__ import annotations

import json
import time
from typing import Any, Callable

from ..core.cluster import ClusterView, cluster_view
from ..core.gates import holding_flags
from ..core.maps import MapSnapshot, RegionSpec
from ..core.upmap.regions import current_items

MAP_REFRESH_SECS = 300.0
# how long a command waits for the mgr's copy of the OSD map to reach the
# epoch the mon has (read at each call: tests shorten it)
MON_EPOCH_WAIT_SECS = 10.0
MonCall = Callable[[dict[str, Any]], "tuple[int, str, str]"]


class MapBehind(RuntimeError):
    """The mgr's OSD map did not reach the mon's epoch in time (or the mon
    did not say its epoch): the message names both."""


class MapReader:
    """Converts the maps once per epoch; everyone reads the same snapshot."""

    def __init__(self, get: Callable[[str], Any],
                 get_osdmap: Callable[[], Any] | None = None) -> None:
        self._get = get
        self._get_osdmap = get_osdmap
        self._snapshot: MapSnapshot | None = None
        self._dirty = True
        self._up: dict[int, dict[str, tuple[int, ...]]] = {}  # pool -> its up sets, this map

    def mark_dirty(self) -> None:
        """A new epoch, seen or caused: convert again before the next use."""
        self._dirty = True

    def current(self, now: float, spec: RegionSpec) -> MapSnapshot:
        snap = self._snapshot
        # a changed class or failure domain makes other regions of the same maps
        if snap is None or self._dirty or now - snap.at >= MAP_REFRESH_SECS \
                or snap.spec != spec:
            self._dirty = False
            osd_map, crush = self._get("osd_map"), self._get("osd_map_crush")
            snap = MapSnapshot(now, cluster_view(osd_map, crush), spec.regions(osd_map, crush),
                               current_items(osd_map),
                               holding_flags(str(osd_map.get("flags", ""))),
                               float(osd_map.get("nearfull_ratio") or 0.85),
                               float(osd_map.get("backfillfull_ratio") or 0.90), spec)
            self._snapshot, self._up = snap, {}
        return snap

    def up_sets(self, pool_id: int) -> dict[str, tuple[int, ...]]:
        """The pool's PGs' up sets (upmap entries applied), read once per
        converted map: 12,500 PGs cost tens of ms to map. Kept as tuples: they
        live until the next map, and the garbage collector skips tuples of ints
        (a list each, 15,000 of them, made its full pass 13 ms long)."""
        up = self._up.get(pool_id)
        if up is None and self._snapshot is not None and pool_id not in self._snapshot.view.pools:
            return {}  # the mgr's C++ fails on a pool its map does not have
        if up is None:
            assert self._get_osdmap is not None, "MapReader built without get_osdmap"
            up = self._up[pool_id] = {
                pg: tuple(osds)
                for pg, osds in self._get_osdmap().map_pool_pgs_up(pool_id).items()}
        return up

    def last(self) -> MapSnapshot | None:
        """The last converted maps (status and scrapes convert nothing)."""
        return self._snapshot

    def fresh_view(self) -> ClusterView:
        """A view of the maps as they are now (commands act on the present)."""
        return cluster_view(self._get("osd_map"), self._get("osd_map_crush"))

    def view_at_mon(self, mon: MonCall) -> ClusterView:
        """The maps at the epoch the mon has when asked, or a later one. What
        a command records of a pool (its rule, size and min_size, put back at
        `pool rm`) must be the pool as it is: a moment after `ceph osd pool
        set`, the mgr's copy of the map can be an epoch behind the mon's.
        Raises MapBehind if the mgr's map does not get there in
        MON_EPOCH_WAIT_SECS: better no record than a stale one."""
        rc, out, err = mon({"prefix": "osd stat", "format": "json"})
        if rc != 0:
            raise MapBehind(f"the mon did not give its OSD map epoch ({err.strip() or rc})")
        epoch = int(json.loads(out).get("epoch", 0))
        waited = MON_EPOCH_WAIT_SECS
        deadline = time.monotonic() + waited
        while True:
            osd_map = self._get("osd_map") or {}
            have = int(osd_map.get("epoch", 0))
            if have >= epoch:
                return cluster_view(osd_map, self._get("osd_map_crush"))
            if time.monotonic() >= deadline:
                raise MapBehind(f"the mgr's OSD map is at epoch {have}, the mon's at {epoch}, "
                                f"still after {waited:g} s")
            time.sleep(0.05)
