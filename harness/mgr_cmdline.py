"""Restart a mini cluster's mgr the way Rook runs it: the mon addresses on
the command line (`--mon-host`), a ceph.conf without `mon host`.

The new mgr's PID goes into the cluster's pids file, and its conf is named
`<DIR>/ceph.conf.<suffix>` so that `minicluster.sh down` (which stops only
the processes whose command line names `<DIR>/ceph.conf`) still stops it.
"""
from __future__ import annotations

import os
import re
import signal
import subprocess
from pathlib import Path

from .cephcluster import Cluster, wait_for

MON_HOST = re.compile(r"^\s*mon[ _]host\s*=\s*(.+?)\s*$", re.MULTILINE)


def conf_without_mon_host(conf: str) -> tuple[str, str]:
    """(the conf text without its `mon host` line, the mon address it held)."""
    found = MON_HOST.search(conf)
    if found is None:
        raise ValueError("the conf has no 'mon host' line")
    return MON_HOST.sub("", conf), found.group(1)


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    # a zombie (our own child) counts as gone
    stat = Path(f"/proc/{pid}/stat")
    return not stat.exists() or stat.read_text().split(") ", 1)[1].startswith("Z")


def restart_mgr_with_mon_host_argument(cluster: Cluster, mgr_id: str = "x") -> int:
    """Stop mgr.<id> by PID, start it again Rook-style; returns the new PID."""
    old = cluster.pids()[f"mgr.{mgr_id}"]
    os.kill(old, signal.SIGTERM)
    wait_for(f"mgr.{mgr_id} (pid {old}) to stop", lambda: _gone(old), 60, interval=0.2)
    text, mon_host = conf_without_mon_host(Path(cluster.conf).read_text())
    conf = Path(f"{cluster.conf}.rook")
    conf.write_text(text)
    log = open(cluster.path / "log" / f"mgr.{mgr_id}.stdout", "ab")  # noqa: SIM115
    with log:
        proc = subprocess.Popen(
            cluster.tool("ceph-mgr", "-i", mgr_id, "-f", "-c", str(conf),
                         "--mon-host", mon_host),
            stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
            start_new_session=True)
    with open(cluster.path / "pids", "a") as pids:  # before anything else can fail
        pids.write(f"mgr.{mgr_id} {proc.pid}\n")
    wait_for("the sla module to answer on the restarted mgr",
             lambda: cluster.ceph_raw("sla", "status").returncode == 0, 180)
    return proc.pid
