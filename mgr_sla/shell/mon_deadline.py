"""A deadline the module keeps itself on every call that waits for the monitors.

`Rados.mon_command` ignores its timeout (rados.pyx: the C API has none) and
the mgr's `rados_mon_op_timeout` is 0, so without quorum a mon command blocks
until quorum returns; so does `set_store` (the mgr waits for the mon's
`config-key set`). Under the tick's act lock that held the tick, and every
command that takes the lock, for the whole outage, and then sent what had been
decided before it. Here each call runs on a daemon thread of its own and the
caller waits for it up to its deadline; past it the caller gets an error and
the thread is abandoned: it stays blocked in librados until that returns.

What cannot be undone: a command already handed to librados when quorum was
lost stays queued there, and librados sends it again once a mon answers, so
the mon may still apply it after the outage. The mgr API offers no way to
cancel it (docs/known-issues.md). What this module decided and had not yet
handed over is dropped: from the first timeout on every call fails at once
(`MonLink`), a batch planned before the outage stops (`outages`), and the tick
plans afresh from the map it reads once a probe has answered.
"""
from __future__ import annotations

import threading
import time
from typing import Any, Callable, TypeVar

from ..core.mon_link import MonLink

R = TypeVar("R")

# Calls past their deadline and still blocked in librados. While this many
# are, new calls fail at once rather than add threads: without the cap, a mon
# that answers the probe but never some command would grow one thread a call.
MAX_ABANDONED = 64


class _Call:
    """One call on its worker thread."""

    def __init__(self, fn: Callable[[], Any]) -> None:
        self.fn = fn
        self.done = threading.Event()
        self.result: Any = None
        self.error: Exception | None = None
        self.abandoned = False


class MonDeadline:
    def __init__(self, probe: Callable[[], bool], clock: Callable[[], float] = time.time,
                 max_abandoned: int = MAX_ABANDONED,
                 on_timeout: Callable[[str], None] = lambda why: None) -> None:
        """`probe`: one cheap mon command, True when the monitors answered it;
        `on_timeout`: told each call that got no answer in time (the log)."""
        self._lock = threading.Lock()
        self._link = MonLink()
        self._probe = probe
        self._on_timeout = on_timeout
        self._clock = clock
        self._max_abandoned = max_abandoned
        self._abandoned = 0
        self._prober: threading.Thread | None = None

    # ---- calls -----------------------------------------------------------------
    def call(self, label: str, fn: Callable[[], R], timeout: float,
             failed: Callable[[str], R]) -> R:
        """fn() if it returns within `timeout` s, else failed(why); failed(why)
        at once while the monitors are silent. fn's own exceptions are raised."""
        with self._lock:
            why = self._link.refusal() or self._crowded()
        if why is not None:
            return failed(why)
        answered, result = self._timed(fn, timeout)
        if answered:
            return result
        with self._lock:
            self._link.timed_out(self._clock(), label, timeout)
        why = f"the monitors did not answer '{label}' within {timeout:g} s (no quorum?)"
        self._on_timeout(why)
        return failed(why)

    def _crowded(self) -> str | None:
        if self._abandoned < self._max_abandoned:
            return None
        return (f"waiting for the monitors: {self._abandoned} earlier commands still wait "
                "for their answer")

    def _timed(self, fn: Callable[[], Any], timeout: float) -> tuple[bool, Any]:
        """(True, fn's result) within the deadline; (False, None) past it, the
        worker abandoned."""
        call = _Call(fn)
        threading.Thread(target=self._run, args=(call,), name="sla-mon", daemon=True).start()
        call.done.wait(timeout)
        with self._lock:  # the worker sets `done` under the lock: no call counted twice
            if not call.done.is_set():
                call.abandoned = True
                self._abandoned += 1
                return False, None
        if call.error is not None:
            raise call.error
        return True, call.result

    def _run(self, call: _Call) -> None:
        try:
            call.result = call.fn()
        except Exception as e:  # the caller's to handle, as if it had made the call
            call.error = e
        finally:
            with self._lock:
                call.done.set()
                if call.abandoned:
                    self._abandoned -= 1

    # ---- the monitors' state -----------------------------------------------------
    def refresh(self, timeout: float) -> bool:
        """At each tick, under the act lock (no command is half way): True
        when a probe has answered since the last timeout (the monitors answer
        again); else a probe starts in the background when one is due."""
        now = self._clock()
        with self._lock:
            if self._link.settle():
                return True
            if not self._link.probe_due(now) or self._crowded() is not None:
                return False
            self._link.probe_started(now)
            self._prober = threading.Thread(target=self._probe_once, args=(timeout,),
                                            name="sla-mon-probe", daemon=True)
            self._prober.start()
        return False

    def _probe_once(self, timeout: float) -> None:
        try:
            answered, reply = self._timed(self._probe, timeout)
            answered = answered and bool(reply)
        except Exception:  # the handle closing: not an answer
            answered = False
        with self._lock:
            self._link.probe_ended(answered)

    def waiting(self) -> str | None:
        """None while the monitors answer; else why commands fail at once."""
        with self._lock:
            return self._link.refusal()

    def outages(self) -> int:
        """Times the monitors went silent: a batch planned at one count is not
        continued at another."""
        with self._lock:
            return self._link.outages

    def describe(self) -> str:
        with self._lock:
            return self._link.describe()

    def health(self) -> tuple[str, list[str]] | None:
        with self._lock:
            return self._link.health()

    def abandoned(self) -> int:
        """Calls past their deadline still blocked."""
        with self._lock:
            return self._abandoned

    def wait_probe(self, timeout: float) -> None:
        """For tests: wait for a probe in flight to end."""
        prober = self._prober
        if prober is not None:
            prober.join(timeout)
