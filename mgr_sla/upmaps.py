"""Shared mode and hybrid placement as pg_upmap_items: the pure planner.

Why upmaps and not CRUSH: CRUSH alone gives a normal pool urgent replicas
*and* a normal replica in every PG only with per-position weight sets, and
those make ceph-mon abort when a host or root is created (docs/known-issues.md).
So the sla rules carry only flat weight sets: `sla_shared` and `sla_hybrid`
map every PG exactly like `sla_isolated_normal`, and this module moves chosen
replicas onto urgent OSDs with pg_upmap_items.

What a PG's plan depends on, and what it does not:

* the *set* of its CRUSH replicas, never their order: primary affinity,
  pg_upmap_primary and the read balancer reorder the up set, and a plan keyed
  on positions changed on every such epoch. Which replicas move is a ranking
  by a hash of (PG, OSD);
* its placement seed, not its own id: a PG at or above the pool's pgp_num maps
  like its ancestor (`placement_seed`), so the children of a split get their
  parent's entry and stay where the split left their data;
* the OSDs that are *in* (weight > 0), not those that are up: an OSD going
  down changes no plan (its PGs are degraded and left alone); marked out, it
  changes what must change;
* the harmless part of a foreign entry: another module's pairs that move a
  replica from one normal OSD to another (the balancer's hdd balancing) are
  kept, never replaced.

* shared (normal pools): of the PG's normal replicas, the best-ranked k-u move
  to urgent OSDs (u: urgent replicas CRUSH already gave it), k drawn per PG so
  that the pool's urgent share is the weight-proportional target, and never
  all of them: every PG keeps a normal replica by construction. Only those
  replicas move, so a switch moves the minimum;
* hybrid (urgent pools short of urgent OSDs): one normal replica moves to an
  urgent OSD: the PG's current primary when it has no entry yet (so the urgent
  copy takes the primary's place), then whichever replica its entry already
  moves, whatever the order the up set comes in.

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
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .cluster import PoolInfo

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

    def of_class(self, cls: str) -> list[int]:
        """The OSDs of a class that can take data now (up and in)."""
        return sorted(o for o, p in self.osds.items() if p.cls == cls and p.usable)

    def in_of_class(self, cls: str) -> list[int]:
        """The OSDs of a class that are in, up or down."""
        return sorted(o for o, p in self.osds.items() if p.cls == cls and p.present)

    def weight_of(self, cls: str) -> float:
        """The weight of a class's OSDs that are in: an OSD going down does not
        change it (its PGs are degraded, not remapped); one marked out does."""
        return sum(self.osds[o].weight for o in self.in_of_class(cls))

    @functools.cached_property
    def fingerprint(self) -> int:
        """Changes whenever anything a PG's plan reads changes (up/down is not
        one of them: plans are made over the OSDs that are in)."""
        return hash((self.normal_class, self.urgent_class,
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
        group = _hash(domain, 0x6A09) % count
        groups.setdefault(group, []).append((domain, sum(w for _, w in osds), tuple(osds)))
    return tuple((g, sum(d[1] for d in ds), tuple(ds)) for g, ds in sorted(groups.items()))


_SEED = 0x9E3779B97F4A7C15
_SALT_SHARE = 0x5EED  # the per-PG draw of how many replicas go urgent
_SALT_RANK = 0x52A4  # the per-(PG, OSD) rank of which replicas move


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

    Weight-proportional (the paper's Map_all) over the OSDs that are in,
    capped so that a normal replica stays ((size-1)/size) and by the urgent
    failure domains there are."""
    if size < 2:
        return 0.0
    urgent = regions.weight_of(regions.urgent_class)
    normal = regions.weight_of(regions.normal_class)
    if urgent <= 0 or normal <= 0:
        return 0.0
    domains = {regions.osds[o].domain for o in regions.in_of_class(regions.urgent_class)}
    return min(urgent / (urgent + normal), (size - 1) / size, len(domains) / size)


def parse_pgid(pgid: str) -> tuple[int, int]:
    """'3.1f' -> (3, 31)."""
    pool, _, seed = pgid.partition(".")
    return int(pool), int(seed, 16)


def pgid_of(pool_id: int, ps: int) -> str:
    """(3, 31) -> '3.1f'."""
    return f"{pool_id}.{ps:x}"


def stable_mod(x: int, b: int, bmask: int) -> int:
    """ceph_stable_mod: x folded into [0, b) so that growing b splits bins."""
    return x & bmask if (x & bmask) < b else x & (bmask >> 1)


def _mask(n: int) -> int:
    return (1 << max(n - 1, 0).bit_length()) - 1


def placement_seed(ps: int, pgp_num: int) -> int:
    """The PG whose CRUSH mapping PG `ps` shares: `pg_pool_t::raw_pg_to_pps`
    hashes stable_mod(ps, pgp_num), so every PG at or above pgp_num maps like
    an ancestor (the parent it split from, while pgp_num has not caught up,
    or the PG it will merge into). 0 or less: pgp_num unknown, its own."""
    if pgp_num <= 0:
        return ps
    return stable_mod(ps, pgp_num, _mask(pgp_num))


def parent_seed(ps: int) -> int:
    """pg_t::get_parent: the PG that `ps` split from (its top bit cleared)."""
    if ps <= 0:
        return 0
    return ps & ~(1 << (ps.bit_length() - 1))


def no_entry_seeds(pool: PoolInfo) -> frozenset[int]:
    """PG seeds that the monitors will not let carry an entry now: at or above
    pg_num_pending (the merge source), and those pending a merge
    (`pg_pool_t::is_pending_merge`). The mon cancels their entries in every
    new epoch and still answers rc=0 to a command that sets one."""
    pg_num, pending = pool.pg_num, pool.pg_num_pending
    if pg_num <= 0 or pending <= 0 or pending >= pg_num:
        return frozenset()
    out = set(range(pending, pg_num))
    out |= {parent_seed(ps) for ps in range(pending, pg_num)}
    return frozenset(out)


def merge_bound_seeds(pool: PoolInfo) -> frozenset[int]:
    """PG seeds that a merge under way will still touch: every PG from
    pg_num_target (or pg_num_pending) up to pg_num merges, and the PG each
    one finally merges into. Before each merge step the mgr removes the
    upmap entries of the next source and its target and waits for the two to
    be clean on the same OSDs (DaemonServer::adjust_pgs), so an entry placed
    on them now is undone, and re-placing it stalls the merge: such PGs get
    no new entries until their last merge is done."""
    pg_num = pool.pg_num
    low = min(x for x in (pool.pg_num_target, pool.pg_num_pending, pg_num) if x > 0) \
        if pg_num > 0 else 0
    if pg_num <= 0 or low >= pg_num:
        return frozenset()
    mask = _mask(low)
    out = set(range(low, pg_num))
    out |= {stable_mod(ps, low, mask) for ps in range(low, pg_num)}
    return frozenset(out)


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


def _draw(key: tuple[int, int], source: int, cls: str, others: Sequence[int],
          regions: Regions, skip_down: bool = False) -> int | None:
    """An OSD of class `cls` to take the place of the PG's replica `source`,
    in a failure domain none of the PG's `others` uses: a group of domains,
    a domain, an OSD, each drawn by weight, keyed on the PG and the replaced
    OSD (never a position). Drawn over the OSDs that are in; `skip_down`
    passes over down ones."""
    taken = {regions.osds[o].domain for o in others if o in regions.osds}
    for _, _, domains in _ranked(key, source, 1, regions.trees[cls]):
        for domain, _, osds in _ranked(key, source, 2, domains):
            if domain in taken:
                continue
            for osd, _, _ in _ranked(key, source, 3, ((o, w, None) for o, w in osds)):
                if osd in others:
                    continue
                if skip_down and not regions.osds[osd].up:
                    continue
                return int(osd)
    return None


def _order(key: tuple[int, int], osds: Iterable[int]) -> list[int]:
    """OSDs by a hash of (PG, OSD): which replicas move first, whatever the
    order of the up set."""
    return sorted(osds, key=lambda o: (_hash(key[0], key[1], o, _SALT_RANK), o))


def urgent_count(key: tuple[int, int], size: int, share: float) -> int:
    """How many of a PG's replicas go urgent: share x size, the fraction
    drawn per PG, never all of them."""
    expected = share * size
    k = int(expected)
    if _unit(key[0], key[1], _SALT_SHARE) <= expected - k:
        k += 1
    return max(0, min(k, size - 1))


def harmless_pairs(raw: Iterable[int], pairs: Iterable[Sequence[int]], regions: Regions
                   ) -> tuple[Pairs, Pairs]:
    """(harmless, conflicting) pairs of a PG's entry, given its CRUSH set.

    Harmless: the pair applies (from in the CRUSH set), moves a replica from
    one normal-class OSD to another normal-class OSD that is in, and the
    harmless pairs together put no OSD and no failure domain twice: the
    balancer's hdd balancing. Taken in sorted order, so the split is the same
    whatever order the pairs or the up set come in. Everything else (a pair
    to or from an urgent OSD, one that no longer applies, one that breaks a
    failure domain) conflicts."""
    members = set(raw)
    harmless: list[tuple[int, int]] = []
    conflicting: list[tuple[int, int]] = []
    osds = regions.osds
    final = set(members)
    for frm, to in sorted((int(a), int(b)) for a, b in pairs):
        ok = (frm in final and frm in members and to not in final
              and frm in osds and to in osds
              and osds[frm].cls == regions.normal_class
              and osds[to].cls == regions.normal_class and osds[to].present)
        if ok:
            domains = {osds[o].domain for o in final if o != frm}
            ok = osds[to].domain not in domains
        if ok:
            final.discard(frm)
            final.add(to)
            harmless.append((frm, to))
        else:
            conflicting.append((frm, to))
    return tuple(harmless), tuple(conflicting)


def plan_pg(pgid: str, raw: Sequence[int], regions: Regions, share: float,
            hybrid: bool = False, *, keep: Iterable[Sequence[int]] = (),
            seed: int | None = None, source: int | None = None,
            skip_down: bool = False) -> Pairs:
    """The (from, to) pairs that place one PG; raw is its CRUSH set.

    `keep`: harmless foreign pairs (`harmless_pairs`) that stay unless their
    replica is one that goes urgent. `seed`: the PG's placement seed
    (`placement_seed`; its own by default): PGs that share one share a plan.
    `source` (hybrid): the replica an entry already moves, kept as long as
    it is a normal replica of the PG; without it the first of `raw` (the
    up set's primary) moves. Shared plans depend on the set of `raw` only.

    A PG whose raw set is short or holds an unknown OSD gets no pairs: it is
    planned again once CRUSH maps it fully."""
    if not raw or any(o not in regions.osds for o in raw):
        return ()
    pool, ps = parse_pgid(pgid)
    key = (pool, ps if seed is None else seed)
    osds = regions.osds
    kept = {int(a): int(b) for a, b in keep}
    # the PG as it stands with the kept pairs: raw OSD -> the OSD holding it
    holder = {o: kept.get(o, o) for o in raw}
    moves: dict[int, int] = {}

    def others(source: int) -> list[int]:
        """The OSDs holding the PG's other replicas, moves so far included."""
        return [moves.get(o, holder[o]) for o in raw if o != source]

    def is_urgent(o: int) -> bool:
        return osds[o].cls == regions.urgent_class

    if hybrid:
        if not any(is_urgent(h) for h in holder.values()):
            normal = [o for o in raw if not is_urgent(holder[o])]
            chosen = source if source in normal else (normal[0] if normal else None)
            if chosen is not None:
                target = _draw(key, chosen, regions.urgent_class, others(chosen), regions,
                               skip_down)
                if target is not None:
                    moves[chosen] = target
    else:
        k = urgent_count(key, len(raw), share)
        normal = [o for o in raw if not is_urgent(holder[o])]
        need = min(k - (len(raw) - len(normal)), len(normal) - 1)
        for o in _order(key, normal)[:max(need, 0)]:
            target = _draw(key, o, regions.urgent_class, others(o), regions, skip_down)
            if target is not None:
                moves[o] = target
        if not normal:
            # Normal inclusion whatever CRUSH gave (a weight set overwritten by
            # a reweight can map a PG onto urgent OSDs only): one goes normal.
            for o in _order(key, raw):
                target = _draw(key, o, regions.normal_class, others(o), regions, skip_down)
                if target is not None:
                    moves[o] = target
                    break
    pairs = {o: t for o, t in kept.items() if o not in moves}
    pairs.update(moves)
    return tuple(sorted(pairs.items()))


def raw_set(up: Sequence[int], pairs: Iterable[Sequence[int]]) -> list[int]:
    """The CRUSH mapping under an up set: each applied (from, to) undone, last
    first (the mon applies them in order, so a chain a->b, b->c ends on c)."""
    raw = list(up)
    for frm, to in reversed(list(pairs)):
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
    # pgids among set_items whose entry keeps data where it is: the children
    # of a split taking their parent's pairs. Sent at once, like repairs:
    # waiting would move their data off the parent's OSDs and back.
    keeps: frozenset[str] = frozenset()
    # pgids among `remove` that only take urgent replicas back (shared or
    # hybrid, the PG's urgent count fell): data movement like placing, so
    # they wait with it; the other removals protect and never wait
    shrinks: frozenset[str] = frozenset()
    # PGs left as they are this time, by reason: 'merge' (a merge will touch
    # them: the mon or the mgr would undo an entry), 'down' (their plan sends
    # a replica to an OSD that is down but in: they wait for it to come back
    # or be marked out)
    left: Mapping[str, int] = field(default_factory=dict)

    @property
    def pending(self) -> int:
        return len(self.set_items) + len(self.remove)


def _same(a: Iterable[Sequence[int]], b: Iterable[Sequence[int]]) -> bool:
    return sorted(tuple(p) for p in a) == sorted(tuple(p) for p in b)


def plan_pool(pool_id: int, up_sets: Mapping[str, Sequence[int]],
              current: Mapping[str, Pairs], regions: Regions, size: int,
              placement: str, cache: dict[Any, Pairs] | None = None, *,
              pool: PoolInfo | None = None) -> PoolPlan:
    """placement: 'shared' or 'hybrid' (this module's entries wanted), or
    'isolated' (no entry may send a replica to an urgent OSD; the harmless
    pairs of an entry stay).

    `pool` (its osd_map entry) tells the PG counts: PGs at or above pg_num
    do not exist, PGs the mon will not let carry an entry are left to it
    (their entries go by themselves), PGs a merge will still touch get no
    new entry, and a PG maps like its placement seed. Without it every PG
    given is planned on its own seed, as before."""
    urgent = {o for o, p in regions.osds.items() if p.cls == regions.urgent_class}
    wanted: dict[str, Pairs] = {}
    set_items: dict[str, Pairs] = {}
    remove: list[str] = []
    repairs: set[str] = set()
    keeps: set[str] = set()
    shrinks: set[str] = set()
    left: dict[str, int] = {}
    pg_num = pool.pg_num if pool is not None else 0
    pgp_num = pool.pgp_num if pool is not None else 0
    gone = no_entry_seeds(pool) if pool is not None else frozenset()
    bound = merge_bound_seeds(pool) if pool is not None else frozenset()

    def exists(pgid: str) -> bool:
        ps = parse_pgid(pgid)[1]
        return not (pg_num and ps >= pg_num) and ps not in gone

    if placement == "isolated":
        for pgid, pairs in sorted(current.items()):
            if not any(to in urgent for _, to in pairs) or not exists(pgid):
                continue
            up = up_sets.get(pgid)
            stays: Pairs = ()
            if up is not None:
                stays = harmless_pairs(raw_set(up, pairs), pairs, regions)[0]
            if stays:
                set_items[pgid] = stays
                wanted[pgid] = stays
            else:
                remove.append(pgid)
        # taking replicas off urgent OSDs protects the urgent pools: never waits
        return PoolPlan(pool_id, wanted, set_items, tuple(remove), frozenset(set_items))
    share = target_urgent_share(regions, size)
    hybrid = placement == "hybrid"
    need_normal = placement == "shared"
    osds = regions.osds
    for pgid, up in sorted(up_sets.items()):
        pool_of, ps = parse_pgid(pgid)
        if (pg_num and ps >= pg_num) or ps in gone:
            continue  # the mon drops its entry itself: nothing to send, nothing pending
        have = current.get(pgid, ())
        raw = raw_set(up, have) if have else list(up)
        if len(raw) != size or any(o not in osds or not osds[o].up for o in raw):
            continue  # leave a PG that CRUSH cannot map fully as it is
        if ps in bound:
            left["merge"] = left.get("merge", 0) + 1
            if have and _breaks_placement(up, regions, need_normal):
                remove.append(pgid)  # back to CRUSH's own mapping: valid by the rule
            continue
        seed = placement_seed(ps, pgp_num)
        inherited = False
        foreign = have
        if not have and seed != ps:
            # a split's child: its data sits where its parent's entry put it
            foreign = current.get(pgid_of(pool_of, seed), ())
            inherited = bool(foreign)
        keep: Pairs = ()
        if any(to not in urgent for _, to in foreign):
            keep = harmless_pairs(raw, foreign, regions)[0]
        source = None
        if hybrid:
            ours = [(a, b) for a, b in foreign if b in urgent]
            source = ours[0][0] if len(ours) == 1 else raw[0]
        pairs = _planned(pgid, raw, regions, share, placement, keep, seed, source, cache)
        if pairs == have:
            if pairs:
                wanted[pgid] = pairs
            continue  # the steady state: nothing to check, nothing to send
        broken: bool | None = None
        if any(not osds[to].up for frm, to in pairs if (frm, to) not in keep):
            broken = _breaks_placement(up, regions, need_normal)
            if not broken:
                left["down"] = left.get("down", 0) + 1
                continue  # wait for the OSD to come back or be marked out
            pairs = plan_pg(pgid, raw, regions, share, hybrid, keep=keep, seed=seed,
                            source=source, skip_down=True)
        if pairs:
            wanted[pgid] = pairs
        if pairs and not _same(pairs, have):
            set_items[pgid] = pairs
            if broken is None:
                broken = _breaks_placement(up, regions, need_normal)
            if broken:
                repairs.add(pgid)
            elif inherited and _same(pairs, foreign):
                keeps.add(pgid)
        elif not pairs and have:
            remove.append(pgid)
            if broken is None:
                broken = _breaks_placement(up, regions, need_normal)
            if not broken:
                shrinks.add(pgid)
    return PoolPlan(pool_id, wanted, set_items, tuple(remove), frozenset(repairs),
                    frozenset(keeps), frozenset(shrinks), left)


def _planned(pgid: str, raw: Sequence[int], regions: Regions, share: float, placement: str,
             keep: Pairs, seed: int, source: int | None,
             cache: dict[Any, Pairs] | None) -> Pairs:
    hybrid = placement == "hybrid"
    if cache is None:
        return plan_pg(pgid, raw, regions, share, hybrid, keep=keep, seed=seed, source=source)
    # A PG's plan depends on its placement seed, the set of its CRUSH
    # mapping, the kept pairs, the share and the regions only (plus, for
    # hybrid, the replica that moves): the caller keeps `cache` while the
    # regions stay (Regions.fingerprint).
    ckey = (parse_pgid(pgid)[0], seed, tuple(sorted(raw)), keep, share, placement,
            source if hybrid else None)
    pairs = cache.get(ckey)
    if pairs is None:
        pairs = cache[ckey] = plan_pg(pgid, raw, regions, share, hybrid, keep=keep, seed=seed,
                                      source=source)
    return pairs


def _breaks_placement(up: Sequence[int], regions: Regions, need_normal: bool) -> bool:
    """An OSD twice, a failure domain twice or (need_normal) no normal
    replica in one up set (mapping_faults for one PG)."""
    osds = [regions.osds[o] for o in up if o in regions.osds]
    if len(set(up)) != len(up) or len({p.domain for p in osds}) != len(osds):
        return True
    return need_normal and bool(osds) and not any(p.cls == regions.normal_class for p in osds)


def commands(plan: PoolPlan, placing: bool = True) -> list[dict[str, Any]]:
    """The mon commands of a plan: removals, repairs and keeps first (they
    protect, or move nothing), then, if `placing`, the entries that put
    replicas on urgent OSDs or take some back (`shrinks`)."""
    out: list[dict[str, Any]] = [{"prefix": "osd rm-pg-upmap-items", "pgid": pg}
                                 for pg in plan.remove if placing or pg not in plan.shrinks]
    now = plan.repairs | plan.keeps
    items = sorted(plan.set_items.items(), key=lambda kv: (kv[0] not in now, kv[0]))
    for pgid, pairs in items:
        if pgid not in now and not placing:
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
                 regions: Regions, size: int, to_mode: str, *,
                 pool: PoolInfo | None = None) -> dict[str, int]:
    """pgid -> replicas that change OSD when a normal pool switches to
    `to_mode` ('shared' or 'isolated'): the rules map alike, so exactly the
    replicas that upmaps put on urgent OSDs, or take off them, move."""
    if to_mode == "shared":
        plan = plan_pool(0, up_sets, current, regions, size, "shared", pool=pool)
        out = {}
        for pg, pairs in plan.wanted.items():
            have = set(current.get(pg, ()))
            n = sum(1 for pair in pairs if pair not in have)
            if n:
                out[pg] = n
        return out
    return {pg: n for pg, up in up_sets.items()
            if (n := sum(1 for o in up if o in regions.osds
                         and regions.osds[o].cls == regions.urgent_class))}
