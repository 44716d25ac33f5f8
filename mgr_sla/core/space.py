"""Space on the urgent region while pools are shared. Pure.

The capacity gate projects, before a switch to shared, what the extra
copies or moved replicas would put on each urgent OSD. Data keeps growing
while shared, and CRUSH's draw is uneven: a shared pool must also go back
when an urgent OSD it may use passes nearfull_ratio (the urgent pools'
writes would soon stop there) or when its own PGs cannot place their data
(backfill_toofull, recovery_toofull: the copy sharing adds never completes).
"""
from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping

TOOFULL_STATES = frozenset({"backfill_toofull", "recovery_toofull"})


def urgent_fills(used: Mapping[int, float], size: Mapping[int, float]) -> dict[int, float]:
    """used/size of each urgent OSD that reports a size."""
    return {o: used.get(o, 0.0) / size[o] for o in size if size[o] > 0}


def toofull_pools(by_pool: Mapping[str, Mapping[str, int]]) -> frozenset[int]:
    """Pools with a PG that cannot place data for want of space (pg_summary's by_pool)."""
    return frozenset(int(pool) for pool, states in by_pool.items()
                     if any(TOOFULL_STATES & set(str(s).split("+")) for s in states))


def shared_space_faults(fills: Mapping[int, float], nearfull_ratio: float,
                        shared: Iterable[int], toofull: Collection[int]) -> dict[int, str]:
    """Shared pools that must isolate for space (pool id -> why): all of
    them when an urgent OSD is past nearfull_ratio, a pool alone when its
    own PGs are toofull."""
    over = sorted(((o, f) for o, f in fills.items() if f > nearfull_ratio),
                  key=lambda item: (-item[1], item[0]))
    faults: dict[int, str] = {}
    for pool in shared:
        if over:
            osd, fill = over[0]
            faults[pool] = (f"osd.{osd} of the urgent region is {fill:.0%} full, past "
                            f"nearfull_ratio {nearfull_ratio:.0%}"
                            + (f" ({len(over)} urgent OSDs past it)" if len(over) > 1 else ""))
        elif pool in toofull:
            faults[pool] = ("its PGs are backfill_toofull/recovery_toofull: the placement "
                            "sharing needs does not fit")
    return faults


def fullest_if_added(used: Mapping[int, float], size: Mapping[int, float],
                     added: Mapping[int, float]) -> tuple[int, float] | None:
    """The urgent OSD that `added` bytes (per OSD) would fill most, and its
    fill (used + added) / size; None without a sized OSD."""
    fills = {o: (used.get(o, 0.0) + added.get(o, 0.0)) / size[o] for o in size if size[o] > 0}
    if not fills:
        return None
    osd = max(sorted(fills), key=lambda o: fills[o])
    return osd, fills[osd]


def spread_bytes(total: float, weights: Mapping[int, float],
                 pgs: Mapping[int, int] | None = None, pg_num: int = 0) -> dict[int, float]:
    """Bytes sharing puts on each urgent OSD: by the PGs CRUSH maps there
    when known (each PG a 1/pg_num share), else by weight."""
    if pgs and pg_num > 0:
        return {o: total * n / pg_num for o, n in pgs.items()}
    weight = sum(weights.values())
    return {o: total * w / weight for o, w in weights.items()} if weight > 0 else {}
