"""The shared rules of erasure-coded normal pools in a generated map, and their proof.

For each EC pool given (its id and its own erasure rule), generate.py writes
``sla_ec_<own rule>`` (ec_rules.py) and gives the pool the flat weight set the
replicated normal pools get. Nothing may move when the pool swaps rules; that
is proved here on the compiled map with crushtool, for the pool's own placement
seeds: every PG's shards under the shared rule with the set are those of the
own rule without it. The own rule is read, never written.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from .crushmap import ChooseArg, CrushMap
from .crushtext import Block, parse_blocks, render_blocks, render_choose_args
from .ec_rules import EcSharedRule, ec_shared_rule, render_ec_rule
from .errors import CrushError
from .rules import RuleScope
from .tools import Tools

# the compat weight set's index in crushtool text: what `crushtool --test` draws with
COMPAT_INDEX = 2**64 - 1
SEEDS = 1024  # placement seeds proved per pool (a pool's PGs hash into these)


@dataclass(frozen=True)
class EcPool:
    """An erasure-coded normal pool given to the generator."""

    pool_id: int
    rule: str  # its own erasure rule
    size: int  # k+m: its shards per PG


def parse_ec_pool(text: str) -> EcPool:
    """``ID:RULE:K+M`` (the CLI's --ec-pool), e.g. 7:ecpool:3."""
    parts = text.split(":")
    try:
        pool_id, size = int(parts[0]), int(parts[2])
    except (ValueError, IndexError):
        pool_id = size = -1
    if len(parts) != 3 or not parts[1] or pool_id < 0 or size < 2:
        raise CrushError(f"--ec-pool {text!r}: give POOL_ID:OWN_RULE:K+M, e.g. 7:ecpool:3 "
                         "(k+m >= 2)")
    return EcPool(pool_id, parts[1], size)


def ec_shared_rules(crush: CrushMap, scope: RuleScope, pools: Sequence[EcPool]
                    ) -> dict[str, EcSharedRule]:
    """The shared rule of each pool's own rule, by its name (pools on one own
    rule share it); CrushError naming a rule the map lacks or cannot share."""
    out: dict[str, EcSharedRule] = {}
    for pool in pools:
        own = crush.rule_named(pool.rule)
        if own is None:
            raise CrushError(f"pool {pool.pool_id}: the map has no rule {pool.rule}")
        shared = ec_shared_rule(own, crush, scope)
        out[shared.name] = shared
    return out


def ec_rule_blocks(shared: Mapping[str, EcSharedRule], rule_ids: Mapping[str, int], *,
                   with_sizes: bool) -> dict[str, Block]:
    return {name: render_ec_rule(rule, rule_ids[name], with_sizes=with_sizes)
            for name, rule in shared.items()}


def ec_failures(tools: Tools, text: str, pools: Sequence[EcPool],
                shared: Mapping[str, EcSharedRule],
                weight_sets: Mapping[int, Sequence[ChooseArg]]) -> list[str]:
    """What moves when each pool swaps to its shared rule drawing with its
    weight set (weight_sets[pool id]: the flat set generated, or the map's own
    set when verifying it), on a map's text (empty: nothing); R5, and R4 for a
    pool without a set.

    The own rule is not tried with the set: it takes a class, and crushtool
    gives the class shadow trees no weight set, while Ceph clones the pool's
    set into them. The shared rule draws the same set on the real buckets, so
    wherever the clone would move a shard (a reweight or a new OSD written
    into the set, a drift), the shared rule maps unlike the tree too."""
    if not pools:
        return []
    bare = [b for b in parse_blocks(text) if b.kind != "choose_args"]
    plain = tools.compile(render_blocks(bare))
    failures: list[str] = []
    by_source = {rule.source: rule for rule in shared.values()}
    weighed_by_set: dict[tuple[ChooseArg, ...], bytes] = {}
    for pool in pools:
        args = tuple(weight_sets.get(pool.pool_id) or ())
        if not args:
            failures.append(f"R4 pool {pool.pool_id}: no sla weight set")
            continue
        if args not in weighed_by_set:
            weighed_by_set[args] = tools.compile(render_blocks([*bare, render_choose_args(
                COMPAT_INDEX, args, nearest=True)]))
        weighed, mine = weighed_by_set[args], by_source[pool.rule]
        ids = _ids_in(tools, weighed, (pool.rule, mine.name))
        reference = tools.rule_mappings(plain, ids[pool.rule], pool.size, SEEDS, pool.pool_id)
        got = tools.rule_mappings(weighed, ids[mine.name], pool.size, SEEDS, pool.pool_id)
        moved = sum(1 for a, b in zip(reference, got) if a != b)
        if moved or len(got) != len(reference):
            failures.append(
                f"R5 pool {pool.pool_id}: {mine.name} with its weight set maps {moved} of "
                f"{len(reference)} placement seeds unlike {pool.rule} (shards would move)")
    return failures


def _ids_in(tools: Tools, binary: bytes, names: Sequence[str]) -> dict[str, int]:
    rules = {str(r["rule_name"]): int(r["rule_id"]) for r in tools.dump(binary)["rules"]}
    lacking = [name for name in names if name not in rules]
    if lacking:
        raise CrushError(f"the map has no rule {lacking[0]}; run 'ceph sla rules apply'")
    return {name: rules[name] for name in names}
