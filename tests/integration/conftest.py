"""One real Ceph cluster (1 mon, 1 mgr, 8 memstore OSDs on loopback) for the
whole integration session, always torn down: on success, failure, Ctrl-C or
SIGTERM (the finalizer and an atexit hook both stop it by PID)."""
from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import signal
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness.cephcluster import Cluster

# Short timings so a scenario takes seconds: production defaults are in docs/operating.md.
DWELL = 12
HIGH, LOW = 60, 25
GAIN_WINDOW = 10  # the measured gain's window: two of them per placement


def _sigterm(signum: int, frame: object) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


@pytest.fixture(scope="session")
def cluster() -> Iterator[Cluster]:
    signal.signal(signal.SIGTERM, _sigterm)
    path = Path(tempfile.mkdtemp(prefix="sla-it-"))
    stopped = False

    def stop() -> None:
        nonlocal stopped
        if stopped:
            return
        stopped = True
        Cluster(path).down() if (path / "pids").exists() else None
        keep = os.environ.get("SLA_KEEP_LOGS")  # a directory for the daemons' logs
        if keep and (path / "log").is_dir():
            shutil.copytree(path / "log", Path(keep) / path.name, dirs_exist_ok=True)
        shutil.rmtree(path, ignore_errors=True)

    atexit.register(stop)
    try:
        c = Cluster.up(path)
        c.enable_sla()
        yield c
    finally:
        stop()


@contextlib.contextmanager
def own_cluster(prefix: str, conf: str | None = None, **up: Any) -> Iterator[Cluster]:
    """A cluster of a test module's own (Cluster.up's arguments; `conf`: text
    appended to its ceph.conf), stopped by PID and removed however the module
    ends: success, failure, Ctrl-C, SIGTERM or exit."""
    signal.signal(signal.SIGTERM, _sigterm)  # a stopped run still stops its cluster
    path = Path(tempfile.mkdtemp(prefix=prefix))
    stopped = False

    def stop() -> None:
        nonlocal stopped
        if not stopped:
            stopped = True
            if (path / "pids").exists():
                Cluster(path).down()
            shutil.rmtree(path, ignore_errors=True)
    atexit.register(stop)
    extra = path.with_suffix(".conf") if conf is not None else None
    try:
        if extra is not None:
            extra.write_text(conf or "")
        try:
            cluster = Cluster.up(path, extra_conf=extra, **up)
        finally:
            if extra is not None:
                extra.unlink()
        yield cluster
    finally:
        stop()


@pytest.fixture(scope="session")
def sla_pools(cluster: Cluster) -> Cluster:
    """Rules applied, pools `urgent` and `normal` managed, short timings."""
    out = cluster.ceph("sla", "rules", "apply", timeout=300)
    assert "sla CRUSH rules" in out
    rules = cluster.json("osd", "crush", "rule", "ls")
    assert {"sla_isolated_normal", "sla_isolated_urgent", "sla_shared"} <= set(rules)
    cluster.create_pool("urgent", 32)
    cluster.create_pool("normal", 32)
    for name, value in [("interval_secs", 1), ("min_dwell_secs", DWELL),
                        ("rate_window_secs", 3), ("max_misplaced_ratio", 0.05),
                        ("gain_window_secs", GAIN_WINDOW),
                        # pools without clients share: test_gain.py tests min_gain
                        ("min_gain", 0)]:
        cluster.ceph("config", "set", "mgr", f"mgr/sla/{name}", str(value))
    cluster.ceph("sla", "set-threshold", str(HIGH), str(LOW))
    cluster.ceph("sla", "pool", "set", "urgent", "urgent", timeout=120)
    cluster.ceph("sla", "pool", "set", "normal", "normal", "--strategy", "move", timeout=300)
    return cluster
