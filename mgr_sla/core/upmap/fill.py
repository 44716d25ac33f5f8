"""The planner's pool-wide pass: every urgent OSD that is in gets at least one
of the pool's urgent replicas (`fill_unused`), with as few changed PGs as it
takes. Pure: drafts in, swaps out."""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import NamedTuple

from .regions import Pairs, Regions


class Draft(NamedTuple):
    """One PG's plan before the pool-wide pass: its CRUSH set and the pairs
    its own draw gives (a tuple: one per PG per epoch, 100,000 of them)."""

    pgid: str
    up: Sequence[int]
    have: Pairs
    raw: Sequence[int]
    seed: int
    keep: Pairs
    source: int | None
    place: float | None
    foreign: Pairs
    pairs: Pairs


# fill_unused weighs (unused urgent OSDs x PGs) candidates at most: a few
# hundred thousand, well under a second. Beyond (a pool whose urgent OSDs far
# outnumber its PGs) the draw alone stands.
FILL_WORK_MAX = 250_000


Swap = tuple[tuple[int, int], tuple[int, int]]  # (pair out, pair in) of one seed's entry


class _SeedPlace:
    """One placement seed of the pool as drafted: its OSDs, its pairs that
    move a replica to an urgent OSD, the normal replicas it leaves where
    CRUSH put them, and how many PGs map like it."""

    __slots__ = ("seed", "final", "pairs", "staying", "pgs")

    def __init__(self, d: Draft, regions: Regions, urgent: Mapping[int, int]) -> None:
        moved = dict(d.pairs)
        self.seed = d.seed
        self.final = [moved.get(o, o) for o in d.raw]
        self.pairs = [(frm, to) for frm, to in d.pairs if to in urgent]
        self.staying = [o for o in d.raw if o not in moved and o in regions.osds
                        and regions.osds[o].cls == regions.normal_class]
        self.pgs = 1

    def replacements(self, regions: Regions, pair: tuple[int, int], new: int
                     ) -> list[tuple[int, int]]:
        """The pairs that may take `pair`'s place and send a replica to
        `new` instead: from the same replica, or from a normal one that stays,
        into a failure domain no other replica of the PG then uses."""
        frm, to = pair
        if new in self.final:
            return []
        back = [frm if o == to else o for o in self.final]  # the PG without `pair`
        out = []
        for source in [frm, *self.staying]:
            domains = {regions.osds[o].domain for o in back if o != source}
            if regions.osds[new].domain not in domains:
                out.append((source, new))
        return out


def fill_unused(drafts: Sequence[Draft], regions: Regions) -> dict[int, Swap]:
    """Placement seed -> (pair out, pair in): the few changes that give
    every urgent OSD that is in (up or down, like every plan) at least one
    of the pool's urgent replicas; a PG sent to one that is down waits for it.

    The per-PG draw is weight-proportional but independent, so in a pool
    with few urgent replicas per urgent OSD some OSD can draw none (8 SSDs,
    32 PGs at a third: one pool in eight) and its IOPS go unused in shared
    mode. Each unused OSD takes the place of one replica on the OSD most
    loaded for its weight, in a PG whose failure domains allow it (moving
    the same replica, or another normal one); if none does, two hops: a PG
    sends to it the replica it sent to a lightly used OSD, which takes one
    from a loaded OSD in turn. The choice is a function of the drafts alone
    (the same plan every epoch), applied per seed so a split's children stay
    with their parent, and it changes one or two PGs per unused OSD, never a
    PG's count of urgent replicas."""
    # over the urgent OSDs that are in, up or down, like every plan: an OSD
    # going down changes no choice here either
    count = dict.fromkeys(regions.in_of_class(regions.urgent_class), 0)
    for d in drafts:
        for _, to in d.pairs:
            if to in count:
                count[to] += 1
    unused = [o for o in count if count[o] == 0]
    if not unused or len(unused) * len(drafts) > FILL_WORK_MAX:
        return {}  # every urgent OSD used: the common case, one pass over the drafts
    filler = _Filler(drafts, regions, count)
    two_hops = len(unused) * len(filler.order) * len(count) <= FILL_WORK_MAX
    for new in unused:
        if count[new] or filler.direct(new):
            continue
        if two_hops:
            filler.two_hops(new)
    return filler.swaps


Donor = tuple[_SeedPlace, tuple[int, int], tuple[int, int]]  # (seed, pair out, pair in)


class _Filler:
    """fill_unused's pass: the replica counts per urgent OSD as swaps change them."""

    def __init__(self, drafts: Sequence[Draft], regions: Regions, count: dict[int, int]
                 ) -> None:
        seeds: dict[int, _SeedPlace] = {}
        for d in drafts:
            if d.seed in seeds:
                seeds[d.seed].pgs += 1
            else:
                seeds[d.seed] = _SeedPlace(d, regions, count)
        self.order = [seeds[k] for k in sorted(seeds)]
        self.regions, self.count = regions, count
        self.swaps: dict[int, Swap] = {}

    def load(self, osd: int) -> float:
        return self.count[osd] / max(self.regions.osds[osd].weight, 1e-9)

    def donors(self, new: int, spare: int) -> list[Donor]:
        """Ways to send a replica to `new`, the OSD losing it keeping at least
        `spare` replicas of the pool."""
        return [(p, pair, into) for p in self.order if p.seed not in self.swaps
                for pair in p.pairs if self.count[pair[1]] - p.pgs >= spare
                for into in p.replacements(self.regions, pair, new)]

    def swap(self, p: _SeedPlace, out: tuple[int, int], into: tuple[int, int]) -> None:
        self.swaps[p.seed] = (out, into)
        self.count[out[1]] -= p.pgs
        self.count[into[1]] += p.pgs

    def direct(self, new: int) -> bool:
        """One PG sends `new` the replica of the OSD most loaded for its weight."""
        direct = self.donors(new, 1)
        if direct:
            p, out, into = max(direct, key=lambda c: (self.load(c[1][1]), -c[0].seed,
                                                      -c[2][0]))
            self.swap(p, out, into)
        return bool(direct)

    def two_hops(self, new: int) -> None:
        """A PG sends `new` the replica it sent to a lightly used OSD, which takes
        one from a loaded OSD in turn."""
        refills: dict[int, list[Donor]] = {}
        best = None
        for p, out, into in self.donors(new, 0):
            mid = out[1]
            if mid not in refills:
                refills[mid] = self.donors(mid, 1)
            for q, out2, into2 in refills[mid]:
                if q is not p:
                    key = (self.load(out2[1]), -p.seed, -q.seed, -into[0], -into2[0])
                    if best is None or key > best[0]:
                        best = (key, p, out, into, q, out2, into2)
        if best is not None:
            _, p, out, into, q, out2, into2 = best
            self.swap(p, out, into)
            self.swap(q, out2, into2)
