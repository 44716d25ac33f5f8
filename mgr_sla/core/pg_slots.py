"""PG slots per OSD: what shared mode puts on each urgent OSD, against the
limit the OSDs enforce. Pure.

Ceph's own guards are averages (TOO_MANY_PGS, the mon's projection on a size
change), so they stay quiet while a single SSD OSD passes
`mon_max_pg_per_osd`: a few times past it the OSD stops instantiating PGs
(OSD::maybe_wait_for_max_pg) while `ceph pg stat` still says active+clean.
With 10 HDD OSDs per SSD OSD, a copy pool's extra copy puts about ten times
the HDD OSDs' PG share on each SSD.

Each urgent OSD's count is projected with the managed normal pools that may
share, and with the worst urgent failure domain to lose lost (its PGs remapped onto
the others by weight): the pools are admitted shared ones first (their real
up sets), then the isolated ones in pool order (where CRUSH would put their
shared placement, when the shell could map it on the real PGs; else a
weight-proportional share of the replicas sharing adds, plus MARGIN_SIGMAS
standard deviations of the binomial draw CRUSH makes); a pool that would
take any urgent OSD past the limit stays isolated, and the reason names the
OSD, its count and the limit.
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

# CRUSH draws each PG's urgent replica by weight: a projection from the mean
# alone would be short on half the OSDs. 3 sigmas: about 1 OSD in 700 above.
MARGIN_SIGMAS = 3.0


@dataclass(frozen=True)
class UrgentOsd:
    weight: float
    domain: int  # its failure domain's bucket id


@dataclass(frozen=True)
class PoolSlots:
    """One managed normal pool, as far as PG slots go."""

    pool_id: int
    name: str
    shared_now: bool
    # shared now: its PGs with a replica on each urgent OSD (the real up sets);
    # isolated and `mapped`: the same as CRUSH maps its shared placement
    on_urgent: Mapping[int, int] = field(default_factory=dict)
    # isolated, not mapped: the PG replicas sharing it would add to the urgent region
    extra_replicas: int = 0
    mapped: bool = False


@dataclass(frozen=True)
class SlotVerdict:
    limit: int
    kept: dict[int, str]  # pool id -> why it stays isolated
    # pool id -> (osd, PGs) the most loaded urgent OSD would hold with it shared
    worst_if_shared: dict[int, tuple[int, int]]
    projected: dict[int, int]  # urgent osd -> PGs, the admitted pools shared, a domain lost
    lost_domain: int | None  # the failure domain whose loss is counted

    def over_limit(self) -> list[tuple[int, int]]:
        """Urgent OSDs past the limit with only the admitted pools shared."""
        return sorted((o, n) for o, n in self.projected.items() if n > self.limit)


def spread(replicas: int, urgent: Mapping[int, UrgentOsd]) -> dict[int, int]:
    """What `replicas` drawn by weight put on each urgent OSD, with the margin."""
    total = sum(o.weight for o in urgent.values())
    if replicas <= 0 or total <= 0:
        return {}
    out = {}
    for osd, place in urgent.items():
        p = place.weight / total
        out[osd] = math.ceil(replicas * p + MARGIN_SIGMAS * math.sqrt(replicas * p * (1 - p)))
    return out


def after_losing(counts: Mapping[int, int], urgent: Mapping[int, UrgentOsd]
                 ) -> tuple[dict[int, int], int | None]:
    """Each urgent OSD's PGs once the worst urgent failure domain to lose is
    lost (its PGs spread over the other urgent OSDs by weight); with one
    domain only, the counts as they are."""
    weights: dict[int, float] = {}
    for place in urgent.values():
        weights[place.domain] = weights.get(place.domain, 0.0) + place.weight
    worst: tuple[dict[int, int], int | None] = ({o: counts.get(o, 0) for o in urgent}, None)
    if len(weights) < 2:
        return worst
    total = sum(weights.values())
    worst_peak = -1
    for lost in sorted(weights):
        moved = sum(counts.get(o, 0) for o, p in urgent.items() if p.domain == lost)
        rest = total - weights[lost]
        if rest <= 0:
            continue
        after = {o: counts.get(o, 0) + math.ceil(moved * p.weight / rest)
                 for o, p in urgent.items() if p.domain != lost}
        peak = max(after.values(), default=0)
        if peak > worst_peak:
            worst, worst_peak = (after, lost), peak
    return worst


def plan_slots(counts: Mapping[int, int], pools: Sequence[PoolSlots],
               urgent: Mapping[int, UrgentOsd], limit: int) -> SlotVerdict:
    """counts: every OSD's PGs now (what it holds); urgent: the urgent OSDs that are in."""
    unreported = sorted(o for o in urgent if o not in counts)
    if unreported:
        # no count is not zero PGs (a mgr just started, an OSD's report not in
        # yet): nothing is proved to fit, so no isolated pool shares
        why = (f"no PG count reported for osd.{unreported[0]}"
               f"{f' and {len(unreported) - 1} more urgent OSDs' if len(unreported) > 1 else ''}"
               ": the PG limit cannot be checked")
        return SlotVerdict(limit, {p.pool_id: why for p in pools if not p.shared_now}, {}, {},
                           None)
    base = {o: counts[o] for o in urgent}
    for pool in pools:
        if pool.shared_now:
            for osd, n in pool.on_urgent.items():
                if osd in base:
                    base[osd] -= n
    kept: dict[int, str] = {}
    worst: dict[int, tuple[int, int]] = {}
    lost: int | None = None
    for pool in sorted(pools, key=lambda p: (not p.shared_now, p.pool_id)):
        added = dict(pool.on_urgent) if pool.shared_now or pool.mapped \
            else spread(pool.extra_replicas, urgent)
        trial = {o: n + added.get(o, 0) for o, n in base.items()}
        projected, lost = after_losing(trial, urgent)
        if not projected:
            continue
        osd, most = max(sorted(projected.items()), key=lambda item: item[1])
        worst[pool.pool_id] = (osd, most)
        if most > limit:
            kept[pool.pool_id] = (
                f"sharing it would put {most} PGs on osd.{osd} (with the urgent failure "
                f"domain {lost} lost), over mon_max_pg_per_osd {limit}")
        else:
            base = trial
    final, lost = after_losing(base, urgent)
    return SlotVerdict(limit, kept, worst, final, lost)


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
