"""What isolating the normal pools does to the normal OSDs' PG counts. Pure.

Sharing by pg_upmap_items (the move and ec strategies) takes replicas off
normal OSDs; isolating removes the pairs, and each pair whose target is an
urgent OSD brings one PG back to its source. While the pools are shared the
normal OSDs change under them: a pool splits (the children sit with their
parent and take its pairs), a normal OSD goes out (its PGs go to the others),
an operator lowers a limit. So isolating may take a normal OSD past the most
PGs it holds (mon_max_pg_per_osd x osd_max_pg_per_osd_hard_ratio as that OSD
runs them, strays included): past it the OSD withholds PGs, they stay
inactive and their I/O hangs, with no health check of Ceph's. Any pair of a
managed normal pool to an urgent OSD counts, whoever set it: the copy
strategy has none (it isolates by dropping its urgent copy, which brings no
PG to a normal OSD), so nothing here asks which strategy a pool has.

`isolation_load` projects each normal OSD with every pool isolated (status,
SLA_ISOLATION_PG_LIMIT: raised while shared, so the operator acts before an
urgent burst forces isolation); `hold` takes the pools a tick isolates one
at a time on the load of those before them, and holds on their shared
placement those that would take a normal OSD past its hard limit: a PG
withheld is I/O that hangs, the urgent clients' latency is the lesser harm.
"""
from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence, Set
from dataclasses import dataclass, field
from typing import Any

from .pg_slots import PgLimit

Returns = Mapping[int, int]  # normal OSD -> PGs isolating brings back to it
PoolPairs = Mapping[str, Sequence[tuple[int, int]]]  # pgid -> its (from, to) pairs


def returns_of(pairs: PoolPairs, urgent: Set[int], normal: Set[int]) -> dict[int, int]:
    """One pool's PGs isolation brings back, per normal OSD: one for each pair
    from that OSD to an urgent one."""
    out: dict[int, int] = {}
    for entry in pairs.values():
        for frm, to in entry:
            if to in urgent and frm in normal:
                out[frm] = out.get(frm, 0) + 1
    return out


@dataclass(frozen=True)
class NormalOsdAfter:
    """One normal OSD once the pools are isolated, against its hard limit."""

    osd: int
    pgs: int  # projected
    now: int  # by its own report, with the PGs on their way there
    arriving: int  # of `now`: PGs on their way that its report may not count yet
    limit: PgLimit | None
    pools: tuple[str, ...]  # the pools that bring PGs back there

    @property
    def over(self) -> bool:
        return self.limit is not None and self.pgs > self.limit.hard

    def reason(self, what: str = "isolating the normal pools") -> str:
        """For an operator: the OSD, its projected PGs, its limit, who brings
        them, and the fix."""
        held = f"{self.now} it holds" + (f", {self.arriving} of them on their way"
                                         if self.arriving else "")
        pools = ", ".join(self.pools)
        limit = self.limit.describe(self.osd, hard=True) if self.limit is not None \
            else "a limit not known"
        return (f"{what} would put {self.pgs} PGs on osd.{self.osd} ({held}, "
                f"{self.pgs - self.now} back from pools {pools}), past {limit}: it would "
                "withhold the rest, left inactive with their I/O hanging. Raise "
                f"mon_max_pg_per_osd or osd_max_pg_per_osd_hard_ratio on osd.{self.osd}, "
                f"add normal OSDs, or lower the pg_num of {pools}")

    def to_dict(self) -> dict[str, Any]:
        return {"osd": self.osd, "pgs": self.pgs, "pgs_now": self.now,
                "pgs_arriving": self.arriving,
                "hard_limit": self.limit.hard if self.limit is not None else None,
                "limit_basis": self.limit.basis if self.limit is not None else None,
                "over": self.over, "pools": list(self.pools)}


@dataclass(frozen=True)
class IsolationLoad:
    """Every normal OSD isolation brings PGs back to, with every pool isolated."""

    counts: Mapping[int, int]  # normal OSD -> PGs now (its report, plus those arriving)
    returning: Mapping[int, Returns]  # pool -> what its isolation brings back
    limits: Mapping[int, PgLimit | None]
    names: Mapping[int, str] = field(default_factory=dict)
    arriving: Mapping[int, int] = field(default_factory=dict)  # of counts: on their way
    after: tuple[NormalOsdAfter, ...] = ()  # those with PGs back, the fullest first

    @property
    def worst(self) -> NormalOsdAfter | None:
        return self.after[0] if self.after else None

    @property
    def over(self) -> tuple[NormalOsdAfter, ...]:
        return tuple(a for a in self.after if a.over)

    def name(self, pool: int) -> str:
        return self.names.get(pool, str(pool))


def _fullness(pgs: int, limit: PgLimit | None) -> float:
    if limit is None:
        return 0.0
    return pgs / limit.hard if limit.hard else math.inf


def load_of(counts: Mapping[int, int], returning: Mapping[int, Returns],
            limits: Mapping[int, PgLimit | None], names: Mapping[int, str] | None = None,
            arriving: Mapping[int, int] | None = None) -> IsolationLoad:
    """The load from each pool's returns (`returns_of`), worked out once a map."""
    arriving = arriving or {}
    now = {o: counts.get(o, 0) + arriving.get(o, 0) for o in set(counts) | set(arriving)}
    back: dict[int, int] = {}
    by: dict[int, list[int]] = {}
    for pool, osds in sorted(returning.items()):
        for osd, n in osds.items():
            back[osd] = back.get(osd, 0) + n
            by.setdefault(osd, []).append(pool)
    names = names or {}
    after = [NormalOsdAfter(o, now.get(o, 0) + n, now.get(o, 0), arriving.get(o, 0),
                            limits.get(o), tuple(names.get(p, str(p)) for p in by[o]))
             for o, n in back.items()]
    after.sort(key=lambda a: (-_fullness(a.pgs, a.limit), -a.pgs, a.osd))
    return IsolationLoad(now, {p: dict(r) for p, r in returning.items() if r}, dict(limits),
                         dict(names), dict(arriving), tuple(after))


def isolation_load(counts: Mapping[int, int], pairs: Mapping[int, PoolPairs],
                   urgent: Set[int], limits: Mapping[int, PgLimit | None],
                   names: Mapping[int, str] | None = None,
                   arriving: Mapping[int, int] | None = None) -> IsolationLoad:
    """What isolating every pool of `pairs` (pool -> pgid -> pairs) does to the
    normal OSDs: `counts` holds each normal OSD's PGs by its own report (strays
    included; every normal OSD, 0 where none reported), `limits` each one's
    limit (None or absent: not known, never over), `arriving` PGs on their way
    to an OSD that its report may not count yet."""
    normal = set(counts)
    return load_of(counts, {p: returns_of(items, urgent, normal) for p, items in pairs.items()},
                   limits, names, arriving)


def past_limits(load: IsolationLoad, pools: Iterable[int], committed: Iterable[int] = ()
                ) -> dict[int, tuple[NormalOsdAfter, int]]:
    """Pool -> (the normal OSD it would take furthest past its hard limit, how
    many it would take past theirs), for each of `pools` whose pairs would
    go, taken on top of `committed` (pools whose pairs go anyway) and of those
    taken before it, the fewest PGs back first; a pool that would pass a
    limit is not taken."""
    added: dict[int, int] = {}  # normal OSD -> PGs the pools taken bring back
    by: dict[int, list[str]] = {}  # normal OSD -> those pools

    def take(pool: int) -> None:
        for osd, n in load.returning.get(pool, {}).items():
            added[osd] = added.get(osd, 0) + n
            by.setdefault(osd, []).append(load.name(pool))
    for pool in committed:
        take(pool)
    past_by: dict[int, tuple[NormalOsdAfter, int]] = {}
    for pool in sorted(set(pools), key=lambda p: (sum(load.returning.get(p, {}).values()), p)):
        past = []
        for osd, n in load.returning.get(pool, {}).items():
            now, limit = load.counts.get(osd, 0), load.limits.get(osd)
            pgs = now + added.get(osd, 0) + n
            if limit is not None and pgs > limit.hard:
                past.append(NormalOsdAfter(osd, pgs, now, load.arriving.get(osd, 0), limit,
                                           (*by.get(osd, ()), load.name(pool))))
        if not past:
            take(pool)
            continue
        past_by[pool] = (max(past, key=lambda a: (_fullness(a.pgs, a.limit), a.pgs, -a.osd)),
                         len(past))
    return past_by


def _more(count: int) -> str:
    return f" ({count} normal OSDs would pass theirs)" if count > 1 else ""


def hold(load: IsolationLoad, isolating: Iterable[int], committed: Iterable[int] = ()
         ) -> dict[int, str]:
    """Pool -> why its isolation is held: of `isolating` (pools whose change to
    their isolated placement would go now), those `past_limits` names."""
    return {pool: (f"{worst.reason('isolating it')}. Held on its shared placement"
                   f"{_more(count)}: a PG withheld is I/O that hangs, the urgent clients' "
                   "latency the lesser harm")
            for pool, (worst, count) in past_limits(load, isolating, committed).items()}


def release_refusals(load: IsolationLoad | None, releasing: Iterable[int]) -> dict[int, str]:
    """Pool -> why `ceph sla pool rm` / `release` leaves it managed: its
    pairs to urgent OSDs would go with it and take a normal OSD past its hard
    limit (by the load of the last refresh; None: not worked out yet, nothing
    refused). Each is taken on top of the others released with it."""
    if load is None:
        return {}
    return {pool: f"{worst.reason('releasing it')}{_more(count)}"
            for pool, (worst, count) in past_limits(load, releasing).items()}
