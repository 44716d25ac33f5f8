"""PG slots per urgent OSD: what shared mode puts on each urgent OSD, against
the limit that OSD enforces. Pure.

Ceph's own guards are averages (TOO_MANY_PGS, the mon's projection on a size
change), so they stay quiet while a single SSD OSD passes its limit: there
the OSD stops instantiating PGs (OSD::maybe_wait_for_max_pg: it holds at most
mon_max_pg_per_osd x osd_max_pg_per_osd_hard_ratio, both as that OSD runs
them, strays included) and a PG waiting for it stays activating, with no
health check at all, while `ceph pg stat` counts the rest active+clean. With
10 HDD OSDs per SSD OSD, a copy pool's extra copy puts about ten times the
HDD OSDs' PG share on each SSD.

Each urgent OSD's count is projected from what it holds now (its own report:
strays of earlier placements included, they stay until deleted) plus what
the pools admitted to share bring, at the peak of the switch, with the worst
urgent failure domain lost (its PGs remapped onto the others by weight). A
pool is admitted only with room to spare: no OSD past `PgLimit.admit`.
"""
from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import NamedTuple

# CRUSH draws each PG's urgent replica by weight: an estimate from the mean
# alone would be short on half the OSDs. 3 sigmas: about 1 OSD in 700 above.
MARGIN_SIGMAS = 3.0
# Admit at most this share of the PGs an OSD holds before it withholds new
# ones (the hard limit): room for a PG split, an OSD marked out, the strays of
# a placement that changes while data moves.
HARD_SPARE = 0.9


class PgLimit(NamedTuple):
    """The PG limit of one OSD, as that OSD runs with it (tuples of plain
    values here and below: thousands live between ticks, and the garbage
    collector skips them)."""

    max_per_osd: int  # mon_max_pg_per_osd
    hard_ratio: float  # osd_max_pg_per_osd_hard_ratio
    basis: str  # where the values were read: "the OSD", "the config database", "the mgr"

    @property
    def hard(self) -> int:
        """The most PGs the OSD holds: it creates one more only below this."""
        return math.ceil(self.max_per_osd * self.hard_ratio)

    @property
    def admit(self) -> int:
        """The most PGs the module lets shared mode put there."""
        return max(0, min(self.max_per_osd, math.floor(self.hard * HARD_SPARE)))

    def describe(self, osd: int, hard: bool = False) -> str:
        """What the limit is, for a reason an operator reads (`hard`: the most
        PGs the OSD holds, rather than what the module admits there)."""
        soft = self.admit == self.max_per_osd and not hard
        runs = f"as osd.{osd} runs {'it' if soft else 'them'}" if self.basis == "the OSD" \
            else f"(from {self.basis})"
        if soft:
            return f"mon_max_pg_per_osd {self.max_per_osd} {runs}"
        both = (f"mon_max_pg_per_osd {self.max_per_osd} x osd_max_pg_per_osd_hard_ratio "
                f"{self.hard_ratio:g} {runs}")
        if hard:
            return f"the {self.hard} PGs it holds at most ({both})"
        return f"{self.admit} PGs, {HARD_SPARE:.0%} of the {self.hard} it holds at most ({both})"


class UrgentOsd(NamedTuple):
    """One urgent OSD that is in: where it sits and what it holds."""

    weight: float
    domain: int  # its failure domain's bucket id
    pgs: int | None = None  # PGs it holds by its own last report (None: not reported)
    used_bytes: float = 0.0
    total_bytes: float = 0.0
    limit: PgLimit | None = None


def spread(replicas: int, urgent: Mapping[int, UrgentOsd]) -> dict[int, int]:
    """What `replicas` drawn by weight put on each urgent OSD, with the margin:
    the estimate until the pool's own mapping is known."""
    total = sum(o.weight for o in urgent.values())
    if replicas <= 0 or total <= 0:
        return {}
    out = {}
    for osd, place in urgent.items():
        p = place.weight / total
        out[osd] = math.ceil(replicas * p + MARGIN_SIGMAS * math.sqrt(replicas * p * (1 - p)))
    return out


class SlotLoad:
    """The PGs each urgent OSD holds, with what the worst failure domain lost
    adds, checked for one more pool's `delta` (urgent OSD -> its PGs there)
    in two passes over the OSDs, whatever the number of domains: losing
    domain d adds ceil(moved_d x w / rest_d) to each OSD outside it, more for
    every such OSD the larger x_d = moved_d / rest_d. So only two losses can
    be the worst: the largest x (worst for every OSD outside it) and the next
    (worst for the OSDs inside the first). The admission keeps one load and
    adds each pool it admits: 100 pools on 2,000 urgent OSDs in a second."""

    def __init__(self, counts: Mapping[int, int], urgent: Mapping[int, UrgentOsd],
                 admits: Mapping[int, int | None] | None = None) -> None:
        self.urgent = urgent
        self.admits = admits_of(urgent) if admits is None else admits
        self.pgs = {o: counts.get(o, 0) for o in urgent}
        self.weights: dict[int, float] = {}
        self.moved: dict[int, int] = {}  # each domain's PGs
        for osd, place in urgent.items():
            self.weights[place.domain] = self.weights.get(place.domain, 0.0) + place.weight
            self.moved[place.domain] = self.moved.get(place.domain, 0) + self.pgs[osd]
        self.total = sum(self.weights.values())

    def add(self, delta: Mapping[int, int]) -> None:
        for osd, n in delta.items():
            if osd in self.pgs:
                self.pgs[osd] += n
                self.moved[self.urgent[osd].domain] += n

    def after_losing(self, delta: Mapping[int, int] | None = None
                     ) -> tuple[dict[int, int], int | None]:
        """Each urgent OSD's PGs with `delta` added, once the worst failure
        domain to lose is lost; with one domain only, the counts as they are."""
        delta = {o: n for o, n in (delta or {}).items() if o in self.pgs}
        pgs = self.pgs
        if len(self.weights) < 2:
            return {o: pgs[o] + delta.get(o, 0) for o in pgs}, None
        moved = dict(self.moved)
        for osd, n in delta.items():
            moved[self.urgent[osd].domain] += n
        shares = {d: moved[d] / (self.total - w) for d, w in self.weights.items()
                  if self.total - w > 0}
        ranked = sorted(shares, key=lambda d: (-shares[d], d))[:2]
        worst: tuple[dict[int, int], int | None] = (
            {o: pgs[o] + delta.get(o, 0) for o in pgs}, None)
        worst_key: tuple[float, int] | None = None
        admits = self.admits
        for lost in ranked:
            rest = self.total - self.weights[lost]
            m = moved[lost]
            after = {o: pgs[o] + delta.get(o, 0) + math.ceil(m * p.weight / rest)
                     for o, p in self.urgent.items() if p.domain != lost}
            key = max((_fullness(n, admits[o]), n) for o, n in after.items())
            if worst_key is None or key > worst_key:
                worst, worst_key = (after, lost), key
        return worst

    def check(self, delta: Mapping[int, int] | None = None) -> SlotCheck | None:
        """The urgent OSD furthest over (or nearest to) its limit with `delta`
        added, once the worst failure domain is lost; None without an urgent OSD."""
        projected, lost = self.after_losing(delta)
        if not projected:
            return None
        admits = self.admits

        def key(item: tuple[int, int]) -> tuple[float, int, int]:
            osd, n = item
            return _fullness(n, admits[osd]), n, -osd
        osd, pgs = max(projected.items(), key=key)
        return SlotCheck(osd, pgs, self.urgent[osd].limit, lost)


def after_losing(counts: Mapping[int, int], urgent: Mapping[int, UrgentOsd]
                 ) -> tuple[dict[int, int], int | None]:
    """Each urgent OSD's PGs once the worst urgent failure domain to lose is
    lost (its PGs spread over the other urgent OSDs by weight; the worst is
    the one that leaves an OSD furthest over its limit, or the fullest)."""
    return SlotLoad(counts, urgent).after_losing()


def admits_of(urgent: Mapping[int, UrgentOsd]) -> dict[int, int | None]:
    """Each OSD's PGs admitted (None: no limit known), worked out once a call."""
    return {o: (u.limit.admit if u.limit is not None else None) for o, u in urgent.items()}


def _fullness(pgs: int, admit: int | None) -> float:
    """PGs over the ones the OSD admits (0 without a limit known)."""
    if admit is None:
        return 0.0
    return pgs / admit if admit else math.inf


@dataclass(frozen=True)
class SlotCheck:
    """The worst urgent OSD of a projection, against its limit."""

    osd: int
    pgs: int
    limit: PgLimit | None
    lost_domain: int | None

    @property
    def over(self) -> bool:
        return self.limit is not None and self.pgs > self.limit.admit

    def reason(self, what: str, basis: str) -> str:
        lost = "" if self.lost_domain is None else \
            f" with the urgent failure domain {self.lost_domain} lost"
        assert self.limit is not None
        return (f"{what} would put {self.pgs} PGs on osd.{self.osd}{lost} ({basis}), over "
                f"{self.limit.describe(self.osd)}")


def check_slots(counts: Mapping[int, int], urgent: Mapping[int, UrgentOsd]) -> SlotCheck | None:
    """The urgent OSD furthest over (or nearest to) its limit once the worst
    failure domain is lost; None without an urgent OSD."""
    return SlotLoad(counts, urgent).check()


def withholding_osds(health: Mapping[str, object]) -> frozenset[int]:
    """The OSDs PENDING_CREATING_PGS names in its detail ("osd.3 has pending
    PGs"); empty when it names none (or is not raised)."""
    checks = health.get("checks")
    check = checks.get("PENDING_CREATING_PGS") if isinstance(checks, Mapping) else None
    detail = check.get("detail") if isinstance(check, Mapping) else None
    out = set()
    for line in detail if isinstance(detail, list) else ():
        message = line.get("message", "") if isinstance(line, Mapping) else str(line)
        for word in str(message).split():
            if word.startswith("osd.") and word[4:].isdigit():
                out.add(int(word[4:]))
    return frozenset(out)


def withheld(health: Mapping[str, object]) -> str | None:
    """Why no pool may share now: an OSD already withholds PGs (Ceph's
    PENDING_CREATING_PGS), whatever the module counted."""
    checks = health.get("checks")
    if isinstance(checks, Mapping) and "PENDING_CREATING_PGS" in checks:
        check = checks["PENDING_CREATING_PGS"]
        summary = check.get("summary", {}) if isinstance(check, Mapping) else {}
        message = summary.get("message", "") if isinstance(summary, Mapping) else ""
        return ("Ceph reports PENDING_CREATING_PGS" + (f" ({message})" if message else "")
                + ": an OSD withholds PGs, likely at its PG limit")
    return None
