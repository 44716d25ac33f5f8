"""The urgent OSDs' write budget: what the module's switches write onto the
urgent region per day, bounded by `max_urgent_drive_writes` (drive writes
per day of the region's raw capacity). Each switch to shared records the
bytes its pools place there (a copy pool a whole copy, a move pool its moved
share); a pool whose sharing would pass the day's budget stays isolated until
the switches of the last 24 hours leave room for it (core/admission.py). SSDs are rated in drive
writes per day: with the default 0.3, sharing takes a known part of that.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from .state import SwitchRecord

DAY_SECS = 86400.0


@dataclass(frozen=True)
class WriteBudget:
    written: float  # bytes the switches to shared of the last 24 hours placed
    budget: float  # bytes a day (0: no limit)

    @property
    def left(self) -> float:
        return max(0.0, self.budget - self.written) if self.budget > 0 else float("inf")

    def to_dict(self) -> dict[str, float | None]:
        return {"written_last_day_bytes": self.written,
                "budget_bytes_per_day": self.budget or None}


def write_budget(history: Sequence[SwitchRecord], now: float, drive_writes: float,
                 urgent_raw_bytes: float) -> WriteBudget:
    written = sum(r.bytes_to_urgent or 0.0 for r in history
                  if not r.dry_run and r.to_mode == "shared" and r.time > now - DAY_SECS)
    return WriteBudget(written, drive_writes * urgent_raw_bytes)


def current_period(history: Sequence[SwitchRecord]) -> SwitchRecord | None:
    """The record of the shared period the module is in (None: isolated)."""
    record = next((r for r in reversed(history) if not r.dry_run), None)
    return record if record is not None and record.to_mode == "shared" else None


def counted_this_period(history: Sequence[SwitchRecord]) -> frozenset[int]:
    """The pools whose change toward shared the mon took in the current
    shared period: they are sharing, whether or not the mgr's map shows it
    yet (empty while isolated)."""
    record = current_period(history)
    return frozenset(record.pools_to_urgent or []) if record is not None else frozenset()


def count_sharing(history: Sequence[SwitchRecord], pools: Mapping[int, float]) -> None:
    """Pools starting their sharing now (pool -> bytes they place on urgent
    OSDs), added to the current shared period's record, each pool once."""
    record = current_period(history)
    if record is None or not pools:
        return
    counted = list(record.pools_to_urgent or [])
    for pid, needed in sorted(pools.items()):
        if pid not in counted:
            counted.append(pid)
            record.bytes_to_urgent = (record.bytes_to_urgent or 0.0) + needed
    record.pools_to_urgent = counted

