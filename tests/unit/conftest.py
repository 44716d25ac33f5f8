"""Unit-suite settings that depend on the interpreter (tox -e unit-py39)."""
from __future__ import annotations

import sys

import pytest

# deploy/grafana/generate.py is a developer tool run on the build host (3.10+:
# zip(strict=True)); ceph-mgr never loads it. The module and crush_rules,
# which ceph-mgr does load, are held to 3.9 (deploy/check-py39.sh).
_NEEDS_310 = {
    "test_dashboard.py": "deploy/grafana/generate.py (developer tool, not loaded by "
                         "ceph-mgr) uses zip(strict=True): Python 3.10+",
}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if sys.version_info >= (3, 10):
        return
    for item in items:
        reason = _NEEDS_310.get(item.path.name)
        if reason:
            item.add_marker(pytest.mark.skip(reason=reason))
