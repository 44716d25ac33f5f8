"""Mapping a rule on a pool's PGs: compile a variant map, let osdmaptool map.

osdmaptool cannot change a pool's rule, so the variant map gives the pool's
rule id the steps under test, and keys the weight sets under test by the
pool's id in that osdmap.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass

from .crushmap import ChooseArg
from .crushtext import Block, render_blocks, render_choose_args, render_rule, with_rule_steps
from .errors import CrushError
from .tools import Tools

PROBE_RULE = "sla_probe"


@dataclass(frozen=True)
class Pool:
    """A pool of an osdmap: its id, its rule id, and how many PGs to look at."""

    id: int
    rule_id: int
    pg_num: int


def variant_text(
    blocks: Sequence[Block],
    pool: Pool,
    steps: Sequence[str],
    choose_args: Sequence[ChooseArg] | None,
    *,
    replace_rule: bool,
) -> str:
    """The map where pool.rule_id runs ``steps`` and pool.id has ``choose_args``.

    replace_rule=True drops whatever rule has the id and puts a plain
    replicated probe rule there (synthetic osdmaps whose pool uses rule 0,
    which the map may not have or may use for an erasure rule).
    """
    body = [b for b in blocks if not (b.kind == "choose_args" and b.key == str(pool.id))]
    if replace_rule:
        probe = render_rule(PROBE_RULE, pool.rule_id, steps, with_sizes=True)
        body = [b for b in body if not (b.kind == "rule" and _rule_id(b) == pool.rule_id)]
        body = [b for b in body if not (b.kind == "rule" and b.key == PROBE_RULE)]
        at = max((i for i, b in enumerate(body) if b.kind in ("rule", "bucket")), default=0) + 1
        body.insert(at, probe)
    else:
        body = with_rule_steps(body, pool.rule_id, steps)
    if choose_args:
        at = max((i for i, b in enumerate(body) if b.kind in ("rule", "choose_args")), default=0)
        body.insert(at + 1, render_choose_args(pool.id, choose_args, nearest=True))
    return render_blocks(body)


def _rule_id(block: Block) -> int:
    for line in block.lines:
        words = line.split("#")[0].split()
        if len(words) == 2 and words[0] in ("id", "ruleset"):
            return int(words[1])
    return -1


def map_rule(
    tools: Tools,
    blocks: Sequence[Block],
    osdmap: bytes,
    pool: Pool,
    steps: Sequence[str],
    choose_args: Sequence[ChooseArg] | None,
    *,
    synthetic: bool,
) -> dict[int, tuple[int, ...]]:
    """PG seed -> OSDs for the first pool.pg_num PGs of the pool under the variant map."""
    text = variant_text(blocks, pool, steps, choose_args, replace_rule=synthetic)
    crush = tools.compile(text)
    mapped = tools.map_pgs(osdmap, crush, pool.id, mark_up_in=synthetic,
                           pg_num=pool.pg_num if synthetic else None)
    # raw CRUSH mappings: what the rules themselves do, before upmaps and temps
    return {seed: m.raw for seed, m in mapped.items() if seed < pool.pg_num}


# -- a rule at a pool size other than the osdmap's ------------------------------------
#
# osdmaptool maps a pool at its own size and cannot change it, and a rule's
# ``firstn -k`` counts depend on that size.  crush_do_rule (mapper.c) runs a
# rule's take ... emit blocks independently: a choose step draws
# numrep = k (k > 0) or k + size (k <= 0; none if that is <= 0) items, at most
# ``size`` of them, reps 0, 1, ... in order, so the items of a smaller count are
# a prefix of a larger one's; emit appends while the result is shorter than
# size; only set_* steps carry over to later blocks.  So the rule at size S is
# each block alone, with its count made absolute, mapped at any pool size of at
# least min(numrep, S), concatenated and cut to S items.


@dataclass(frozen=True)
class RuleBlock:
    """One take ... emit block: steps with a placeholder count, and its count."""

    steps: tuple[str, ...]  # the choose step's count is "{n}"
    count: int  # as written: > 0 absolute, <= 0 relative to the pool size

    def numrep(self, size: int) -> int:
        return self.count if self.count > 0 else self.count + size

    def absolute(self, size: int) -> tuple[str, ...]:
        n = str(self.numrep(size))
        return tuple(s.replace("{n}", n) for s in self.steps)


def rule_blocks(steps: Sequence[str]) -> list[RuleBlock]:
    """The take/choose/emit blocks of a replicated firstn rule; CrushError for other shapes."""
    out: list[RuleBlock] = []
    sets: list[str] = []
    current: list[str] | None = None
    count: int | None = None
    for step in steps:
        words = step.split()
        op = words[0] if words else ""
        if op.startswith("set_"):
            sets.append(step)
            if current is not None:
                current.append(step)
        elif op == "take":
            if current is not None:
                raise CrushError(f"'step {step}' follows a take without an emit")
            current, count = list(sets) + [step], None
        elif op in ("choose", "chooseleaf"):
            if current is None:
                raise CrushError(f"'step {step}' comes before any take")
            if count is not None:
                raise CrushError("a take ... emit block has two choose steps")
            if len(words) != 5 or words[1] != "firstn" or words[3] != "type":
                raise CrushError(f"'step {step}' is not 'choose[leaf] firstn N type T'")
            try:
                count = int(words[2])
            except ValueError:
                raise CrushError(f"'step {step}' has no integer count") from None
            current.append(f"{op} firstn {{n}} type {words[4]}")
        elif op == "emit":
            if current is None or count is None:
                raise CrushError("an emit without a take and a choose step before it")
            out.append(RuleBlock(tuple(current + [step]), count))
            current, count = None, None
        else:
            raise CrushError(f"'step {step}' cannot be evaluated at a given pool size")
    if current is not None:
        raise CrushError("the rule ends without an emit")
    return out


def pool_sizes_needed(blocks: Sequence[RuleBlock], size: int) -> int:
    """The smallest pool size on which every block of the rule at ``size`` can be mapped."""
    return max((min(b.numrep(size), size) for b in blocks if b.numrep(size) > 0), default=1)


def rule_at_size(
    blocks: Sequence[RuleBlock],
    size: int,
    map_block: Callable[[tuple[str, ...]], Mapping[int, Sequence[int]]],
    pgs: Collection[int],
) -> dict[int, tuple[int, ...]]:
    """PG seed -> OSDs of the rule at ``size`` replicas, from each block mapped alone."""
    parts = [map_block(b.absolute(size)) for b in blocks if b.numrep(size) > 0]
    return {pg: tuple(o for part in parts for o in part.get(pg, ()))[:size] for pg in pgs}
