"""Mapping a rule on a pool's PGs: compile a variant map, let osdmaptool map.

osdmaptool cannot change a pool's rule, so the variant map gives the pool's
rule id the steps under test, and keys the weight sets under test by the
pool's id in that osdmap.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from .crushmap import ChooseArg
from .crushtext import Block, render_blocks, render_choose_args, render_rule, with_rule_steps
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
