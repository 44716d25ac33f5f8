"""The `Module` shell through an outage of the monitors, on the fake mgr
(harness/fake_mgr.py): librados blocks a mon command while there is no quorum,
so the handle here waits on an Event. No tick may hang on it, nothing the
module decided before the outage may be sent after it, and status and health
say what is going on. The mon deadline itself: test_mon_deadline.py."""
from __future__ import annotations

import errno
import json
import threading
import time
from typing import Any

import pytest

from harness.fake_mgr import FakeCluster, FakeRados, make_module

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

DEADLINE = 0.3  # s: mon_command_timeout_secs in these tests
SLACK = 5.0  # s: a loaded machine's margin


class _Quorum(FakeRados):
    """The fake cluster's mon behind librados: each command blocks until
    `quorum` is set; `reached` lists the commands handed to librados."""

    def __init__(self, cluster: FakeCluster) -> None:
        super().__init__(cluster)
        self.quorum = threading.Event()
        self.quorum.set()
        self.reached: list[str] = []
        self._arrived = threading.Condition()

    def mon_command(self, cmd: str, inbuf: bytes, timeout: int = 0) -> tuple[int, bytes, str]:
        with self._arrived:
            self.reached.append(json.loads(cmd)["prefix"])
            self._arrived.notify_all()
        self.quorum.wait(60)
        return super().mon_command(cmd, inbuf, timeout)

    def wait_reached(self, n: int) -> None:
        """Until n commands reached librados (a probe runs on a thread of its own)."""
        with self._arrived:
            assert self._arrived.wait_for(lambda: len(self.reached) >= n, SLACK), self.reached


def _json(m: Any, command: str, **args: Any) -> Any:
    from mgr_sla.shell.commands_io import OutputFormat
    return json.loads(getattr(m, command)(format=OutputFormat("json"), **args).stdout)


def _managed(cluster: FakeCluster) -> Any:
    from mgr_sla.core.state import Role, Strategy

    m = make_module(cluster, {}, {"min_dwell_secs": 0, "sustain_secs": 0, "step_wait_secs": 0,
                                  "min_gain": 0, "mon_command_timeout_secs": DEADLINE})
    m.rados = _Quorum(cluster)
    m._rules.replace_check(lambda opts: None)  # crushtool/osdmaptool: the integration tests'
    assert m.cmd_pool_set("fast", role=Role("urgent")).retval == 0
    assert m.cmd_pool_set("bulk", role=Role("normal"), strategy=Strategy("move")).retval == 0
    return m


def _tick(m: Any) -> None:
    started = time.monotonic()
    m.tick()
    m._placer.sender.wait(DEADLINE + SLACK)  # the upmap batch's own thread
    assert time.monotonic() - started < DEADLINE + 2 * SLACK


def _abandoned_calls_end() -> None:
    for worker in [t for t in threading.enumerate() if t.name == "sla-mon"]:
        worker.join(SLACK)


@pytest.fixture
def cluster() -> FakeCluster:
    c = FakeCluster()
    c.add_pool(1, "fast", "sla_isolated_urgent")
    c.add_pool(2, "bulk", "sla_isolated_normal")
    return c


def test_an_outage_holds_no_tick_and_sends_nothing_decided_before_it(
        cluster: FakeCluster) -> None:
    m = _managed(cluster)
    rados = m.rados
    for _ in range(4):
        _tick(m)
    assert cluster.rule_of(2) == "sla_shared"
    # quorum lost; urgent load: the next ticks decide to isolate bulk
    rados.quorum.clear()
    before = len(rados.reached)
    for _ in range(4):
        cluster.ops[1] += 10_000
        _tick(m)  # each tick ends: its first command's deadline, then none is sent
        if len(rados.reached) > before:
            break
    assert rados.reached[before:] == ["osd pool set"], rados.reached[before:]
    m.options["mon_command_timeout_secs"] = 60.0  # the probe waits as librados does
    _tick(m)  # measures and reports; the probe goes in the background
    rados.wait_reached(before + 2)
    assert rados.reached[before:] == ["osd pool set", "osd stat"]
    check = m.health["SLA_MON_UNREACHABLE"]
    assert "have not answered since" in check["summary"]
    status = _json(m, "cmd_status")
    assert status["monitors"].startswith("waiting for the monitors since ")
    assert "monitors:    waiting for the monitors since" in m.cmd_status().stdout
    assert status["mode"] == "isolated" and status["urgent_iops"] > 0  # measured meanwhile
    # commands that would change the cluster fail at once, sending nothing
    out = m.cmd_pool_rm("bulk")
    assert out.retval == -errno.ETIMEDOUT and out.stderr.startswith("waiting for the monitors")
    assert m.cmd_on().retval == -errno.ETIMEDOUT
    _tick(m)
    assert rados.reached[before:] == ["osd pool set", "osd stat"]  # one probe in flight
    # quorum back: librados hands over the command it held (the mon applies it:
    # known-issues.md), the probe answers, and the next tick plans afresh
    rados.quorum.set()
    m._port.mons.wait_probe(SLACK)
    _abandoned_calls_end()
    for _ in range(3):
        _tick(m)
    assert "SLA_MON_UNREACHABLE" not in m.health
    assert _json(m, "cmd_status")["monitors"] == "answering"
    assert cluster.rule_of(2) == "sla_isolated_normal" and not cluster.upmaps


def test_while_silent_nothing_is_written_and_the_state_is_written_after(
        cluster: FakeCluster) -> None:
    from mgr_sla.core.state import STATE_KEY
    from mgr_sla.shell.commands_io import ModeArg

    m = _managed(cluster)
    rados = m.rados
    for _ in range(4):
        _tick(m)
    assert cluster.rule_of(2) == "sla_shared"
    writes: list[str] = []
    write = m.set_store
    m.set_store = lambda key, value: (writes.append(key), write(key, value))
    rados.quorum.clear()
    assert m._port.mon({"prefix": "osd stat"})[0] == -errno.ETIMEDOUT  # the outage starts
    m.options["mon_command_timeout_secs"] = 60.0  # the probe waits as librados does
    assert m.cmd_mode(ModeArg("isolated")).retval == -errno.ETIMEDOUT
    for _ in range(3):
        cluster.ops[1] += 10_000  # urgent load, measured while silent
        _tick(m)
    assert writes == [] and cluster.rule_of(2) == "sla_shared"
    status = _json(m, "cmd_status")  # measured, not decided on a map from before
    assert status["mode"] == "shared" and status["urgent_iops"] > 0
    rados.quorum.set()
    m._port.mons.wait_probe(SLACK)
    _abandoned_calls_end()
    cluster.ops[1] += 10_000
    _tick(m)  # plans afresh: the switch to isolated, on record before its first command
    assert STATE_KEY in writes and cluster.rule_of(2) == "sla_isolated_normal"
