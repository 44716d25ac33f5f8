"""One PG's plan: which of its replicas move to urgent OSDs and where to.
Pure; see planner.py for what a plan depends on and what it does not."""
from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

from .pg_ids import parse_pgid
from .regions import Pairs, Regions, hash_of, mix

_hash = hash_of

_SALT_SHARE = 0x5EED  # the per-PG draw of how many replicas go urgent
_SALT_RANK = 0x52A4  # the per-(PG, OSD) rank of which replicas move


def _unit(*values: int) -> float:
    """A number in (0, 1] from the values."""
    return ((_hash(*values) >> 11) + 1) / float(1 << 53)


def default_min_size(size: int, k: int = 0, m: int = 0) -> int:
    """The min_size Ceph gives a pool (osd_pool_default_min_size 0): size -
    size/2 replicated; k + min(1, m - 1) erasure-coded (writing with k shards
    risks a PG that cannot peer after one more failure)."""
    return k + min(1, m - 1) if k > 0 else size - size // 2


def urgent_member_cap(regions: Regions, size: int, min_size: int = 0, k: int = 0,
                      m: int = 0) -> int:
    """How many members of one PG (replicas, or shards of a k+m pool) shared
    mode may put on urgent OSDs.

    By default, so many that min_size stay on the normal class (the pool's
    own min_size or Ceph's default for its size, whichever is larger: an
    operator lowering min_size in an incident does not let more onto the
    urgent OSDs): with every urgent OSD stopped, every normal PG stays
    active. With `past_min_size` (the operator's share_past_min_size), all
    but one replica, or m shards: the data stays durable, but such PGs stop
    serving I/O until the urgent OSDs return or recovery refills the normal
    class."""
    most = m if k > 0 else size - 1
    if regions.past_min_size:
        return max(most, 0)
    floor = max(min_size, default_min_size(size, k, m))
    return max(0, min(most, size - floor))


def target_urgent_share(regions: Regions, size: int, cap: int | None = None) -> float:
    """Share of a normal pool's replicas on urgent OSDs in shared mode.

    Weight-proportional (the paper's Map_all) over the OSDs that are in,
    capped at `cap` of a PG's replicas (`urgent_member_cap`; Ceph's default
    min_size without one) and by the urgent failure domains there are."""
    if size < 2:
        return 0.0
    urgent = regions.weight_of(regions.urgent_class)
    normal = regions.weight_of(regions.normal_class)
    if urgent <= 0 or normal <= 0:
        return 0.0
    if cap is None:
        cap = urgent_member_cap(regions, size)
    return min(urgent / (urgent + normal), cap / size, regions.urgent_domains / size)


def _ranked(key: tuple[int, int], position: int, salt: int,
            items: Iterable[tuple[int, float, Any]]) -> list[tuple[int, float, Any]]:
    """Items by straw2 score, best first: argmax of ln(u)/weight is the
    weight-proportional draw that stays put when other items change."""
    prefix = _hash(key[0], key[1], position, salt)  # the same for every item
    scale = float(1 << 53)
    log = math.log
    scored = [(log(((mix(prefix, item[0]) >> 11) + 1) / scale) / item[1], item)
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


def share_ranks(pool_id: int, pgp_num: int) -> dict[int, float]:
    """Placement seed -> its place in (0, 1) among the pool's pgp_num seeds,
    ordered by a hash of (pool, seed).

    The fraction of `share x size` goes to the seeds placed below it: exactly
    that fraction of the pool's PGs gets the extra urgent replica (a draw per
    PG is off by about 1/sqrt(PGs): 20 % in a 32-PG pool with a small urgent
    region). Still stable: a change of share moves only the PGs placed
    between the old and the new fraction, and one seed more or less changes
    the count of at most two PGs."""
    order = sorted(range(pgp_num), key=lambda s: (_hash(pool_id, s, _SALT_SHARE), s))
    return {seed: (i + 0.5) / pgp_num for i, seed in enumerate(order)}


def urgent_count(key: tuple[int, int], size: int, share: float,
                 place: float | None = None) -> int:
    """How many of a PG's replicas go urgent: share x size, never all of
    them. The fraction goes to the PG if its `place` (`share_ranks`) is
    below it; without one, it is drawn per PG."""
    expected = share * size
    # a share of exactly cap/size must give cap, not cap - 1 or a rounded-up cap + 1
    k = int(expected + 1e-9)
    u = _unit(key[0], key[1], _SALT_SHARE) if place is None else place
    if u <= expected - k:
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
            skip_down: bool = False, place: float | None = None) -> Pairs:
    """The (from, to) pairs that place one PG; raw is its CRUSH set.

    `keep`: harmless foreign pairs (`harmless_pairs`) that stay unless their
    replica is one that goes urgent. `seed`: the PG's placement seed
    (`placement_seed`; its own by default): PGs that share one share a plan.
    `source` (hybrid): the replica an entry already moves, kept as long as
    it is a normal replica of the PG; without it the first of `raw` (the
    up set's primary) moves. `place` (shared): the seed's `share_ranks`
    place. Shared plans depend on the set of `raw` only.

    A PG whose raw set is short or holds an unknown OSD gets no pairs: it is
    planned again once CRUSH maps it fully."""
    if not raw or any(o not in regions.osds for o in raw):
        return ()
    pool, ps = parse_pgid(pgid)
    key = (pool, ps if seed is None else seed)
    kept = {int(a): int(b) for a, b in keep}
    # the PG as it stands with the kept pairs: raw OSD -> the OSD holding it
    pg = _PgDraft(key, raw, {o: kept.get(o, o) for o in raw}, regions, skip_down)
    if hybrid:
        pg.hybrid(source)
    else:
        pg.shared(share, place)
    pairs = {o: t for o, t in kept.items() if o not in pg.moves}
    pairs.update(pg.moves)
    return tuple(sorted(pairs.items()))


class _PgDraft:
    """One PG's moves as plan_pg draws them: raw OSD -> its new OSD."""

    def __init__(self, key: tuple[int, int], raw: Sequence[int], holder: dict[int, int],
                 regions: Regions, skip_down: bool) -> None:
        self.key, self.raw, self.holder = key, raw, holder
        self.regions, self.skip_down = regions, skip_down
        self.moves: dict[int, int] = {}

    def others(self, source: int) -> list[int]:
        """The OSDs holding the PG's other replicas, moves so far included."""
        return [self.moves.get(o, self.holder[o]) for o in self.raw if o != source]

    def is_urgent(self, o: int) -> bool:
        return self.regions.osds[o].cls == self.regions.urgent_class

    def move(self, o: int, to_class: str) -> bool:
        target = _draw(self.key, o, to_class, self.others(o), self.regions, self.skip_down)
        if target is not None:
            self.moves[o] = target
        return target is not None

    def hybrid(self, source: int | None) -> None:
        if any(self.is_urgent(h) for h in self.holder.values()):
            return
        normal = [o for o in self.raw if not self.is_urgent(self.holder[o])]
        chosen = source if source in normal else (normal[0] if normal else None)
        if chosen is not None:
            self.move(chosen, self.regions.urgent_class)

    def shared(self, share: float, place: float | None) -> None:
        raw = self.raw
        k = urgent_count(self.key, len(raw), share, place)
        normal = [o for o in raw if not self.is_urgent(self.holder[o])]
        need = min(k - (len(raw) - len(normal)), len(normal) - 1)
        for o in _order(self.key, normal)[:max(need, 0)]:
            self.move(o, self.regions.urgent_class)
        if not normal:
            # Normal inclusion whatever CRUSH gave (a weight set overwritten by
            # a reweight can map a PG onto urgent OSDs only): one goes normal.
            for o in _order(self.key, raw):
                if self.move(o, self.regions.normal_class):
                    break


def raw_set(up: Sequence[int], pairs: Iterable[Sequence[int]]) -> list[int]:
    """The CRUSH mapping under an up set: each applied (from, to) undone, last
    first (the mon applies them in order, so a chain a->b, b->c ends on c)."""
    raw = list(up)
    for frm, to in reversed(list(pairs)):
        if to in raw and frm not in raw:
            raw[raw.index(to)] = frm
    return raw
