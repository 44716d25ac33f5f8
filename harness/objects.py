"""Objects with known checksums in a pool, written and read back with `rados`."""
from __future__ import annotations

import hashlib
import os
import subprocess
from pathlib import Path

from .cephcluster import Cluster


class Objects:
    """Objects with known checksums, written while switches happen and read back after."""

    def __init__(self, cluster: Cluster, pool: str, tmp: Path) -> None:
        self.cluster, self.pool, self.tmp = cluster, pool, tmp
        self.sums: dict[str, str] = {}

    def write(self, count: int, tag: str) -> None:
        for i in range(count):
            name = f"obj-{tag}-{i}"
            data = os.urandom(64 * 1024 + i)
            path = self.tmp / name
            path.write_bytes(data)
            subprocess.run(self.cluster.tool("rados", "-c", self.cluster.conf, "-p", self.pool,
                                             "put", name, str(path)), check=True, timeout=60)
            self.sums[name] = hashlib.sha256(data).hexdigest()

    def verify(self) -> None:
        bad = []
        for name, digest in self.sums.items():
            out = self.tmp / f"read-{name}"
            subprocess.run(self.cluster.tool("rados", "-c", self.cluster.conf, "-p", self.pool,
                                             "get", name, str(out)), check=True, timeout=60)
            if hashlib.sha256(out.read_bytes()).hexdigest() != digest:
                bad.append(name)
        assert not bad, f"objects changed: {bad}"
