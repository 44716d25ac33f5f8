"""The one place that knows which Ceph release the module runs on.

Pacific..Squid declare commands with the global `CLIReadCommand` /
`CLIWriteCommand` decorators. Tentacle removed those (CEPH-FACTS.md) and
gives each module its own registry: `X = CLICommandBase.make_registry_subtype(
'X')`, `CLICommand = X` on the module class, `@X.Read(...)` for reads and
`@X.Write(...)` (or `@X(...)`) for writes. `read_command` / `write_command` / `COMMAND_REGISTRY`
hide the difference; the rest of the module never imports them directly.
"""
from __future__ import annotations

import json
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


def mon_command(module: Any, cmd: dict[str, Any]) -> tuple[int, str, str]:
    """A mon command through the module's own librados handle.

    Reef's `MgrModule.mon_command` segfaulted the mgr after a few to a
    thousand calls in our runs, while `module.rados.mon_command` did not
    (docs/releases-notes.md); librados behaves the same on every release."""
    rc, out, err = module.rados.mon_command(json.dumps(cmd), b"", timeout=30)
    return int(rc), out.decode("utf-8", "replace"), str(err)


def crush_release(module: Any) -> str:
    """The crushtool syntax of the running release (sla-crush --release):
    min_size/max_size exist up to Pacific; Tentacle and later take Squid's."""
    name = str(getattr(module, "release_name", "pacific")).lower()
    return name if name in ("pacific", "quincy", "reef", "squid") else "squid"
