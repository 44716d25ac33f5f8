"""One real Ceph cluster (1 mon, 1 mgr, 8 memstore OSDs on loopback) for the
whole integration session, always torn down: on success, failure, Ctrl-C or
SIGTERM (the finalizer and an atexit hook both stop it by PID)."""
from __future__ import annotations

import atexit
import shutil
import signal
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from .cephcluster import Cluster


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
        shutil.rmtree(path, ignore_errors=True)

    atexit.register(stop)
    try:
        c = Cluster.up(path)
        c.enable_sla()
        yield c
    finally:
        stop()
