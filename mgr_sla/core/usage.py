"""A compact history of urgent client IOPS, for `ceph sla advise`.

Why hourly buckets: sizing the urgent region needs the daily peaks and the
quiet-hours rate over days (a weekly cycle at best), not seconds; the tick
sees one rate a second, and 14 days of those would not fit the mon KV store.
One bucket per hour keeps the hour's peak (the highest per-tick rate, what
the urgent OSDs must carry), its mean and its sample count: 336 buckets for
14 days, about 14 KB of JSON. The module persists it so a mgr failover does
not lose the history. Pure: plain data in, plain data out, no Ceph, no I/O.
"""
from __future__ import annotations

import json
import math
from collections.abc import Iterable
from dataclasses import dataclass, replace

from .latency import percentile as nearest_rank

BUCKET_SECS = 3600
MAX_BUCKETS = 14 * 24  # 14 days of hours
USAGE_VERSION = 1
QUIET_PERCENTILE = 25.0


class UsageError(ValueError):
    """A stored usage history that cannot be read; the message says why."""


@dataclass
class HourBucket:
    """One hour: `start` = floor(t / 3600) * 3600 (epoch seconds).

    `mean` is the sample mean of the per-tick rates that fell in the hour,
    not a time-weighted one: ticks are about 1 s apart, so the two agree while
    the mgr runs, and after a gap (mgr failover, module off) a time-weighted
    mean would stretch the first rate over the whole gap, a rate nobody saw.
    """

    start: int
    peak: float
    mean: float
    samples: int

    def add(self, iops: float) -> None:
        self.samples += 1
        self.mean += (iops - self.mean) / self.samples
        if iops > self.peak:
            self.peak = iops


class UsageHistory:
    """Hourly urgent IOPS buckets, the newest 14 days (336 hours) of them."""

    def __init__(self, buckets: Iterable[HourBucket] = ()) -> None:
        self._buckets: list[HourBucket] = sorted(buckets, key=lambda b: b.start)
        self._trim()

    def add(self, now: float, urgent_iops: float) -> None:
        """Count one tick's urgent rate. O(1) amortized: the hour's bucket is
        nearly always the last one; the oldest is dropped once an hour.

        A negative or non-finite rate is skipped, not stored: a counter reset
        (an OSD restart) gives one, and one lost sample of 3600 changes nothing
        while a stored one would spoil the peak for 14 days. A sample older
        than the newest bucket (the clock stepped back, or a new mgr's clock
        is behind the old one's) goes to its own hour if that is still kept.
        """
        if not math.isfinite(urgent_iops) or urgent_iops < 0 or not math.isfinite(now):
            return
        start = _bucket_start(now)
        last = self._buckets[-1] if self._buckets else None
        if last is not None and last.start == start:
            last.add(urgent_iops)
            return
        if last is None or start > last.start:
            self._buckets.append(HourBucket(start, urgent_iops, urgent_iops, 1))
            self._trim()
            return
        self._add_past(start, urgent_iops)

    def _add_past(self, start: int, urgent_iops: float) -> None:
        if start <= self._buckets[-1].start - MAX_BUCKETS * BUCKET_SECS:
            return  # older than the 14 days kept
        for i in range(len(self._buckets) - 1, -1, -1):
            bucket = self._buckets[i]
            if bucket.start == start:
                bucket.add(urgent_iops)
                return
            if bucket.start < start:
                self._buckets.insert(i + 1, HourBucket(start, urgent_iops, urgent_iops, 1))
                return
        self._buckets.insert(0, HourBucket(start, urgent_iops, urgent_iops, 1))

    def _trim(self) -> None:
        """Drop the hours that started 14 days or more before the newest one."""
        if not self._buckets:
            return
        oldest_kept = self._buckets[-1].start - (MAX_BUCKETS - 1) * BUCKET_SECS
        drop = 0
        while drop < len(self._buckets) and self._buckets[drop].start < oldest_kept:
            drop += 1
        if drop:
            del self._buckets[:drop]

    @property
    def buckets(self) -> tuple[HourBucket, ...]:
        """Copies, oldest first (changing them does not change the history)."""
        return tuple(replace(b) for b in self._buckets)

    def hours(self) -> int:
        """Hours with at least one sample (gaps, e.g. the mgr down, not counted)."""
        return len(self._buckets)

    @property
    def span_secs(self) -> float:
        """Wall-clock seconds from the oldest kept hour's start to the newest
        hour's end, gaps included; 0 with no history."""
        if not self._buckets:
            return 0.0
        return float(self._buckets[-1].start + BUCKET_SECS - self._buckets[0].start)

    def peak(self, percentile: float = 100.0) -> float | None:
        """Nearest-rank percentile of the hourly peaks (100: the highest
        per-tick rate seen); None with no history."""
        return nearest_rank((b.peak for b in self._buckets), _check_percentile(percentile))

    def quiet_rate(self) -> float | None:
        """The urgent rate in quiet hours: the 25th percentile (nearest rank) of
        the hourly means. A percentile, not the minimum, so one idle hour (a
        holiday, a stopped client) does not set it; low enough that the night
        hours of a daily cycle (about a third of the day) make it. None with
        no history."""
        return nearest_rank((b.mean for b in self._buckets), QUIET_PERCENTILE)

    def to_json(self) -> str:
        """{"v": 1, "bucket_secs": 3600, "buckets": [[start, peak, mean, samples],
        ...]}, rates rounded to 0.001 IOPS: about 14 KB at 336 buckets."""
        rows = [[b.start, round(b.peak, 3), round(b.mean, 3), b.samples]
                for b in self._buckets]
        return json.dumps({"v": USAGE_VERSION, "bucket_secs": BUCKET_SECS, "buckets": rows},
                          separators=(",", ":"))

    @staticmethod
    def from_json(text: str | None) -> UsageHistory:
        """Restore; a missing record (None or "") is an empty history. An
        unreadable, foreign or newer one raises UsageError: the caller decides
        whether to start afresh and says so."""
        if not text:
            return UsageHistory()
        try:
            raw = json.loads(text)
        except ValueError as e:
            raise UsageError(f"usage history is not JSON: {e}") from None
        if not isinstance(raw, dict) or "v" not in raw:
            raise UsageError("usage history record has no version field 'v': not one of ours")
        if raw["v"] != USAGE_VERSION:
            raise UsageError(f"usage history version {raw['v']!r} is not {USAGE_VERSION}, "
                             "the one this module reads")
        if raw.get("bucket_secs", BUCKET_SECS) != BUCKET_SECS:
            raise UsageError(f"usage history buckets of {raw.get('bucket_secs')!r} s, "
                             f"not {BUCKET_SECS} s")
        rows = raw.get("buckets")
        if not isinstance(rows, list):
            raise UsageError("usage history has no 'buckets' list")
        buckets = [_bucket(row) for row in rows]
        starts = [b.start for b in buckets]
        if len(set(starts)) != len(starts):
            raise UsageError("usage history holds the same hour twice")
        return UsageHistory(buckets)


def _bucket(row: object) -> HourBucket:
    if not isinstance(row, list) or len(row) != 4:
        raise UsageError(f"usage history bucket {row!r} is not [start, peak, mean, samples]")
    start, peak, mean, samples = row
    numbers = (start, peak, mean, samples)
    if any(isinstance(v, bool) or not isinstance(v, (int, float)) for v in numbers):
        raise UsageError(f"usage history bucket {row!r} holds a non-number")
    if not all(math.isfinite(v) for v in numbers) or min(numbers) < 0:
        raise UsageError(f"usage history bucket {row!r} holds a negative or infinite value")
    if not isinstance(samples, int) or samples < 1 or not isinstance(start, int):
        raise UsageError(f"usage history bucket {row!r}: start and samples must be whole, "
                         "samples >= 1")
    if start % BUCKET_SECS:
        raise UsageError(f"usage history bucket {row!r}: start {start} is not on the hour")
    return HourBucket(start, float(peak), float(mean), samples)


def _bucket_start(t: float) -> int:
    return int(math.floor(t / BUCKET_SECS)) * BUCKET_SECS


def _check_percentile(q: float) -> float:
    if not 0 < q <= 100:
        raise UsageError(f"the percentile must be in (0, 100], not {q:g}")
    return q
