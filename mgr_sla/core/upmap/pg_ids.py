"""PG ids and seeds as Ceph computes them (pg_t, pg_pool_t): which PG maps
like which, and which PGs a pg_num change is still working on. Pure."""
from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..cluster import PoolInfo


def parse_pgid(pgid: str) -> tuple[int, int]:
    """'3.1f' -> (3, 31)."""
    pool, _, seed = pgid.partition(".")
    return int(pool), int(seed, 16)


def pgid_of(pool_id: int, ps: int) -> str:
    """(3, 31) -> '3.1f'."""
    return f"{pool_id}.{ps:x}"


def stable_mod(x: int, b: int, bmask: int) -> int:
    """ceph_stable_mod: x folded into [0, b) so that growing b splits bins."""
    return x & bmask if (x & bmask) < b else x & (bmask >> 1)


def _mask(n: int) -> int:
    return (1 << max(n - 1, 0).bit_length()) - 1


def placement_seed(ps: int, pgp_num: int) -> int:
    """The PG whose CRUSH mapping PG `ps` shares: `pg_pool_t::raw_pg_to_pps`
    hashes stable_mod(ps, pgp_num), so every PG at or above pgp_num maps like
    an ancestor (the parent it split from, while pgp_num has not caught up,
    or the PG it will merge into). 0 or less: pgp_num unknown, its own."""
    if pgp_num <= 0:
        return ps
    return stable_mod(ps, pgp_num, _mask(pgp_num))


def parent_seed(ps: int) -> int:
    """pg_t::get_parent: the PG that `ps` split from (its top bit cleared)."""
    if ps <= 0:
        return 0
    return ps & ~(1 << (ps.bit_length() - 1))


def no_entry_seeds(pool: PoolInfo) -> frozenset[int]:
    """PG seeds that the monitors will not let carry an entry now: at or above
    pg_num_pending (the merge source), and those pending a merge
    (`pg_pool_t::is_pending_merge`). The mon cancels their entries in every
    new epoch and still answers rc=0 to a command that sets one."""
    pg_num, pending = pool.pg_num, pool.pg_num_pending
    if pg_num <= 0 or pending <= 0 or pending >= pg_num:
        return frozenset()
    out = set(range(pending, pg_num))
    out |= {parent_seed(ps) for ps in range(pending, pg_num)}
    return frozenset(out)


def merge_bound_seeds(pool: PoolInfo) -> frozenset[int]:
    """PG seeds that a merge under way will still touch: every PG from
    pg_num_target (or pg_num_pending) up to pg_num merges, and the PG each
    one finally merges into. Before each merge step the mgr removes the
    upmap entries of the next source and its target and waits for the two to
    be clean on the same OSDs (DaemonServer::adjust_pgs), so an entry placed
    on them now is undone, and re-placing it stalls the merge: such PGs get
    no new entries until their last merge is done."""
    pg_num = pool.pg_num
    low = min(x for x in (pool.pg_num_target, pool.pg_num_pending, pg_num) if x > 0) \
        if pg_num > 0 else 0
    if pg_num <= 0 or low >= pg_num:
        return frozenset()
    mask = _mask(low)
    out = set(range(low, pg_num))
    out |= {stable_mod(ps, low, mask) for ps in range(low, pg_num)}
    return frozenset(out)
