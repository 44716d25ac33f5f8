"""The one place that knows which Ceph release the module runs on.

Pacific..Squid declare commands with the global `CLIReadCommand` /
`CLIWriteCommand` decorators. Tentacle removed those (its mgr_module.py) and
gives each module its own registry: `X = CLICommandBase.make_registry_subtype(
'X')`, `CLICommand = X` on the module class, `@X.Read(...)` for reads and
`@X.Write(...)` (or `@X(...)`) for writes. `read_command` / `write_command` / `COMMAND_REGISTRY`
hide the difference; the rest of the module never imports them directly.
The Umbrella-era source brings `CLIReadCommand` / `CLIWriteCommand` back as
aliases of `CLICommandBase.Read` / `.Write`, which register in the shared base
registry; the module's own registry is used wherever `make_registry_subtype`
exists, so that alias never matters. Each release's API surface, and which
names here cover a gap, are in tests/unit/data/mgr_api_surface.json and
tests/unit/test_mgr_api_surface.py.
"""
from __future__ import annotations

import json
import threading
from collections.abc import Callable
from typing import Any

import mgr_module  # only importable inside ceph-mgr

Decorator = Callable[[Callable[..., Any]], Callable[..., Any]]

_base = getattr(mgr_module, "CLICommandBase", None)
if _base is not None and hasattr(_base, "make_registry_subtype"):
    SLACommand: Any = _base.make_registry_subtype("SLACommand")
    COMMAND_REGISTRY: Any = SLACommand

    def read_command(prefix: str) -> Decorator:
        return SLACommand.Read(prefix)

    def write_command(prefix: str) -> Decorator:
        return SLACommand.Write(prefix)
else:
    COMMAND_REGISTRY = None

    def read_command(prefix: str) -> Decorator:
        return mgr_module.CLIReadCommand(prefix)

    def write_command(prefix: str) -> Decorator:
        return mgr_module.CLIWriteCommand(prefix)


def option(name: str, **fields: Any) -> Any:
    """An Option, dropping fields this release's Option does not know."""
    import inspect

    known = inspect.signature(mgr_module.Option.__init__).parameters
    return mgr_module.Option(name=name, **{k: v for k, v in fields.items() if k in known})


# MgrModule.rados stores its new handle before it connects it: a second thread
# asking meanwhile gets one still "configuring" (seen after a mgr restart, a
# command racing the first tick). Opened by one thread at a time.
_OPENING = threading.Lock()


def _connect_once(module: Any) -> None:
    with _OPENING:
        if module.rados is None:  # the property opens and connects it
            raise RuntimeError("the mgr gave the module no librados handle")


def mon_command(module: Any, cmd: dict[str, Any]) -> tuple[int, str, str]:
    """A mon command through the module's own librados handle.

    Reef's `MgrModule.mon_command` segfaulted the mgr after a few to a
    thousand calls in our runs, while `module.rados.mon_command` did not
    (docs/release-roots.md); librados behaves the same on every release.
    It blocks while the monitors have no quorum: the binding ignores a
    `timeout` (the C API takes none), so the deadline is the caller's
    (mon_deadline.py, through ModulePort)."""
    _connect_once(module)
    rc, out, err = module.rados.mon_command(json.dumps(cmd), b"")
    return int(rc), out.decode("utf-8", "replace"), str(err)


def mon_command_bytes(module: Any, cmd: dict[str, Any], inbuf: bytes = b""
                      ) -> tuple[int, bytes, str]:
    """A mon command with a binary input and output (osd getmap, setcrushmap);
    it blocks as mon_command does."""
    _connect_once(module)
    rc, out, err = module.rados.mon_command(json.dumps(cmd), inbuf)
    return int(rc), bytes(out), str(err)


def perf_counter(module: Any, svc_type: str, svc_name: str, path: str) -> Any:
    """A daemon's perf counter as the mgr keeps it ({path: [[t, sum, count], ...]}
    for an average): Tentacle's mgr calls it get_unlabeled_counter (labelled
    counters came), the releases before get_counter; same arguments, same shape."""
    read = getattr(module, "get_unlabeled_counter", None)
    if read is None:
        read = module.get_counter
    return read(svc_type, svc_name, path)


def crush_release(module: Any) -> str:
    """The crushtool syntax of the running release (sla-crush --release):
    min_size/max_size exist up to Pacific; Tentacle and later take Squid's."""
    name = str(getattr(module, "release_name", "pacific")).lower()
    return name if name in ("pacific", "quincy", "reef", "squid") else "squid"


def notify_types(*names: str) -> list[Any]:
    """NOTIFY_TYPES for the module: mgr_module.NotifyType members where the
    release has them (late Pacific on), else the plain names."""
    kind = getattr(mgr_module, "NotifyType", None)
    return [getattr(kind, n) if kind is not None and hasattr(kind, n) else n for n in names]
