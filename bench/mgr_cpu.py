"""What the sla module costs: the ceph-mgr's CPU (issue 17) and, on the OSDs,
its perf query (issue 18), with the module enabled and disabled, same load.

    python3 bench/mgr_cpu.py [--secs 150] [--rounds 2] [--out docs/benchmarks/mgr-cpu.json]

Starts its own mini cluster (deploy/minicluster.sh: 8 memstore OSDs), manages
an urgent and a normal pool (the urgent pool idle, so the mode stays shared),
writes objects into the normal pool once, then alternates phases of --secs
with the module on and off (`ceph mgr module disable sla`, which also removes
its OSD perf query), --rounds times each, on first. In every phase a fresh
`rados bench rand` (4 KiB reads of those objects, 8 threads, closed loop) runs
for the phase: its ops/s, the OSDs' summed CPU seconds per 1,000 ops and the
mgr's CPU are read per phase (/proc utime+stime). Reads keep the memstore
OSDs from filling; the perf query counts reads and writes alike. Alternating
phases spread any drift over both conditions. Figures are medians per
condition; the added cost is on minus off.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.sla_bench import rados_bench_ops  # noqa: E402
from harness.cephcluster import Cluster, wait_for  # noqa: E402


def cpu_secs(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def phase(cluster: Cluster, secs: float) -> dict[str, float]:
    pids = cluster.pids()
    mgr = pids["mgr.x"]
    osds = [pid for name, pid in pids.items() if name.startswith("osd.")]
    mgr0, osd0, t0 = cpu_secs(mgr), sum(cpu_secs(p) for p in osds), time.monotonic()
    p = subprocess.run(cluster.tool("rados", "-c", cluster.conf, "-p", "normal", "bench",
                                    str(int(secs)), "rand", "-t", "8", "--run-name", "cost"),
                       capture_output=True, text=True, timeout=secs + 120)
    if p.returncode != 0:
        raise RuntimeError(f"rados bench rand failed: {p.stderr.strip()[:400]}")
    mgr1, osd1, t1 = cpu_secs(mgr), sum(cpu_secs(p) for p in osds), time.monotonic()
    ops = rados_bench_ops(p.stdout, "reads")
    return {"client_ops_per_sec": round(ops, 1), "wall_secs": round(t1 - t0, 1),
            "mgr_cpu_percent": round(100 * (mgr1 - mgr0) / (t1 - t0), 2),
            "osd_cpu_secs_per_kop": round(1000 * (osd1 - osd0) / (ops * (t1 - t0)), 4)}


def sla_on(cluster: Cluster, on: bool) -> None:
    if on:
        cluster.ceph("mgr", "module", "enable", "sla")
        # the first tick registers the perf query: wait for ticks, not a guess
        wait_for("sla ticking", lambda: cluster.ceph_raw("sla", "status").returncode == 0
                 and cluster.sla_status()["tick_seconds"]["count"] >= 3, 120)
    else:
        cluster.ceph("mgr", "module", "disable", "sla")
        wait_for("sla disabled", lambda: cluster.ceph_raw("sla", "status").returncode != 0, 60)


def median(rows: list[dict[str, float]], key: str) -> float:
    return round(statistics.median(r[key] for r in rows), 4)


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--secs", type=float, default=150)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--out", type=Path, default=ROOT / "docs/benchmarks/mgr-cpu.json")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="sla-mgrcpu-"))
    phases: dict[str, list[dict[str, float]]] = {"on": [], "off": []}
    try:
        cluster = Cluster.up(tmp / "c")
        cluster.enable_sla()
        cluster.ceph("sla", "rules", "apply", timeout=300)
        cluster.create_pool("urgent", 32)
        cluster.create_pool("normal", 32)
        cluster.ceph("sla", "pool", "set", "urgent", "urgent", timeout=120)
        cluster.ceph("sla", "pool", "set", "normal", "normal", timeout=300)
        cluster.ceph("config", "set", "mgr", "mgr/sla/min_dwell_secs", "5")
        wait_for("shared", lambda: cluster.sla_status()["mode"] == "shared", 120)
        cluster.wait_clean(300)
        # the objects the read phases read (rados bench rand needs a write's metadata)
        p = subprocess.run(cluster.tool("rados", "-c", cluster.conf, "-p", "normal", "bench",
                                        "30", "write", "-b", "4096", "-t", "8", "--no-cleanup",
                                        "--run-name", "cost"),
                           capture_output=True, text=True, timeout=300)
        if p.returncode != 0:
            raise RuntimeError(f"rados bench write failed: {p.stderr.strip()[:400]}")
        print(f"mgr-cpu: wrote {rados_bench_ops(p.stdout):.0f} ops/s for 30 s", flush=True)
        status = cluster.sla_status()
        for _ in range(args.rounds):
            for state in ("on", "off"):
                sla_on(cluster, state == "on")
                phases[state].append(phase(cluster, args.secs))
                print(f"mgr-cpu: module {state}: {phases[state][-1]}", flush=True)
    finally:
        if (tmp / "c" / "pids").exists():
            Cluster(tmp / "c").down()
        shutil.rmtree(tmp, ignore_errors=True)
    on, off = phases["on"], phases["off"]
    result: dict[str, Any] = {
        "secs_per_phase": args.secs, "rounds": args.rounds, "phases": phases,
        "median": {state: {k: median(rows, k) for k in rows[0]}
                   for state, rows in phases.items()},
        "added_mgr_cpu_percent": round(median(on, "mgr_cpu_percent")
                                       - median(off, "mgr_cpu_percent"), 2),
        "client_ops_on_over_off": round(median(on, "client_ops_per_sec")
                                        / median(off, "client_ops_per_sec"), 4),
        "osd_cpu_per_op_on_over_off": round(median(on, "osd_cpu_secs_per_kop")
                                            / median(off, "osd_cpu_secs_per_kop"), 4),
        "mode_during_on": status["mode"],
        "load": "rados bench rand, 4 KiB reads, 8 threads, normal pool; urgent pool idle",
        "cluster": "1 mon, 1 mgr, 8 memstore OSDs (deploy/minicluster.sh), Pacific 16.2.15, "
                   "2 cores",
        "command": f"python3 bench/mgr_cpu.py --secs {args.secs:g} --rounds {args.rounds}",
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2, sort_keys=True) + "\n")
    print(json.dumps({k: v for k, v in result.items() if k != "phases"}, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
