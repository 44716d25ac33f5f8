"""The device classes and OSDs as the upmap planner sees them, the pool
entries as the OSD map holds them, and the checks every real up set must
pass (no OSD twice, no failure domain twice, a normal replica in every
normal PG). Pure."""
from __future__ import annotations

import functools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from .pg_ids import parse_pgid

Pairs = tuple[tuple[int, int], ...]

MASK64 = (1 << 64) - 1

_SEED = 0x9E3779B97F4A7C15
CRUSH_ITEM_NONE = 0x7FFFFFFF  # an up set's hole: an EC shard without an OSD


def mix(x: int, v: int) -> int:
    """One splitmix64-style step: stable across runs and Python versions."""
    x = (x ^ (v & MASK64)) * 0xBF58476D1CE4E5B9 & MASK64
    x ^= x >> 31
    x = x * 0x94D049BB133111EB & MASK64
    return x ^ (x >> 29)


def hash_of(*values: int) -> int:
    x = _SEED
    for v in values:
        x = mix(x, v)
    return x




class OsdPlace(NamedTuple):
    """Where an OSD sits and whether it may receive a replica (a tuple: 10,000
    of them live as long as the map, and the garbage collector skips tuples
    of plain values)."""

    cls: str
    domain: int  # id of its failure-domain bucket
    weight: float  # CRUSH weight x reweight; 0 when out
    up: bool = True

    @property
    def usable(self) -> bool:
        return self.up and self.weight > 0

    @property
    def present(self) -> bool:
        """In (weight > 0), up or not: what placement is planned over."""
        return self.weight > 0


Tree = tuple[tuple[int, float, tuple[tuple[int, float, tuple[tuple[int, float], ...]], ...]], ...]


@dataclass(frozen=True)
class Regions:
    """The device classes and the OSDs of the cluster, as the planner sees them."""

    normal_class: str
    urgent_class: str
    osds: Mapping[int, OsdPlace]
    # the operator's `share_past_min_size`: shared mode may leave a PG fewer
    # than min_size members on the normal class (durable, not available with
    # the urgent class stopped); off, every normal PG stays active without it
    past_min_size: bool = False

    def of_class(self, cls: str) -> list[int]:
        """The OSDs of a class that can take data now (up and in)."""
        return list(self._classes[cls][0]) if cls in self._classes else []

    def in_of_class(self, cls: str) -> list[int]:
        """The OSDs of a class that are in, up or down."""
        return list(self._classes[cls][1]) if cls in self._classes else []

    @functools.cached_property
    def _classes(self) -> dict[str, tuple[tuple[int, ...], tuple[int, ...], float,
                                          frozenset[int]]]:
        """Per class: (its usable OSDs, its OSDs that are in, sorted; their
        weight; every OSD of it), worked out once per converted map (10,000
        OSDs, asked for each pool)."""
        usable: dict[str, list[int]] = {}
        present: dict[str, list[int]] = {}
        members: dict[str, set[int]] = {}
        for o, p in sorted(self.osds.items()):
            members.setdefault(p.cls, set()).add(o)
            if p.usable:
                usable.setdefault(p.cls, []).append(o)
            if p.present:
                present.setdefault(p.cls, []).append(o)
        return {c: (tuple(usable.get(c, ())), tuple(present.get(c, ())),
                    sum(self.osds[o].weight for o in present.get(c, ())), frozenset(osds))
                for c, osds in members.items()}

    def weight_of(self, cls: str) -> float:
        """The weight of a class's OSDs that are in: an OSD going down does not
        change it (its PGs are degraded, not remapped); one marked out does."""
        return self._classes[cls][2] if cls in self._classes else 0.0

    def members(self, cls: str) -> frozenset[int]:
        """Every OSD of a class, in or out, up or down."""
        return self._classes[cls][3] if cls in self._classes else frozenset()

    @functools.cached_property
    def urgent_domains(self) -> int:
        """The failure domains holding urgent OSDs that are in."""
        return self.domains_of(self.urgent_class)

    def domains_of(self, cls: str) -> int:
        """The failure domains holding OSDs of `cls` that are in."""
        return len({self.osds[o].domain for o in self.in_of_class(cls)})

    @functools.cached_property
    def fingerprint(self) -> int:
        """Changes whenever anything a PG's plan reads changes (up/down is not
        one of them: plans are made over the OSDs that are in)."""
        return hash((self.normal_class, self.urgent_class, self.past_min_size,
                     tuple(sorted((o, p.cls, p.domain, p.weight)
                                  for o, p in self.osds.items()))))

    @functools.cached_property
    def trees(self) -> dict[str, Tree]:
        """Per class: groups of failure domains of the OSDs that are in, for
        draws in O(sqrt(domains)) instead of O(OSDs) (10,000 OSDs: 100k
        draws/s). Built over OSDs that are in, so an OSD going down changes
        no group and no draw."""
        return {cls: _tree(self, cls) for cls in (self.normal_class, self.urgent_class)}


def _tree(regions: Regions, cls: str) -> Tree:
    domains: dict[int, list[tuple[int, float]]] = {}
    for osd in regions.in_of_class(cls):
        place = regions.osds[osd]
        domains.setdefault(place.domain, []).append((osd, place.weight))
    count = max(1, int(math.sqrt(len(domains))))
    groups: dict[int, list[tuple[int, float, tuple[tuple[int, float], ...]]]] = {}
    for domain, osds in sorted(domains.items()):
        # a domain's group follows from its id alone: stable as others come and go
        group = hash_of(domain, 0x6A09) % count
        groups.setdefault(group, []).append((domain, sum(w for _, w in osds), tuple(osds)))
    return tuple((g, sum(d[1] for d in ds), tuple(ds)) for g, ds in sorted(groups.items()))


@dataclass(frozen=True)
class MappingFaults:
    """What must never be true of a PG's real up set."""

    osd_twice: tuple[str, ...] = ()
    domain_twice: tuple[str, ...] = ()
    no_normal: tuple[str, ...] = ()

    @property
    def any(self) -> bool:
        return bool(self.osd_twice or self.domain_twice or self.no_normal)


def pg_faults(up: Sequence[int], regions: Regions, need_normal: bool,
              domains_of: str | None = None) -> tuple[bool, bool, bool]:
    """One up set: (an OSD twice, a failure domain twice, no normal replica).
    The one check of what must never be true, for every pool and strategy.
    Holes (an EC shard without an OSD) are no OSD; `domains_of` counts failure
    domains among that class's OSDs only (a copy pool's urgent copy may share
    a domain with a normal one: two takes in one rule do not see each other)."""
    ids = [o for o in up if 0 <= o < CRUSH_ITEM_NONE]
    osds = [regions.osds[o] for o in ids if o in regions.osds]
    scoped = osds if domains_of is None else [p for p in osds if p.cls == domains_of]
    return (len(set(ids)) != len(ids),
            len({p.domain for p in scoped}) != len(scoped),
            need_normal and bool(osds) and not any(p.cls == regions.normal_class
                                                    for p in osds))


def mapping_faults(up_sets: Mapping[str, Sequence[int]], regions: Regions,
                   need_normal: bool, domains_of: str | None = None) -> MappingFaults:
    """Check real up sets (upmaps included) with `pg_faults`, PG by PG."""
    twice, domains, no_normal = [], [], []
    for pgid, up in sorted(up_sets.items()):
        osd_twice, domain_twice, without_normal = pg_faults(up, regions, need_normal,
                                                            domains_of)
        if osd_twice:
            twice.append(pgid)
        if domain_twice:
            domains.append(pgid)
        if without_normal:
            no_normal.append(pgid)
    return MappingFaults(tuple(twice), tuple(domains), tuple(no_normal))


def pgs_stopping_without(up_sets: Mapping[str, Sequence[int]], regions: Regions,
                         cls: str, min_size: int) -> int:
    """PGs that stop serving I/O with every OSD of `cls` stopped: fewer than
    min_size members left on the others (holes and down OSDs count as gone),
    counted on the real up sets."""
    osds = regions.osds
    return sum(1 for up in up_sets.values()
               if sum(1 for o in up if o in osds and osds[o].up and osds[o].cls != cls)
               < min_size)


def current_items(osd_map: Mapping[str, Any]) -> dict[int, dict[str, Pairs]]:
    """pool id -> pgid -> pairs, from an osd map dump's pg_upmap_items."""
    out: dict[int, dict[str, Pairs]] = {}
    for entry in osd_map.get("pg_upmap_items", []):
        pgid = str(entry["pgid"])
        pairs = tuple((int(m["from"]), int(m["to"])) for m in entry.get("mappings", []))
        out.setdefault(parse_pgid(pgid)[0], {})[pgid] = pairs
    return out


def regions_from_maps(osd_map: Mapping[str, Any], crush: Mapping[str, Any],
                      failure_domain: str, normal_class: str, urgent_class: str,
                      past_min_size: bool = False) -> Regions:
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
    return Regions(normal_class, urgent_class, osds, past_min_size)
