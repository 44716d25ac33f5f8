"""Share only what pays: with min_gain at its default, a normal pool whose
clients only write is never shared (a copy on an urgent OSD serves no write:
every write still costs the N normal copies), while a pool whose clients
mostly read is shared, with copy, the strategy auto gives it."""
from __future__ import annotations

import time
from typing import Any

import pytest

from harness.cephcluster import Cluster, PacedWriter, wait_for

from .conftest import DWELL

pytestmark = pytest.mark.integration

WRITES, READS = "gainwrites", "gainreads"


def _size(cluster: Cluster, name: str) -> int:
    return int(next(p for p in cluster.json("osd", "pool", "ls", "detail")
                    if p["pool_name"] == name)["size"])


def _entry(cluster: Cluster, name: str) -> dict[str, Any]:
    return next(p for p in cluster.sla_status()["pools"] if p["name"] == name)


def test_a_write_only_pool_is_never_shared_and_a_read_heavy_one_is(sla_pools: Cluster
                                                                     ) -> None:
    cluster = sla_pools
    cluster.ceph("sla", "mode", "isolated")
    for name in (WRITES, READS):
        cluster.create_pool(name, 16)
        out = cluster.json("sla", "pool", "set", name, "normal", timeout=300)
        assert out["strategy"] == "copy", out  # auto: the urgent region has room
    # its default, set (Pacific's mgr keeps a removed module option's last value)
    cluster.ceph("config", "set", "mgr", "mgr/sla/min_gain", "1.05")
    clients = [PacedWriter(cluster, WRITES, secs=600, ops=20),
               PacedWriter(cluster, READS, secs=600, ops=20, reads=0.95)]
    sizes: set[int] = set()

    def decided() -> str:
        """The read-heavy pool shared, the write-only one kept for its gain."""
        sizes.add(_size(cluster, WRITES))
        kept = _entry(cluster, WRITES)["kept_isolated"] or ""
        if _size(cluster, READS) == 4 and "under min_gain" in kept:
            return kept
        status = cluster.sla_status()
        raise AssertionError(f"mode {status['mode']}, " + "; ".join(
            f"{p['name']}: size {p['size']}, reads {p['read_fraction']}, kept "
            f"{p['kept_isolated']!r}, gain {p['gain']}"
            for p in status["pools"] if p["name"] in (WRITES, READS)))
    try:
        cluster.ceph("sla", "mode", "auto")  # no urgent client: shared after the dwell
        kept = wait_for("the read-heavy pool shared, the write-only one kept", decided,
                        DWELL + 180)
        assert "expected gain 1.00x" in kept and "0% reads" in kept, kept
        # shared mode goes on (ten more seconds, sampled): the write-only pool stays
        end = time.monotonic() + 10
        while time.monotonic() < end:
            sizes.add(_size(cluster, WRITES))
            time.sleep(0.5)
        assert sizes == {3}, f"{WRITES} was raised: sizes seen {sizes}"
        assert cluster.sla_status()["mode"] == "shared"
        plan = {c["name"]: c for c in cluster.json("sla", "plan")["costs"]}
        assert plan[WRITES]["gain"]["expected"] < 1.05 <= plan[READS]["gain"]["expected"], plan
        assert "under min_gain" in (plan[WRITES]["kept_isolated"] or "")
    finally:
        for client in clients:
            client.stop()
        cluster.ceph("config", "set", "mgr", "mgr/sla/min_gain", "0")
        for name in (WRITES, READS):
            cluster.ceph_raw("sla", "pool", "rm", name, timeout=300)
            cluster.ceph_raw("osd", "pool", "rm", name, name, "--yes-i-really-really-mean-it")
    cluster.wait_clean(300)
