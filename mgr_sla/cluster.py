"""Plain views of what the mgr hands the module (`osd_map`, `osd_map_crush`,
`pg_dump`, ...). Pure functions on the dicts, so the shell stays thin and the
parsing is unit-tested without Ceph."""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class PoolInfo:
    pool_id: int
    name: str
    rule_id: int
    size: int


@dataclass(frozen=True)
class ClusterView:
    epoch: int
    crush_version: int
    pools: dict[int, PoolInfo]
    rules: dict[str, int]  # rule name -> id
    device_class: dict[int, str]  # osd id -> class
    down_in_osds: tuple[int, ...]  # marked in but not up
    choose_args_pools: frozenset[int]  # pool ids with their own choose_args

    def pool_by_name(self, name: str) -> PoolInfo | None:
        return next((p for p in self.pools.values() if p.name == name), None)

    def rule_name(self, rule_id: int) -> str:
        return next((n for n, i in self.rules.items() if i == rule_id), f"rule {rule_id}")

    def osds_of_class(self, cls: str) -> frozenset[int]:
        return frozenset(o for o, c in self.device_class.items() if c == cls)


def cluster_view(osd_map: Mapping[str, Any], crush: Mapping[str, Any]) -> ClusterView:
    pools = {
        int(p["pool"]): PoolInfo(int(p["pool"]), str(p["pool_name"]), int(p["crush_rule"]),
                                 int(p["size"]))
        for p in osd_map.get("pools", [])
    }
    rules = {str(r["rule_name"]): int(r["rule_id"]) for r in crush.get("rules", [])}
    classes = {int(d["id"]): str(d.get("class", "")) for d in crush.get("devices", [])}
    down_in = tuple(sorted(int(o["osd"]) for o in osd_map.get("osds", [])
                           if o.get("in") and not o.get("up")))
    choose_args = frozenset(int(k) for k in (crush.get("choose_args") or {}) if k.lstrip("-")
                            .isdigit() and int(k) >= 0)
    return ClusterView(
        epoch=int(osd_map.get("epoch", 0)),
        crush_version=int(osd_map.get("crush_version", 0)),
        pools=pools,
        rules=rules,
        device_class=classes,
        down_in_osds=down_in,
        choose_args_pools=choose_args,
    )


def pool_misplaced_ratios(pg_dump: Mapping[str, Any]) -> dict[int, float]:
    """Misplaced object copies / object copies, per pool (pg_dump pool_stats)."""
    out = {}
    for entry in pg_dump.get("pool_stats", []):
        stats = entry.get("stat_sum", {})
        copies = int(stats.get("num_object_copies", 0))
        misplaced = int(stats.get("num_objects_misplaced", 0))
        out[int(entry["poolid"])] = misplaced / copies if copies else 0.0
    return out


def pgs_acting_on(pg_stats: Iterable[Mapping[str, Any]], pool_ids: Iterable[int],
                  osds: frozenset[int]) -> int:
    """How many PGs of the pools still have an acting OSD among `osds`.

    Acting, not up: after a rule change the old OSDs keep serving through
    pg_temp until backfill ends, so isolation is real only once acting
    sets have left them (CEPH-FACTS.md)."""
    wanted = {str(p) for p in pool_ids}
    count = 0
    for pg in pg_stats:
        if str(pg.get("pgid", "")).split(".")[0] in wanted and osds & set(pg.get("acting", [])):
            count += 1
    return count


def pgs_without(pg_stats: Iterable[Mapping[str, Any]], pool_ids: Iterable[int],
                osds: frozenset[int]) -> list[str]:
    """PGs of the pools whose up set holds none of `osds`.

    Normal inclusion checked on the real up sets, pg_upmap entries included:
    the CRUSH rule guarantees it, but an upmap (the balancer's) may move the
    one normal replica of a PG onto the urgent class."""
    wanted = {str(p) for p in pool_ids}
    return sorted(str(pg["pgid"]) for pg in pg_stats
                  if str(pg.get("pgid", "")).split(".")[0] in wanted
                  and not osds & set(pg.get("up", [])))


def pgs_not_clean(pg_stats: Iterable[Mapping[str, Any]], pool_ids: Iterable[int]) -> int:
    wanted = {str(p) for p in pool_ids}
    return sum(1 for pg in pg_stats
               if str(pg.get("pgid", "")).split(".")[0] in wanted
               and pg.get("state") != "active+clean")


def mapping_change(before: Mapping[str, list[int]], after: Mapping[str, list[int]]
                   ) -> tuple[int, int]:
    """(PGs whose up set changed, replicas that land on a new OSD)."""
    pgs = replicas = 0
    for pgid, old in before.items():
        new = after.get(pgid, old)
        added = len(set(new) - set(old))
        if added:
            pgs += 1
            replicas += added
    return pgs, replicas


def pg_bytes_by_seed(pg_stats: Iterable[Mapping[str, Any]], pool_id: int) -> dict[int, int]:
    """PG seed -> bytes of one replica, for one pool (pg_dump pg_stats)."""
    prefix = f"{pool_id}."
    return {int(str(pg["pgid"])[len(prefix):], 16): int(pg.get("stat_sum", {}).get("num_bytes", 0))
            for pg in pg_stats if str(pg.get("pgid", "")).startswith(prefix)}
