"""Writes to the mgr's store (`set_store`: a mon round trip, which takes
seconds or hangs while the monitors are slow) are made outside the status lock,
so `ceph sla status` and the metrics scrape never wait on one; the state goes
to the store once a tick at most (marked dirty, written back at the tick's
end), an operator's command writes it before it answers, and a write the mon
did not take is made again at the next tick. On the fake mgr
(harness/fake_mgr.py)."""
from __future__ import annotations

import json
import time
from typing import Any

import pytest

from harness.fake_mgr import FakeCluster, make_module

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


class _Writes:
    """The fake mgr's set_store: each write, and whether the status lock was
    held when it was made. The mon deadline runs set_store on a thread of its
    own while the caller waits, so the lock is tried from here: held by this
    thread, or not to be had (the caller, blocked on this write, holds it)."""

    def __init__(self, m: Any) -> None:
        self.log: list[tuple[str, bool]] = []
        self._write = m.set_store
        self._lock = m._store.lock
        m.set_store = self

    def __call__(self, key: str, value: str | None) -> None:
        held = self._lock._is_owned() or not self._lock.acquire(blocking=False)
        if not held:
            self._lock.release()
        self.log.append((key, held))
        self._write(key, value)

    def under_lock(self) -> list[str]:
        return [key for key, held in self.log if held]

    def count(self, key: str, since: int = 0) -> int:
        return sum(1 for k, _ in self.log[since:] if k == key)


def _module(cluster: FakeCluster, store: dict[str, str]) -> Any:
    m = make_module(cluster, store, {"min_dwell_secs": 0, "sustain_secs": 0,
                                     "step_wait_secs": 0, "min_gain": 0})
    m._rules.replace_check(lambda opts: None)  # crushtool/osdmaptool: the integration tests'
    return m


def _tick(m: Any, cluster: FakeCluster, writes: _Writes, busy: bool = False) -> int:
    """One tick 5 s after the last on the module's clock (the gain ledger
    files its windows so), client ops on the normal pool; the state writes it made."""
    from mgr_sla.core.state import STATE_KEY
    if 2 in cluster.ops:
        cluster.ops[2] += 1000
    if busy:
        cluster.ops[1] += 10_000
    m.clock = getattr(m, "clock", time.time()) + 5.0
    before = len(writes.log)
    with m._store.act_lock:  # as Module.tick runs it
        m._ticker.run(m.clock)
    m._rules.wait(5)
    m._admission.facts.limits.wait(5)  # the OSDs answer on a thread of their own
    m._placer.sender.wait(5)  # the upmap batch goes out on its own thread
    return writes.count(STATE_KEY, before)


def _roles(store: dict[str, str]) -> set[int]:
    return {int(p) for p in json.loads(store["state"])["roles"]}


def test_no_store_write_is_made_under_the_status_lock() -> None:
    """Ticks, a switch each way, the gain ledger, `pool set`, `sla mode`,
    `pool rm`, `release`: every write outside the lock, the state once a tick
    at most, a command's change in the store when it answers."""
    from mgr_sla.core.state import Role, Strategy
    from mgr_sla.shell.admission_step import LEDGER_KEY

    cluster = FakeCluster()
    cluster.add_pool(1, "fast", "sla_isolated_urgent")
    cluster.add_pool(2, "bulk", "sla_isolated_normal")
    cluster.add_pool(3, "other", "replicated_rule")
    store: dict[str, str] = {}
    m = _module(cluster, store)
    from mgr_sla.shell.commands_io import ModeArg  # once the fake mgr_module is in
    writes = _Writes(m)
    assert m.cmd_pool_set("fast", role=Role.URGENT).retval == 0
    assert m.cmd_pool_set("bulk", role=Role.NORMAL, strategy=Strategy.MOVE).retval == 0
    assert m.cmd_pool_set("other", role=Role.NORMAL, strategy=Strategy.MOVE).retval == 0
    assert _roles(store) == {1, 2, 3}  # `pool set` answers once its role is in the store
    assert writes.under_lock() == []
    per_tick = [_tick(m, cluster, writes) for _ in range(10)]
    assert cluster.rule_of(2) == "sla_shared"
    per_tick += [_tick(m, cluster, writes, busy=True) for _ in range(3)]
    assert cluster.rule_of(2) == "sla_isolated_normal"
    assert writes.under_lock() == []
    assert max(per_tick) == 1, per_tick  # a switch's tick too
    assert 0 < writes.count(LEDGER_KEY) <= 13 * 5 / m._settings.gain_window_secs + 1
    assert m.cmd_mode(ModeArg("isolated")).retval == 0
    assert json.loads(store["state"])["pinned"] == "isolated"
    assert m.cmd_pool_rm("other").retval == 0
    assert _roles(store) == {1, 2}
    assert m.cmd_release().retval == 0
    assert _roles(store) == set()
    assert writes.under_lock() == []


def test_an_unreadable_state_is_kept_outside_the_lock_before_the_new_one() -> None:
    from mgr_sla.core.state import STATE_KEY
    cluster = FakeCluster()
    store = {"state": "{broken"}
    m = _module(cluster, store)
    writes = _Writes(m)
    _tick(m, cluster, writes)
    assert writes.under_lock() == []
    keys = [k for k, _ in writes.log if k.startswith(STATE_KEY)]
    assert keys[0].startswith("state.unreadable.") and keys[1:] == [STATE_KEY], keys
    assert store[keys[0]] == "{broken"


def test_a_state_write_the_mon_did_not_take_is_made_at_the_next_tick() -> None:
    """`pool set`'s write, then a tick's own: each not taken by the mon in
    time (set_store False), each made by the next tick's write back."""
    from mgr_sla.core.state import STATE_KEY, Role

    cluster = FakeCluster()
    cluster.add_pool(1, "fast", "sla_isolated_urgent")
    store: dict[str, str] = {}
    m = _module(cluster, store)
    writes = _Writes(m)
    _tick(m, cluster, writes)
    port_write = m._port.set_store
    refuse = [True]

    def slow_mon(key: str, value: str | None) -> bool:
        if key == STATE_KEY and refuse[0]:
            refuse[0] = False
            return False  # as ModulePort says it: the mon did not answer in time
        return bool(port_write(key, value))
    m._port.set_store = slow_mon
    assert m.cmd_pool_set("fast", role=Role.URGENT).retval == 0
    assert _roles(store) == set() and not refuse[0]
    assert _tick(m, cluster, writes) == 1
    assert _roles(store) == {1}
    # the tick's own write not taken: the next tick makes it, nothing else changed
    refuse[0] = True
    with m._store.lock:  # a change a tick records (its counters)
        m._store.state().blocked_total["by_hand"] = 1
    assert _tick(m, cluster, writes) == 0 and not refuse[0]
    assert "by_hand" not in store["state"]
    assert _tick(m, cluster, writes) == 1 and "by_hand" in store["state"]
    assert writes.under_lock() == []
