"""What sharing does to PG health, per shared normal pool. Pure.

A copy pool at size N+1 is degraded by design until its urgent copy is
backfilled (Ceph's PG_DEGRADED counts its PGs meanwhile: minutes here, hours
at 100 TB). Ceph counts missing object copies: the extra copy makes each object
of the pool one copy short until placed, so more missing copies than the pool
has objects is degradation sharing did not cause, and a real alarm.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .admission_facts import NormalPool
from .models.registry import MODELS


@dataclass(frozen=True)
class SharingProgress:
    pool: str
    by_design: int  # object copies sharing adds (missing until placed)
    missing: int  # object copies Ceph counts missing now (degraded objects)
    bytes_per_copy: float  # the pool's stored bytes per object
    rate: float | None = None  # bytes/s Ceph recovers the pool at now
    pool_id: int = -1
    adds_a_copy: bool = False  # at a size above its isolated size (copy)

    @property
    def placing(self) -> int:
        return min(self.missing, self.by_design)

    @property
    def beyond(self) -> int:
        """Missing copies sharing does not explain."""
        return max(0, self.missing - self.by_design)

    def placing_line(self) -> str:
        left = self.placing * self.bytes_per_copy
        eta = (f", about {left / self.rate:.0f} s at {self.rate / 2**20:.0f} MiB/s"
               if self.rate else "")
        return (f"pool {self.pool}: {self.placing} object copies (~{left / 2**30:.2f} GiB) "
                f"left to place on the urgent region{eta}; its PGs are undersized by design "
                "until then")

    def beyond_line(self) -> str:
        return (f"pool {self.pool}: {self.beyond} object copies missing beyond the ones "
                "sharing adds (an OSD down or out, or a PG an OSD does not take: "
                f"'ceph pg ls-by-pool {self.pool} degraded')")


def sharing_health(progress: Sequence[SharingProgress]) -> tuple[list[str], list[str]]:
    """(the pools placing copies by design, the pools degraded beyond that)."""
    return ([p.placing_line() for p in progress if p.placing],
            [p.beyond_line() for p in progress if p.beyond])


def placing_by_design(progress: Sequence[SharingProgress]) -> list[int]:
    """The pools whose degraded PGs are the copy sharing adds: above their
    isolated size, and no copy missing beyond it (the gates count them apart)."""
    return sorted(p.pool_id for p in progress if p.adds_a_copy and not p.beyond)


def sharing_progress(pool_stats: Mapping[str, Any] | None,
                     osd_pool_stats: Mapping[str, Any] | None,
                     sharing: Sequence[NormalPool]) -> list[SharingProgress]:
    """The copies sharing adds, missing until placed, per pool off its
    isolated placement (Ceph's PG_DEGRADED counts them), from the mgr's
    `pool_stats` and `osd_pool_stats`."""
    sums = {int(e["poolid"]): e.get("stat_sum", {})
            for e in (pool_stats or {}).get("pool_stats", [])}
    rates = {int(e["pool_id"]): e.get("recovery_rate") or {}
             for e in (osd_pool_stats or {}).get("pool_stats", [])}
    out = []
    for pool in sharing:
        stat = sums.get(pool.pool_id)
        if stat is None:
            continue
        objects = int(stat.get("num_objects", 0) or 0)
        rate = float(rates.get(pool.pool_id, {}).get("recovering_bytes_per_sec", 0) or 0)
        out.append(SharingProgress(
            pool.name, MODELS[pool.role.strategy].copies_while_sharing(objects),
            int(stat.get("num_objects_degraded", 0) or 0),
            pool.stored_bytes / objects if objects else 0.0, rate or None, pool.pool_id,
            pool.info.size > pool.isolated_info.size))
    return out
