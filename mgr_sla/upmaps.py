"""Shared mode and hybrid placement as pg_upmap_items: the pure planner.

Why upmaps and not CRUSH: CRUSH alone gives a normal pool urgent replicas
*and* a normal replica in every PG only with per-position weight sets, and
those make ceph-mon abort when a host or root is created (docs/known-issues.md).
So the sla rules carry only flat weight sets: `sla_shared` and `sla_hybrid`
map every PG exactly like `sla_isolated_normal`, and this module moves chosen
replicas onto urgent OSDs with pg_upmap_items:

* shared (normal pools): the primary (position 0) never moves, so every PG
  keeps a normal replica; of the other positions, the last k move, with k
  drawn per PG so that the pool's urgent share is the weight-proportional
  target; only those replicas move, so a switch moves the minimum;
* hybrid (urgent pools short of urgent OSDs): the primary moves to an urgent
  OSD, the other replicas stay normal.

A target never shares a failure domain with another replica of the PG (the
mon checks it again: `OSDMap::check_pg_upmaps` cancels such an entry), and
is drawn straw2-style (argmax of ln(u)/weight over the candidates), so a
candidate's chance follows its weight and the draw is stable when others
come and go. Everything here is plain data in, plain data out.
"""
from __future__ import annotations

import functools
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

MASK64 = (1 << 64) - 1

Pairs = tuple[tuple[int, int], ...]


@dataclass(frozen=True)
class OsdPlace:
    """Where an OSD sits and whether it may receive a replica."""

    cls: str
    domain: int  # id of its failure-domain bucket
    weight: float  # CRUSH weight x reweight; 0 when out
    up: bool = True

    @property
    def usable(self) -> bool:
        return self.up and self.weight > 0


Tree = tuple[tuple[int, float, tuple[tuple[int, float, tuple[tuple[int, float], ...]], ...]], ...]


@dataclass(frozen=True)
class Regions:
    """The device classes and the OSDs of the cluster, as the planner sees them."""

    normal_class: str
    urgent_class: str
    osds: Mapping[int, OsdPlace]

    def of_class(self, cls: str) -> list[int]:
        return sorted(o for o, p in self.osds.items() if p.cls == cls and p.usable)

    def weight_of(self, cls: str) -> float:
        return sum(self.osds[o].weight for o in self.of_class(cls))

    @functools.cached_property
    def fingerprint(self) -> int:
        """Changes whenever anything the planner reads changes."""
        return hash((self.normal_class, self.urgent_class,
                     tuple(sorted((o, p.cls, p.domain, p.weight, p.up)
                                  for o, p in self.osds.items()))))

    @functools.cached_property
    def trees(self) -> dict[str, Tree]:
        """Per class: groups of failure domains of usable OSDs, for draws in
        O(sqrt(domains)) instead of O(OSDs) (10,000 OSDs: 100k draws/s)."""
        return {cls: _tree(self, cls) for cls in (self.normal_class, self.urgent_class)}


def _tree(regions: Regions, cls: str) -> Tree:
    domains: dict[int, list[tuple[int, float]]] = {}
    for osd in regions.of_class(cls):
        place = regions.osds[osd]
        domains.setdefault(place.domain, []).append((osd, place.weight))
    count = max(1, int(math.sqrt(len(domains))))
    groups: dict[int, list[tuple[int, float, tuple[tuple[int, float], ...]]]] = {}
    for domain, osds in sorted(domains.items()):
        # a domain's group follows from its id alone: stable as others come and go
        group = _hash(domain, 0x6A09) % count
        groups.setdefault(group, []).append((domain, sum(w for _, w in osds), tuple(osds)))
    return tuple((g, sum(d[1] for d in ds), tuple(ds)) for g, ds in sorted(groups.items()))


_SEED = 0x9E3779B97F4A7C15


def _mix(x: int, v: int) -> int:
    """One splitmix64-style step: stable across runs and Python versions."""
    x = (x ^ (v & MASK64)) * 0xBF58476D1CE4E5B9 & MASK64
    x ^= x >> 31
    x = x * 0x94D049BB133111EB & MASK64
    return x ^ (x >> 29)


def _hash(*values: int) -> int:
    x = _SEED
    for v in values:
        x = _mix(x, v)
    return x


def _unit(*values: int) -> float:
    """A number in (0, 1] from the values."""
    return ((_hash(*values) >> 11) + 1) / float(1 << 53)


def target_urgent_share(regions: Regions, size: int) -> float:
    """Share of a normal pool's replicas on urgent OSDs in shared mode.

    Weight-proportional (the paper's Map_all), capped so the primary stays
    normal ((size-1)/size) and by the urgent failure domains there are."""
    if size < 2:
        return 0.0
    urgent = regions.weight_of(regions.urgent_class)
    normal = regions.weight_of(regions.normal_class)
    if urgent <= 0 or normal <= 0:
        return 0.0
    domains = {regions.osds[o].domain for o in regions.of_class(regions.urgent_class)}
    return min(urgent / (urgent + normal), (size - 1) / size, len(domains) / size)


def parse_pgid(pgid: str) -> tuple[int, int]:
    """'3.1f' -> (3, 31)."""
    pool, _, seed = pgid.partition(".")
    return int(pool), int(seed, 16)


def _ranked(key: tuple[int, int], position: int, salt: int,
            items: Iterable[tuple[int, float, Any]]) -> list[tuple[int, float, Any]]:
    """Items by straw2 score, best first: argmax of ln(u)/weight is the
    weight-proportional draw that stays put when other items change."""
    prefix = _hash(key[0], key[1], position, salt)  # the same for every item
    scale = float(1 << 53)
    log = math.log
    scored = [(log(((_mix(prefix, item[0]) >> 11) + 1) / scale) / item[1], item)
              for item in items if item[1] > 0]
    scored.sort(key=lambda si: si[0], reverse=True)
    return [item for _, item in scored]


def _replace(pgid: tuple[int, int], final: list[int], position: int, cls: str,
             regions: Regions) -> int | None:
    """An OSD of class `cls` for `position`, in a failure domain no other
    replica uses: a group of domains, a domain, an OSD, each drawn by weight."""
    taken = {regions.osds[o].domain for i, o in enumerate(final)
             if i != position and o in regions.osds}
    for _, _, domains in _ranked(pgid, position, 1, regions.trees[cls]):
        for domain, _, osds in _ranked(pgid, position, 2, domains):
            if domain in taken:
                continue
            for osd, _, _ in _ranked(pgid, position, 3, ((o, w, None) for o, w in osds)):
                if osd not in final:
                    return int(osd)
    return None


def plan_pg(pgid: str, raw: Sequence[int], regions: Regions, share: float,
            hybrid: bool = False) -> Pairs:
    """The (from, to) pairs that place one PG; raw is its CRUSH mapping.

    A PG whose raw set is short (an OSD down or out) gets no pairs: it is
    planned again once CRUSH maps it fully."""
    if not raw or any(o not in regions.osds for o in raw):
        return ()
    key = parse_pgid(pgid)
    final = list(raw)
    if hybrid:
        moves = [0]
    else:
        expected = share * len(raw)
        k = int(expected)
        if _unit(key[0], key[1], 0x5EED) <= expected - k:
            k += 1
        k = min(k, len(raw) - 1)
        moves = list(range(len(raw) - k, len(raw)))
    for position in moves:
        if regions.osds[final[position]].cls == regions.urgent_class:
            continue  # already urgent (CRUSH put it there: weights drifted)
        target = _replace(key, final, position, regions.urgent_class, regions)
        if target is not None:
            final[position] = target
    if not hybrid and not any(regions.osds[o].cls == regions.normal_class for o in final):
        # Normal inclusion whatever CRUSH gave (a weight set overwritten by a
        # reweight can map a PG onto urgent OSDs only): the primary goes normal.
        target = _replace(key, final, 0, regions.normal_class, regions)
        if target is not None:
            final[0] = target
    return tuple((a, b) for a, b in zip(raw, final) if a != b)


def raw_set(up: Sequence[int], pairs: Iterable[Sequence[int]]) -> list[int]:
    """The CRUSH mapping under an up set: each applied (from, to) undone."""
    raw = list(up)
    for frm, to in pairs:
        if to in raw and frm not in raw:
            raw[raw.index(to)] = frm
    return raw


@dataclass(frozen=True)
class PoolPlan:
    """What one pool's PGs should carry, and the commands that get there."""

    pool_id: int
    wanted: Mapping[str, Pairs]  # pgid -> pairs (PGs with pairs only)
    set_items: Mapping[str, Pairs] = field(default_factory=dict)  # to install or replace
    remove: tuple[str, ...] = ()  # pgids whose entry goes
    # pgids among set_items whose up set now breaks a placement rule (no
    # normal replica, a failure domain twice): fixing them never waits
    repairs: frozenset[str] = frozenset()

    @property
    def pending(self) -> int:
        return len(self.set_items) + len(self.remove)


def plan_pool(pool_id: int, up_sets: Mapping[str, Sequence[int]],
              current: Mapping[str, Pairs], regions: Regions, size: int,
              placement: str, cache: dict[Any, Pairs] | None = None) -> PoolPlan:
    """placement: 'shared' or 'hybrid' (this module's entries wanted), or
    'isolated' (no entry may send a replica to an urgent OSD)."""
    urgent = set(regions.of_class(regions.urgent_class)) | {
        o for o, p in regions.osds.items() if p.cls == regions.urgent_class}
    wanted: dict[str, Pairs] = {}
    set_items: dict[str, Pairs] = {}
    remove: list[str] = []
    repairs: set[str] = set()
    if placement == "isolated":
        remove = sorted(pg for pg, pairs in current.items()
                        if any(to in urgent for _, to in pairs))
        return PoolPlan(pool_id, {}, {}, tuple(remove))
    share = target_urgent_share(regions, size)
    for pgid, up in sorted(up_sets.items()):
        have = current.get(pgid, ())
        raw = raw_set(up, have)
        if len(raw) != size or any(o not in regions.osds or not regions.osds[o].up
                                   for o in raw):
            continue  # leave a PG that CRUSH cannot map fully as it is
        if cache is None:
            pairs = plan_pg(pgid, raw, regions, share, hybrid=placement == "hybrid")
        else:
            # A PG's plan depends on its CRUSH mapping, the share and the
            # regions only: the caller keeps `cache` while the regions stay.
            ckey = (pgid, tuple(raw), share, placement)
            pairs = cache.get(ckey)  # type: ignore[assignment]
            if pairs is None:
                pairs = cache[ckey] = plan_pg(pgid, raw, regions, share,
                                              hybrid=placement == "hybrid")
        if pairs:
            wanted[pgid] = pairs
        if pairs and tuple(sorted(pairs)) != tuple(sorted(have)):
            set_items[pgid] = pairs
            if _breaks_placement(up, regions, need_normal=placement == "shared"):
                repairs.add(pgid)
        elif not pairs and have:
            remove.append(pgid)
    return PoolPlan(pool_id, wanted, set_items, tuple(remove), frozenset(repairs))


def _breaks_placement(up: Sequence[int], regions: Regions, need_normal: bool) -> bool:
    faults = mapping_faults({"": up}, regions, need_normal)
    return faults.any


def commands(plan: PoolPlan, placing: bool = True) -> list[dict[str, Any]]:
    """The mon commands of a plan: removals and repairs first (they protect),
    then, if `placing`, the entries that put replicas on urgent OSDs."""
    out: list[dict[str, Any]] = [{"prefix": "osd rm-pg-upmap-items", "pgid": pg}
                                 for pg in plan.remove]
    items = sorted(plan.set_items.items(), key=lambda kv: (kv[0] not in plan.repairs, kv[0]))
    for pgid, pairs in items:
        if pgid not in plan.repairs and not placing:
            continue
        out.append({"prefix": "osd pg-upmap-items", "pgid": pgid,
                    "id": [o for pair in pairs for o in pair]})
    return out


@dataclass(frozen=True)
class MappingFaults:
    """What must never be true of a PG's real up set."""

    osd_twice: tuple[str, ...] = ()
    domain_twice: tuple[str, ...] = ()
    no_normal: tuple[str, ...] = ()

    @property
    def any(self) -> bool:
        return bool(self.osd_twice or self.domain_twice or self.no_normal)


def mapping_faults(up_sets: Mapping[str, Sequence[int]], regions: Regions,
                   need_normal: bool) -> MappingFaults:
    """Check real up sets (upmaps included) for an OSD or a failure domain
    used twice and, for normal pools, a PG without a normal replica."""
    twice, domains, no_normal = [], [], []
    for pgid, up in sorted(up_sets.items()):
        osds = [o for o in up if o in regions.osds]
        if len(set(osds)) != len(osds):
            twice.append(pgid)
        if len({regions.osds[o].domain for o in osds}) != len(osds):
            domains.append(pgid)
        if need_normal and osds and not any(
                regions.osds[o].cls == regions.normal_class for o in osds):
            no_normal.append(pgid)
    return MappingFaults(tuple(twice), tuple(domains), tuple(no_normal))


def current_items(osd_map: Mapping[str, Any]) -> dict[int, dict[str, Pairs]]:
    """pool id -> pgid -> pairs, from an osd map dump's pg_upmap_items."""
    out: dict[int, dict[str, Pairs]] = {}
    for entry in osd_map.get("pg_upmap_items", []):
        pgid = str(entry["pgid"])
        pairs = tuple((int(m["from"]), int(m["to"])) for m in entry.get("mappings", []))
        out.setdefault(parse_pgid(pgid)[0], {})[pgid] = pairs
    return out


def regions_from_maps(osd_map: Mapping[str, Any], crush: Mapping[str, Any],
                      failure_domain: str, normal_class: str, urgent_class: str) -> Regions:
    """Each OSD's class, failure domain and effective weight, from the mgr's
    `osd_map` and `osd_map_crush` dumps (real buckets only, not shadows)."""
    types = {int(t["type_id"]): str(t["name"]) for t in crush.get("types", [])}
    parent: dict[int, int] = {}
    weight: dict[int, float] = {}
    bucket_type: dict[int, str] = {}
    for b in crush.get("buckets", []):
        if "~" in str(b.get("name", "")):
            continue  # class shadow bucket
        bid = int(b["id"])
        bucket_type[bid] = str(b.get("type_name") or types.get(int(b.get("type_id", -1)), ""))
        for item in b.get("items", []):
            parent[int(item["id"])] = bid
            if int(item["id"]) >= 0:
                weight[int(item["id"])] = float(item.get("weight", 0)) / 0x10000

    def domain(osd: int) -> int:
        node = osd
        while node in parent:
            node = parent[node]
            if bucket_type.get(node) == failure_domain:
                return node
        return osd  # not under a bucket of that type: its own domain

    classes = {int(d["id"]): str(d.get("class", "")) for d in crush.get("devices", [])}
    osds: dict[int, OsdPlace] = {}
    for o in osd_map.get("osds", []):
        osd = int(o["osd"])
        if osd not in weight:
            continue
        reweight = float(o.get("weight", 1.0)) if o.get("in", 1) else 0.0
        osds[osd] = OsdPlace(classes.get(osd, ""), domain(osd), weight[osd] * reweight,
                             bool(o.get("up", 0)))
    return Regions(normal_class, urgent_class, osds)


def switch_moves(up_sets: Mapping[str, Sequence[int]], current: Mapping[str, Pairs],
                 regions: Regions, size: int, to_mode: str) -> dict[str, int]:
    """pgid -> replicas that change OSD when a normal pool switches to
    `to_mode` ('shared' or 'isolated'): the rules map alike, so exactly the
    replicas that upmaps put on urgent OSDs, or take off them, move."""
    if to_mode == "shared":
        plan = plan_pool(0, up_sets, current, regions, size, "shared")
        return {pg: len(pairs) for pg, pairs in plan.wanted.items()}
    return {pg: n for pg, up in up_sets.items()
            if (n := sum(1 for o in up if o in regions.osds
                         and regions.osds[o].cls == regions.urgent_class))}
