"""The third-party modules a benchmark needs, checked before it imports them:
a missing one ends the run with one line naming what to install (`pip install
'.[bench]'` from a checkout: setup.py's `bench` extra), not a traceback. Every
entry point answers --help with the standard library alone."""
from __future__ import annotations

import importlib.util
import sys


def missing(*modules: str) -> list[str]:
    return [m for m in modules if importlib.util.find_spec(m) is None]


def refusal(prog: str, *modules: str) -> str | None:
    """The line to print (and exit 2 on) when a module is missing, else None."""
    absent = missing(*modules)
    if not absent:
        return None
    return (f"{prog}: needs {', '.join(absent)}: pip install '.[bench]' from a ceph-sla "
            f"checkout (or pip install {' '.join(absent)})")


def require(prog: str, *modules: str) -> None:
    """Exit 2 with `refusal`'s line when a module is missing."""
    line = refusal(prog, *modules)
    if line:
        print(line, file=sys.stderr)
        raise SystemExit(2)
