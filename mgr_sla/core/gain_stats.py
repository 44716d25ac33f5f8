"""The statistics of a measured gain: per op kind, per placement, the sums a
window leaves (kept small enough to persist), and the gain of one placement
over another at a given mix of reads and writes, with its interval.

Reads and writes are measured apart: a pool whose clients read more while
shared than while isolated would otherwise "gain" by its faster reads alone.
Each kind's gain is the ratio of its mean latencies (log means over windows,
so one slow window weighs as one window); the pool's gain at a mix is the
ratio of its mean latency per op at that mix, isolated over shared. Its
interval comes from the spread of the windows, pooled over loads and
placements (a Student t interval on each kind's log gain, combined by the
delta method).
"""
from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

KINDS = ("read", "write")
# a kind under this share of the pool's time per op (its ops at the mix times
# its latency) does not need measuring at that mix; a kind measured counts
# whatever its share: at 96% reads, writes forty times slower are half the time
MIN_KIND_SHARE = 0.05
MIN_KIND_WINDOWS = 2  # per placement: the spread needs two windows at least
MIN_KIND_OPS = 50
# two-sided 95% quantiles of Student's t by degrees of freedom (1..30; then 1.96)
_T95 = (12.71, 4.30, 3.18, 2.78, 2.57, 2.45, 2.36, 2.31, 2.26, 2.23, 2.20, 2.18, 2.16,
        2.14, 2.13, 2.12, 2.11, 2.10, 2.09, 2.09, 2.08, 2.07, 2.07, 2.06, 2.06, 2.06,
        2.05, 2.05, 2.05, 2.04)


def kind_shares(read_fraction: float) -> dict[str, float]:
    """Each kind's share of the ops at a mix."""
    return {"read": read_fraction, "write": 1.0 - read_fraction}


def needed_kinds(read_fraction: float, latency: Mapping[str, float]) -> list[str]:
    """The kinds a gain at `read_fraction` cannot do without: those with
    MIN_KIND_SHARE of the time per op, by each kind's mean latency
    (`latency`, seconds; 0 or missing: not known). While a kind with ops at
    the mix has no latency, the kinds are weighed by their ops."""
    share = kind_shares(read_fraction)
    if all(latency.get(k, 0.0) > 0 for k in KINDS if share[k] > 0):
        total = sum(share[k] * latency.get(k, 0.0) for k in KINDS)
        share = {k: share[k] * latency.get(k, 0.0) / total for k in KINDS}
    return [k for k in KINDS if share[k] >= MIN_KIND_SHARE]


def t95(df: int) -> float:
    return _T95[df - 1] if 1 <= df <= len(_T95) else 1.96


@dataclass
class KindSums:
    """One op kind's windows in one placement and load: their ops and
    latency sums, and the sums of each window's log mean latency."""

    windows: int = 0
    ops: int = 0
    latency_ns: int = 0
    log_sum: float = 0.0
    log_sq: float = 0.0

    def add_window(self, ops: int, latency_ns: int) -> None:
        if ops <= 0 or latency_ns <= 0:
            return
        x = math.log(latency_ns / ops / 1e9)
        self.windows += 1
        self.ops += ops
        self.latency_ns += latency_ns
        self.log_sum += x
        self.log_sq += x * x

    def add(self, other: KindSums) -> None:
        self.windows += other.windows
        self.ops += other.ops
        self.latency_ns += other.latency_ns
        self.log_sum += other.log_sum
        self.log_sq += other.log_sq

    @property
    def log_mean(self) -> float:
        return self.log_sum / self.windows

    @property
    def latency_secs(self) -> float:
        return self.latency_ns / self.ops / 1e9 if self.ops else 0.0

    def to_list(self) -> list[Any]:
        return [self.windows, self.ops, self.latency_ns, self.log_sum, self.log_sq]

    @staticmethod
    def from_list(raw: Sequence[Any]) -> KindSums:
        return KindSums(int(raw[0]), int(raw[1]), int(raw[2]), float(raw[3]), float(raw[4]))


@dataclass
class LoadBin:
    """A placement's windows at one load: seconds, and each kind's sums."""

    secs: float = 0.0
    kinds: dict[str, KindSums] = field(default_factory=lambda: {k: KindSums() for k in KINDS})

    def add(self, other: LoadBin) -> None:
        self.secs += other.secs
        for k in KINDS:
            self.kinds[k].add(other.kinds[k])

    @property
    def ops(self) -> int:
        return sum(s.ops for s in self.kinds.values())

    @property
    def reads(self) -> int:
        return self.kinds["read"].ops

    def to_dict(self) -> dict[str, Any]:
        return {"secs": round(self.secs, 1), **{k: s.to_list() for k, s in self.kinds.items()}}

    @staticmethod
    def from_dict(raw: Mapping[str, Any]) -> LoadBin:
        return LoadBin(float(raw["secs"]), {k: KindSums.from_list(raw[k]) for k in KINDS})


@dataclass(frozen=True)
class KindGain:
    kind: str
    gain: float  # isolated over shared mean latency of this kind
    log_var: float  # of log(gain)
    df: int
    isolated_secs: float  # mean latency per op, isolated
    shared_secs: float


def kind_gain(kind: str, shared: Mapping[int, LoadBin], isolated: Mapping[int, LoadBin],
              keys: Iterable[int]) -> KindGain | None:
    """One kind's gain over the loads seen in both placements, each load
    weighted by the ops of its rarer side; None while a side lacks windows."""
    parts = []
    for k in keys:
        s, i = shared[k].kinds[kind], isolated[k].kinds[kind]
        if s.windows and i.windows:
            parts.append((min(s.ops, i.ops), s, i))
    total = sum(w for w, _, _ in parts)
    s_windows = sum(s.windows for _, s, _ in parts)
    i_windows = sum(i.windows for _, _, i in parts)
    if not total or min(s_windows, i_windows) < MIN_KIND_WINDOWS or \
            min(sum(s.ops for _, s, _ in parts), sum(i.ops for _, _, i in parts)) < MIN_KIND_OPS:
        return None
    log_gain = sum(w * (i.log_mean - s.log_mean) for w, s, i in parts) / total
    window_var, df = _window_spread([(s, i) for _, s, i in parts])
    var = sum((w / total) ** 2 * window_var * (1 / s.windows + 1 / i.windows)
              for w, s, i in parts)
    s_lat = sum(w * s.latency_secs for w, s, _ in parts) / total
    i_lat = sum(w * i.latency_secs for w, _, i in parts) / total
    return KindGain(kind, math.exp(log_gain), var, df, i_lat, s_lat)


def _window_spread(cells: Sequence[tuple[KindSums, KindSums]]) -> tuple[float, int]:
    """The variance of one window's log latency, with its degrees of freedom,
    pooled over every load and both placements. Pooled, because a latency near
    a bin's edge files its windows in two bins, and a bin alone may then hold
    one window a side. When no load has two windows on either side, the spread
    of the per-load differences speaks (each a difference of two windows)."""
    squares, df = 0.0, 0
    for pair in cells:
        for c in pair:
            if c.windows >= 2:
                squares += max(0.0, c.log_sq - c.log_sum ** 2 / c.windows)
                df += c.windows - 1
    if df:
        return squares / df, df
    if len(cells) < 2:
        return math.inf, 1
    diffs = [i.log_mean - s.log_mean for s, i in cells]
    mean = sum(diffs) / len(diffs)
    return sum((d - mean) ** 2 for d in diffs) / (len(diffs) - 1) / 2, len(diffs) - 1


@dataclass(frozen=True)
class MixGain:
    gain: float
    low: float
    high: float


def gain_at_mix(kinds: Mapping[str, KindGain | None], read_fraction: float,
                latency: Mapping[str, float]) -> MixGain | None:
    """The pool's gain at `read_fraction`: its isolated over its shared mean
    latency per op at that mix, every kind measured in both placements
    counted, with a 95% interval; None while a kind needed at the mix (by
    its share of the time, `latency` each kind's mean isolated) is not."""
    share = kind_shares(read_fraction)
    if any(kinds.get(k) is None for k in needed_kinds(read_fraction, latency)):
        return None
    # not empty: a kind is always needed (the kinds' time adds up) and measured here
    gains = {k: g for k, g in kinds.items() if g is not None and share[k] > 0}
    isolated = sum(share[k] * g.isolated_secs for k, g in gains.items())
    shared = sum(share[k] * g.isolated_secs / g.gain for k, g in gains.items())
    if isolated <= 0 or shared <= 0:
        return None
    gain = isolated / shared
    # d log(gain) / d log(g_k): kind k's share of the shared latency
    var = sum((share[k] * g.isolated_secs / g.gain / shared) ** 2 * g.log_var
              for k, g in gains.items())
    if math.isinf(var) or math.isnan(var):
        return MixGain(gain, 0.0, math.inf)
    half = t95(max(1, min(g.df for g in gains.values()))) * math.sqrt(var)
    return MixGain(gain, gain * math.exp(-half), gain * math.exp(half))
