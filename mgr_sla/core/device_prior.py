"""What the devices say before a pool was ever shared: each region's read and
write latency per op, from the OSDs' own perf counters, and the gain each
strategy then expects at a pool's mix.

The work model (switch_cost.py) counts the normal region's work a switch
takes off (its relief, G); it knows nothing of how fast the urgent devices
answer, nor of queueing. Each region is measured under whatever load it had
(the urgent one under its own clients, the normal one under the normal
pools), so its devices are known by their service time: each OSD's mean
latency over its queueing factor, Q = 1 + ops/s x mean latency (an M/M/1
queue's), ops-weighted over the region; the normal region's utilization is
u = 1 - 1/Q over its ops. Sharing then, as an M/M/1 queue sees it:

- the normal devices keep 1/G of their work: utilization u / G;
- the urgent devices, idle while their clients are quiet, take the work that
  left, at their own service time: rho x moved x u x (normal OSDs / urgent
  OSDs), rho the urgent over the normal service time at the pool's mix,
  `moved` the share of the pool's work that goes (move: its urgent share of
  the replicas; copy: its reads and one write copy each, of its isolated work);
- an op takes its region's service time over 1 - its utilization: a read on
  copy is served by the urgent copy (its primary), on move the urgent share of
  them; a write waits for its slowest replica, with one on the urgent region
  on every PG on copy, on share x size of them (at most all) on move.

The gain is the pool's isolated latency (as measured) over that, at its mix.
So urgent devices slower than the normal ones, or too few to carry the work,
keep a pool isolated before its first switch; an idle normal region gains
nothing from more devices; the measured gain takes over once its interval is
clear of min_gain (gain.py). A region's figures come from the mgr's last
samples of its OSDs' counters (about 100 s), kept until fresher ones come:
the urgent region is idle in a quiet spell, and what it answered while busy
is the figure there is.

An op's time depends on whose op it is: its size, and how often the OSD's
cache answers it (an urgent client rereading a small working set reads at
memory speed, whatever the devices). Until a pool is first shared the urgent
region serves only its own clients, so its figures are kept apart by whose
ops they measured: the pools' (taken while the pools were shared for the
whole sample span) or the urgent clients'. The urgent region's service time
is, in this order: what it answered the pools' ops; else the normal region's
over the IOPS ratio `ceph sla advise --calibrate` measured on both classes
alike (`osd bench`, 4 KiB writes; for SSD reads, faster than their writes,
an underestimate); else what it answered its own clients, when their ops are
within SIZE_MATCH of the pools' in size. A calibration retires the figures
taken before it (run after a change of devices, it says they are gone).
With none of them, there is no device prior and the work model speaks.
"""
from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from .gain_stats import KINDS, kind_shares, needed_kinds
from .switch_cost import MAX_GAIN

MIN_DEVICE_OPS = 100  # a region's kind counts from this many ops in the window
# two regions' ops compare when their mean sizes are within this factor
SIZE_MATCH = 4.0
# a region past this utilization is taken as saturated (its latency 20x its service time)
MAX_UTILIZATION = 0.95
NORMAL, URGENT = "normal", "urgent"


@dataclass(frozen=True)
class KindLatency:
    """One region's latency per op of one kind, its service time, and what it rests on."""

    secs: float  # mean latency, as measured under the region's load
    service_secs: float  # the same over each OSD's queueing factor
    ops: int
    at: float  # when it was read
    bytes_per_op: float = 0.0  # 0: not known (its ops compare with any)
    pool_ops: bool = True  # measured on the normal pools' ops (False: the urgent clients')

    def compares_with(self, other: KindLatency) -> bool:
        """Its ops within SIZE_MATCH of `other`'s in mean size (or a size unknown)."""
        a, b = self.bytes_per_op, other.bytes_per_op
        return a <= 0 or b <= 0 or max(a, b) / min(a, b) <= SIZE_MATCH


@dataclass(frozen=True)
class OsdCounters:
    """One OSD's counter deltas over the mgr's samples: per kind (seconds,
    ops), and the bytes its ops of each kind carried, where read."""

    window_secs: float
    kinds: Mapping[str, tuple[float, int]]
    bytes: Mapping[str, float] = field(default_factory=dict)

    def queueing(self) -> float:
        """1 + ops/s x mean latency: the latency over the service time of an
        M/M/1 queue at this load."""
        secs = sum(s for s, _ in self.kinds.values())
        ops = sum(n for _, n in self.kinds.values())
        if ops <= 0 or self.window_secs <= 0:
            return 1.0
        return 1.0 + ops / self.window_secs * (secs / ops)


# region -> kind -> its figures newest first: on the pools' ops, on the urgent clients'
# (a kind not yet measured is absent)
DeviceLatency = Mapping[str, Mapping[str, Sequence[KindLatency]]]


@dataclass(frozen=True)
class Calibration:
    """Each region's per-OSD 4 KiB write IOPS by `ceph sla advise --calibrate`
    (`osd bench`), and when: the devices as they are since then."""

    normal_iops: float
    urgent_iops: float
    at: float


@dataclass(frozen=True)
class UrgentPart:
    """How a strategy's shared pool meets the urgent region, as the prior
    weighs it (each strategy's model says, `urgent_part`)."""

    moved: float  # the share of the pool's normal-region work the urgent region takes
    reads: float  # the share of reads with a member on the urgent region
    writes: float  # the share of writes (PGs) with a member on the urgent region
    # a read waits for every member it touches (whole stripes), on both regions
    reads_wait_for_all: bool = False


class UrgentShape(Protocol):
    """What the prior asks of a strategy (its model)."""

    def urgent_part(self, read_fraction: float, size: int, urgent_share: float
                    ) -> UrgentPart:
        """The pool's part on the urgent region once shared, at its mix."""


def region_latency(counters: Mapping[int, OsdCounters], osds: Iterable[int], now: float,
                   pool_ops: bool = True) -> dict[str, KindLatency]:
    """A region's latency and service time per kind from its OSDs' counter
    deltas: ops-weighted over the OSDs, and only a kind with MIN_DEVICE_OPS ops
    (its bytes per op over the OSDs whose bytes were read); `pool_ops`: they
    served the normal pools' ops (not the urgent clients')."""
    out = {}
    for kind in KINDS:
        secs, service, ops, sized_ops, size = 0.0, 0.0, 0, 0, 0.0
        for osd in osds:
            c = counters.get(osd)
            got = c.kinds.get(kind) if c is not None else None
            if c is None or got is None or got[1] <= 0 or got[0] <= 0:
                continue
            secs += got[0]
            service += got[0] / c.queueing()
            ops += got[1]
            if c.bytes.get(kind, 0.0) > 0:
                sized_ops += got[1]
                size += c.bytes[kind]
        if ops >= MIN_DEVICE_OPS:
            out[kind] = KindLatency(secs / ops, service / ops, ops, now,
                                    size / sized_ops if sized_ops else 0.0, pool_ops)
    return out


class DeviceMemory:
    """Each region's latest latency per kind, one on the pools' ops and one
    on the urgent clients' (pure: the shell feeds it): the urgent clients'
    ops do not overwrite what the urgent region answered the pools."""

    def __init__(self) -> None:
        self._kept: dict[str, dict[str, dict[bool, KindLatency]]] = {NORMAL: {}, URGENT: {}}

    def update(self, region: str, fresh: Mapping[str, KindLatency]) -> None:
        kinds = self._kept.setdefault(region, {})
        for kind, figure in fresh.items():
            kinds.setdefault(kind, {})[figure.pool_ops] = figure

    @property
    def latency(self) -> dict[str, dict[str, list[KindLatency]]]:
        """Per region and kind, its figures newest first."""
        return {region: {kind: sorted(kept.values(), key=lambda f: -f.at)
                         for kind, kept in kinds.items()}
                for region, kinds in self._kept.items()}


@dataclass(frozen=True)
class DeviceGain:
    gain: float
    basis: str


@dataclass(frozen=True)
class ComparedKind:
    """One kind's figures the prior compares: the normal region's latest, and
    the urgent region's service time on ops like it (how it was found)."""

    normal: KindLatency
    urgent_service_secs: float
    how: str


def compared_kind(kind: str, devices: DeviceLatency, calibration: Calibration | None = None
                  ) -> ComparedKind | None:
    """The normal region's latest figure of `kind`, and the urgent region's
    service time for the pools' ops (in the order the module doc gives);
    None when nothing says it."""
    normal = list(devices.get(NORMAL, {}).get(kind, ()))
    if not normal:
        return None
    ref = normal[0]
    since = calibration.at if calibration is not None else -math.inf
    urgent = [f for f in devices.get(URGENT, {}).get(kind, ()) if f.at >= since]
    pools = [f for f in urgent if f.pool_ops]
    if pools:
        return ComparedKind(ref, pools[0].service_secs, "measured on the pools' ops")
    if calibration is not None:
        c = calibration
        return ComparedKind(ref, ref.service_secs * c.normal_iops / c.urgent_iops,
                            f"osd bench {c.urgent_iops:.0f} vs {c.normal_iops:.0f} IOPS")
    own = [f for f in urgent if f.compares_with(ref)]
    if own:
        return ComparedKind(ref, own[0].service_secs,
                            f"measured on its own clients' {_size(own[0])} ops")
    return None


def _size(figure: KindLatency) -> str:
    b = figure.bytes_per_op
    if b <= 0:
        return "unsized"
    return f"{b / 2**20:.1f} MiB" if b >= 2**20 else f"{b / 2**10:.0f} KiB"


def utilization(kinds: Mapping[str, KindLatency]) -> float:
    """A region's utilization by its measured ops: 1 - service time / latency."""
    secs = sum(v.secs * v.ops for v in kinds.values())
    service = sum(v.service_secs * v.ops for v in kinds.values())
    return min(MAX_UTILIZATION, max(0.0, 1.0 - service / secs)) if secs > 0 else 0.0


def device_gain(strategy: UrgentShape, read_fraction: float, size: int, urgent_share: float,
                relief: float, devices: DeviceLatency, osd_ratio: float = 1.0,
                calibration: Calibration | None = None) -> DeviceGain | None:
    """The gain sharing the pool by `strategy` (its model) brings its clients at
    `read_fraction`, by the regions' service times on ops alike and the
    normal region's load, with the work model's `relief` of it (`osd_ratio`:
    normal over urgent OSDs); None while a kind the mix needs is not known in
    both regions (the work model alone speaks then): each kind known counts,
    one unknown only while its share of the normal region's time is small."""
    share = kind_shares(read_fraction)
    compared = {k: compared_kind(k, devices, calibration) for k in KINDS if share[k] > 0}
    latency = {k: figures[0].secs for k, figures in devices.get(NORMAL, {}).items() if figures}
    if any(compared.get(k) is None for k in needed_kinds(read_fraction, latency)):
        return None
    # every kind needed is known (and one always is: the kinds' time adds up)
    got = {k: c for k, c in compared.items() if c is not None}
    kinds = list(got)
    normal = {k: c.normal for k, c in got.items()}
    urgent_service = {k: c.urgent_service_secs for k, c in got.items()}
    on_urgent = strategy.urgent_part(read_fraction, size, urgent_share)
    g = max(relief, 1.0)
    busy = utilization(normal)
    rho = sum(share[k] * urgent_service[k] for k in kinds) / max(
        sum(share[k] * normal[k].service_secs for k in kinds), 1e-12)
    normal_after = busy / g
    urgent_after = min(MAX_UTILIZATION, rho * on_urgent.moved * busy * osd_ratio)
    # the part of each kind's ops (reads) or PGs (writes) with a member on the urgent region
    part = {"read": on_urgent.reads, "write": on_urgent.writes}
    isolated = shared = 0.0
    for k in kinds:
        here = normal[k].service_secs / (1 - normal_after)
        there = urgent_service[k] / (1 - urgent_after)
        if k == "write" or on_urgent.reads_wait_for_all:
            there = max(here, there)
        isolated += share[k] * normal[k].secs
        shared += share[k] * ((1 - part[k]) * here + part[k] * there)
    gain = round(min(isolated / shared, MAX_GAIN), 3) if shared > 0 else MAX_GAIN
    said = ", ".join(f"{k}s {urgent_service[k] * 1e3:.1f} ms urgent "
                     f"({got[k].how}), {normal[k].service_secs * 1e3:.1f} ms "
                     f"normal" for k in kinds)
    return DeviceGain(gain, f"devices' service time: {said}; normal region {busy:.0%} busy, "
                            f"urgent {urgent_after:.0%} once shared")

def devices_view(devices: DeviceLatency, calibration: Calibration | None = None
                 ) -> dict[str, Any]:
    """`plan`'s `devices`: per region and kind, its figures newest first
    (latency and service time in ms, ops, KiB per op, when read), and the
    calibrated IOPS per region, if any."""
    out: dict[str, Any] = {
        region: {k: [{"ms": round(v.secs * 1e3, 3), "service_ms": round(v.service_secs * 1e3, 3),
                      "ops": v.ops, "kib_per_op": round(v.bytes_per_op / 1024, 1),
                      "pool_ops": v.pool_ops, "at": round(v.at, 1)} for v in figures]
                 for k, figures in sorted(kinds.items())}
        for region, kinds in sorted(devices.items())}
    if calibration is not None:
        out["calibrated_iops"] = {NORMAL: calibration.normal_iops,
                                  URGENT: calibration.urgent_iops, "at": round(calibration.at, 1)}
    return out
