"""`MgrPort` on the MgrModule: each call is the module's own, late-bound
(ceph-mgr, or a test harness, may provide the methods after __init__)."""
from __future__ import annotations

from typing import Any

from . import compat


class ModulePort:
    def __init__(self, module: Any) -> None:
        self._module = module

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

    def set_store(self, key: str, value: str | None) -> None:
        self._module.set_store(key, value)

    def mon(self, cmd: dict[str, Any]) -> tuple[int, str, str]:
        return compat.mon_command(self._module, cmd)

    def mon_bytes(self, cmd: dict[str, Any], inbuf: bytes = b"") -> tuple[int, bytes, str]:
        return compat.mon_command_bytes(self._module, cmd, inbuf)

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
