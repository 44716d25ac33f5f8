"""The measured gain per op kind, with its interval, kept across a failover,
and the windows while data moves, or while a pool is kept isolated in shared
mode, kept apart."""
from __future__ import annotations

import json
import math
import random
from collections.abc import Sequence

import pytest

from mgr_sla.core.activity import PoolPeriod
from mgr_sla.core.gain import ISOLATED, KEPT, MIX_BINS, MOVING, GainLedger
from mgr_sla.core.gain_stats import KindGain, gain_at_mix, t95

POOL = 7


def period(n: int, reads: float, read_ms: float, write_ms: float) -> PoolPeriod:
    r = round(n * reads)
    return PoolPeriod(write_ops=n - r, read_ops=r,
                      write_latency_ns=int((n - r) * write_ms * 1e6), write_latency_count=n - r,
                      read_latency_ns=int(r * read_ms * 1e6), read_latency_count=r)


def spell(ledger: GainLedger, start: float, secs: int, where: str, reads: float,
          read_ms: float, write_ms: float, noise: float = 0.0, seed: int = 1,
          per_sec: int = 20) -> float:
    """`secs` seconds of a client at `per_sec` ops/s, each 30 s window's
    latencies off by up to `noise` (a fraction) at random."""
    rng = random.Random(seed)
    jitter = 1.0
    for t in range(secs):
        if t % 30 == 0:
            jitter = 1.0 + noise * (2 * rng.random() - 1)
        ledger.add(start + t, {POOL: period(per_sec, reads, read_ms * jitter,
                                            write_ms * jitter)}, {POOL: where}, True)
    return start + secs


def test_a_change_of_mix_alone_measures_one_within_its_interval() -> None:
    """Reads always 5 ms, writes always 40 ms: 30% reads isolated, 50% shared.
    The mean latency per op falls from 29.5 ms to 22.5 ms (1.31x), which is
    the mix, not the placement."""
    ledger = GainLedger()
    t = spell(ledger, 0, 300, ISOLATED, 0.3, 5.0, 40.0, noise=0.1, seed=1)
    spell(ledger, t, 300, "copy", 0.5, 5.0, 40.0, noise=0.1, seed=2)
    for mix in (None, 0.3, 0.5, 0.9):
        got = ledger.measured(POOL, "copy", mix)
        assert got is not None, mix
        assert got.low <= 1.0 <= got.high, (mix, got)
        assert abs(got.gain - 1.0) < 0.05, (mix, got)
        assert not got.clear_of(1.05) or got.high < 1.05, got


def test_reads_twice_as_fast_shared_gain_by_the_mix_of_now() -> None:
    ledger = GainLedger()
    t = spell(ledger, 0, 300, ISOLATED, 0.5, 10.0, 40.0, noise=0.05, seed=3)
    spell(ledger, t, 300, "copy", 0.5, 5.0, 40.0, noise=0.05, seed=4)
    reads = ledger.measured(POOL, "copy", 0.9)
    writes = ledger.measured(POOL, "copy", 0.1)
    assert reads is not None and writes is not None
    assert reads.gain == pytest.approx((0.9 * 10 + 0.1 * 40) / (0.9 * 5 + 0.1 * 40), rel=0.03)
    assert writes.gain == pytest.approx((0.1 * 10 + 0.9 * 40) / (0.1 * 5 + 0.9 * 40), rel=0.03)
    assert reads.clear_of(1.05) and reads.low > 1.05


def test_a_kind_the_mix_needs_unmeasured_on_one_side_gives_no_measurement() -> None:
    ledger = GainLedger()
    t = spell(ledger, 0, 300, ISOLATED, 0.0, 10.0, 40.0)  # writes only
    spell(ledger, t, 300, "copy", 0.5, 5.0, 40.0)
    assert ledger.measured(POOL, "copy", 0.5) is None  # reads never seen isolated
    got = ledger.measured(POOL, "copy", 0.02)  # a mix of writes is measured
    assert got is not None and got.gain == pytest.approx(1.0, abs=0.01)


def test_the_interval_narrows_as_windows_come_and_noise_widens_it() -> None:
    few, many, quiet = GainLedger(), GainLedger(), GainLedger()
    for ledger, secs, noise in ((few, 90, 0.4), (many, 900, 0.4), (quiet, 900, 0.05)):
        t = spell(ledger, 0, secs, ISOLATED, 0.5, 12.0, 48.0, noise=noise, seed=5)
        spell(ledger, t, secs, "copy", 0.5, 10.0, 40.0, noise=noise, seed=6)
    width = {name: (m.high / m.low) for name, ledger in (("few", few), ("many", many),
                                                          ("quiet", quiet))
             if (m := ledger.measured(POOL, "copy")) is not None}
    assert set(width) == {"few", "many", "quiet"}
    assert width["few"] > width["many"] > width["quiet"] > 1.0, width
    few_gain = few.measured(POOL, "copy")
    assert few_gain is not None and not few_gain.clear_of(1.1)  # 1.2x, not sure yet
    quiet_gain = quiet.measured(POOL, "copy")
    assert quiet_gain is not None and quiet_gain.low > 1.1



def windows(ledger: GainLedger, start: float, where: str, write_ms: Sequence[float]) -> float:
    """One 30 s window of writes at 20 ops/s per latency given (the first
    tick opens the first window)."""
    ledger.add(start, {}, {POOL: where}, True)
    t = start
    for ms in write_ms:
        for _ in range(30):
            t += 1
            ledger.add(t, {POOL: period(20, 0.0, 1.0, ms)}, {POOL: where}, True)
    return t


def test_windows_split_over_two_loads_still_bound_the_interval() -> None:
    """An open-loop client at 20 ops/s with writes near 3.1 ms has about 0.0625
    ops in flight, a bin's edge: its windows file in two loads, one a side in
    each. The spread is pooled over the loads, so the gain has a bounded
    interval (no load holds two windows of a side)."""
    ledger = GainLedger()
    t = windows(ledger, 0, ISOLATED, [3.0, 3.3])
    windows(ledger, t + 1, "move", [2.9, 3.4])
    got = ledger.measured(POOL, "move", 0.0)
    assert got is not None and got.loads == 2, got
    assert not math.isinf(got.high) and got.low <= 1.0 <= got.high, got
    # a third window a side: the pooled spread now comes from within the loads
    t = windows(ledger, t + 60, ISOLATED, [3.05])
    windows(ledger, t + 1, "move", [2.95])
    more = ledger.measured(POOL, "move", 0.0)
    assert more is not None and not math.isinf(more.high) and more.low <= 1.0 <= more.high

def test_windows_while_data_moves_are_kept_apart() -> None:
    ledger = GainLedger()
    t = spell(ledger, 0, 300, ISOLATED, 0.5, 10.0, 40.0)
    t = spell(ledger, t, 300, "copy" + MOVING, 0.5, 100.0, 400.0)  # backfill: slow
    assert ledger.measured(POOL, "copy") is None
    spell(ledger, t, 300, "copy", 0.5, 5.0, 20.0)
    got = ledger.measured(POOL, "copy")
    assert got is not None and got.gain == pytest.approx(2.0, rel=0.01), got


def test_a_pool_kept_isolated_in_shared_mode_is_no_isolated_baseline() -> None:
    """Kept isolated while the other pools share, a pool's HDDs carry less of
    their load: its faster windows then are no measure of it isolated."""
    ledger = GainLedger()
    t = spell(ledger, 0, 300, ISOLATED, 0.5, 10.0, 40.0)
    t = spell(ledger, t, 300, "copy", 0.5, 5.0, 20.0)
    before = ledger.measured(POOL, "copy")
    assert before is not None and before.gain == pytest.approx(2.0, rel=0.01), before
    t = spell(ledger, t, 300, ISOLATED + KEPT, 0.5, 5.0, 20.0)
    assert ledger.measured(POOL, "copy") == before
    # the check can fail: the same windows filed as isolated halve the gain
    spell(ledger, t, 300, ISOLATED, 0.5, 5.0, 20.0)
    after = ledger.measured(POOL, "copy")
    assert after is not None and after.gain < 1.6, after


def test_the_module_files_a_kept_pools_windows_apart_in_shared_mode() -> None:
    from harness.fake_mgr import FakeCluster, make_module
    from mgr_sla.core.state import PoolRole, Role, Strategy
    cluster = FakeCluster()
    cluster.add_pool(2, "bulk", "sla_isolated_normal")
    roles = {2: PoolRole(Role.NORMAL, strategy=Strategy.COPY)}
    module = make_module(cluster, {}, {})
    for t in range(100):
        module._admission.fold(float(t), {2: period(20, 0.5, 10.0, 40.0)}, roles, 0.0,
                               module._settings, frozenset(), t >= 50)
    # a window in each: isolated before the switch, apart after it
    filed = json.loads(module._admission.ledger.to_json())["pools"]
    assert sorted(e["placement"] for e in filed) == [ISOLATED, ISOLATED + KEPT], filed


def test_the_ledger_survives_a_failover_and_the_spell_goes_on() -> None:
    ledger = GainLedger(keep_periods=2)
    t = spell(ledger, 0, 300, ISOLATED, 0.5, 10.0, 40.0)
    t = spell(ledger, t, 300, "copy", 0.5, 5.0, 20.0)
    t = spell(ledger, t, 100, ISOLATED, 0.5, 10.0, 40.0)
    before = ledger.measured(POOL, "copy")
    again = GainLedger(keep_periods=2)
    assert again.load_json(ledger.to_json())
    assert again.measured(POOL, "copy") == before is not None
    # the isolated spell under way goes on in the same period: both isolated
    # windows count, the older one is not pushed out by a new period
    spell(again, t, 100, ISOLATED, 0.5, 10.0, 40.0)
    spell(ledger, t, 100, ISOLATED, 0.5, 10.0, 40.0)
    assert again.measured(POOL, "copy") == ledger.measured(POOL, "copy")
    assert not GainLedger().load_json("{not json")
    assert not GainLedger().load_json('{"version": 99, "pools": []}')
    assert not GainLedger().load_json(None)


def test_the_combined_interval_follows_the_kinds_by_their_share_of_the_latency() -> None:
    sure = KindGain("read", 2.0, 0.0, 10, 0.010, 0.005)
    unsure = KindGain("write", 1.0, 0.04, 3, 0.040, 0.040)
    latency = {"read": 0.010, "write": 0.040}
    # at 99% reads, writes four times slower are 4% of the time: not needed...
    reads_only = gain_at_mix({"read": sure, "write": None}, 0.99, latency)
    assert reads_only is not None and reads_only.low == reads_only.high == 2.0
    # ...but counted, with their spread, once measured
    both = gain_at_mix({"read": sure, "write": unsure}, 0.99, latency)
    assert both is not None and both.gain < 2.0 and both.low < both.high
    mixed = gain_at_mix({"read": sure, "write": unsure}, 0.5, latency)
    assert mixed is not None
    half = t95(3) * math.sqrt((0.5 * 0.040 / 0.0225) ** 2 * 0.04)
    assert mixed.high / mixed.gain == pytest.approx(math.exp(half), rel=1e-6)
    assert gain_at_mix({"read": sure, "write": None}, 0.5, latency) is None


def test_rare_slow_writes_count_by_their_share_of_the_time_not_of_the_ops() -> None:
    """96% reads at 9 ms, 4% writes at 214 ms: the writes are half the time
    per op. Reads gaining 2.0x and writes 1.5x make the pool's gain 1.71x,
    not the reads' 2.0x; with the writes unmeasured there is no gain yet."""
    reads = KindGain("read", 2.0, 0.001, 4, 0.00923, 0.00461)
    writes = KindGain("write", 1.5, 0.003, 4, 0.214, 0.142)
    latency = {"read": 0.00923, "write": 0.214}
    got = gain_at_mix({"read": reads, "write": writes}, 0.96, latency)
    assert got is not None and got.gain == pytest.approx(1.71, abs=0.01)
    assert gain_at_mix({"read": reads, "write": None}, 0.96, latency) is None


def test_a_new_mgr_takes_the_ledger_the_last_one_kept() -> None:
    """The live module: each filed window goes to the module's store; the
    module a failover starts reads it at its first tick."""
    from harness.fake_mgr import FakeCluster, make_module
    from mgr_sla.core.state import PoolRole, Role, Strategy
    from mgr_sla.shell.admission_step import LEDGER_KEY
    cluster = FakeCluster()
    cluster.add_pool(2, "bulk", "sla_isolated_normal")
    store: dict[str, str] = {}
    roles = {2: PoolRole(Role.NORMAL, strategy=Strategy.COPY)}
    first = make_module(cluster, store, {})
    settings = first._settings
    for t in range(200):
        first._admission.fold(float(t), {2: period(20, 0.5, 10.0, 40.0)}, roles, 0.0,
                              settings, frozenset(), False)
        first._admission.write_ledger()  # as the tick does, the status lock released
    kept = store.get(LEDGER_KEY)
    assert kept is not None and '"isolated"' in kept
    second = make_module(cluster, store, {})
    second._admission.fold(200.0, {}, roles, 0.0, settings, frozenset(), False)
    assert second._admission.ledger.to_json() == first._admission.ledger.to_json()


def test_a_pool_that_changed_its_mix_is_judged_at_the_mix_of_now() -> None:
    """A pool at 10% reads, then at 95%, in both placements, two ops in flight
    throughout (one load bin), the shared side with fewer windows at 95%.
    A kind's latency differs with the mix around it (a read among writes is
    cheap here), so each mix is compared with itself: at 95% reads the gain
    is that of the 95% spells (1.28x), not one drawn by the cheap reads of
    the shared side's extra window at 10%."""
    ledger = GainLedger()
    t = 0.0
    for where, secs, reads, read_ms, write_ms in (
            (ISOLATED, 90, 0.10, 1.2, 180.0), ("move", 90, 0.10, 0.74, 130.0),
            (ISOLATED, 90, 0.95, 6.0, 207.0), ("move", 60, 0.95, 5.35, 149.0)):
        mean_ms = reads * read_ms + (1 - reads) * write_ms
        t = spell(ledger, t, secs, where, reads, read_ms, write_ms,
                  per_sec=round(2 / (mean_ms / 1e3)))
    got = ledger.measured(POOL, "move", 0.95)
    assert got is not None and got.by_mix and got.loads == 2, got
    true = (0.95 * 6.0 + 0.05 * 207.0) / (0.95 * 5.35 + 0.05 * 149.0)
    assert got.gain == pytest.approx(true, rel=0.05), (got, true)


def test_a_ledger_an_older_module_kept_is_taken_at_each_bins_own_mix() -> None:
    """An upgrade keeps what was measured: a version 1 ledger (bins by load
    alone) is read, each bin filed at the mix of its own ops."""
    ledger = GainLedger()
    t = spell(ledger, 0, 120, ISOLATED, 0.7, 10.0, 40.0, noise=0.1, seed=3)
    spell(ledger, t, 120, "move", 0.7, 5.0, 20.0, noise=0.1, seed=4, per_sec=40)
    now = json.loads(ledger.to_json())
    old = {**now, "version": 1, "pools": [
        {**entry, "periods": [{str(int(k) // MIX_BINS): b for k, b in p.items()}
                              for p in entry["periods"]]} for entry in now["pools"]]}
    assert old != now
    again = GainLedger()
    assert again.load_json(json.dumps(old))
    assert again.measured(POOL, "move") == ledger.measured(POOL, "move") is not None
