"""What sharing brings a normal pool, measured on its own client ops, and
whether sharing it is worth what it costs.

The module's perf query gives each pool's ops and latency sums, reads and
writes apart. While the urgent clients are quiet, the ledger sums them over
windows of `window_secs` and files each window under the pool's placement
(isolated, or shared by one strategy; a window while the pool's data moves, or
while it is kept isolated in shared mode, is filed apart and never compared)
and its load: the ops the pool had in flight (Little's law: ops/s x mean
latency), in bins a factor 4 wide, and its mix, in quarters of reads. A kind's
latency depends on the mix around it (a write among reads meets other queues
than a write among writes), so windows are compared at the mix they were
taken at, and a pool whose mix changed is not judged by the old mix's
windows weighted as the new one's. A closed-loop client (a VM, fio, `rados
bench`) keeps its in-flight ops whatever the placement, so its gain shows as a
shorter latency per op and as as many more ops/s; an open-loop client below
saturation keeps its rate, and its ops in flight shrink by the gain (a bin
holds a gain up to 4 either way). A strategy's measured gain is worked out per
op kind at the loads seen in both placements (gain_stats.py), then combined at
the pool's mix of now: a change of mix alone measures 1.0. Only the last
`keep_periods` periods of each placement count, so a pool whose workload
changed is judged on what it does now. The ledger is small (sums per period,
load and kind) and is kept in the module's store: a mgr failover keeps what
was measured.
"""
from __future__ import annotations

import json
import math
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from .activity import PoolPeriod
from .device_prior import DeviceGain
from .gain_stats import KINDS, LoadBin, gain_at_mix, kind_gain
from .state import SwitchRecord

WINDOW_SECS = 30.0
KEEP_PERIODS = 2
# each placement needs this much measured load at the matched loads before
# its gain counts: two windows of ops, a few hundred of them
MIN_WINDOWS = 2
MIN_OPS = 200
BIN_BASE = 4.0
MIX_BINS = 4  # a window's read fraction, in quarters
# the usual quiet period needs this many ended shared periods: the median of
# one or two (a first short spell) says little about the quiet at that hour
MIN_QUIET_PERIODS = 3
# a pool's placement in the ledger: isolated, or shared by a strategy (its name)
ISOLATED = "isolated"
MOVING = "+moving"  # appended while the pool's data moves: filed apart
# appended to ISOLATED in shared mode, for a pool kept isolated while others share:
# its normal OSDs carry less of the others' load than in isolated mode, so its
# windows are no isolated baseline (filed apart, never compared)
KEPT = "+kept"
LEDGER_VERSION = 2  # 2: the bin holds the mix too


@dataclass(frozen=True)
class MeasuredGain:
    gain: float
    low: float  # the 95% interval
    high: float
    shared_secs: float
    isolated_secs: float
    shared_ops: int
    isolated_ops: int
    loads: int  # bins (ops in flight, mix) seen in both placements
    read_fraction: float  # the mix it is worked out at
    at: float  # the last shared window that counted
    by_mix: bool = True  # compared at mixes both placements saw; False: at loads alone

    def clear_of(self, bar: float) -> bool:
        """The interval lies wholly above or below `bar`."""
        return self.low > bar or self.high < bar

    def interval(self) -> str:
        high = "inf" if math.isinf(self.high) else f"{self.high:.2f}"
        return f"{self.low:.2f}-{high}x"

    def basis(self) -> str:
        return (f"{self.shared_secs:.0f} s shared ({self.shared_ops} ops) against "
                f"{self.isolated_secs:.0f} s isolated ({self.isolated_ops} ops) at "
                f"{self.loads} matched load{'s' if self.loads != 1 else ''}"
                f"{' and mix' if self.by_mix else ' (no mix in common)'}, "
                f"{self.read_fraction:.0%} reads, 95% interval {self.interval()}")


@dataclass
class _Window:
    start: float
    placement: str
    bin: LoadBin = field(default_factory=LoadBin)
    periods: list[PoolPeriod] = field(default_factory=list)


def load_bin(ops: int, secs: float, latency_secs: float, read_fraction: float = 0.0) -> int:
    """The bin of a window: its ops in flight (ops/s x mean latency) and its
    quarter of reads, in one int (load x MIX_BINS + quarter)."""
    inflight = ops / secs * latency_secs if secs > 0 else 0.0
    load = max(-8, min(8, math.floor(math.log(max(inflight, 1e-6), BIN_BASE))))
    return load * MIX_BINS + mix_bin(read_fraction)


def mix_bin(read_fraction: float) -> int:
    """A window's quarter of reads (0..MIX_BINS - 1)."""
    return min(MIX_BINS - 1, max(0, math.floor(read_fraction * MIX_BINS)))


class GainLedger:
    """Per normal pool, its quiet-time service in each placement (pure: the
    shell feeds it the perf query's periods every tick)."""

    def __init__(self, window_secs: float = WINDOW_SECS, keep_periods: int = KEEP_PERIODS
                 ) -> None:
        self.window_secs = window_secs
        self._keep = keep_periods
        self._open: dict[int, _Window] = {}
        self._placement: dict[int, str] = {}
        # (pool, placement) -> the last periods, each: load bin -> sums
        self._periods: dict[tuple[int, str], deque[dict[int, LoadBin]]] = {}
        self._last_shared: dict[tuple[int, str], float] = {}
        self.version = 0  # bumped as a window is filed: the shell saves then

    def add(self, now: float, periods: Mapping[int, PoolPeriod],
            placement: Mapping[int, str], quiet: bool) -> None:
        """One tick: `periods` the counters since the last, `placement` each
        normal pool's placement now (ISOLATED, or the strategy sharing it;
        KEPT or MOVING appended: filed apart), `quiet` the urgent clients
        below their low threshold. A window that saw urgent load or a
        placement change is dropped (its ops are not comparable)."""
        for pool, where in placement.items():
            if self._placement.get(pool) != where:
                self._placement[pool] = where
                kept = self._periods.setdefault((pool, where), deque(maxlen=self._keep))
                # a spell that filed nothing (shorter than a window, or busy with
                # urgent load all along) is no period: it must not push out one
                # that measured something
                if not kept or kept[-1]:
                    kept.append({})
                self._open.pop(pool, None)
            window = self._open.get(pool)
            if not quiet:
                self._open.pop(pool, None)
                continue
            if window is None:
                self._open[pool] = _Window(now, where)
                continue
            period = periods.get(pool)
            if period is not None:
                window.periods.append(period)
            if now - window.start >= self.window_secs:
                self._file(pool, window, now)
                self._open[pool] = _Window(now, where)
        for pool in set(self._placement) - set(placement):
            self.forget(pool)

    def _file(self, pool: int, window: _Window, now: float) -> None:
        r_ops = sum(p.read_latency_count for p in window.periods)
        w_ops = sum(p.write_latency_count for p in window.periods)
        r_ns = sum(p.read_latency_ns for p in window.periods)
        w_ns = sum(p.write_latency_ns for p in window.periods)
        if not r_ops + w_ops or not r_ns + w_ns:
            return
        sums = LoadBin(now - window.start)
        sums.kinds["read"].add_window(r_ops, r_ns)
        sums.kinds["write"].add_window(w_ops, w_ns)
        key = load_bin(r_ops + w_ops, sums.secs, (r_ns + w_ns) / (r_ops + w_ops) / 1e9,
                       r_ops / (r_ops + w_ops))
        kept = self._periods.setdefault((pool, window.placement), deque(maxlen=self._keep))
        if not kept:  # a spell going on across a failover, its period not kept
            kept.append({})
        kept[-1].setdefault(key, LoadBin()).add(sums)
        if not window.placement.startswith(ISOLATED):
            self._last_shared[(pool, window.placement)] = now
        self.version += 1

    def forget(self, pool: int) -> None:
        self._open.pop(pool, None)
        self._placement.pop(pool, None)
        for key in [k for k in (*self._periods, *self._last_shared) if k[0] == pool]:
            self._periods.pop(key, None)
            self._last_shared.pop(key, None)

    def _merged(self, pool: int, placement: str) -> dict[int, LoadBin]:
        out: dict[int, LoadBin] = {}
        for period in self._periods.get((pool, placement), ()):
            for key, sums in period.items():
                out.setdefault(key, LoadBin()).add(sums)
        return out

    def measured(self, pool: int, strategy: str, read_fraction: float | None = None
                 ) -> MeasuredGain | None:
        """The pool's gain when `strategy` shares it, at `read_fraction` (the
        shared side's own mix when None), once both placements have enough
        ops at loads seen in both, of each kind the mix needs; None until then.
        Compared at the loads and mixes both placements saw; where they saw no
        mix in common, at the loads alone (each kind apart: a pool that only
        changed its mix measures 1.0)."""
        shared, isolated = self._merged(pool, strategy), self._merged(pool, ISOLATED)
        got = self._compared(shared, isolated, read_fraction, True)
        if got is None:
            got = self._compared(_by_load(shared), _by_load(isolated), read_fraction, False)
        if got is None:
            return None
        return replace(got, at=self._last_shared.get((pool, strategy), 0.0))

    def _compared(self, shared: Mapping[int, LoadBin], isolated: Mapping[int, LoadBin],
                  read_fraction: float | None, by_mix: bool) -> MeasuredGain | None:
        keys = sorted(set(shared) & set(isolated))
        s_secs = sum(shared[k].secs for k in keys)
        i_secs = sum(isolated[k].secs for k in keys)
        s_ops = sum(shared[k].ops for k in keys)
        i_ops = sum(isolated[k].ops for k in keys)
        if min(s_secs, i_secs) < MIN_WINDOWS * self.window_secs or min(s_ops, i_ops) < MIN_OPS:
            return None
        mix = read_fraction if read_fraction is not None else \
            sum(shared[k].reads for k in keys) / s_ops
        got = gain_at_mix({k: kind_gain(k, shared, isolated, keys) for k in KINDS}, mix,
                          _latency([isolated[k] for k in keys]))
        if got is None:
            return None
        return MeasuredGain(round(got.gain, 3), round(got.low, 3), got.high if math.isinf(
            got.high) else round(got.high, 3), round(s_secs, 1), round(i_secs, 1), s_ops,
            i_ops, len(keys), round(mix, 3), 0.0, by_mix)

    # ---- the store: a failover keeps what was measured ---------------------------
    def to_json(self) -> str:
        return json.dumps({"version": LEDGER_VERSION, "pools": [
            {"pool": pool, "placement": where,
             "periods": [{str(k): b.to_dict() for k, b in period.items()} for period in kept],
             "last_shared": self._last_shared.get((pool, where))}
            for (pool, where), kept in sorted(self._periods.items()) if any(kept)],
            "now": {str(p): where for p, where in sorted(self._placement.items())}})

    def load_json(self, text: str | None) -> bool:
        """What a previous mgr kept; False (and nothing taken) when it cannot be read.
        A version 1 ledger (bins by load alone, kept by an older module) is
        taken with each bin filed at its own mix: an upgrade keeps what was
        measured."""
        try:
            raw = json.loads(text or "")
            version = raw.get("version")
            if version not in (1, LEDGER_VERSION):
                return False
            periods: dict[tuple[int, str], deque[dict[int, LoadBin]]] = {}
            last: dict[tuple[int, str], float] = {}
            for entry in raw["pools"]:
                key = (int(entry["pool"]), str(entry["placement"]))
                periods[key] = deque((_bins(p, version) for p in entry["periods"]),
                                     maxlen=self._keep)
                if entry.get("last_shared") is not None:
                    last[key] = float(entry["last_shared"])
            # the placement each pool had: a spell that goes on continues its period
            now = {int(p): str(where) for p, where in (raw.get("now") or {}).items()}
        except (ValueError, TypeError, KeyError, AttributeError):
            return False
        self._periods, self._last_shared, self._placement = periods, last, now
        return True


def _bins(raw: Mapping[str, Any], version: int) -> dict[int, LoadBin]:
    """One stored period's bins; a version 1 bin (its load alone) re-keyed
    by the mix of its own ops."""
    out: dict[int, LoadBin] = {}
    for k, b in raw.items():
        sums = LoadBin.from_dict(b)
        key = int(k)
        if version == 1:
            key = key * MIX_BINS + mix_bin(sums.reads / sums.ops if sums.ops else 0.0)
        out.setdefault(key, LoadBin()).add(sums)
    return out


def _by_load(bins: Mapping[int, LoadBin]) -> dict[int, LoadBin]:
    """`bins` merged over their mixes, by load alone."""
    out: dict[int, LoadBin] = {}
    for key, sums in bins.items():
        out.setdefault(key // MIX_BINS, LoadBin()).add(sums)
    return out


def _latency(bins: Sequence[LoadBin]) -> dict[str, float]:
    """Each kind's mean latency per op over `bins` (0 without ops)."""
    out = {}
    for k in KINDS:
        ops = sum(b.kinds[k].ops for b in bins)
        out[k] = sum(b.kinds[k].latency_ns for b in bins) / ops / 1e9 if ops else 0.0
    return out


@dataclass(frozen=True)
class ExpectedGain:
    gain: float
    source: str  # "measured", "devices" (the prior from device latencies) or "model"
    basis: str
    measured: MeasuredGain | None = None  # the measurement, decisive or not
    stale: bool = False  # a measurement older than gain_retry_secs: the prior speaks again


def expected_gain(model: float, strategy: str, read_fraction: float | None,
                  measured: MeasuredGain | None, now: float, retry_secs: float,
                  min_gain: float, devices: DeviceGain | None = None) -> ExpectedGain:
    """The measured gain while it is fresh and its interval clear of
    `min_gain` (it then decides either way); the prior otherwise: the
    regions' device latencies through the work model when they are measured
    (`devices`), the work model alone when not. A pool kept isolated for a
    low measured gain gets no new shared samples: after `retry_secs` the
    prior speaks again, so one bad night does not exclude it for ever."""
    mix = "no client ops measured: 50% reads assumed" if read_fraction is None \
        else f"{read_fraction:.0%} reads"
    prior, source, said = (model, "model", "") if devices is None else \
        (devices.gain, "devices", f"; {devices.basis}")
    if measured is not None:
        stale = now - measured.at > retry_secs
        if not stale and measured.clear_of(min_gain):
            return ExpectedGain(measured.gain, "measured", measured.basis(), measured)
        why = "measured too long ago" if stale else \
            f"measured {measured.interval()}, not clear of min_gain {min_gain:g}x"
        return ExpectedGain(prior, source, f"{strategy}, {mix}{said} ({why}: "
                            f"{measured.gain:.2f}x)", measured, stale)
    return ExpectedGain(prior, source, f"{strategy}, {mix}{said}")


# how a pool sent back for what it measured while shared is told apart from
# one sent back for a fault (only faults raise SLA_SHARING_FAULT)
LOSS_PREFIX = "shared, it measured "


def losing_share(measured: MeasuredGain | None, min_gain: float, since: float) -> str | None:
    """Why a pool sharing goes back before its shared period ends: its gain,
    with shared windows of this period (`since` its start), clear under
    `min_gain`. So a share the prior got wrong, or a gain re-measured after
    gain_retry_secs, is a trial that ends once it is known not to pay, not at
    the period's end."""
    if min_gain <= 0 or measured is None or measured.at < since or not measured.high < min_gain:
        return None
    return (f"{LOSS_PREFIX}{measured.gain:.2f}x ({measured.basis()}), under min_gain "
            f"{min_gain:g}x: isolated for the rest of the shared period")


def is_loss(why: str) -> bool:
    return why.startswith(LOSS_PREFIX)


def quiet_periods(history: Sequence[SwitchRecord]) -> list[tuple[float, float]]:
    """(start, length) of each shared period that ended, from the switches."""
    out = []
    start: float | None = None
    for record in history:
        if record.dry_run:
            continue
        if record.to_mode == "shared":
            start = record.time
        elif record.to_mode == "isolated" and start is not None:
            out.append((start, record.time - start))
            start = None
    return out


def usual_quiet_secs(periods: Sequence[tuple[float, float]], now: float,
                     hour_secs: float = 3600.0) -> tuple[float, str] | None:
    """The median shared period that began within an hour of this time of
    day (all of them when none did); None before MIN_QUIET_PERIODS ended."""
    if len(periods) < MIN_QUIET_PERIODS:
        return None

    def apart(t: float) -> float:
        d = abs(t - now) % 86400.0
        return min(d, 86400.0 - d)
    near = [length for start, length in periods if apart(start) <= hour_secs]
    lengths = sorted(near or [length for _, length in periods])
    median = lengths[len(lengths) // 2]
    where = "at this hour" if near else "at any hour"
    return median, f"median of {len(lengths)} shared period{'s' if len(lengths) != 1 else ''} " \
                   f"{where}"


def not_worth_sharing(expected: ExpectedGain, min_gain: float, place_secs: float,
                      usual_quiet: tuple[float, str] | None) -> str | None:
    """Why a pool is kept isolated for what sharing would bring, if so
    (min_gain 0: every pool is shared, whatever its gain or placing time)."""
    if min_gain <= 0:
        return None
    if expected.gain < min_gain:
        return (f"expected gain {expected.gain:.2f}x ({expected.source}: {expected.basis}) "
                f"under min_gain {min_gain:g}x")
    if usual_quiet is not None and place_secs > usual_quiet[0]:
        return (f"placing it would take about {place_secs:.0f} s, longer than the usual "
                f"quiet period ({usual_quiet[0]:.0f} s, {usual_quiet[1]})")
    return None
