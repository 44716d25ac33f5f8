"""The workloads benchmark's normal clients (bench/sla_workloads.py): one fio
(rados engine, closed loop) per normal pool, each with its own read/write mix,
laid out first so that its reads read data.
"""
from __future__ import annotations

import signal
import subprocess
import time
from collections.abc import Mapping
from typing import Any

from bench.common import fio_json
from harness.cephcluster import Cluster

FILES, FILE_MB = 8, 4  # per pool: 32 MB in 8 objects
# fio interrupted while it sets up writes no report: a spell runs at least this long
MIN_RUN_SECS = 5.0


def _fio(cluster: Cluster, pool: str, block_kb: int, *args: str) -> list[str]:
    return ["fio", "--output-format=json", "--ioengine=rados", f"--conf={cluster.conf}",
            "--clientname=admin", f"--pool={pool}", f"--bs={block_kb}k", f"--nrfiles={FILES}",
            f"--size={FILES * FILE_MB}M", f"--filename_format={pool}.$filenum", *args]


def lay_out(cluster: Cluster, pools: Mapping[str, int]) -> None:
    """Write every pool's objects once (side by side), so that reads find data."""
    procs = [subprocess.Popen(_fio(cluster, pool, 64, "--name=layout", "--rw=write",
                                   "--iodepth=4"),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for pool in pools]
    for p in procs:
        _, err = p.communicate(timeout=900)
        if p.returncode != 0:
            raise RuntimeError(f"layout fio failed ({p.returncode}): {err.strip()[:400]}")


def pool_figures(report: dict[str, Any]) -> dict[str, Any]:
    """ops/s, the read share and the mean and p99 latency (ms) of one fio report."""
    ops, secs, lat_ns, p99 = 0, 1e-3, 0.0, 0.0
    side_ops = {"read": 0, "write": 0}
    side_ns = {"read": 0.0, "write": 0.0}
    for job in report["jobs"]:
        secs = max(secs, job["job_runtime"] / 1000.0)
        for side in ("read", "write"):
            n = int(job[side]["total_ios"])
            ops += n
            side_ops[side] += n
            side_ns[side] += n * float(job[side]["clat_ns"]["mean"])
            lat_ns += n * float(job[side]["clat_ns"]["mean"])
            pct = job[side]["clat_ns"].get("percentile") or {}
            p99 = max(p99, float(pct.get("99.000000", 0.0)))
    return {"ops_per_sec": round(ops / secs, 1), "ops": ops,
            "read_fraction": round(side_ops["read"] / ops, 3) if ops else None,
            "mean_ms": round(lat_ns / ops / 1e6, 2) if ops else None,
            # each kind's mean latency: the placement's gain at a mix (workload_rounds.py)
            **{f"{side}_ms": round(side_ns[side] / n / 1e6, 3) if n else None
               for side, n in side_ops.items()},
            "p99_ms": round(p99 / 1e6, 2)}


class PoolClients:
    """One closed-loop fio per pool (`mix`: pool -> % reads), running until
    stopped; its figures when stopped (fio reports on SIGINT)."""

    def __init__(self, cluster: Cluster, mix: Mapping[str, int], block_kb: int,
                 iodepth: int) -> None:
        self.procs = {pool: subprocess.Popen(
            _fio(cluster, pool, block_kb, f"--name={pool}", "--rw=randrw",
                 f"--rwmixread={reads}", f"--iodepth={iodepth}", "--time_based",
                 "--runtime=3600"),
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            for pool, reads in mix.items()}
        self.started = time.monotonic()

    def stop(self) -> dict[str, dict[str, Any]]:
        """Each pool's figures since its client started."""
        time.sleep(max(0.0, self.started + MIN_RUN_SECS - time.monotonic()))
        for p in self.procs.values():
            if p.poll() is None:
                p.send_signal(signal.SIGINT)
        out: dict[str, dict[str, Any]] = {}
        for pool, p in self.procs.items():
            try:
                stdout, err = p.communicate(timeout=120)
            except subprocess.TimeoutExpired:
                p.kill()
                p.communicate(timeout=10)
                raise RuntimeError(f"the {pool} client did not stop") from None
            if not stdout.strip():
                raise RuntimeError(f"the {pool} client wrote no report: {err.strip()[:400]}")
            out[pool] = pool_figures(fio_json(stdout))
        return out
