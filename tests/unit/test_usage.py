"""The hourly urgent IOPS history kept for `ceph sla advise`."""
from __future__ import annotations

import json

import pytest

from mgr_sla.core.usage import MAX_BUCKETS, UsageError, UsageHistory

H = 3600.0


def test_samples_fill_the_hour_then_roll_over() -> None:
    h = UsageHistory()
    for t, iops in ((0.0, 10.0), (1.0, 30.0), (3599.9, 20.0), (3600.0, 5.0)):
        h.add(t, iops)
    first, second = h.buckets
    assert (first.start, first.peak, first.mean, first.samples) == (0, 30.0, 20.0, 3)
    assert (second.start, second.peak, second.samples) == (3600, 5.0, 1)
    assert h.hours() == 2 and h.span_secs == 2 * H


def test_bucket_start_is_floor_to_the_hour() -> None:
    h = UsageHistory()
    h.add(1_700_000_123.4, 1.0)
    assert h.buckets[0].start == 1_699_999_200 == 1_700_000_123 // 3600 * 3600


def test_keeps_14_days_and_drops_older_hours() -> None:
    h = UsageHistory()
    for hour in range(400):
        h.add(hour * H + 10, float(hour))
    assert h.hours() == MAX_BUCKETS == 336
    assert h.buckets[0].start == (400 - 336) * 3600
    assert h.span_secs == 336 * H
    assert h.peak() == 399.0
    h.add((400 + 336) * H, 1.0)  # two weeks later: everything before is gone
    assert h.hours() == 1


def test_gaps_count_in_span_not_in_hours() -> None:
    h = UsageHistory()
    h.add(0.0, 1.0)
    h.add(10 * H, 1.0)
    assert h.hours() == 2 and h.span_secs == 11 * H


def test_out_of_order_samples_go_to_their_hour() -> None:
    h = UsageHistory()
    h.add(5 * H, 1.0)
    h.add(2 * H, 7.0)  # clock stepped back: a new hour before the newest
    h.add(5 * H + 1, 3.0)
    h.add(2 * H + 1, 9.0)
    h.add(5 * H - 336 * H, 50.0)  # older than the 14 days kept: dropped
    assert [(b.start, b.peak, b.samples) for b in h.buckets] == [
        (2 * 3600, 9.0, 2), (5 * 3600, 3.0, 2)]


def test_bad_rates_are_skipped() -> None:
    h = UsageHistory()
    for bad in (-1.0, float("nan"), float("inf")):
        h.add(0.0, bad)
    assert h.hours() == 0 and h.peak() is None and h.quiet_rate() is None
    h.add(0.0, 4.0)
    assert h.peak() == 4.0


def test_peak_percentiles_are_nearest_rank_over_hourly_peaks() -> None:
    h = UsageHistory()
    for hour in range(100):
        h.add(hour * H, float(hour + 1))  # peak of hour i is i + 1
        h.add(hour * H + 1, 0.0)  # a second sample halves the mean, not the peak
    assert h.peak() == 100.0 and h.peak(95) == 95.0 and h.peak(50) == 50.0
    assert h.peak(1) == 1.0
    assert h.quiet_rate() == 12.5  # p25 of the means (i + 1) / 2: rank 25 -> 25 / 2
    with pytest.raises(UsageError, match=r"\(0, 100\]"):
        h.peak(0)
    with pytest.raises(UsageError, match="percentile"):
        h.peak(101)


def test_quiet_rate_is_not_set_by_one_idle_hour() -> None:
    h = UsageHistory()
    means = [0.0] + [40.0] * 8 + [400.0] * 15  # one idle hour, 8 night hours, the day
    for hour, m in enumerate(means):
        h.add(hour * H, m)
    assert h.quiet_rate() == 40.0


def test_json_round_trip_and_size() -> None:
    h = UsageHistory()
    for hour in range(MAX_BUCKETS):
        for s in range(3):
            h.add(1_700_000_000 + hour * H + s, 123456.789123 + hour + s / 7)
    text = h.to_json()
    assert len(text) < 40_000
    assert json.loads(text)["v"] == 1
    back = UsageHistory.from_json(text)
    assert back.to_json() == text
    assert back.hours() == MAX_BUCKETS and back.peak() == pytest.approx(h.peak(), abs=1e-3)
    assert back.quiet_rate() == pytest.approx(h.quiet_rate(), abs=1e-3)
    back.add(1_700_000_000 + (MAX_BUCKETS - 1) * H + 5, 1e6)  # still a live history
    assert back.peak() == 1e6 and back.buckets[-1].samples == 4


def test_missing_record_is_an_empty_history() -> None:
    assert UsageHistory.from_json(None).hours() == 0
    assert UsageHistory.from_json("").span_secs == 0.0


@pytest.mark.parametrize("text, error", [
    ('{"v": 2, "bucket_secs": 3600, "buckets": []}', "version 2 is not 1"),
    ('{"mode": "shared"}', "no version field"),
    ("[1, 2]", "no version field"),
    ("{not json", "not JSON"),
    ('{"v": 1, "bucket_secs": 60, "buckets": []}', "buckets of 60 s"),
    ('{"v": 1}', "no 'buckets' list"),
    ('{"v": 1, "buckets": [[0, 1.0, 1.0]]}', "not \\[start, peak, mean, samples\\]"),
    ('{"v": 1, "buckets": [[0, "a", 1.0, 1]]}', "non-number"),
    ('{"v": 1, "buckets": [[0, -1.0, 1.0, 1]]}', "negative"),
    ('{"v": 1, "buckets": [[0, 1.0, 1.0, 0]]}', "samples >= 1"),
    ('{"v": 1, "buckets": [[60, 1.0, 1.0, 1]]}', "not on the hour"),
    ('{"v": 1, "buckets": [[0, 1.0, 1.0, 1], [0, 2.0, 2.0, 1]]}', "same hour twice"),
])
def test_unreadable_records_raise_usage_error(text: str, error: str) -> None:
    with pytest.raises(UsageError, match=error):
        UsageHistory.from_json(text)


def test_usage_error_is_a_value_error() -> None:
    assert issubclass(UsageError, ValueError)


def test_buckets_are_copies() -> None:
    h = UsageHistory()
    h.add(0.0, 1.0)
    h.buckets[0].peak = 99.0
    assert h.peak() == 1.0
