"""The strategy benchmark's pure figures: fio's rates, the urgent client's op
latencies from fio's logs and their figures during and after a switch, acting
sets from osdmaptool, what polling saw during a switch, and the module's own
gain model to compare the measured gain with.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.sla_clients import percentile, read_lat_log
from mgr_sla.core.models.registry import MODELS
from mgr_sla.core.state import Strategy


def fio_rates(report: dict[str, Any]) -> dict[str, float]:
    """Ops/s and MB/s over all jobs of one fio JSON report, and the read share."""
    ops = mb = reads = 0.0
    for job in report["jobs"]:
        secs = max(job["job_runtime"] / 1000.0, 1e-3)
        for d in ("read", "write"):
            ops += job[d]["total_ios"] / secs
            mb += job[d]["io_bytes"] / secs / 1e6
        reads += job["read"]["total_ios"] / secs
    return {"ops_per_sec": round(ops, 1), "mb_per_sec": round(mb, 2),
            "read_share": round(reads / ops, 3) if ops else 0.0}


def model_gain(strategy: str, read_fraction: float, size: int, share: float) -> float:
    """The module's own gain model (each strategy's `gain`, what `ceph sla plan`
    shows): HDD work per client op isolated over shared."""
    return MODELS[Strategy(strategy)].gain(read_fraction, size, share)


@dataclass
class SwitchSeen:
    """What polling saw during a switch to isolated."""

    started: float
    polls: int = 0
    first_map: tuple[float, int] | None = None  # (secs, epoch) the map first showed isolation
    degraded: set[str] = field(default_factory=set)
    degraded_objects: int = 0

    def sample(self, pg_stats: list[dict[str, Any]]) -> None:
        for p in pg_stats:
            if "degraded" in p["state"] or "undersized" in p["state"]:
                self.degraded.add(p["pgid"])
            self.degraded_objects = max(self.degraded_objects,
                                        int(p["stat_sum"].get("num_objects_degraded", 0)))


def urgent_latencies(log: Path) -> list[tuple[float, float]]:
    """(seconds since start, ms) of every op in fio's latency logs named after
    `log`; the logs are removed."""
    lat: list[tuple[float, float]] = []
    for f in sorted(log.parent.glob(f"{log.name}_lat.*.log")):
        for line in f.read_text().splitlines():
            fields = [x.strip() for x in line.split(",")]
            ms = read_lat_log([line])
            if ms and fields[0].isdigit():
                lat.append((int(fields[0]) / 1000.0, ms[0]))
    for f in log.parent.glob(f"{log.name}_*.log"):
        f.unlink()
    return lat


def latency_figures(during: list[float], after: list[float]) -> dict[str, Any]:
    """The urgent client's latency during the switch and after it."""
    return {
        "urgent_ops_during_switch": len(during),
        "urgent_p50_ms_during_switch": round(percentile(during, 50), 2) if during else None,
        "urgent_p99_ms_during_switch": round(percentile(during, 99), 2) if during else None,
        "urgent_max_ms_during_switch": round(max(during), 2) if during else None,
        "urgent_ops_after": len(after),
        "urgent_p99_ms_after": round(percentile(after, 99), 2) if after else None,
    }


def acting_from_osdmaptool(text: str, pool_id: int) -> dict[str, list[int]]:
    """pgid -> acting set from `osdmaptool --test-map-pgs-dump-all` (before pg_temp)."""
    out: dict[str, list[int]] = {}
    for line in text.splitlines():
        words = line.split()
        if words and words[0].startswith(f"{pool_id}.") and "up" in line:
            # "<pgid> raw ([a,b], p) up ([a,b], p) acting ([a,b], p)"
            sets = [part.split("]")[0] for part in line.split("[")[1:]]
            out[words[0]] = [int(o) for o in sets[-1].split(",") if o]
    return out
