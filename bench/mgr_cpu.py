"""The ceph-mgr's own CPU with the sla module on and off, same load (issue 17).

    python3 bench/mgr_cpu.py [--secs 600] [--out docs/benchmarks/mgr-cpu.json]

Starts its own mini cluster (deploy/minicluster.sh: 8 memstore OSDs), manages
an urgent and a normal pool, runs the same client load in both phases (a
`rados bench` writer on the normal pool, the urgent pool idle so the mode
stays shared), and reads the mgr process's utime+stime from /proc over
--secs with the module enabled, then again after `ceph mgr module disable
sla`. The order is on, then off: the off phase also carries Ceph's other
modules, so the difference is what sla adds.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from harness.cephcluster import Cluster, wait_for  # noqa: E402


def cpu_secs(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def phase(pid: int, secs: float) -> dict[str, float]:
    cpu0, t0 = cpu_secs(pid), time.monotonic()
    time.sleep(secs)  # a measurement window, not a wait for a condition
    cpu1, t1 = cpu_secs(pid), time.monotonic()
    return {"cpu_secs": round(cpu1 - cpu0, 2), "wall_secs": round(t1 - t0, 1),
            "cpu_percent": round(100 * (cpu1 - cpu0) / (t1 - t0), 2)}


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--secs", type=float, default=600)
    ap.add_argument("--out", type=Path, default=ROOT / "docs/benchmarks/mgr-cpu.json")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="sla-mgrcpu-"))
    writer = None
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
        writer = subprocess.Popen(
            cluster.tool("rados", "-c", cluster.conf, "-p", "normal", "bench",
                         str(int(2 * args.secs + 120)), "write", "-b", "4096", "-t", "4",
                         "--no-cleanup"), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        mgr = cluster.pids()["mgr.x"]
        time.sleep(10)  # the writer at its steady rate before the first window
        on = phase(mgr, args.secs)
        status = cluster.sla_status()
        cluster.ceph("mgr", "module", "disable", "sla")
        wait_for("sla disabled", lambda: cluster.ceph_raw("sla", "status").returncode != 0, 60)
        off = phase(mgr, args.secs)
    finally:
        if writer is not None and writer.poll() is None:
            writer.terminate()
            writer.wait(30)
        if (tmp / "c" / "pids").exists():
            Cluster(tmp / "c").down()
        shutil.rmtree(tmp, ignore_errors=True)
    result: dict[str, Any] = {
        "secs_per_phase": args.secs, "module_on": on, "module_off": off,
        "added_cpu_percent": round(on["cpu_percent"] - off["cpu_percent"], 2),
        "mode_during_on": status["mode"],
        "tick_seconds_during_on": status.get("tick_seconds"),
        "load": "rados bench 4 KiB writes, 4 threads, on the normal pool; urgent pool idle",
        "cluster": "1 mon, 1 mgr, 8 memstore OSDs (deploy/minicluster.sh), Pacific 16.2.15",
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2, sort_keys=True) + "\n")
    print(json.dumps(result, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
