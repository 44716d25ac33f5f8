"""The urgent OSDs' write budget: what switches to shared place there per
day, counted from the switch records and bounded by max_urgent_drive_writes."""
from __future__ import annotations

import json
from typing import Any

import pytest

from harness.fake_mgr import FakeCluster, make_module
from mgr_sla.core.state import Role, Strategy, SwitchRecord
from mgr_sla.core.wear import (
    DAY_SECS,
    count_sharing,
    current_period,
    write_budget,
)

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")
GIB = 2.0**30


def shared_at(t: float, gib: float, dry_run: bool = False) -> SwitchRecord:
    return SwitchRecord(t, "isolated", "shared", "quiet", dry_run=dry_run,
                        bytes_to_urgent=gib * GIB)


def test_the_last_24_hours_of_real_switches_to_shared_count() -> None:
    now = 10 * DAY_SECS
    history = [shared_at(now - DAY_SECS - 1, 500), shared_at(now - 3600, 20),
               SwitchRecord(now - 1800, "shared", "isolated", "busy", bytes_to_isolate=9e12),
               shared_at(now - 600, 30, dry_run=True), shared_at(now - 60, 10)]
    budget = write_budget(history, now, 0.3, 1000 * GIB)
    assert budget.written == 30 * GIB and budget.budget == 300 * GIB
    assert budget.left == 270 * GIB
    assert write_budget(history, now, 0.0, 1000 * GIB).left == float("inf")


def test_each_pool_counts_once_per_shared_period_when_its_step_goes_out() -> None:
    history = [SwitchRecord(0.0, "shared", "isolated", "busy")]
    count_sharing(history, {3: 10 * GIB})  # isolated: no shared period to count in
    assert current_period(history) is None and history[0].bytes_to_urgent is None
    history.append(SwitchRecord(10.0, "isolated", "shared", "quiet"))
    count_sharing(history, {3: 10 * GIB})  # the first step of a paced switch
    count_sharing(history, {3: 10 * GIB, 4: 5 * GIB})  # the next step; 3 converging again
    period = current_period(history)
    assert period is history[-1] and period.pools_to_urgent == [3, 4]
    assert period.bytes_to_urgent == 15 * GIB
    history.append(SwitchRecord(20.0, "shared", "isolated", "busy", dry_run=True))
    assert current_period(history) is period  # a dry run's record is not a period


def _two_copy_pools(options: dict) -> tuple[FakeCluster, Any]:
    cluster = FakeCluster()
    cluster.add_pool(1, "fast", "sla_isolated_urgent")
    cluster.add_pool(2, "first", "replicated_rule")
    cluster.add_pool(3, "second", "replicated_rule")
    cluster.pool_bytes = int(3 * 50 * GIB)  # 50 GiB stored in each pool
    m = make_module(cluster, {}, {"min_dwell_secs": 0, "sustain_secs": 0, "step_wait_secs": 0,
                                  **options})
    m._rules.replace_check(lambda opts: None)
    assert m.cmd_pool_set("fast", role=Role.URGENT).retval == 0
    for name in ("first", "second"):
        assert m.cmd_pool_set(name, role=Role.NORMAL, strategy=Strategy.COPY).retval == 0
    return cluster, m


def _ticks(m: Any, n: int) -> None:
    for _ in range(n):
        m.tick()
        m._admission.facts.limits.wait(5)  # the OSDs answer on a thread of their own


def test_a_copy_pool_past_the_day_budget_stays_isolated_and_the_switch_is_counted() -> None:
    # 4 urgent OSDs of 100 GiB: 0.2 drive writes a day are 80 GiB, one copy of 50 fits
    cluster, m = _two_copy_pools({"min_gain": 0, "max_urgent_drive_writes": 0.2})
    _ticks(m, 6)
    from mgr_sla.shell.commands_io import OutputFormat
    status = json.loads(m.cmd_status(format=OutputFormat.JSON).stdout)
    assert status["mode"] == "shared"
    assert [cluster.pools[p]["size"] for p in (2, 3)] == [4, 3]
    second = next(p for p in status["pools"] if p["name"] == "second")
    assert "max_urgent_drive_writes" in second["kept_isolated"], second
    assert status["urgent_writes"] == {"written_last_day_bytes": 50 * GIB,
                                       "budget_bytes_per_day": 80 * GIB}
    text = m.cmd_status(format=OutputFormat.PLAIN).stdout
    assert "50.0 GiB placed on urgent OSDs by the last 24 h's switches of 80.0 GiB" in text


def test_a_pool_whose_size_raise_the_mon_refuses_is_not_counted_as_written() -> None:
    cluster, m = _two_copy_pools({"min_gain": 0})
    cluster.refuse[("second", "size")] = "pool size 4 would exceed mon_max_pg_per_osd"
    _ticks(m, 6)
    from mgr_sla.shell.commands_io import OutputFormat
    history = json.loads(m.cmd_history(format=OutputFormat.JSON).stdout)
    shared = next(h for h in history if h["to"] == "shared")
    assert [cluster.pools[p]["size"] for p in (2, 3)] == [4, 3]
    assert shared["pools_to_urgent"] == [2] and shared["bytes_to_urgent"] == 50 * GIB, shared


def test_a_pool_taken_toward_shared_shares_for_the_period_whatever_its_gain() -> None:
    # the mon took the change while the mgr's map still shows the pool isolated:
    # judging its gain again then would send it back at once, its copy half written
    cluster, m = _two_copy_pools({"min_gain": 0})
    cluster.refuse[("second", "size")] = "not yet"
    _ticks(m, 4)
    assert cluster.pools[3]["size"] == 3
    with m._store.lock:
        period = m._store.state().history[-1]
        assert period.to_mode == "shared"
        period.pools_to_urgent = [2, 3]  # as if the mon had taken "second" too
    del cluster.refuse[("second", "size")]
    m.set_module_option("min_gain", 100.0)  # no pool's gain reaches it
    cluster.epoch += 1  # a new map: the module judges the pools again
    cluster.on_change()
    _ticks(m, 3)
    # "first" is on its shared placement, "second" counted: neither is kept
    assert [cluster.pools[p]["size"] for p in (2, 3)] == [4, 4]
    from mgr_sla.shell.commands_io import OutputFormat
    status = json.loads(m.cmd_status(format=OutputFormat.JSON).stdout)
    assert all(p["kept_isolated"] is None for p in status["pools"]), status["pools"]


def test_status_read_while_the_admission_runs_sees_the_one_before() -> None:
    # status runs in the command thread while a tick builds the next admission
    cluster, m = _two_copy_pools({"min_gain": 0, "max_urgent_drive_writes": 0.2})
    _ticks(m, 6)
    from mgr_sla.shell.commands_io import OutputFormat

    def kept_now() -> str | None:
        status = json.loads(m.cmd_status(format=OutputFormat.JSON).stdout)
        return next(p for p in status["pools"] if p["name"] == "second")["kept_isolated"]
    assert "max_urgent_drive_writes" in (kept_now() or "")
    seen: list[str | None] = []
    real = m._admission.facts.admission_facts

    def refresh_and_look(*args: Any) -> Any:
        seen.append(kept_now())  # mid-refresh, from another caller's view
        return real(*args)
    m._admission.facts.admission_facts = refresh_and_look
    cluster.epoch += 1  # a new map: the costs are computed again
    cluster.on_change()
    m.tick()
    assert seen and all("max_urgent_drive_writes" in (why or "") for why in seen), seen
