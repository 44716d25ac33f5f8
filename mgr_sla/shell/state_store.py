"""The module's persisted state and the two locks around it.

`lock` guards what status and scrapes read and is never held across a mon
round trip; `act_lock` makes the tick and the commands that change pools
take turns (a pool released by 'pool rm' must not get an sla rule back from
a tick that planned before it).
"""
from __future__ import annotations

import threading
import time

from ..core.health import HealthChecks
from ..core.state import STATE_KEY, ModuleState, StateError
from .mgr_port import MgrPort


class StateStore:
    def __init__(self, mgr: MgrPort, health: HealthChecks) -> None:
        self._get_store = mgr.get_store
        self._set_store = mgr.set_store
        self._log = mgr.log
        self._health = health
        self._state: ModuleState | None = None
        self._saved: str | None = None  # the text last written to the store
        self.lock = threading.RLock()
        self.act_lock = threading.RLock()

    def state(self) -> ModuleState:
        """The state, read from the store once. An unreadable record is kept
        beside the new one (never drop the pool roles silently)."""
        if self._state is None:
            now = time.time()
            text = self._get_store(STATE_KEY)
            try:
                self._state = ModuleState.from_json(text, now)
            except StateError as e:
                backup = f"{STATE_KEY}.unreadable.{int(now)}"
                self._set_store(backup, text)
                self._log.error("sla: %s; kept it as config-key mgr/sla/%s and started "
                                "fresh (isolated, no managed pools)", e, backup)
                self._health.set("SLA_STATE_RESET", "sla state unreadable: started fresh",
                                 [f"{e}; the old record is mgr/sla/{backup}"])
                self._state = ModuleState.initial(now)
        return self._state

    def save(self) -> None:
        self.save_text(self.state().to_json())

    def save_text(self, text: str) -> None:
        """Write the state to the mon store when it changed (a mon round trip);
        a write the mon did not take in time is made again at the next save."""
        if text != self._saved and self._set_store(STATE_KEY, text) is not False:
            self._saved = text
