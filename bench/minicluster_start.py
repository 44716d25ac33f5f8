"""The mini cluster's start time and memory: `deploy/minicluster.sh up` until
every OSD is up and every PG active+clean, then the summed resident memory
(VmRSS) of its daemons (mon, mgr, OSDs), idle; then it stops the cluster.

    python3 -m bench.minicluster_start [--osds 8] [--objectstore memstore|bluestore]
                                       [--release pacific] [--out docs/benchmarks/minicluster.json]
                                       [--dir DIR [--keep]]

With --dir the cluster lives in DIR (default: a temp dir); --keep leaves it
running there (stop it with `deploy/minicluster.sh down DIR`), e.g. for other
benchmarks' --conf DIR/ceph.conf.

Run it where no other cluster starts at the same time (the machine's cluster
lock: `flock /tmp/sla-cluster.lock python3 -m bench.minicluster_start`).
"""
from __future__ import annotations

if __name__ == "__main__" and not __package__:
    import _script  # noqa: F401  (bench/_script.py: runs this as python3 -m bench.<name>)

import argparse
import contextlib
import json
import re
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from bench import provenance
from bench.common import RESULTS, terminated_as_interrupt, workdir, write_json
from harness.cephcluster import Cluster


def rss_kib(status: str) -> int:
    """VmRSS of a /proc/PID/status text, in KiB (0 for a process without one)."""
    m = re.search(r"^VmRSS:\s+(\d+) kB", status, re.MULTILINE)
    return int(m.group(1)) if m else 0


def daemons_rss_mib(pids: dict[str, int]) -> float:
    total = 0
    for name, pid in pids.items():
        try:
            total += rss_kib(Path(f"/proc/{pid}/status").read_text())
        except OSError as exc:
            raise RuntimeError(f"{name} (pid {pid}) is gone: {exc}") from None
    return round(total / 1024, 1)


@contextlib.contextmanager
def cluster_dir(path: Path | None) -> Iterator[Path]:
    if path is not None:
        yield path
        return
    with workdir("sla-minicluster-") as tmp:
        yield tmp / "c"


def measure(path: Path, osds: int, objectstore: str, release: str, keep: bool
            ) -> dict[str, Any]:
    """Start the cluster in `path` and measure it; stopped unless `keep`
    (and in any case if the measurement fails)."""
    started = time.monotonic()
    with terminated_as_interrupt():
        cluster = Cluster.up(path, osds=osds, objectstore=objectstore, release=release)
        try:
            up_secs = time.monotonic() - started
            rss = daemons_rss_mib(cluster.pids())
            ceph = provenance.ceph_release(cluster.tool("ceph", "--version"))
        except BaseException:
            cluster.down()
            raise
    if not keep:
        cluster.down()
    return {"osds": osds, "objectstore": objectstore, "up_secs": round(up_secs, 1),
            "rss_mib": rss, "ceph_release": ceph}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--osds", type=int, default=8)
    ap.add_argument("--objectstore", choices=("memstore", "bluestore"), default="memstore")
    ap.add_argument("--release", default="pacific", help="pacific, reef or tentacle")
    ap.add_argument("--out", type=Path, default=RESULTS / "minicluster.json")
    ap.add_argument("--dir", type=Path, help="the cluster's directory (default: a temp dir)")
    ap.add_argument("--keep", action="store_true", help="leave the cluster running (with --dir)")
    args = ap.parse_args(argv)
    if args.osds < 1:
        ap.error("--osds must be >= 1")
    if args.keep and args.dir is None:
        ap.error("--keep needs --dir")
    with cluster_dir(args.dir) as path:
        result = measure(path, args.osds, args.objectstore, args.release, args.keep)
    result["provenance"] = provenance.provenance(
        "bench.minicluster_start", sys.argv[1:] if argv is None else argv,
        result.pop("ceph_release"), "n/a")
    write_json(args.out, result)
    print(json.dumps(result, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
