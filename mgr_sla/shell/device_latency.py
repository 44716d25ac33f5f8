"""Each region's read and write latency per op, from the OSDs' perf counters
(`osd.op_r_latency`, `osd.op_w_latency`: averages whose sum and count the mgr
keeps for its last samples, about 100 s) with the bytes those ops carried
(`osd.op_r_out_bytes`, `osd.op_w_in_bytes`), for the gain's device prior
(core/device_prior.py), and each class's `osd bench` IOPS if `ceph sla advise
--calibrate` measured them. Read at most once a minute: four counters per OSD,
of at most 256 OSDs per region (the next ones at the next read)."""
from __future__ import annotations

import json
import math
from collections.abc import Iterable

from ..core.device_prior import (
    NORMAL,
    URGENT,
    Calibration,
    DeviceLatency,
    DeviceMemory,
    OsdCounters,
    region_latency,
)
from .mgr_port import MgrPort

PATHS = {"read": "osd.op_r_latency", "write": "osd.op_w_latency"}
BYTES = {"read": "osd.op_r_out_bytes", "write": "osd.op_w_in_bytes"}
CALIBRATION_KEY = "calibration"  # what `ceph sla advise --calibrate` stores
READ_EVERY_SECS = 60.0
MAX_OSDS_READ = 256  # per region and read


class DeviceReader:
    def __init__(self, mgr: MgrPort) -> None:
        self._mgr = mgr
        self.memory = DeviceMemory()
        self._at = -math.inf
        self._offset: dict[str, int] = {}
        self.calibration: Calibration | None = None

    def latency(self, now: float, normal: Iterable[int], urgent: Iterable[int],
                classes: tuple[str, str], pools_since: float | None) -> DeviceLatency:
        """Each region's latest latencies (a minute old at most, when its OSDs
        served ops of the kind meanwhile); `classes` the normal and urgent
        device classes, whose calibration goes to `calibration`; `pools_since`
        since when the urgent region serves the pools' ops (the pools shared;
        None: its own clients')."""
        if now - self._at >= READ_EVERY_SECS:
            self._at = now
            self.calibration = self._calibrated(*classes)
            for region, osds in ((NORMAL, sorted(normal)), (URGENT, sorted(urgent))):
                osds = self._turn(region, osds)
                counters = {osd: self._counters(osd) for osd in osds}
                # the urgent samples are the pools' only when all of them were taken shared
                span = max((c.window_secs for c in counters.values()), default=0.0)
                pool_ops = region == NORMAL or (
                    pools_since is not None and now - span >= pools_since)
                self.memory.update(region, region_latency(counters, osds, now, pool_ops))
        return self.memory.latency

    def _turn(self, region: str, osds: list[int]) -> list[int]:
        """At most MAX_OSDS_READ of a region's OSDs a read, the next ones at the
        next: a region's mean needs no more, and 10,000 OSDs cost 512 calls."""
        if len(osds) <= MAX_OSDS_READ:
            return osds
        start = self._offset.get(region, 0) % len(osds)
        self._offset[region] = start + MAX_OSDS_READ
        return (osds[start:] + osds[:start])[:MAX_OSDS_READ]

    def _calibrated(self, normal_class: str, urgent_class: str) -> Calibration | None:
        """Both classes' per-OSD IOPS from the stored calibration, if both are there."""
        try:
            raw = json.loads(self._mgr.get_store(CALIBRATION_KEY) or "{}")
            got = Calibration(float(raw["classes"][normal_class]["iops"]),
                              float(raw["classes"][urgent_class]["iops"]), float(raw["time"]))
        except (ValueError, TypeError, KeyError, AttributeError):
            return None
        return got if min(got.normal_iops, got.urgent_iops) > 0 else None

    def _counters(self, osd: int) -> OsdCounters:
        """Per kind (seconds, ops) over the mgr's samples of the OSD's counters
        and the samples' span; an OSD whose counters are not there (down, not
        reported) gives none."""
        kinds, span = {}, 0.0
        for kind, path in PATHS.items():
            try:
                samples = (self._mgr.get_counter("osd", str(osd), path) or {}).get(path) or []
                first, last = samples[0], samples[-1]
                secs, ops = (float(last[1]) - float(first[1])) / 1e9, int(last[2]) - int(first[2])
                window = float(last[0]) - float(first[0])
            except Exception:  # no samples, an odd shape, a daemon the mgr lost: none
                continue
            if ops > 0 and secs > 0:
                kinds[kind] = (secs, ops)
                span = max(span, window)
        return OsdCounters(span, kinds, self._bytes(osd, kinds))

    def _bytes(self, osd: int, kinds: Iterable[str]) -> dict[str, float]:
        """The bytes each kind's ops carried over the mgr's samples (a plain
        counter: [[t, value], ...]); a kind whose counter is not there has none."""
        out = {}
        for kind in kinds:
            path = BYTES[kind]
            try:
                samples = (self._mgr.get_counter("osd", str(osd), path) or {}).get(path) or []
                delta = float(samples[-1][1]) - float(samples[0][1])
            except Exception:  # no samples, an odd shape: the size stays unknown
                continue
            if delta > 0:
                out[kind] = delta
        return out
