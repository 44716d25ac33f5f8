"""`MgrPort` on the MgrModule: each call is the module's own, late-bound
(ceph-mgr, or a test harness, may provide the methods after __init__).
Every call that waits for the monitors (mon commands, set_store) goes
through `mons`, the deadline the module keeps itself (mon_deadline.py)."""
from __future__ import annotations

import errno
from typing import Any, Callable

from ..core.mon_link import PROBE_COMMAND
from . import compat
from .mon_deadline import MonDeadline

# (a mon command, one that carries a whole map: osd getmap, setcrushmap), in s
DEFAULT_TIMEOUTS = (30.0, 60.0)


def _timed_out(why: str) -> tuple[int, str, str]:
    return -errno.ETIMEDOUT, "", why


def _timed_out_bytes(why: str) -> tuple[int, bytes, str]:
    return -errno.ETIMEDOUT, b"", why


class ModulePort:
    def __init__(self, module: Any,
                 timeouts: Callable[[], tuple[float, float]] = lambda: DEFAULT_TIMEOUTS
                 ) -> None:
        self._module = module
        self._timeouts = timeouts
        self.mons = MonDeadline(self._probe, on_timeout=lambda why: self.log.warning(
            "sla: %s; the module sends nothing until they answer", why))

    def _probe(self) -> bool:
        rc, _, _ = compat.mon_command(self._module, {"prefix": PROBE_COMMAND, "format": "json"})
        return rc != -errno.ETIMEDOUT  # any other answer, an error too, came from a mon

    def refresh_mons(self) -> bool:
        """At a tick: True when the monitors answer again (mon_deadline.refresh)."""
        return self.mons.refresh(self._timeouts()[0])

    def mons_waiting(self) -> str | None:
        return self.mons.waiting()

    @property
    def log(self) -> Any:
        return self._module.log

    def get(self, data_name: str) -> Any:
        return self._module.get(data_name)

    def get_osdmap(self) -> Any:
        return self._module.get_osdmap()

    def get_ceph_option(self, name: str) -> Any:
        return self._module.get_ceph_option(name)

    def get_counter(self, svc_type: str, svc_name: str, path: str) -> Any:
        return compat.perf_counter(self._module, svc_type, svc_name, path)

    def get_foreign_ceph_option(self, entity: str, name: str) -> Any:
        return self._module.get_foreign_ceph_option(entity, name)

    def module_option(self, module: str, key: str) -> Any:
        return self._module.get_module_option_ex(module, key, None)

    def get_store(self, key: str) -> str | None:
        return self._module.get_store(key)

    def set_store(self, key: str, value: str | None) -> bool:
        """The mgr keeps the value at once and waits for the mon's `config-key
        set`; False when that did not answer in time (the write is then the
        mon's once it answers) or the monitors are silent (not written)."""
        def write() -> bool:
            self._module.set_store(key, value)
            return True

        def unsaved(why: str) -> bool:
            self.log.warning("sla: mgr/sla/%s not saved: %s", key, why)
            return False
        return self.mons.call("config-key set", write, self._timeouts()[0], unsaved)

    def set_module_option(self, name: str, value: Any) -> str | None:
        """None once set; else why not (the mgr waits for the mon's `config set`)."""
        def write() -> str | None:
            self._module.set_module_option(name, value)
            return None

        def unset(why: str) -> str | None:
            return why
        return self.mons.call("config set", write, self._timeouts()[0], unset)

    def mon(self, cmd: dict[str, Any]) -> tuple[int, str, str]:
        return self.mons.call(str(cmd.get("prefix")),
                              lambda: compat.mon_command(self._module, cmd),
                              self._timeouts()[0], _timed_out)

    def mon_bytes(self, cmd: dict[str, Any], inbuf: bytes = b"") -> tuple[int, bytes, str]:
        return self.mons.call(str(cmd.get("prefix")),
                              lambda: compat.mon_command_bytes(self._module, cmd, inbuf),
                              self._timeouts()[1], _timed_out_bytes)

    def send_command(self, *args: Any) -> None:
        self._module.send_command(*args)

    def remote(self, module: str, method: str, *args: Any, **kwargs: Any) -> Any:
        return self._module.remote(module, method, *args, **kwargs)

    def set_health_checks(self, checks: dict[str, Any]) -> None:
        self._module.set_health_checks(checks)

    def cluster_log(self, message: str) -> None:
        self._module.cluster_log("cluster", self._module.ClusterLogPrio.INFO, message)

    def crush_release(self) -> str:
        return compat.crush_release(self._module)

    def add_osd_perf_query(self, query: dict[str, Any]) -> int | None:
        return self._module.add_osd_perf_query(query)

    def get_osd_perf_counters(self, query_id: int) -> dict[str, Any] | None:
        return self._module.get_osd_perf_counters(query_id)

    def remove_osd_perf_query(self, query_id: int) -> Any:
        return self._module.remove_osd_perf_query(query_id)
