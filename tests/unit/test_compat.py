"""The module's librados handle under threads: MgrModule.rados stores the new
handle before it connects it, so two threads asking at once must not get it
half-open (a command racing the first tick after a mgr restart did)."""
from __future__ import annotations

import json
import threading
import time
from typing import Any

from harness.fake_mgr import install_fake_mgr_module


class _Handle:
    def __init__(self) -> None:
        self.state = "configuring"

    def connect(self) -> None:
        time.sleep(0.2)  # the window a second thread used to fall into
        self.state = "connected"

    def mon_command(self, cmd: str, inbuf: bytes, timeout: int = 0) -> tuple[int, bytes, str]:
        if self.state != "connected":
            return -22, b"", f"RADOS rados state ({self.state})"
        return 0, json.dumps({"ok": True}).encode(), ""


class _Module:
    """MgrModule.rados as Ceph writes it: set, then connect."""

    def __init__(self) -> None:
        self._rados: _Handle | None = None

    @property
    def rados(self) -> _Handle:
        if self._rados:
            return self._rados
        self._rados = _Handle()
        self._rados.connect()
        return self._rados


def test_two_threads_never_get_a_half_open_handle() -> None:
    install_fake_mgr_module()
    from mgr_sla.shell import compat

    module = _Module()
    results: list[Any] = []
    threads = [threading.Thread(target=lambda: results.append(
        compat.mon_command(module, {"prefix": "status"}))) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(5)
    assert [rc for rc, _, _ in results] == [0, 0, 0, 0], results
