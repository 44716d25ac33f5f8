"""The switch tracker's time to isolation, on PG stats as the mgr serves them."""
from __future__ import annotations

import logging
from types import SimpleNamespace
from typing import Any

from mgr_sla.core.state import SwitchRecord
from mgr_sla.shell.switch_tracker import SwitchTracker

URGENT = frozenset({6, 7})


def _tracker(stats: list[dict[str, Any]]) -> SwitchTracker:
    mgr = SimpleNamespace(get=lambda what: {"pg_stats": stats} if what == "pg_stats" else {},
                          remote=lambda *a, **k: None, log=logging.getLogger("sla-test"))
    return SwitchTracker(mgr)  # type: ignore[arg-type]  # the calls it makes, no more


def _isolating(tracker: SwitchTracker) -> SwitchRecord:
    record = SwitchRecord(time=100.0, from_mode="shared", to_mode="isolated", reason="busy")
    tracker.start(record, {"2.0": [0, 6, 1], "2.1": [1, 2, 3]})
    tracker.placed_at(50)
    return record


def test_isolation_counts_only_once_no_pg_may_serve_on_urgent_osds() -> None:
    stats = [{"pgid": "2.0", "acting": [0, 6, 1], "up": [0, 4, 1],
              "state": "active+remapped+backfilling"},
             {"pgid": "2.1", "acting": [1, 2, 3], "up": [1, 2, 3], "state": "active+clean"}]
    tracker = _tracker(stats)
    record = _isolating(tracker)
    tracker.track(50, [2], URGENT, lambda: {"2.0": [0, 4, 1], "2.1": [1, 2, 3]}, False, 101.0)
    assert record.time_to_isolation_secs is None and tracker.isolating
    assert (record.pgs_moved, record.replicas_moved) == (1, 1)
    # peering: the stats show the new up set before pg_temp keeps osd.6 acting
    stats[0].update(acting=[0, 4, 1], state="remapped+peering")
    tracker.track(51, [2], URGENT, lambda: {}, False, 102.0)
    assert record.time_to_isolation_secs is None
    # active off the urgent OSDs (recovery still to come): isolated, not yet done
    stats[0].update(state="active+recovery_wait+degraded")
    tracker.track(52, [2], URGENT, lambda: {}, False, 103.5)
    assert record.time_to_isolation_secs == 3.5 and tracker.last_time_to_isolation == 3.5
    assert tracker.isolating  # still watched until every PG is clean
    stats[0].update(state="active+clean")
    tracker.track(53, [2], URGENT, lambda: {}, False, 110.0)
    assert not tracker.isolating and record.time_to_isolation_secs == 3.5


def test_a_switch_not_yet_in_the_map_is_not_judged() -> None:
    stats = [{"pgid": "2.0", "acting": [0, 4, 1], "state": "active+clean"}]
    tracker = _tracker(stats)
    record = _isolating(tracker)
    tracker.track(49, [2], URGENT, lambda: {"2.0": [0, 4, 1]}, False, 101.0)
    assert record.time_to_isolation_secs is None and record.pgs_moved is None
    tracker.track(50, [2], URGENT, lambda: {"2.0": [0, 4, 1]}, True, 101.0)  # still placing
    assert record.time_to_isolation_secs is None and record.pgs_moved is None


def test_a_switch_to_shared_is_not_over_on_stats_from_before_its_epoch() -> None:
    """The OSDs report every few seconds: right after the entries went in, every
    PG's stats still say active+clean on the old up set. The switch is watched
    (isolation may then cancel its peering) until the stats show the map's up sets."""
    stats = [{"pgid": "2.0", "acting": [0, 2, 4], "up": [0, 2, 4], "state": "active+clean"}]
    tracker = _tracker(stats)
    record = SwitchRecord(time=100.0, from_mode="isolated", to_mode="shared", reason="quiet")
    tracker.start(record, {"2.0": [0, 2, 4]})
    tracker.placed_at(50)
    now_up = {"2.0": [0, 2, 7]}
    tracker.track(50, [2], URGENT, lambda: now_up, False, 101.0)
    assert tracker.sharing and (record.pgs_moved, record.replicas_moved) == (1, 1)
    stats[0].update(up=[0, 2, 7], state="remapped+peering")
    tracker.track(51, [2], URGENT, lambda: now_up, False, 102.0)
    assert tracker.sharing
    stats[0].update(acting=[0, 2, 7], state="active+clean")
    tracker.track(52, [2], URGENT, lambda: now_up, False, 104.0)
    assert not tracker.sharing


def test_moves_are_counted_once_the_switch_is_in_the_map() -> None:
    """A decided switch whose command waits (a gate): the PGs it will move are
    counted from the map that has it, not from the one it was decided on."""
    stats = [{"pgid": "2.0", "acting": [0, 6, 1], "up": [0, 6, 1], "state": "peering"}]
    tracker = _tracker(stats)
    record = SwitchRecord(time=100.0, from_mode="shared", to_mode="isolated", reason="busy",
                          epoch=50)
    tracker.start(record, {"2.0": [0, 6, 1]})
    tracker.track(50, [2], URGENT, lambda: {"2.0": [0, 6, 1]}, False, 101.0)
    assert record.pgs_moved is None  # the rule change is held: nothing in the map yet
    tracker.placed_at(51)
    tracker.track(51, [2], URGENT, lambda: {"2.0": [0, 4, 1]}, False, 102.0)
    assert (record.pgs_moved, record.replicas_moved) == (1, 1)


def test_progress_hears_of_an_event_only_after_its_first_update() -> None:
    """A switch that ends on its first look completes no event the progress
    module never saw (it warns 'ev ... does not exist'); one that moved for a
    while is updated, then completed."""
    stats = [{"pgid": "2.0", "acting": [0, 4, 1], "up": [0, 4, 1], "state": "active+clean"}]
    calls: list[str] = []
    mgr = SimpleNamespace(get=lambda what: {"pg_stats": stats} if what == "pg_stats" else {},
                          remote=lambda _module, verb, *a, **k: calls.append(verb),
                          log=logging.getLogger("sla-test"))
    tracker = SwitchTracker(mgr)  # type: ignore[arg-type]
    _isolating(tracker)
    tracker.track(50, [2], URGENT, lambda: {"2.0": [0, 4, 1]}, False, 101.0)
    assert calls == [] and not tracker.isolating
    _isolating(tracker)
    stats[0].update(acting=[0, 6, 1], state="active+remapped+backfilling")
    tracker.track(50, [2], URGENT, lambda: {"2.0": [0, 4, 1]}, False, 101.0)
    stats[0].update(acting=[0, 4, 1], state="active+clean")
    tracker.track(51, [2], URGENT, lambda: {"2.0": [0, 4, 1]}, False, 102.0)
    assert calls == ["update", "complete"]
