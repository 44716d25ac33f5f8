"""What the module's shell parts share: command output helpers, the types
they pass around, and `ShellBase`, which tells the type checker what the
mixins (placement.py, pool_commands.py) may use of the module.

No `from __future__ import annotations` in the shell's files: ceph-mgr reads
the command handlers' annotations at import time to build their signatures.
"""
import enum
import json
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Optional

from mgr_module import HandleCommandResult

from .cluster import ClusterView
from .decision import Mode
from .gates import Gate, GateName, PgCounts
from .settings import Settings
from .state import (
    RULE_ISOLATED_NORMAL,
    RULE_ISOLATED_URGENT,
    RULE_SHARED,
    ModuleState,
    SwitchRecord,
)
from .upmaps import Regions
from .worker import BatchSender, KeyedWorker

REQUIRED_RULES = (RULE_ISOLATED_NORMAL, RULE_SHARED, RULE_ISOLATED_URGENT)
# Map work (converting the OSD and CRUSH maps, planning upmap entries) runs on
# a new OSD map epoch (notify 'osd_map', or our own commands), and at the
# latest every MAP_REFRESH_SECS; a quiet tick reads counters only.
# Between ticks, in shared mode, the perf query is read this often: an OSD
# report that brings urgent ops starts a tick at once (issue 20).
PERF_POLL_SECS = 0.25
MAP_REFRESH_SECS = 300.0
# Slow-changing inputs of the gates (per-pool misplaced, OSD fill) are read
# this often while no switch is being watched.
SLOW_READ_SECS = 30.0
TICK_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5)
# pg_upmap_items commands sent per tick, and how many at once: the mon folds
# concurrent commands into one proposal, so a batch costs about one epoch.
UPMAP_BATCH = 256
UPMAP_PARALLEL = 8
RELEASE_PARALLEL = 32  # `pool rm` / `release`: the operator waits for these


class RulesBusy(RuntimeError):
    """An install of the rules is already running."""


class OutputFormat(str, enum.Enum):
    PLAIN = "plain"
    JSON = "json"
    JSON_PRETTY = "json-pretty"


class ModeArg(str, enum.Enum):
    AUTO = "auto"
    ISOLATED = "isolated"
    SHARED = "shared"


@dataclass(frozen=True)
class MapSnapshot:
    """What the module needs of the OSD and CRUSH maps, as last converted.

    Only the derived views are kept, not the dumps: everything the module
    holds is walked by the garbage collector of its interpreter."""

    at: float
    view: ClusterView
    regions: Regions
    upmap_items: dict[int, dict[str, tuple[tuple[int, int], ...]]]
    flags: tuple[str, ...]
    nearfull_ratio: float


@dataclass
class SwitchTracking:
    """A switch whose data movement is still being watched."""

    record: SwitchRecord
    started: float
    before_up: dict[str, list[int]]
    progress_id: str
    isolating: bool
    moving_at_start: Optional[int] = None


def _out(fmt: OutputFormat, data: Any, text: str) -> HandleCommandResult:
    if fmt is OutputFormat.JSON:
        return HandleCommandResult(0, json.dumps(data, sort_keys=True), "")
    if fmt is OutputFormat.JSON_PRETTY:
        return HandleCommandResult(0, json.dumps(data, sort_keys=True, indent=2), "")
    return HandleCommandResult(0, text, "")


def _err(code: int, message: str) -> HandleCommandResult:
    return HandleCommandResult(-code, "", message)


class ShellBase:
    """Attributes and mgr calls the shell's mixins use (declared for mypy; the
    values are set in Module.__init__ and the calls are MgrModule's)."""

    _lock: threading.RLock
    _act_lock: threading.RLock
    _state: Optional[ModuleState]
    _health: dict[str, Any]
    _gates: list[Gate]
    _tracking: Optional[SwitchTracking]
    _last_tti: Optional[float]
    _misplaced: dict[int, float]
    _pg_dump_at: float
    _pg_status: dict[str, Any]
    _pgs: PgCounts
    _pgs_without_normal: Optional[int]
    _upmap_key: Optional[tuple[int, str]]
    _upmap_status: dict[int, dict[str, Any]]
    _upmaps_pending: int
    _plan_cache: dict[Any, Any]
    _plan_cache_for: Optional[int]
    _maps_dirty: bool
    _installing: bool
    _repairs: list[str]
    _verifier: "KeyedWorker[Optional[str]]"
    _upmap_sender: BatchSender

    if TYPE_CHECKING:
        log: Any
        ClusterLogPrio: Any

        def get(self, data_name: str) -> Any: ...
        def get_osdmap(self) -> Any: ...
        def remote(self, module: str, method: str, *args: Any, **kwargs: Any) -> Any: ...
        def cluster_log(self, channel: str, priority: Any, message: str) -> None: ...
        def get_ceph_conf_path(self) -> str: ...
        def get_mgr_id(self) -> str: ...
        def get_ceph_option(self, key: str) -> Any: ...
        def get_store(self, key: str) -> Optional[str]: ...
        def set_store(self, key: str, val: Optional[str]) -> None: ...
        def send_command(self, result: Any, svc_type: str, svc_id: str, command: str,
                         tag: str) -> None: ...
        @property
        def _settings(self) -> Settings: ...
        def _require_state(self) -> ModuleState: ...
        def _save(self, state: ModuleState) -> None: ...
        def _normal_pools(self, state: ModuleState) -> list[int]: ...
        def _view(self) -> ClusterView: ...
        def _regions(self, osd_map: dict[str, Any], crush: dict[str, Any]) -> Regions: ...
        def _rules_needed(self, state: ModuleState) -> list[str]: ...
        def _max_misplaced(self) -> float: ...


def _other(mode: Mode) -> Mode:
    return Mode.SHARED if mode is Mode.ISOLATED else Mode.ISOLATED


def drifted(failures: Any) -> list[str]:
    """The verification failures that mean our flat weight sets drifted from
    the tree (R4: a pool no longer maps like sla_isolated_normal; R5: a switch
    would move replicas; R6: a set with positions, from an older version)."""
    return [f for f in failures if str(f).split(" ", 1)[0] in ("R4", "R5", "R6")]


def _merge_gates(gates: list[Gate]) -> list[Gate]:
    """One apply_failed gate naming every pool that failed."""
    if len(gates) <= 1:
        return gates
    return [Gate(GateName.APPLY_FAILED, "; ".join(g.detail for g in gates))]
