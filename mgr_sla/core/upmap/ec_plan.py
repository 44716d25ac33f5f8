"""One erasure-coded PG's plan: which shards move to urgent OSDs, and where to. Pure.

An EC PG's shards are positions, not a set: a pg_upmap_items pair replaces an
OSD in place (OSDMap::_apply_upmap), so shard i stays shard i on its new OSD.
Of a PG's k+m shards at most m move, so k stay on the normal region and every
PG can be read with all urgent OSDs lost (normal inclusion for EC); how many
by the pool's share, as for replicated pools (`urgent_count` on the seed's
`share_ranks` place); which by the pool's shard preference (`shard_order`);
each target drawn as for replicated pools (`_draw`: an urgent OSD, by weight,
in a failure domain no other shard uses, the moved shard's own included).

A PG with a hole (a shard CRUSH could not place) gets no pairs: the monitors
cancel any upmap of such a PG (check_pg_upmaps finds the hole outside the
rule's take), and the PG is degraded already.
"""
from __future__ import annotations

from collections.abc import Sequence

from .pg_ids import parse_pgid
from .pg_plan import _draw, urgent_count
from .regions import Pairs, Regions, hash_of

_SALT_SHARD = 0xEC5  # the per-(PG, shard) rank within a preference group
PREFERENCES = ("data", "parity")


def ec_target_share(regions: Regions, k: int, m: int) -> float:
    """Share of an EC pool's shards on urgent OSDs in shared mode: weight-proportional
    over the OSDs that are in, capped at m of k+m and by the urgent failure domains."""
    urgent = regions.weight_of(regions.urgent_class)
    normal = regions.weight_of(regions.normal_class)
    if k < 1 or m < 1 or urgent <= 0 or normal <= 0:
        return 0.0
    return min(urgent / (urgent + normal), m / (k + m), regions.urgent_domains / (k + m))


def shard_order(key: tuple[int, int], k: int, m: int, prefer: str) -> list[int]:
    """A PG's shard positions in the order they move: the preferred group first
    (`data`: shards 0..k-1, `parity`: k..k+m-1), each group ranked by a hash of
    (PG, position), so the pool's moved shards spread over the positions."""
    if prefer not in PREFERENCES:
        raise ValueError(f"shard preference {prefer!r}; use one of {', '.join(PREFERENCES)}")
    data, parity = list(range(k)), list(range(k, k + m))
    groups = (data, parity) if prefer == "data" else (parity, data)
    return [p for group in groups
            for p in sorted(group, key=lambda p: (hash_of(key[0], key[1], p, _SALT_SHARD), p))]


def plan_ec_pg(pgid: str, raw: Sequence[int], regions: Regions, k: int, m: int,
               share: float, *, prefer: str = "data", seed: int | None = None,
               place: float | None = None, skip_down: bool = False) -> Pairs:
    """The (from, to) pairs that place one EC PG; `raw` is its CRUSH mapping by shard.

    `seed`: the PG's placement seed (its own by default); `place`: the seed's
    `share_ranks` place. No pairs for a mapping that is not k+m shards of known
    OSDs (a hole, an OSD the regions do not hold)."""
    if len(raw) != k + m or any(o not in regions.osds for o in raw):
        return ()
    pool, ps = parse_pgid(pgid)
    key = (pool, ps if seed is None else seed)
    urgent = regions.urgent_class
    want = min(urgent_count(key, k + m, share, place), m)
    holders = list(raw)
    on_urgent = sum(1 for o in holders if regions.osds[o].cls == urgent)
    pairs: dict[int, int] = {}
    for pos in shard_order(key, k, m, prefer):
        if on_urgent >= want:
            break
        source = holders[pos]
        if regions.osds[source].cls == urgent:
            continue
        others = [o for i, o in enumerate(holders) if i != pos]
        target = _draw(key, source, urgent, others, regions, skip_down)
        if target is not None:
            pairs[source] = target
            holders[pos] = target
            on_urgent += 1
    return tuple(sorted(pairs.items()))
