"""What Ceph did with the module's sharing, checked every tick. Pure.

The admission decides on what Ceph will do; this checks what it did. While a
normal pool is shared or on its way, each of these sends the pools involved
back at once (no gate may hold it: they are what the switch caused) and
keeps them isolated for the rest of the shared period:

- a PG of a managed pool not active for STUCK_SECS with an urgent OSD in its
  up or acting set (an OSD at its PG limit withholds a replica and the PG
  stays activating; Ceph raises nothing for it): the pools with PGs on those
  urgent OSDs that are near their limit (one far from it, as a down OSD, is no
  other pool's doing); a PG of a pool sharing, stuck so whatever its OSDs (a normal
  OSD may have touched its limit while data moved): that pool, after
  STUCK_FAR_SECS where no urgent OSD near its limit is in its sets. A PG whose
  primary has not reported since the step that shared its pool counts as
  stuck too (its stats may still say active+clean with the old OSDs, while
  its I/O waits for the new primary, which withheld it: its stats keep other
  OSDs than the map gives it), but only with an urgent OSD in its up set near
  its limit (NEAR_LIMIT of the most PGs it holds, or not known): one far from
  it withholds nothing, and on a loaded machine a PG may take longer than
  that to peer and report;
- an urgent OSD at the most PGs it holds (it creates no more): the pools
  with PGs on it;
- Ceph's PENDING_CREATING_PGS: the pools with PGs on the urgent OSDs its
  detail names (a normal OSD named sends none back: isolation would load it
  further), every pool sharing where it names none;
- an urgent OSD past nearfull_ratio: every pool sharing (the urgent pools'
  writes would soon stop there); a pool's own PGs backfill_toofull or
  recovery_toofull: that pool.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

from .pg_slots import PgLimit

# "not active for more than a few seconds": peering after a switch takes a second
# or two, several on a loaded machine (5 s was seen in the suite); an OSD
# withholding a PG keeps it inactive for ever
STUCK_SECS = 20.0
# ... and with no urgent OSD near its PG limit in its sets (none that could
# withhold it): peering under load took over 20 s in the suite's busiest runs
STUCK_FAR_SECS = 60.0
# A PG an OSD withheld at its limit may stay stuck after the OSD has room again:
# measured on Pacific and Tentacle, with data to backfill, raising the limit left
# 40 PGs activating for minutes, and `ceph pg repeer` freed each within seconds.
# Once the pools involved went back, a PG still stuck this long with an urgent
# OSD is re-peered, each at most every REPEER_EVERY_SECS, REPEER_MAX a tick.
# an unreported PG counts only with an urgent OSD past this share of its hard limit
NEAR_LIMIT = 0.9
REPEER_SECS = 20.0
REPEER_EVERY_SECS = 60.0
REPEER_MAX = 16
TOOFULL_STATES = frozenset({"backfill_toofull", "recovery_toofull"})


@dataclass(frozen=True)
class StuckPg:
    pgid: str
    pool_id: int
    state: str
    up: tuple[int, ...]
    acting: tuple[int, ...]
    secs: float  # not active this long, by the module's clock
    unreported: bool = False  # its stats predate the step: the map's OSDs never reported it


class UrgentOsdNow(NamedTuple):
    pgs: int | None  # PGs it holds by its own last report
    limit: PgLimit | None
    fill: float | None = None  # used / size


@dataclass(frozen=True)
class SharingNow:
    """What the check looks at, read every tick."""

    # normal pools off their isolated placement or on their way there: pool ->
    # the urgent OSDs it has PGs on (None: not known, so every urgent OSD)
    sharing: Mapping[int, frozenset[int] | None]
    names: Mapping[int, str]
    urgent: Mapping[int, UrgentOsdNow]
    stuck: Sequence[StuckPg] = ()
    withheld: str | None = None
    nearfull_ratio: float = 0.85
    toofull: frozenset[int] = frozenset()  # pools with a PG toofull
    managed: frozenset[int] = field(default_factory=frozenset)
    withheld_by: frozenset[int] = frozenset()  # the OSDs Ceph names as withholding PGs


def _limit_text(osd: int, u: UrgentOsdNow) -> str:
    if u.limit is None:
        return f"osd.{osd} holds {u.pgs if u.pgs is not None else 'an unknown number of'} PGs"
    return (f"osd.{osd} holds {u.pgs if u.pgs is not None else '?'} PGs, limit {u.limit.hard} "
            f"(mon_max_pg_per_osd {u.limit.max_per_osd} x osd_max_pg_per_osd_hard_ratio "
            f"{u.limit.hard_ratio:g}, from {u.limit.basis})")


def _near_limit(u: UrgentOsdNow) -> bool:
    """The OSD may be withholding PGs: near the most it holds, or not known."""
    return u.limit is None or u.pgs is None or u.pgs >= NEAR_LIMIT * u.limit.hard


def _on(pools: Mapping[int, frozenset[int] | None], osds: set[int]) -> list[int]:
    return sorted(p for p, on in pools.items() if on is None or on & osds)


def sharing_faults(now: SharingNow, osds: Mapping[int, str] | None = None) -> dict[int, str]:
    """Pool id -> why it goes back now, for every pool the check sends back;
    `osds`: osd_faults(now) when the caller kept it (it changes only with a
    report, a limit or a map, while PGs are looked at every tick)."""
    faults = pg_faults(now)
    for pid, why in (osd_faults(now) if osds is None else osds).items():
        faults.setdefault(pid, why)
    return faults


def pg_faults(now: SharingNow) -> dict[int, str]:
    """The pools PGs stuck send back."""
    faults: dict[int, str] = {}
    for pg in sorted(now.stuck, key=lambda p: (-p.secs, p.pgid)):
        if pg.secs < STUCK_SECS or pg.pool_id not in now.managed:
            continue
        osds = sorted((set(pg.up) | set(pg.acting)) & set(now.urgent))
        if pg.unreported and not any(_near_limit(now.urgent[o]) for o in pg.up
                                     if o in now.urgent):
            continue
        # an urgent OSD near its limit may withhold the PG for every pool's PGs
        # there: they all go back; one far from it (down, say) is not about
        # PG slots, and only the PG's own pool is the sharing's doing, once the
        # PG has stayed so past a slow peering on a loaded cluster
        near = {o for o in osds if _near_limit(now.urgent[o])}
        if not near and pg.secs < STUCK_FAR_SECS:
            continue
        involved = _on(now.sharing, near) if near else []
        if pg.pool_id in now.sharing and pg.pool_id not in involved:
            involved.append(pg.pool_id)
        where = ("with urgent " + ", ".join(_limit_text(o, now.urgent[o]) for o in osds)
                 if osds else "while its pool shares")
        for pid in involved:
            faults.setdefault(pid, f"pg {pg.pgid} not active for {pg.secs:.0f} s ({pg.state}) "
                                   f"{where}")
    return faults


def osd_faults(now: SharingNow) -> dict[int, str]:
    """The pools the urgent OSDs and Ceph's health send back: an OSD at its
    limit, PGs withheld, an OSD past nearfull, PGs toofull."""
    faults: dict[int, str] = {}

    def blame(pools: Sequence[int], why: str) -> None:
        for pid in pools:
            faults.setdefault(pid, why)
    for osd, u in sorted(now.urgent.items()):
        if u.limit is not None and u.pgs is not None and u.pgs >= u.limit.hard:
            blame(_on(now.sharing, {osd}),
                  f"{_limit_text(osd, u)}: at its limit, it creates no more PGs")
    if now.withheld:
        # the OSDs Ceph names: the pools with PGs on those of them that are urgent
        # (isolating frees them); a normal one is not the sharing's doing, and
        # isolating would load it further. Named none: every pool sharing.
        urgent = now.withheld_by & set(now.urgent)
        blame(_on(now.sharing, set(urgent)) if now.withheld_by else sorted(now.sharing),
              now.withheld)
    over = sorted(((o, u.fill) for o, u in now.urgent.items()
                   if u.fill is not None and u.fill > now.nearfull_ratio),
                  key=lambda item: (-item[1], item[0]))
    if over:
        osd, fill = over[0]
        blame(sorted(now.sharing), (
            f"osd.{osd} of the urgent region is {fill:.0%} full, past nearfull_ratio "
            f"{now.nearfull_ratio:.0%}" + (f" ({len(over)} urgent OSDs past it)"
                                           if len(over) > 1 else "")))
    blame(sorted(p for p in now.sharing if p in now.toofull),
          "its PGs are backfill_toofull/recovery_toofull: the placement sharing needs does "
          "not fit")
    return faults


def to_repeer(now: SharingNow, sent_back: bool, last: Mapping[str, float], clock: float
              ) -> list[str]:
    """The PGs to re-peer: only once the module sent pools back (what it
    undoes), each stuck REPEER_SECS with an urgent OSD in its sets, not
    re-peered in the last REPEER_EVERY_SECS; the longest stuck first."""
    if not sent_back:
        return []
    due = [pg for pg in now.stuck
           if pg.secs >= REPEER_SECS and pg.pool_id in now.managed
           and (set(pg.up) | set(pg.acting)) & set(now.urgent)
           and clock - last.get(pg.pgid, -REPEER_EVERY_SECS) >= REPEER_EVERY_SECS]
    return [pg.pgid for pg in sorted(due, key=lambda p: (-p.secs, p.pgid))][:REPEER_MAX]


def toofull_pools(by_pool: Mapping[str, Mapping[str, int]]) -> frozenset[int]:
    """Pools with a PG that cannot place data for want of space (pg_summary's by_pool)."""
    return frozenset(int(pool) for pool, states in by_pool.items()
                     if any(TOOFULL_STATES & set(str(s).split("+")) for s in states))


def not_active_pools(by_pool: Mapping[str, Mapping[str, int]], pools: frozenset[int]
                     ) -> frozenset[int]:
    """The given pools with a PG not active (pg_summary's by_pool): only
    those need their PGs read."""
    return frozenset(int(p) for p, states in by_pool.items()
                     if int(p) in pools and any("active" not in str(s).split("+")
                                                for s in states))
