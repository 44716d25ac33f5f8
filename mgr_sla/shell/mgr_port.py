"""What the shell asks of ceph-mgr, as one typed interface: every
collaborator gets the port (`MgrPort`), never the module or a bundle of
callbacks. `module_port.ModulePort` is the MgrModule's side; a unit test's
stand-in implements the calls its collaborator makes.
"""
from __future__ import annotations

import threading
from typing import Any, Protocol


class MgrPort(Protocol):
    @property
    def log(self) -> Any: ...

    def get(self, data_name: str) -> Any:
        """The mgr's cluster maps and stats (`osd_map`, `pg_summary`, `df`, ...)."""

    def get_osdmap(self) -> Any:
        """The OSDMap object (map_pool_pgs_up)."""

    def get_ceph_option(self, name: str) -> Any: ...

    def get_counter(self, svc_type: str, svc_name: str, path: str) -> Any:
        """A daemon's perf counter as the mgr keeps it: {path: [[t, sum, count], ...]}
        for an average (the mgr's last samples)."""

    def get_foreign_ceph_option(self, entity: str, name: str) -> Any:
        """Another daemon's option as the config database has it (`osd.3`)."""

    def module_option(self, module: str, key: str) -> Any:
        """Another module's option (the balancer's pool_ids), None if unset."""

    def get_store(self, key: str) -> str | None: ...

    def set_store(self, key: str, value: str | None) -> bool:
        """False when the mon did not take the write in time (write it again later)."""

    def mons_waiting(self) -> str | None:
        """None while the monitors answer; else why every mon command fails at
        once (they went silent: mon_deadline.py)."""

    def mon(self, cmd: dict[str, Any]) -> tuple[int, str, str]:
        """A mon command through the module's own librados handle, with a
        deadline; (-ETIMEDOUT, "", why) past it or while the monitors are silent."""

    def mon_bytes(self, cmd: dict[str, Any], inbuf: bytes = b"") -> tuple[int, bytes, str]:
        """A mon command with binary input and output (osd getmap, setcrushmap)."""

    def send_command(self, *args: Any) -> None:
        """An asynchronous command to a daemon (`osd bench`)."""

    def remote(self, module: str, method: str, *args: Any, **kwargs: Any) -> Any: ...

    def set_health_checks(self, checks: dict[str, Any]) -> None: ...

    def cluster_log(self, message: str) -> None:
        """One line in the cluster log, at INFO."""

    def crush_release(self) -> str:
        """The crushtool syntax of the running release."""

    def add_osd_perf_query(self, query: dict[str, Any]) -> int | None: ...

    def get_osd_perf_counters(self, query_id: int) -> dict[str, Any] | None: ...

    def remove_osd_perf_query(self, query_id: int) -> Any: ...


class TimedResult:
    """A send_command completion that can be waited for with a timeout
    (mgr_module.CommandResult waits for ever: a down OSD never answers)."""

    def __init__(self) -> None:
        self._done = threading.Event()
        self.reply: tuple[int, str, str] = (-110, "", "no reply")

    def complete(self, r: int, outb: str, outs: str) -> None:
        self.reply = (r, outb, outs)
        self._done.set()

    def wait(self, timeout: float) -> tuple[int, str, str] | None:
        return self.reply if self._done.wait(timeout) else None
