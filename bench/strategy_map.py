"""What the strategy benchmarks read of their normal pool: its PGs' acting
sets from one OSD map (osdmaptool and the map's pg_temp), their PG stats, and
how many act on ssd OSDs."""
from __future__ import annotations

import subprocess
from typing import Any

from bench.strategy_figures import acting_from_osdmaptool
from harness.cephcluster import Cluster

POOL = "normal"


class PoolMap:
    """The normal pool on `cluster`, its ssd OSDs `ssd`."""

    def __init__(self, cluster: Cluster, ssd: set[int]) -> None:
        self.c, self.ssd = cluster, ssd

    def pool(self) -> dict[str, Any]:
        return next(p for p in self.c.json("osd", "pool", "ls", "detail")
                    if p["pool_name"] == POOL)

    def acting(self, pool_id: int) -> tuple[int, int, dict[str, list[int]]]:
        """(epoch, pool size, pgid -> acting set) from one OSD map: CRUSH and
        upmaps through osdmaptool, then the map's pg_temp where it has one."""
        mapfile = self.c.path / "strategy.osdmap"  # where a release root sees it too
        dump = self.c.json("osd", "dump")
        epoch = int(dump["epoch"])
        self.c.ceph("osd", "getmap", str(epoch), "-o", str(mapfile))
        text = subprocess.run(self.c.tool("osdmaptool", str(mapfile), "--test-map-pgs-dump-all",
                                          "--pool", str(pool_id)),
                              capture_output=True, text=True, check=True, timeout=60).stdout
        temp = {t["pgid"]: t["osds"] for t in dump.get("pg_temp", [])}
        size = next(int(p["size"]) for p in dump["pools"] if p["pool"] == pool_id)
        up = acting_from_osdmaptool(text, pool_id)
        return epoch, size, {pg: temp.get(pg, osds) for pg, osds in up.items()}

    def on_ssd(self, acting: dict[str, list[int]]) -> int:
        return sum(1 for a in acting.values() if set(a) & self.ssd)

    def pg_stats(self) -> list[dict[str, Any]]:
        dump = self.c.json("pg", "ls-by-pool", POOL)
        return list(dump["pg_stats"] if isinstance(dump, dict) else dump)

    def stats_clean_since(self, epoch: int, acting: dict[str, list[int]]) -> bool:
        """Every PG of the pool reported at or after `epoch`: active+clean on the
        acting set the map gives it."""
        return all(int(p.get("reported_epoch", 0)) >= epoch and p["state"] == "active+clean"
                   and list(p["acting"]) == acting.get(p["pgid"]) for p in self.pg_stats())

    def stats_isolated(self, epoch: int) -> bool:
        """Every PG of the pool reported at or after `epoch`: active+clean, off ssd."""
        return all(int(p.get("reported_epoch", 0)) >= epoch and p["state"] == "active+clean"
                   and not set(p["acting"]) & self.ssd for p in self.pg_stats())

    def pool_stats(self, pool_id: int) -> int:
        for p in self.c.json("df")["pools"]:
            if int(p["id"]) == pool_id:
                return int(p["stats"].get("stored", p["stats"].get("bytes_used", 0)))
        return 0
