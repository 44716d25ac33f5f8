"""The module's persisted state, the two locks around it, and its write back.

`lock` guards what status and scrapes read and is never held across a mon
round trip; `act_lock` makes the tick and the commands that change pools
take turns (a pool released by 'pool rm' must not get an sla rule back from
a tick that planned before it).

`set_store` is a mon round trip (seconds, or a hang until the module's own
deadline, while the monitors are slow), so the state is never written under
`lock`: a change under it only marks the state dirty, and the text to write
is taken there too (a consistent copy); the write itself happens after the
lock is released, as Ceph's progress module does: once a tick (at its end,
or before a switch's first command), and from an operator's command that
must be durable when it answers. A write the mon did not take leaves the
state dirty: the next write back makes it again.
"""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass

from ..core.health import HealthChecks
from ..core.state import STATE_KEY, ModuleState, StateError
from .mgr_port import MgrPort


@dataclass(frozen=True)
class StateText:
    """The state's text as taken under the lock; `seq` orders the takes."""

    seq: int
    text: str


class StateStore:
    def __init__(self, mgr: MgrPort, health: HealthChecks) -> None:
        self._mgr = mgr  # late-bound: set_store is looked up at each write
        self._health = health
        self._state: ModuleState | None = None
        self._dirty = False  # changed since the text last taken (under `lock`)
        self._taken = 0  # texts taken so far (under `lock`)
        # an unreadable record to keep before the fresh state overwrites it
        self._backup: tuple[str, str | None] | None = None
        self.lock = threading.RLock()
        self.act_lock = threading.RLock()
        # one write at a time (a command's and the tick's), in the order of
        # their takes; held across set_store, so never taken under `lock`
        self._write_lock = threading.Lock()
        self._saved: StateText | None = None  # the last text the mon took

    def state(self) -> ModuleState:
        """The state, read from the store once. An unreadable record is kept
        beside the new one (never drop the pool roles silently): written at
        the first write back, before the fresh state."""
        if self._state is None:
            now = time.time()
            text = self._mgr.get_store(STATE_KEY)
            try:
                self._state = ModuleState.from_json(text, now)
            except StateError as e:
                backup = f"{STATE_KEY}.unreadable.{int(now)}"
                self._backup = (backup, text)
                self._mgr.log.error("sla: %s; kept it as config-key mgr/sla/%s and started "
                                    "fresh (isolated, no managed pools)", e, backup)
                self._health.set("SLA_STATE_RESET", "sla state unreadable: started fresh",
                                 [f"{e}; the old record is mgr/sla/{backup}"])
                self._state = ModuleState.initial(now)
                self._dirty = True
        return self._state

    def mark_dirty(self) -> None:
        """The state changed (the caller holds `lock`): the next write back writes it."""
        self._dirty = True

    def take(self) -> StateText | None:
        """The text to write, when the state changed since the last take (the
        caller holds `lock`: the text is one consistent state); then clean."""
        if not self._dirty:
            return None
        self._dirty = False
        self._taken += 1
        return StateText(self._taken, self.state().to_json())

    def write(self, taken: StateText | None) -> None:
        """A taken text into the store (the caller does not hold `lock`); a
        text older than one already written is dropped, one equal to it is
        not written again, and one the mon did not take marks the state dirty."""
        if taken is None:
            return
        with self._write_lock:
            saved = self._saved
            if saved is not None and (saved.seq >= taken.seq or saved.text == taken.text):
                self._saved = StateText(max(saved.seq, taken.seq), saved.text)
                return
            if self._write_backup() and self._mgr.set_store(STATE_KEY, taken.text) is not False:
                self._saved = taken
                return
        # not taken: dirty again, without the lock (a tick takes it once a step):
        # a take that runs meanwhile takes the live state, this text's changes with it
        self._dirty = True

    def _write_backup(self) -> bool:
        """The unreadable record, kept first: until it is, the fresh state
        must not overwrite it."""
        if self._backup is not None and self._mgr.set_store(*self._backup) is not False:
            self._backup = None
        return self._backup is None

    def write_back(self) -> None:
        """Take the text and write it: for a command that must be durable
        when it answers, right after it released `lock`."""
        with self.lock:
            taken = self.take()
        self.write(taken)
