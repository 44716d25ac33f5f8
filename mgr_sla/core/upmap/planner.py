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
  to urgent OSDs (u: urgent replicas CRUSH already gave it), k = share x size
  rounded by the seed's place among the pool's seeds (`share_ranks`), so that
  the pool's urgent share is the weight-proportional target to one PG, and
  never all of them: every PG keeps a normal replica by construction. Only
  those replicas move, so a switch moves the minimum;
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

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .fill import Draft, Swap, fill_unused
from .pg_ids import merge_bound_seeds, no_entry_seeds, parse_pgid, pgid_of, placement_seed
from .pg_plan import (
    harmless_pairs,
    plan_pg,
    raw_set,
    share_ranks,
    target_urgent_share,
    urgent_member_cap,
)
from .regions import Pairs, Regions, pg_faults

if TYPE_CHECKING:
    from ..cluster import PoolInfo

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

    def urgent_pgs(self, urgent: Collection[int]) -> dict[int, int]:
        """Per urgent OSD, the PGs its wanted pairs put a member on there."""
        counts: dict[int, int] = {}
        for pairs in self.wanted.values():
            for to in {to for _, to in pairs if to in urgent}:
                counts[to] = counts.get(to, 0) + 1
        return counts


def _same(a: Iterable[Sequence[int]], b: Iterable[Sequence[int]]) -> bool:
    return sorted(tuple(p) for p in a) == sorted(tuple(p) for p in b)


def plan_pool(pool_id: int, up_sets: Mapping[str, Sequence[int]],
              current: Mapping[str, Pairs], regions: Regions, size: int,
              goal: str, cache: dict[Any, Any] | None = None, *,
              pool: PoolInfo | None = None) -> PoolPlan:
    """goal: 'shared' or 'hybrid' (this module's entries wanted), or
    'isolated' (no entry may send a replica to an urgent OSD; the harmless
    pairs of an entry stay).

    `pool` (its osd_map entry) tells the PG counts: PGs at or above pg_num
    do not exist, PGs the mon will not let carry an entry are left to it
    (their entries go by themselves), PGs a merge will still touch get no
    new entry, and a PG maps like its placement seed. Without it every PG
    given is planned on its own seed, as before."""
    planner = _PoolPlanner(pool_id, current, regions, size, goal, cache, pool)
    if goal == "isolated":
        return planner.isolated(up_sets)
    drafts = [d for pgid, up in sorted(up_sets.items())
              if (d := planner.draft(pgid, up)) is not None]
    swaps = planner.fill(drafts)
    for draft in drafts:
        planner.pg(draft, swaps.get(draft.seed))
    return planner.plan()


def _swapped(pairs: Pairs, swap: Swap | None) -> Pairs:
    if swap is None:
        return pairs
    out, into = swap
    return tuple(sorted(into if pair == out else pair for pair in pairs))


class _PoolPlanner:
    """plan_pool's working state: one pool, one epoch."""

    def __init__(self, pool_id: int, current: Mapping[str, Pairs], regions: Regions,
                 size: int, goal: str, cache: dict[Any, Any] | None,
                 pool: PoolInfo | None) -> None:
        self.pool_id, self.current, self.regions = pool_id, current, regions
        self.size, self.goal, self.cache = size, goal, cache
        self.urgent = regions.members(regions.urgent_class)
        self.share = target_urgent_share(regions, size, urgent_member_cap(
            regions, size, pool.min_size if pool is not None else 0))
        self.hybrid = goal == "hybrid"
        self.need_normal = goal == "shared"
        self.pg_num = pool.pg_num if pool is not None else 0
        self.pgp_num = pool.pgp_num if pool is not None else 0
        self.gone = no_entry_seeds(pool) if pool is not None else frozenset()
        self.bound = merge_bound_seeds(pool) if pool is not None else frozenset()
        self.places = _places(pool_id, self.pgp_num, cache) \
            if goal == "shared" and self.pgp_num > 0 else {}
        self.held = 0  # PGs left out of the drafts this epoch (short, down, merging)
        self.wanted: dict[str, Pairs] = {}
        self.set_items: dict[str, Pairs] = {}
        self.remove: list[str] = []
        self.repairs: set[str] = set()
        self.keeps: set[str] = set()
        self.shrinks: set[str] = set()
        self.left: dict[str, int] = {}

    def plan(self) -> PoolPlan:
        return PoolPlan(self.pool_id, self.wanted, self.set_items, tuple(self.remove),
                        frozenset(self.repairs), frozenset(self.keeps),
                        frozenset(self.shrinks), self.left)

    def _exists(self, ps: int) -> bool:
        return not (self.pg_num and ps >= self.pg_num) and ps not in self.gone

    def isolated(self, up_sets: Mapping[str, Sequence[int]]) -> PoolPlan:
        """No entry sends a replica to an urgent OSD; harmless pairs stay.
        Taking replicas off urgent OSDs protects the urgent pools: never waits."""
        for pgid, pairs in sorted(self.current.items()):
            if not any(to in self.urgent for _, to in pairs) \
                    or not self._exists(parse_pgid(pgid)[1]):
                continue
            up = up_sets.get(pgid)
            stays: Pairs = ()
            if up is not None:
                stays = harmless_pairs(raw_set(up, pairs), pairs, self.regions)[0]
            if stays:
                self.set_items[pgid] = stays
                self.wanted[pgid] = stays
            else:
                self.remove.append(pgid)
        return PoolPlan(self.pool_id, self.wanted, self.set_items, tuple(self.remove),
                        frozenset(self.set_items))

    def _breaks(self, up: Sequence[int]) -> bool:
        return _faulty(up, self.regions, self.need_normal)

    def draft(self, pgid: str, up: Sequence[int]) -> Draft | None:
        """One PG's own draw, or None for a PG left as it is this time."""
        pool_of, ps = parse_pgid(pgid)
        if not self._exists(ps):
            return None  # the mon drops its entry itself: nothing to send, nothing pending
        osds = self.regions.osds
        have = self.current.get(pgid, ())
        raw = raw_set(up, have) if have else list(up)
        if len(raw) != self.size or any(o not in osds or not osds[o].up for o in raw):
            self.held += 1
            return None  # leave a PG that CRUSH cannot map fully as it is
        if ps in self.bound:
            self.held += 1
            self.left["merge"] = self.left.get("merge", 0) + 1
            if have and self._breaks(up):
                self.remove.append(pgid)  # back to CRUSH's own mapping: valid by the rule
            return None
        seed = placement_seed(ps, self.pgp_num)
        foreign = have
        if not have and seed != ps:
            # a split's child: its data sits where its parent's entry put it
            foreign = self.current.get(pgid_of(pool_of, seed), ())
        keep: Pairs = ()
        if any(to not in self.urgent for _, to in foreign):
            keep = harmless_pairs(raw, foreign, self.regions)[0]
        source = None
        if self.hybrid:
            ours = [(a, b) for a, b in foreign if b in self.urgent]
            source = ours[0][0] if len(ours) == 1 else raw[0]
        place = self.places.get(seed)
        pairs = _planned(pgid, raw, self.regions, self.share, self.goal, keep, seed,
                         source, self.cache, place)
        return Draft(pgid, up, have, raw, seed, keep, source, place, foreign,
                     pairs)

    def fill(self, drafts: Sequence[Draft]) -> dict[int, Swap]:
        """fill_unused for shared placement. While some PGs are held back (an
        OSD down, a merge), the drafts miss them and the counts would shift:
        the fill of the last whole view stands (kept in `cache`, which lives
        while the regions do; up and down is not part of them), so an OSD
        going down and coming back changes no entry here either."""
        if self.goal != "shared":
            return {}
        key = ("fill", self.pool_id, self.pgp_num)
        if self.held and self.cache is not None and key in self.cache:
            return dict(self.cache[key])
        # a function of the drafts alone: the same drafts as last time (an epoch
        # that changed nothing of the pool), the same swaps, without the pass
        # (seconds where a pool's urgent replicas leave many urgent OSDs unused)
        drawn = tuple((d.seed, d.pairs, tuple(d.raw)) for d in drafts)
        if self.cache is not None and self.cache.get(("drawn", self.pool_id)) == drawn \
                and key in self.cache:
            return dict(self.cache[key])
        swaps = fill_unused(drafts, self.regions)
        if not self.held and self.cache is not None:
            self.cache[key] = swaps
            self.cache[("drawn", self.pool_id)] = drawn
        return swaps

    def pg(self, d: Draft, swap: Swap | None) -> None:
        """One PG: its wanted pairs, and what to send for it."""
        pgid, up, have, raw, seed, keep, source, place, foreign = (
            d.pgid, d.up, d.have, d.raw, d.seed, d.keep, d.source, d.place, d.foreign)
        osds = self.regions.osds
        pairs = _swapped(d.pairs, swap)
        if pairs == have:
            if pairs:
                self.wanted[pgid] = pairs
            return  # the steady state: nothing to check, nothing to send
        broken: bool | None = None
        if any(not osds[to].up for frm, to in pairs if (frm, to) not in keep):
            broken = self._breaks(up)
            if not broken:
                self.left["down"] = self.left.get("down", 0) + 1
                return  # wait for the OSD to come back or be marked out
            pairs = plan_pg(pgid, raw, self.regions, self.share, self.hybrid, keep=keep,
                            seed=seed, source=source, skip_down=True, place=place)
        inherited = not have and bool(foreign)
        self._record(pgid, up, pairs, have, foreign if inherited else None, broken)

    def _record(self, pgid: str, up: Sequence[int], pairs: Pairs, have: Pairs,
                inherited: Pairs | None, broken: bool | None) -> None:
        if pairs:
            self.wanted[pgid] = pairs
        if pairs and not _same(pairs, have):
            self.set_items[pgid] = pairs
            if broken is None:
                broken = self._breaks(up)
            if broken:
                self.repairs.add(pgid)
            elif inherited is not None and _same(pairs, inherited):
                self.keeps.add(pgid)
        elif not pairs and have:
            self.remove.append(pgid)
            if broken is None:
                broken = self._breaks(up)
            if not broken:
                self.shrinks.add(pgid)


def _places(pool_id: int, pgp_num: int, cache: dict[Any, Any] | None) -> dict[int, float]:
    """share_ranks of the pool, kept in `cache` while pgp_num stays (100,000
    seeds: a fifth of a second to rank, not to be paid every epoch)."""
    if cache is None:
        return share_ranks(pool_id, pgp_num)
    ckey = ("places", pool_id, pgp_num)
    places = cache.get(ckey)
    if places is None:
        places = cache[ckey] = share_ranks(pool_id, pgp_num)
    return places


def _planned(pgid: str, raw: Sequence[int], regions: Regions, share: float, goal: str,
             keep: Pairs, seed: int, source: int | None,
             cache: dict[Any, Any] | None, place: float | None = None) -> Pairs:
    hybrid = goal == "hybrid"
    if cache is None:
        return plan_pg(pgid, raw, regions, share, hybrid, keep=keep, seed=seed, source=source,
                       place=place)
    # A PG's plan depends on its placement seed (and its place among the
    # pool's seeds), the set of its CRUSH mapping, the kept pairs, the share
    # and the regions only (plus, for hybrid, the replica that moves): the
    # caller keeps `cache` while the regions stay (Regions.fingerprint).
    ckey = (parse_pgid(pgid)[0], seed, tuple(sorted(raw)), keep, share, goal,
            source if hybrid else None, place)
    pairs = cache.get(ckey)
    if pairs is None:
        pairs = cache[ckey] = plan_pg(pgid, raw, regions, share, hybrid, keep=keep, seed=seed,
                                      source=source, place=place)
    return pairs


def _faulty(up: Sequence[int], regions: Regions, need_normal: bool) -> bool:
    return any(pg_faults(up, regions, need_normal))


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
