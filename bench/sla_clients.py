"""The SLA benchmark's clients (fio's rados engine): the urgent client that
writes then reads back its objects, the normal clients' 50/50 load, and the
figures read from fio's reports and latency logs.
"""
from __future__ import annotations

import signal
import subprocess
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from bench.common import fio_json
from bench.sla_plan import Plan
from harness.cephcluster import Cluster


def percentile(values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100) of a non-empty sequence."""
    if not values:
        raise ValueError("percentile of no values")
    ordered = sorted(values)
    rank = max(1, -(-len(ordered) * q // 100))  # ceil(n * q / 100), at least 1
    return float(ordered[int(rank) - 1])


def read_lat_log(lines: Iterable[str]) -> list[float]:
    """Per-op latencies in ms from a fio latency log (time, nsec, dir, bs, ...)."""
    out = []
    for line in lines:
        fields = [f.strip() for f in line.split(",")]
        if len(fields) >= 2 and fields[1].isdigit():
            out.append(int(fields[1]) / 1e6)
    return out


def fio_ops_per_sec(report: dict[str, Any]) -> float:
    """Completed ops per second over all jobs of one fio JSON report."""
    total = 0.0
    for job in report["jobs"]:
        secs = max(job["job_runtime"] / 1000.0, 1e-3)
        total += (job["read"]["total_ios"] + job["write"]["total_ios"]) / secs
    return total


def fio_base(cluster: Cluster, pool: str, plan: Plan) -> list[str]:
    return ["fio", "--output-format=json", "--ioengine=rados", f"--conf={cluster.conf}",
            "--clientname=admin", f"--pool={pool}", f"--bs={plan.block_kb}k", "--iodepth=2"]


class UrgentClient:
    """Write then read back plan.urgent_mb on the urgent pool (one fio, two jobs)."""

    def __init__(self, cluster: Cluster, plan: Plan, workdir: Path) -> None:
        self.log = workdir / f"urgent-{time.monotonic_ns()}"
        args = fio_base(cluster, "urgent", plan) + [
            "--nrfiles=8", f"--size={plan.urgent_mb}M", "--filename_format=urgent.$filenum",
            f"--write_lat_log={self.log}", "--log_avg_msec=0",
            "--name=write", "--rw=write", "--name=read", "--rw=read", "--stonewall"]
        self.started = time.monotonic()
        self.proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True)

    def result(self, timeout: float = 900) -> dict[str, Any]:
        out, err = self.proc.communicate(timeout=timeout)
        turnaround = time.monotonic() - self.started
        if self.proc.returncode != 0:
            raise RuntimeError(f"urgent fio failed ({self.proc.returncode}): {err.strip()[:400]}")
        fio_json(out)  # a report, or a clear error
        lat: list[float] = []
        for f in sorted(self.log.parent.glob(f"{self.log.name}_lat.*.log")):
            lat += read_lat_log(f.read_text().splitlines())
            f.unlink()
        for f in self.log.parent.glob(f"{self.log.name}_*.log"):
            f.unlink()
        if not lat:
            raise RuntimeError("the urgent client logged no op latencies")
        return {"urgent_turnaround_s": round(turnaround, 2), "urgent_ops": len(lat),
                "urgent_p50_ms": round(percentile(lat, 50), 2),
                "urgent_p99_ms": round(percentile(lat, 99), 2)}

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            self.proc.communicate(timeout=60)


class NormalClients:
    """n fio processes, 50/50 random read/write on 4 MB each of the normal pool."""

    def __init__(self, cluster: Cluster, n: int, plan: Plan, secs: int = 3600) -> None:
        self.procs = [subprocess.Popen(
            fio_base(cluster, "normal", plan) + [
                f"--name=normal{i}", "--nrfiles=8", "--size=4M", "--rw=randrw",
                "--rwmixread=50", "--time_based", f"--runtime={secs}"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for i in range(n)]

    def ops_per_sec(self, stop: bool = True, timeout: float = 900) -> float:
        """Total ops/s; with stop, ends the clients now (SIGINT: fio still reports)."""
        total = 0.0
        for p in self.procs:
            interrupted = stop and p.poll() is None
            if interrupted:
                p.send_signal(signal.SIGINT)
            out, err = p.communicate(timeout=timeout)
            # interrupted, fio exits non-zero (128 here) after writing its report
            if p.returncode != 0 and not interrupted:
                raise RuntimeError(f"normal fio failed ({p.returncode}): {err.strip()[:400]}")
            total += fio_ops_per_sec(fio_json(out))
        return round(total, 1)

    def stop(self) -> None:
        for p in self.procs:
            if p.poll() is None:
                p.send_signal(signal.SIGINT)
        for p in self.procs:
            try:
                p.communicate(timeout=60)
            except subprocess.TimeoutExpired:
                p.kill()
                p.communicate(timeout=10)
