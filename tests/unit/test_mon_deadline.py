"""Mon commands with the module's own deadline (shell/mon_deadline.py) and the
monitors' state (core/mon_link.py): librados blocks a mon command for as long
as the monitors have no quorum, so a handle whose mon_command waits on an
Event stands in for a cluster without quorum. Elapsed times are checked with
wide margins; every wait is on an Event or a thread, never a sleep."""
from __future__ import annotations

import errno
import json
import logging
import threading
import time
from typing import Any

import pytest

from harness.fake_mgr import install_fake_mgr_module
from mgr_sla.core.mon_link import PROBE_COMMAND, PROBE_EVERY_SECS, MonLink

DEADLINE = 0.3  # s: each command's deadline in these tests
SLACK = 5.0  # s: a loaded machine's margin on top of it


class _Quorum:
    """A librados handle: mon_command blocks until `quorum` is set (a mon
    answers), as librados does without quorum; it counts what reaches it."""

    def __init__(self) -> None:
        self.quorum = threading.Event()
        self.calls: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._entered = threading.Condition(self._lock)

    def mon_command(self, cmd: str, inbuf: bytes, timeout: int = 0) -> tuple[int, bytes, str]:
        with self._lock:
            self.calls.append(json.loads(cmd))
            self._entered.notify_all()
        self.quorum.wait(60)
        return 0, json.dumps({"epoch": 7}).encode(), ""

    def wait_calls(self, n: int) -> None:
        with self._lock:
            assert self._entered.wait_for(lambda: len(self.calls) >= n, SLACK), self.calls

    def prefixes(self) -> list[str]:
        with self._lock:
            return [c["prefix"] for c in self.calls]


class _Module:
    def __init__(self) -> None:
        self.rados = _Quorum()
        self.log = logging.getLogger("sla-test")
        self.store: dict[str, str | None] = {}

    def set_store(self, key: str, value: str | None) -> None:
        self.store[key] = value


def _port(timeouts: list[float] | None = None) -> Any:
    install_fake_mgr_module()
    from mgr_sla.shell.module_port import ModulePort

    limits = timeouts if timeouts is not None else [DEADLINE]
    return ModulePort(_Module(), lambda: (limits[0], limits[0]))


def _silenced(port: Any) -> None:
    """One command past its deadline: the monitors are silent from then on."""
    rc, _, err = port.mon({"prefix": "osd pool set", "pool": "p", "var": "size", "val": "3"})
    assert rc == -errno.ETIMEDOUT and "did not answer 'osd pool set'" in err, err


# ---- the state machine (pure) ----------------------------------------------------
def test_a_timeout_silences_the_monitors_until_a_probe_answers_and_a_tick_settles() -> None:
    link = MonLink()
    assert link.answering and link.refusal() is None and link.describe() == "answering"
    assert not link.probe_due(100.0)
    link.timed_out(100.0, "osd pool set", 30.0)
    link.timed_out(101.0, "osd pg-upmap-items", 30.0)  # same outage: counted once
    assert link.outages == 1 and link.silence is not None and link.silence.since == 100.0
    assert (link.refusal() or "").startswith("waiting for the monitors: no answer since ")
    assert "'osd pool set'" in link.describe() and link.health() is not None
    assert link.probe_due(101.0)  # the first probe at the next tick
    link.probe_started(101.0)
    assert not link.probe_due(200.0)  # one probe at a time
    link.probe_ended(answered=False)
    assert not link.probe_due(101.0 + PROBE_EVERY_SECS - 0.1)
    assert link.probe_due(101.0 + PROBE_EVERY_SECS)
    assert not link.settle()
    link.probe_started(110.0)
    link.probe_ended(answered=True)
    assert not link.answering  # the tick settles it, not the probe's thread
    assert link.settle() and link.answering and link.health() is None
    assert not link.settle()
    link.timed_out(120.0, "osd stat", 30.0)
    assert link.outages == 2


def test_a_timeout_after_the_probe_answered_needs_another_probe() -> None:
    link = MonLink()
    link.timed_out(0.0, "osd pool set", 30.0)
    link.probe_started(1.0)
    link.probe_ended(answered=True)
    link.timed_out(2.0, "osd pg-upmap-items", 30.0)  # a call that was in flight
    assert not link.settle() and not link.answering


# ---- the deadline on a blocked librados call ------------------------------------------
def test_a_command_without_quorum_returns_the_timeout_error_within_its_deadline() -> None:
    port = _port()
    started = time.monotonic()
    _silenced(port)
    elapsed = time.monotonic() - started
    assert DEADLINE * 0.9 <= elapsed < DEADLINE + SLACK, elapsed
    assert port.mons.abandoned() == 1  # its thread stays blocked in librados
    port._module.rados.quorum.set()


def test_while_silent_commands_fail_at_once_without_reaching_librados() -> None:
    port = _port([60.0])  # a call that reached librados would block the test for a minute
    port._timeouts = lambda: (DEADLINE, DEADLINE)
    _silenced(port)
    port._timeouts = lambda: (60.0, 60.0)
    rados = port._module.rados
    started = time.monotonic()
    rc, _, err = port.mon({"prefix": "osd pool set", "pool": "p", "var": "size", "val": "4"})
    rc_b, out_b, err_b = port.mon_bytes({"prefix": "osd getmap"})
    saved = port.set_store("state", "{}")
    assert time.monotonic() - started < SLACK
    assert rc == rc_b == -errno.ETIMEDOUT and out_b == b"" and saved is False
    assert err.startswith("waiting for the monitors: no answer since ") and err == err_b
    assert rados.prefixes() == ["osd pool set"] and "state" not in port._module.store
    assert port.mons_waiting() == err
    rados.quorum.set()


def test_a_state_write_without_quorum_returns_within_its_deadline() -> None:
    """The mgr keeps the value and waits for the mon's `config-key set`."""
    port = _port()
    module = port._module

    def waiting_write(key: str, value: str | None) -> None:
        module.store[key] = value
        module.rados.quorum.wait(60)
    module.set_store = waiting_write
    started = time.monotonic()
    assert port.set_store("state", "{}") is False
    assert time.monotonic() - started < DEADLINE + SLACK
    assert (port.mons_waiting() or "").startswith("waiting for the monitors")
    assert port.set_module_option("active", False) is not None  # at once, not set
    module.rados.quorum.set()


def test_the_probe_clears_the_state_once_the_monitors_answer() -> None:
    port = _port()
    _silenced(port)
    port._timeouts = lambda: (60.0, 60.0)  # the probe waits as long as librados does
    rados = port._module.rados
    assert port.refresh_mons() is False  # starts a probe in the background
    rados.wait_calls(2)
    assert rados.prefixes() == ["osd pool set", PROBE_COMMAND]
    assert port.refresh_mons() is False and len(rados.prefixes()) == 2  # one probe at a time
    assert port.mons_waiting() is not None
    rados.quorum.set()  # quorum back: librados answers the probe (and the abandoned call)
    port.mons.wait_probe(SLACK)
    assert port.mons_waiting() is not None  # until a tick settles it
    assert port.refresh_mons() is True
    assert port.mons_waiting() is None and port.mons.describe() == "answering"
    assert port.mon({"prefix": "osd stat"})[0] == 0 and rados.prefixes()[-1] == "osd stat"


def test_abandoned_calls_are_capped_no_probe_adds_a_thread_past_the_cap() -> None:
    install_fake_mgr_module()
    from mgr_sla.shell.mon_deadline import MonDeadline

    stuck = threading.Event()
    probes: list[float] = []

    def probe() -> bool:
        probes.append(time.monotonic())
        return stuck.wait(60)  # a mon answers once `stuck` is set

    clock = [1000.0]
    mons = MonDeadline(probe, clock=lambda: clock[0], max_abandoned=2)
    assert mons.call("osd pool set", lambda: stuck.wait(60), DEADLINE,
                     lambda why: why).startswith("the monitors did not answer")
    assert mons.refresh(DEADLINE) is False  # the first probe: stuck too, then abandoned
    mons.wait_probe(DEADLINE + SLACK)
    assert len(probes) == 1 and mons.abandoned() == 2
    clock[0] += PROBE_EVERY_SECS
    assert mons.refresh(DEADLINE) is False and len(probes) == 1  # capped: no new thread
    ran: list[bool] = []
    assert mons.call("osd stat", lambda: ran.append(True), DEADLINE, lambda why: why) \
        .startswith("waiting for the monitors") and ran == []
    stuck.set()  # quorum back: both abandoned calls return
    for worker in [t for t in threading.enumerate() if t.name == "sla-mon"]:
        worker.join(SLACK)
    assert mons.abandoned() == 0
    assert mons.refresh(DEADLINE) is False  # the next probe goes, and answers
    mons.wait_probe(SLACK)
    assert len(probes) == 2
    assert mons.refresh(DEADLINE) is True and mons.waiting() is None


def test_a_call_s_own_exception_is_raised_to_the_caller() -> None:
    install_fake_mgr_module()
    from mgr_sla.shell.mon_deadline import MonDeadline

    def closed() -> None:
        raise RuntimeError("the handle is closed")
    with pytest.raises(RuntimeError, match="closed"):
        MonDeadline(lambda: True).call("osd stat", closed, DEADLINE, lambda why: None)


# ---- a batch planned before the outage -------------------------------------------------
def test_a_batch_is_not_continued_after_a_timeout() -> None:
    from mgr_sla.worker import BatchSender

    port = _port([60.0])
    rados = port._module.rados
    sender = BatchSender(port.mon, 2, "sla-test-batch", port.mons.outages)
    batch = [{"prefix": "osd pg-upmap-items", "pgid": f"1.{i}", "id": [0, 1]} for i in range(6)]
    ended = threading.Event()
    got: list[Any] = []
    assert sender.start(batch, lambda sent, results: (got.extend([sent, results]), ended.set()))
    rados.wait_calls(2)  # the first round is with librados, its deadline a minute away
    port._timeouts = lambda: (DEADLINE, DEADLINE)
    rc, _, _ = port.mon({"prefix": "osd stat"})  # the tick's own command finds no quorum
    assert rc == -errno.ETIMEDOUT
    rados.quorum.set()  # quorum back: librados answers the first round...
    assert ended.wait(SLACK)
    sent, results = got
    assert sent == batch[:2] and [r[0] for r in results] == [0, 0]
    # ...and the rounds planned before the outage were never sent
    assert sorted(rados.prefixes()) == ["osd pg-upmap-items"] * 2 + ["osd stat"]


def test_a_batch_stops_after_its_own_round_timed_out() -> None:
    from mgr_sla.worker import BatchSender

    port = _port()
    sender = BatchSender(port.mon, 2, "sla-test-batch", port.mons.outages)
    batch = [{"prefix": "osd pg-upmap-items", "pgid": f"1.{i}", "id": [0, 1]} for i in range(6)]
    ended = threading.Event()
    got: list[Any] = []
    sender.start(batch, lambda sent, results: (got.extend([sent, results]), ended.set()))
    assert ended.wait(DEADLINE + SLACK)
    sent, results = got
    assert sent == batch[:2] and {r[0] for r in results} == {-errno.ETIMEDOUT}
    assert len(port._module.rados.prefixes()) == 2
    port._module.rados.quorum.set()
