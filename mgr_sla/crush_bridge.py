"""Find the `crush_rules` package from inside ceph-mgr.

Installed by deploy/install.sh it sits inside the module (`sla/crush_rules`);
loaded from a checkout (the mini cluster's module path links `sla` to
`<checkout>/mgr_sla`) it is the checkout's top-level `crush_rules`.
"""
from __future__ import annotations

import importlib
import os
import sys
from types import ModuleType


def load_crush_rules() -> ModuleType:
    try:
        return importlib.import_module(__package__ + ".crush_rules")
    except ImportError:
        pass
    checkout = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
    if os.path.isdir(os.path.join(checkout, "crush_rules")) and checkout not in sys.path:
        sys.path.append(checkout)
    return importlib.import_module("crush_rules")
