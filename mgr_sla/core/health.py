"""The module's health checks: one shape for every check, one owner of the set.

Each collaborator sets or clears the checks it knows about; the module
publishes the whole set once per tick (`set_health_checks` replaces it).
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

MAX_DETAIL = 20  # lines of detail per check; `ceph health detail` shows them all


def health_check(summary: str, detail: Sequence[str], count: int | None = None,
                 severity: str = "warning") -> dict[str, Any]:
    """One check in the form `MgrModule.set_health_checks` takes."""
    return {"severity": severity, "summary": summary,
            "count": len(detail) if count is None else count,
            "detail": [str(d) for d in detail[:MAX_DETAIL]]}


class HealthChecks:
    """The module's current checks, by code (SLA_...)."""

    def __init__(self) -> None:
        self._checks: dict[str, dict[str, Any]] = {}

    def set(self, code: str, summary: str, detail: Sequence[str],
            count: int | None = None) -> None:
        self._checks[code] = health_check(summary, detail, count)

    def clear(self, code: str) -> None:
        self._checks.pop(code, None)

    def update(self, code: str, problems: Sequence[str], summary: str) -> None:
        """Set `code` when there are problems, clear it when there are none."""
        if problems:
            self.set(code, summary, problems)
        else:
            self.clear(code)

    def codes(self) -> list[str]:
        return sorted(self._checks)

    def snapshot(self) -> dict[str, dict[str, Any]]:
        return dict(self._checks)
