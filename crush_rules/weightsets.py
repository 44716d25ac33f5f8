"""Per-pool ``choose_args`` for sla_shared and sla_hybrid: one flat position, nothing else.

Both rules are ``take <root>; chooseleaf firstn 0 type <fd>; emit``.  The
weight set of a pool (normal pools for sla_shared, urgent pools with hybrid
placement for sla_hybrid) is the same *flat* set:

* on every real bucket under the root, ``ids`` are the normal-class shadow
  ids (``host~hdd``) and the weights are the normal-class shadow weights,
  copied exactly (16.16);
* devices keep their weight when they are of the normal class and weigh 0
  otherwise (urgent class and any third class).

Straw2 then hashes and weighs exactly as ``take <root> class <normal>`` does,
at every level and for every retry, so a pool maps every PG to the very OSDs,
in the same order, under sla_shared, sla_hybrid and sla_isolated_normal.  The
urgent share in shared mode and the urgent primary of hybrid pools come from
the pg_upmap_items the mgr module installs, not from CRUSH.  The root take is
what lets the monitors accept upmaps to urgent OSDs (``check_pg_upmaps``
drops targets outside the rule's take subtree).

Only one position, ever: a weight set with one weight list per replica
position makes every ceph-mon abort when a bucket is created (Pacific, Reef
and Tentacle; docs/known-issues.md).  ``ensure_flat`` refuses anything else.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from .crushmap import Bucket, ChooseArg, CrushMap
from .errors import CrushError
from .topology import Topology

MAX_POSITIONS = 1  # what we render and install; see the module docstring
COMPAT_INDEX = -1  # choose_args of the compat weight set (ceph osd crush weight-set create-compat)


def _normal_id(crush: CrushMap, item_id: int, normal_class: str) -> int:
    if item_id >= 0:
        return item_id
    shadow = crush.shadow_of(crush.buckets[item_id], normal_class)
    return shadow.id if shadow else item_id


def _normal_row(crush: CrushMap, bucket: Bucket, ids: Sequence[int], normal: str) -> list[int]:
    """The weights ``take <root> class <normal>`` uses for this bucket's items."""
    shadow = crush.shadow_of(bucket, normal)
    if shadow is not None:
        in_shadow = {item.id: item.weight for item in shadow.items}
        return [in_shadow.get(hashed, 0) if hashed != item.id or item.id >= 0 else 0
                for hashed, item in zip(ids, bucket.items)]
    # No shadow bucket: the class rule never walks here; weigh by class anyway.
    row: list[int] = []
    for item in bucket.items:
        if item.id >= 0:
            row.append(item.weight if crush.devices.get(item.id) == normal else 0)
        else:
            row.append(crush.class_weight(item.id, normal))
    return row


def flat_choose_args(crush: CrushMap, topo: Topology) -> tuple[ChooseArg, ...]:
    """The one-position weight set that maps like ``take <root> class <normal>``."""
    normal = topo.scope.normal_class
    args: list[ChooseArg] = []
    seen: set[int] = set()
    for bucket in crush.buckets_under(topo.root.id):
        if bucket.id in seen:
            continue
        seen.add(bucket.id)
        ids = tuple(_normal_id(crush, item.id, normal) for item in bucket.items)
        row = tuple(_normal_row(crush, bucket, ids, normal))
        if all(i == item.id for i, item in zip(ids, bucket.items)):
            ids = ()
        args.append(ChooseArg(bucket.id, (row,), ids))
    result = tuple(args)
    ensure_flat(None, result)
    return result


def shared_choose_args(crush: CrushMap, topo: Topology) -> tuple[ChooseArg, ...]:
    """Weight set of a normal pool for sla_shared (the flat set)."""
    return flat_choose_args(crush, topo)


def hybrid_choose_args(crush: CrushMap, topo: Topology) -> tuple[ChooseArg, ...]:
    """Weight set of an urgent pool for sla_hybrid: the same flat set.

    The urgent primary comes from the module's pg_upmap_items.
    """
    return flat_choose_args(crush, topo)


# -- positions ---------------------------------------------------------------------


def positions(args: Iterable[ChooseArg]) -> int:
    """The number of weight-set positions of a choose_args block (0: ids only)."""
    return max((len(a.weight_set) for a in args), default=0)


def ensure_flat(pool: int | None, args: Iterable[ChooseArg]) -> None:
    """Refuse a weight set of ours with more than one position (never rendered, never set)."""
    count = positions(args)
    if count > MAX_POSITIONS:
        where = f"pool {pool}" if pool is not None else "a pool"
        raise CrushError(
            f"refused: the weight set for {where} has {count} positions; only one-position "
            "(flat) weight sets are installed, because a positional set makes ceph-mon abort "
            "when a bucket is created (docs/known-issues.md)"
        )


def positional_pools(choose_args: Mapping[int, Sequence[ChooseArg]]) -> dict[int, int]:
    """choose_args index -> positions, for every block with more than one position."""
    return {
        index: positions(args) for index, args in sorted(choose_args.items())
        if positions(args) > MAX_POSITIONS
    }


def positional_warning(index: int, count: int, pool_name: str | None = None) -> str:
    """The warning for a positional weight set that is not ours to replace."""
    if index == COMPAT_INDEX:
        what, fix = "the compat weight set", "ceph osd crush weight-set rm-compat"
    else:
        name = pool_name or f"<name of pool {index}>"
        what = f"pool {index}" + (f" ({pool_name})" if pool_name else "")
        what = f"the weight set of {what}"
        fix = f"ceph osd crush weight-set rm {name}"
    return (
        f"{what} (choose_args {index}) has {count} positions: with a positional weight set "
        "in the map, creating a CRUSH bucket (a new host or root) aborts every ceph-mon on "
        f"Pacific, Reef and Tentacle; remove it: {fix} (docs/known-issues.md)"
    )


def shaped_like_ours(crush: CrushMap, root_id: int) -> list[int]:
    """choose_args indexes (pools) that look like ours: the root weighed, with shadow ids."""
    keys: list[int] = []
    for index, args in sorted(crush.choose_args.items()):
        root = [a for a in args if a.bucket_id == root_id]
        if index >= 0 and root and root[0].weight_set and root[0].ids:
            keys.append(index)
    return keys


def positional_failures(
    crush: CrushMap, verified: Sequence[int | None]
) -> tuple[list[str], list[str]]:
    """(R6 failures for the pools verified, warnings for the other positional sets)."""
    failures: list[str] = []
    warnings: list[str] = []
    for index, count in positional_pools(crush.choose_args).items():
        if index in verified:
            failures.append(
                f"R6 pool {index}: its weight set has {count} positions (an older sla-crush); "
                f"a positional set makes ceph-mon abort when a bucket is created: run "
                f"sla-crush install (ceph sla rules apply) to replace it by a flat one"
            )
        else:
            warnings.append(positional_warning(index, count))
    return failures, warnings
