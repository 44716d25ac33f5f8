"""Space while shared: what sends a shared pool back to isolation."""
from __future__ import annotations

from mgr_sla.core.space import shared_space_faults, toofull_pools, urgent_fills


def test_an_urgent_osd_past_nearfull_isolates_every_shared_pool_and_names_it() -> None:
    fills = urgent_fills({1: 90.0, 2: 50.0, 3: 86.0}, {1: 100.0, 2: 100.0, 3: 100.0, 4: 0.0})
    assert fills == {1: 0.9, 2: 0.5, 3: 0.86}
    faults = shared_space_faults(fills, 0.85, [7, 9], toofull=())
    assert set(faults) == {7, 9}
    assert "osd.1" in faults[7] and "90%" in faults[7] and "2 urgent OSDs" in faults[7]
    assert shared_space_faults(fills, 0.95, [7, 9], toofull=()) == {}


def test_toofull_pgs_isolate_their_own_pool_only() -> None:
    by_pool = {"7": {"active+clean": 10},
               "9": {"active+undersized+degraded+remapped+backfill_toofull": 2,
                     "active+clean": 30},
               "11": {"active+recovery_toofull+degraded": 1}}
    assert toofull_pools(by_pool) == {9, 11}
    faults = shared_space_faults({1: 0.5}, 0.85, [7, 9], toofull_pools(by_pool))
    assert list(faults) == [9] and "backfill_toofull" in faults[9]
    assert shared_space_faults({1: 0.5}, 0.85, [], {9}) == {}


def test_the_fullest_urgent_osd_if_a_pool_shares() -> None:
    from mgr_sla.core.space import fullest_if_added, spread_bytes
    used, size = {1: 40.0, 3: 60.0}, {1: 100.0, 3: 100.0, 5: 0.0}
    by_weight = spread_bytes(20.0, {1: 1.0, 3: 1.0})
    assert by_weight == {1: 10.0, 3: 10.0}
    assert fullest_if_added(used, size, by_weight) == (3, 0.7)
    # CRUSH puts 12 of the pool's 16 PGs on osd.1: that one fills most
    by_pgs = spread_bytes(32.0, {1: 1.0, 3: 1.0}, {1: 12, 3: 4}, 16)
    assert by_pgs == {1: 24.0, 3: 8.0} and fullest_if_added(used, size, by_pgs) == (3, 0.68)
    assert fullest_if_added(used, size, spread_bytes(80.0, {1: 1.0, 3: 1.0}, {1: 12, 3: 4},
                                                     16))[0] == 1
    assert fullest_if_added({}, {5: 0.0}, {}) is None
    assert spread_bytes(10.0, {}) == {}
