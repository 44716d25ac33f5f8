"""One erasure-coded PG's plan: which shards move to urgent OSDs, and where to. Pure.

An EC PG's shards are positions, not a set: a pg_upmap_items pair replaces an
OSD in place (OSDMap::_apply_upmap), so shard i stays shard i on its new OSD.
Of a PG's k+m shards at most m move, so k stay on the normal region and every
PG can be read with all urgent OSDs lost (normal inclusion for EC); how many
by the pool's share, as for replicated pools (`urgent_count` on the seed's
`share_ranks` place); which by the pool's shard preference (`shard_order`);
each target drawn as for replicated pools (`_draw`: an urgent OSD, by weight,
in a failure domain no other shard uses, the moved shard's own included).

A PG with a hole (a shard whose OSD is down, or that CRUSH could not
place) gets no new pairs and keeps the entry it has (`plan_ec_pool`).
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from .pg_ids import no_entry_seeds, parse_pgid, pgid_of, placement_seed
from .pg_plan import _draw, share_ranks, urgent_count, urgent_member_cap
from .planner import PoolPlan
from .regions import CRUSH_ITEM_NONE, MappingFaults, Pairs, Regions, hash_of

if TYPE_CHECKING:
    from ..cluster import PoolInfo

_SALT_SHARD = 0xEC5  # the per-(PG, shard) rank within a preference group
PREFERENCES = ("data", "parity")


def ec_target_share(regions: Regions, k: int, m: int, min_size: int = 0) -> float:
    """Share of an EC pool's shards on urgent OSDs in shared mode: weight-proportional
    over the OSDs that are in, capped at the shards a PG may have there
    (`urgent_member_cap`: min_size stay on the normal class, or m with
    share_past_min_size) and by the urgent failure domains."""
    urgent = regions.weight_of(regions.urgent_class)
    normal = regions.weight_of(regions.normal_class)
    if k < 1 or m < 1 or urgent <= 0 or normal <= 0:
        return 0.0
    cap = urgent_member_cap(regions, k + m, min_size, k, m)
    return min(urgent / (urgent + normal), cap / (k + m), regions.urgent_domains / (k + m))


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


def own_mapping(up: Sequence[int], pairs: Pairs) -> list[int]:
    """A PG's shards as CRUSH maps them, from its up set and its entry's pairs
    (each pair replaced a shard in place: its target is put back to its source)."""
    back = {to: source for source, to in pairs}
    return [back.get(o, o) for o in up]


def plan_ec_pg(pgid: str, raw: Sequence[int], regions: Regions, k: int, m: int,
               share: float, *, prefer: str = "data", seed: int | None = None,
               place: float | None = None, skip_down: bool = False,
               cap: int | None = None) -> Pairs:
    """The (from, to) pairs that place one EC PG; `raw` is its CRUSH mapping by shard.

    `seed`: the PG's placement seed (its own by default); `place`: the seed's
    `share_ranks` place; `cap`: the most shards it may have on urgent OSDs
    (m without one). No pairs for a mapping that is not k+m shards of known
    OSDs (a hole, an OSD the regions do not hold)."""
    if len(raw) != k + m or any(o not in regions.osds for o in raw):
        return ()
    pool, ps = parse_pgid(pgid)
    key = (pool, ps if seed is None else seed)
    urgent = regions.urgent_class
    want = min(urgent_count(key, k + m, share, place), m if cap is None else min(cap, m))
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


def plan_ec_pool(up_sets: Mapping[str, Sequence[int]], current: Mapping[str, Pairs],
                 regions: Regions, pool: PoolInfo, goal: str) -> PoolPlan:
    """An EC pool's entries on this epoch: `shared`, each PG's planned pairs
    (on its own mapping: its up set with its entry's pairs undone); `isolated`,
    no entry that sends a shard to an urgent OSD.

    An entry lives as long as the monitors let it (clean_pg_upmaps), or a
    shard would move twice, off and back: a PG with a member away (a hole: an
    OSD down, as in a reboot under noout) keeps its entry; a split's child
    takes its parent's pairs at once (`keeps`: its data sits where they put
    it, and the mon gives a child no entry); while the pool splits or merges
    no PG gets a new entry otherwise: only removals go out."""
    k, m, urgent = pool.ec_k, pool.ec_m, regions.members(regions.urgent_class)
    cap = urgent_member_cap(regions, k + m, pool.min_size, k, m)
    share = ec_target_share(regions, k, m, pool.min_size) if goal == "shared" else 0.0
    hold = pool.splitting or pool.merging
    barred = no_entry_seeds(pool)
    places = share_ranks(pool.pool_id, pool.pgp_num or len(up_sets)) if share else {}
    wanted: dict[str, Pairs] = {}
    set_items: dict[str, Pairs] = {}
    remove: list[str] = []
    keeps: set[str] = set()
    left: dict[str, int] = {}
    for pgid, up in sorted(up_sets.items()):
        ps = parse_pgid(pgid)[1]
        have = tuple(current.get(pgid, ()))
        want: Pairs = ()
        if share and ps not in barred:
            seed = placement_seed(ps, pool.pgp_num)
            parents = _parents_pairs(up, current.get(pgid_of(pool.pool_id, seed), ())) \
                if not have and seed != ps else ()
            why = "keep" if parents else "down" if _away(up, regions) else "hold" if hold \
                else ""
            want = parents or (have if why else plan_ec_pg(
                pgid, own_mapping(up, have), regions, k, m, share, seed=seed,
                place=places.get(seed), skip_down=True, cap=cap))
            if why == "keep":
                keeps.add(pgid)
            elif why == "down":  # its member comes back to the entry it left
                left["down"] = left.get("down", 0) + 1
        if want:
            wanted[pgid] = want
        if sorted(want) != sorted(have) and (want or any(t in urgent for _, t in have)):
            if want:
                set_items[pgid] = want
            else:
                remove.append(pgid)
    return PoolPlan(pool.pool_id, wanted, set_items, tuple(remove), keeps=frozenset(keeps),
                    shrinks=frozenset(remove) if goal == "shared" else frozenset(), left=left)


def _away(up: Sequence[int], regions: Regions) -> bool:
    """A member of the PG is away: a hole (a shard whose OSD is down, or that
    CRUSH could not place) or an OSD that is down."""
    return any(o == CRUSH_ITEM_NONE or o not in regions.osds or not regions.osds[o].up
               for o in up)


def _parents_pairs(up: Sequence[int], parents: Pairs) -> Pairs:
    """A split's child (no entry of its own, mapping like its parent): the
    parent's pairs where each one's source holds a shard of the child, else none."""
    members = set(up)
    if not parents or any(source not in members for source, _ in parents):
        return ()
    return tuple(parents)


def ec_faults(up_sets: Mapping[str, Sequence[int]], regions: Regions, pool: PoolInfo
              ) -> MappingFaults:
    """What must never be true of an EC pool's real up sets: an OSD holding
    two shards, two shards in one failure domain, more than m shards on urgent
    OSDs (fewer than k left on the normal region: `no_normal`)."""
    twice, domains, short = [], [], []
    urgent = regions.urgent_class
    for pgid, up in sorted(up_sets.items()):
        placed = [o for o in up if o in regions.osds]
        if len(set(placed)) != len(placed):
            twice.append(pgid)
        if len({regions.osds[o].domain for o in placed}) != len(placed):
            domains.append(pgid)
        if sum(1 for o in placed if regions.osds[o].cls == urgent) > pool.ec_m:
            short.append(pgid)
    return MappingFaults(tuple(twice), tuple(domains), tuple(short))


def ec_urgent_pgs(up_sets: Mapping[str, Sequence[int]], current: Mapping[str, Pairs],
                  regions: Regions, pool: PoolInfo) -> dict[int, int]:
    """Per urgent OSD, the pool's PGs with a shard there once shared: its
    planned entries (the admission's projection)."""
    plan = plan_ec_pool(up_sets, current, regions, pool, "shared")
    return plan.urgent_pgs(regions.members(regions.urgent_class))
