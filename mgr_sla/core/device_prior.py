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
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from .gain_stats import KINDS, MIN_KIND_SHARE, kind_shares
from .state import Strategy
from .switch_cost import MAX_GAIN, WRITE_COST, isolated_hdd_work

MIN_DEVICE_OPS = 100  # a region's kind counts from this many ops in the window
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


@dataclass(frozen=True)
class OsdCounters:
    """One OSD's counter deltas over the mgr's samples: per kind (seconds, ops)."""

    window_secs: float
    kinds: Mapping[str, tuple[float, int]]

    def queueing(self) -> float:
        """1 + ops/s x mean latency: the latency over the service time of an
        M/M/1 queue at this load."""
        secs = sum(s for s, _ in self.kinds.values())
        ops = sum(n for _, n in self.kinds.values())
        if ops <= 0 or self.window_secs <= 0:
            return 1.0
        return 1.0 + ops / self.window_secs * (secs / ops)


# region -> kind -> latency (a kind not yet measured is absent)
DeviceLatency = Mapping[str, Mapping[str, KindLatency]]


def region_latency(counters: Mapping[int, OsdCounters], osds: Iterable[int], now: float
                   ) -> dict[str, KindLatency]:
    """A region's latency and service time per kind from its OSDs' counter
    deltas: ops-weighted over the OSDs, and only a kind with MIN_DEVICE_OPS ops."""
    out = {}
    for kind in KINDS:
        secs, service, ops = 0.0, 0.0, 0
        for osd in osds:
            c = counters.get(osd)
            got = c.kinds.get(kind) if c is not None else None
            if c is None or got is None or got[1] <= 0 or got[0] <= 0:
                continue
            secs += got[0]
            service += got[0] / c.queueing()
            ops += got[1]
        if ops >= MIN_DEVICE_OPS:
            out[kind] = KindLatency(secs / ops, service / ops, ops, now)
    return out


class DeviceMemory:
    """Each region's latest latency per kind (pure: the shell feeds it)."""

    def __init__(self) -> None:
        self.latency: dict[str, dict[str, KindLatency]] = {NORMAL: {}, URGENT: {}}

    def update(self, region: str, fresh: Mapping[str, KindLatency]) -> None:
        self.latency.setdefault(region, {}).update(fresh)


@dataclass(frozen=True)
class DeviceGain:
    gain: float
    basis: str


def utilization(kinds: Mapping[str, KindLatency]) -> float:
    """A region's utilization by its measured ops: 1 - service time / latency."""
    secs = sum(v.secs * v.ops for v in kinds.values())
    service = sum(v.service_secs * v.ops for v in kinds.values())
    return min(MAX_UTILIZATION, max(0.0, 1.0 - service / secs)) if secs > 0 else 0.0


def device_gain(strategy: str, read_fraction: float, size: int, urgent_share: float,
                relief: float, devices: DeviceLatency, osd_ratio: float = 1.0
                ) -> DeviceGain | None:
    """The gain sharing the pool by `strategy` brings its clients at
    `read_fraction`, by the regions' service times and the normal region's
    load, with the work model's `relief` of it (`osd_ratio`: normal over
    urgent OSDs); None while a kind the mix needs is not measured in both
    regions (the work model alone speaks then)."""
    share = kind_shares(read_fraction)
    normal, urgent = devices.get(NORMAL, {}), devices.get(URGENT, {})
    kinds = [k for k in KINDS if share[k] >= MIN_KIND_SHARE]
    if not kinds or any(k not in normal or k not in urgent for k in kinds):
        return None
    copy = strategy == Strategy.COPY.value
    g = max(relief, 1.0)
    busy = utilization(normal)
    rho = sum(share[k] * urgent[k].service_secs for k in kinds) / max(
        sum(share[k] * normal[k].service_secs for k in kinds), 1e-12)
    moved = (read_fraction + (1 - read_fraction) * WRITE_COST) / isolated_hdd_work(
        read_fraction, size) if copy else urgent_share
    normal_after = busy / g
    urgent_after = min(MAX_UTILIZATION, rho * moved * busy * osd_ratio)
    # the part of each kind's ops (reads) or PGs (writes) with a replica on the urgent region
    part = {"read": 1.0 if copy else urgent_share,
            "write": 1.0 if copy else min(1.0, urgent_share * size)}
    isolated = shared = 0.0
    for k in kinds:
        here = normal[k].service_secs / (1 - normal_after)
        there = urgent[k].service_secs / (1 - urgent_after)
        if k == "write":
            there = max(here, there)
        isolated += share[k] * normal[k].secs
        shared += share[k] * ((1 - part[k]) * here + part[k] * there)
    gain = round(min(isolated / shared, MAX_GAIN), 3) if shared > 0 else MAX_GAIN
    said = ", ".join(f"{k}s {urgent[k].service_secs * 1e3:.1f} ms urgent, "
                     f"{normal[k].service_secs * 1e3:.1f} ms normal" for k in kinds)
    return DeviceGain(gain, f"devices' service time: {said}; normal region {busy:.0%} busy, "
                            f"urgent {urgent_after:.0%} once shared")

def devices_view(devices: DeviceLatency) -> dict[str, dict[str, dict[str, float]]]:
    """`plan`'s `devices`: per region and kind, its latency and service time
    (ms), ops and when read."""
    return {region: {k: {"ms": round(v.secs * 1e3, 3),
                         "service_ms": round(v.service_secs * 1e3, 3), "ops": v.ops,
                         "at": round(v.at, 1)}
                     for k, v in sorted(kinds.items())}
            for region, kinds in sorted(devices.items())}
