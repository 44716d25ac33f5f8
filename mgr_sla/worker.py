"""Slow checks off the tick: one background thread at a time, result per key.

Verifying the rules runs crushtool and osdmaptool (seconds on a big map).
The tick must not wait for it, nor hold the module lock meanwhile (status,
scrapes and commands wait on that lock): it asks for the result of the
current key and gets "not yet" until the thread has finished.
"""
from __future__ import annotations

import threading
from collections.abc import Callable, Hashable
from typing import Any, Generic, TypeVar

R = TypeVar("R")


class KeyedWorker(Generic[R]):
    def __init__(self, check: Callable[[Any], R], name: str = "sla-worker") -> None:
        self._check = check
        self._name = name
        self._lock = threading.Lock()
        self._done: tuple[Hashable, R] | None = None
        self._running: Hashable | None = None
        self._thread: threading.Thread | None = None

    def result(self, key: Hashable, arg: Any) -> tuple[bool, R | None]:
        """(True, result) once the check of `key` has run; else (False, None),
        starting it unless a check is already running (the newest key wins
        when that one ends)."""
        with self._lock:
            if self._done is not None and self._done[0] == key:
                return True, self._done[1]
            if self._running is None:
                self._running = key
                self._thread = threading.Thread(target=self._run, args=(key, arg),
                                                name=self._name, daemon=True)
                self._thread.start()
            return False, None

    def _run(self, key: Hashable, arg: Any) -> None:
        result = self._check(arg)
        with self._lock:
            self._done = (key, result)
            self._running = None

    def done_key(self) -> Hashable | None:
        """The key of the kept result (None: none yet)."""
        with self._lock:
            return None if self._done is None else self._done[0]

    def forget(self) -> None:
        """Drop the kept result (the rules were just reinstalled)."""
        with self._lock:
            self._done = None

    def wait(self, timeout: float) -> None:
        """For tests and shutdown: wait for a running check to end."""
        thread = self._thread
        if thread is not None:
            thread.join(timeout)


class BatchSender:
    """Sends one batch of mon commands at a time on a background thread, so
    the tick goes on deciding meanwhile: a batch of upmap entries takes a mon
    commit per round of `parallel` commands (seconds for a few hundred), and
    while the tick waited for it an urgent load that arrived right after a
    switch to shared was seen only once the batch was through (measured:
    4.3 s instead of about 1 s). `cancel` stops a batch between rounds, and
    so does an outage of the monitors: `outages` counts them (the shell's
    mon deadline), and a batch planned at one count is not continued at
    another. Its rounds left were decided on a map from before the outage;
    the tick plans afresh once the monitors answer."""

    def __init__(self, send: Callable[[Any], Any], parallel: int,
                 name: str = "sla-batch", outages: Callable[[], int] | None = None) -> None:
        self._send = send
        self._parallel = parallel
        self._name = name
        self._outages = outages
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._cancelled = threading.Event()

    def busy(self) -> bool:
        with self._lock:
            return self._thread is not None and self._thread.is_alive()

    def start(self, batch: list[Any], done: Callable[[list[Any], list[Any]], None]) -> bool:
        """Send `batch`, then call done(sent commands, their results) on the
        sender's thread; False (nothing started) while a batch is in flight."""
        with self._lock:
            if self._thread is not None and self._thread.is_alive():
                return False
            self._cancelled.clear()
            planned_at = self._outages() if self._outages is not None else 0
            self._thread = threading.Thread(target=self._run, args=(batch, done, planned_at),
                                            name=self._name, daemon=True)
            self._thread.start()
            return True

    def _run(self, batch: list[Any], done: Callable[[list[Any], list[Any]], None],
             planned_at: int) -> None:
        from concurrent.futures import ThreadPoolExecutor

        sent: list[Any] = []
        results: list[Any] = []
        with ThreadPoolExecutor(self._parallel) as pool:
            for i in range(0, len(batch), self._parallel):
                if self._cancelled.is_set() or (
                        self._outages is not None and self._outages() != planned_at):
                    break
                chunk = batch[i:i + self._parallel]
                results += list(pool.map(self._send_one, chunk))
                sent += chunk
        done(sent, results)

    def _send_one(self, cmd: Any) -> Any:
        try:
            return self._send(cmd)
        except Exception as e:  # e.g. the mgr shutting down: a failed command, said so
            return (-5, "", f"not sent: {e}")  # -EIO

    def cancel(self) -> None:
        self._cancelled.set()

    def wait(self, timeout: float) -> None:
        """For tests and shutdown: wait for a batch in flight to end."""
        thread = self._thread
        if thread is not None:
            thread.join(timeout)
