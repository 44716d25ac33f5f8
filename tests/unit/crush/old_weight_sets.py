"""Maps as an older sla-crush left them: positional weight sets, made by hand.

The old sla_shared set had one weight list per replica position (position 0
the flat row, later positions weighing urgent devices too); the old sla_hybrid
set weighed urgent devices only at position 0 and normal devices after it.
Neither is generated any more; tests build them here to check the upgrade.
"""

from __future__ import annotations

from crush_rules.crushmap import ChooseArg, CrushMap, crushmap_from_dump
from crush_rules.crushtext import (
    parse_blocks,
    render_blocks,
    render_choose_args,
    replace_owned,
    with_exact_weights,
)
from crush_rules.rules import RuleScope
from crush_rules.tools import Tools
from crush_rules.topology import Topology, analyse
from crush_rules.weightsets import flat_choose_args


def _class_row(crush: CrushMap, bucket_id: int, device_class: str) -> tuple[int, ...]:
    return tuple(
        (item.weight if crush.devices.get(item.id) == device_class else 0) if item.id >= 0
        else crush.class_weight(item.id, device_class)
        for item in crush.buckets[bucket_id].items
    )


def old_shared_args(crush: CrushMap, topo: Topology) -> tuple[ChooseArg, ...]:
    flat = {a.bucket_id: a for a in flat_choose_args(crush, topo)}
    out = []
    for bucket in crush.buckets_under(topo.root.id):
        real = tuple(item.weight for item in bucket.items)
        arg = flat[bucket.id]
        out.append(ChooseArg(bucket.id, arg.weight_set[:1] + (real,) * (topo.size - 1), arg.ids))
    return tuple(out)


def old_hybrid_args(crush: CrushMap, topo: Topology) -> tuple[ChooseArg, ...]:
    normal, urgent = topo.scope.normal_class, topo.scope.urgent_class
    return tuple(
        ChooseArg(b.id, (_class_row(crush, b.id, urgent),)
                  + (_class_row(crush, b.id, normal),) * (topo.size - 1))
        for b in crush.buckets_under(topo.root.id)
    )


def foreign_positional_args(crush: CrushMap, topo: Topology) -> tuple[ChooseArg, ...]:
    """What ``ceph osd crush weight-set create POOL positional`` makes: real weights
    at every position."""
    return tuple(
        ChooseArg(b.id, (tuple(i.weight for i in b.items),) * topo.size)
        for b in crush.buckets_under(topo.root.id)
    )


def with_positional_sets(
    tools: Tools, binary: bytes, shared: tuple[int, ...] = (), hybrid: tuple[int, ...] = (),
    foreign: tuple[int, ...] = (), size: int = 3,
) -> bytes:
    """``binary`` with old-style positional weight sets for the given pool ids."""
    crush = crushmap_from_dump(tools.dump(binary))
    topo = analyse(crush, RuleScope(), size)
    blocks = with_exact_weights(parse_blocks(tools.decompile(binary)), crush)
    args = {p: old_shared_args(crush, topo) for p in shared}
    args.update({p: old_hybrid_args(crush, topo) for p in hybrid})
    args.update({p: foreign_positional_args(crush, topo) for p in foreign})
    rendered = {p: render_choose_args(p, a) for p, a in args.items()}
    return tools.compile(render_blocks(replace_owned(blocks, {}, rendered)))
