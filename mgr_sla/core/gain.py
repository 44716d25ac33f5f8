"""What sharing brings a normal pool, measured on its own client ops, and
whether sharing it is worth what it costs.

The module's perf query gives each pool's ops and latency sums. While the
urgent clients are quiet, the ledger sums them over windows of
`window_secs` and files each window under the pool's placement (isolated, or
shared by one strategy) and its load: the ops the pool had in flight
(Little's law: ops/s x mean latency), in bins a factor 4 wide. A
closed-loop client (a VM, fio, `rados bench`) keeps its in-flight ops
whatever the placement, so its gain shows as a shorter latency per op and as
as many more ops/s; an open-loop client below saturation keeps its rate, and
its ops in flight shrink by the gain (a bin holds a gain up to 4 either way).
A strategy's measured gain is the isolated over its shared mean latency per
op, compared only at the loads seen in both placements, each load weighted
by the ops of its rarer side (a geometric mean). Only the last
`keep_periods` periods of each placement count, so a pool whose workload
changed is judged on what it does now.
"""
from __future__ import annotations

import math
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from .activity import PoolPeriod
from .state import SwitchRecord

WINDOW_SECS = 30.0
KEEP_PERIODS = 2
# each placement needs this much measured load at the matched loads before
# its gain counts: a minute of ops, a few hundred of them
MIN_SECS = 60.0
MIN_OPS = 200
BIN_BASE = 4.0
# a measured gain stands for the mix it was measured at: beyond this change
# in the read fraction the model speaks again until it is measured anew
MIX_CHANGE = 0.2
# the usual quiet period needs this many ended shared periods: the median of
# one or two (a first short spell) says little about the quiet at that hour
MIN_QUIET_PERIODS = 3
# a pool's placement in the ledger: isolated, or shared by a strategy (its name)
ISOLATED = "isolated"


@dataclass
class LoadBin:
    secs: float = 0.0
    ops: int = 0
    reads: int = 0
    latency_ns: int = 0
    latency_count: int = 0

    def add(self, other: LoadBin) -> None:
        self.secs += other.secs
        self.ops += other.ops
        self.reads += other.reads
        self.latency_ns += other.latency_ns
        self.latency_count += other.latency_count

    @property
    def latency_secs(self) -> float:
        return self.latency_ns / self.latency_count / 1e9 if self.latency_count else 0.0


@dataclass(frozen=True)
class MeasuredGain:
    gain: float
    shared_secs: float
    isolated_secs: float
    shared_ops: int
    isolated_ops: int
    loads: int  # in-flight bins seen in both placements
    read_fraction: float  # the mix of the shared ops it was measured at
    at: float  # the last shared window that counted

    def basis(self) -> str:
        return (f"{self.shared_secs:.0f} s shared ({self.shared_ops} ops) against "
                f"{self.isolated_secs:.0f} s isolated ({self.isolated_ops} ops) at "
                f"{self.loads} matched load{'s' if self.loads != 1 else ''}, "
                f"{self.read_fraction:.0%} reads")


@dataclass
class _Window:
    start: float
    placement: str
    bin: LoadBin = field(default_factory=LoadBin)


def load_bin(ops: int, secs: float, latency_secs: float) -> int:
    """The bin of a window's ops in flight (ops/s x mean latency)."""
    inflight = ops / secs * latency_secs if secs > 0 else 0.0
    return max(-8, min(8, math.floor(math.log(max(inflight, 1e-6), BIN_BASE))))


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

    def add(self, now: float, periods: Mapping[int, PoolPeriod],
            placement: Mapping[int, str], quiet: bool) -> None:
        """One tick: `periods` the counters since the last, `placement` each
        normal pool's placement now (ISOLATED, or the strategy sharing it),
        `quiet` the urgent clients below their low threshold. A window that
        saw urgent load or a placement change is dropped (its ops are not
        comparable)."""
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
                window.bin.add(LoadBin(0.0, period.ops, period.read_ops,
                                       period.write_latency_ns + period.read_latency_ns,
                                       period.write_latency_count + period.read_latency_count))
            if now - window.start >= self.window_secs:
                self._file(pool, window, now)
                self._open[pool] = _Window(now, where)
        for pool in set(self._placement) - set(placement):
            self.forget(pool)

    def _file(self, pool: int, window: _Window, now: float) -> None:
        sums = window.bin
        if not sums.ops or not sums.latency_count:
            return
        sums.secs = now - window.start
        key = load_bin(sums.ops, sums.secs, sums.latency_secs)
        self._periods[(pool, window.placement)][-1].setdefault(key, LoadBin()).add(sums)
        if window.placement != ISOLATED:
            self._last_shared[(pool, window.placement)] = now

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

    def measured(self, pool: int, strategy: str) -> MeasuredGain | None:
        """The pool's gain when `strategy` shares it, once both placements
        have enough ops at loads seen in both; None until then."""
        shared, isolated = self._merged(pool, strategy), self._merged(pool, ISOLATED)
        keys = sorted(set(shared) & set(isolated))
        s_secs = sum(shared[k].secs for k in keys)
        i_secs = sum(isolated[k].secs for k in keys)
        s_ops = sum(shared[k].ops for k in keys)
        i_ops = sum(isolated[k].ops for k in keys)
        if min(s_secs, i_secs) < MIN_SECS or min(s_ops, i_ops) < MIN_OPS:
            return None
        weights = {k: min(shared[k].ops, isolated[k].ops) for k in keys}
        log_gain = sum(w * math.log(isolated[k].latency_secs / shared[k].latency_secs)
                       for k, w in weights.items()) / sum(weights.values())
        reads = sum(shared[k].reads for k in keys)
        return MeasuredGain(round(math.exp(log_gain), 3), round(s_secs, 1), round(i_secs, 1),
                            s_ops, i_ops, len(keys), round(reads / s_ops, 3),
                            self._last_shared.get((pool, strategy), 0.0))


@dataclass(frozen=True)
class ExpectedGain:
    gain: float
    source: str  # "measured" or "model"
    basis: str


def expected_gain(model: float, strategy: str, read_fraction: float | None,
                  measured: MeasuredGain | None, now: float, retry_secs: float
                  ) -> ExpectedGain:
    """The measured gain while it is fresh and the mix it was measured at
    still holds; the model otherwise. A pool kept isolated for a low measured
    gain gets no new shared samples: after `retry_secs` the model speaks
    again, so one bad night does not exclude it for ever."""
    mix = "no client ops measured: 50% reads assumed" if read_fraction is None \
        else f"{read_fraction:.0%} reads"
    if measured is not None:
        stale = now - measured.at > retry_secs
        moved = read_fraction is not None and \
            abs(read_fraction - measured.read_fraction) > MIX_CHANGE
        if not stale and not moved:
            return ExpectedGain(measured.gain, "measured", measured.basis())
        why = "measured too long ago" if stale else \
            f"measured at {measured.read_fraction:.0%} reads"
        return ExpectedGain(model, "model", f"{strategy}, {mix} ({why}: "
                            f"{measured.gain:.2f}x)")
    return ExpectedGain(model, "model", f"{strategy}, {mix}")


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
