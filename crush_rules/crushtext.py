"""Reading and writing crushtool's text format.

We keep the decompiled text of everything we do not own verbatim (so nothing
we do not understand is lost) and only:

* put back exact weights, because the decompiler rounds them to 3 decimals
  and a recompiled map would otherwise map differently;
* replace or append our own rules and ``choose_args`` blocks.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from .crushmap import ChooseArg, CrushMap
from .errors import CrushError
from .fixedpoint import format_weight, nearest_text_weight

_BLOCK_START = re.compile(r"^\s*(\S+)\s+(\S+)\s*\{\s*(#.*)?$")
_ITEM_LINE = re.compile(r"^(\s*item\s+)(\S+)(.*)$")
_WEIGHT_CLAUSE = re.compile(r"\s+weight\s+\S+")


@dataclass(frozen=True)
class Block:
    """One top-level piece of crushtool text.

    kind is ``line`` (a lone line: tunable, device, type, comment), ``bucket``,
    ``rule`` or ``choose_args``; key is the bucket/rule name or choose_args index.
    """

    kind: str
    key: str
    lines: tuple[str, ...]


def _strip_comment(line: str) -> str:
    return line.split("#", 1)[0]


def parse_blocks(text: str) -> list[Block]:
    blocks: list[Block] = []
    current: list[str] = []
    kind = key = ""
    depth = 0
    for line in text.splitlines():
        code = _strip_comment(line)
        if depth == 0:
            match = _BLOCK_START.match(line)
            if match is None:
                if "}" in code:
                    raise CrushError(f"unbalanced '}}' in crush text: {line.strip()!r}")
                blocks.append(Block("line", "", (line,)))
                continue
            head, key = match.group(1), match.group(2)
            kind = head if head in ("rule", "choose_args") else "bucket"
            current = []
        current.append(line)
        depth += code.count("{") - code.count("}")
        if depth < 0:
            raise CrushError(f"unbalanced '}}' in crush text: {line.strip()!r}")
        if depth == 0:
            blocks.append(Block(kind, key, tuple(current)))
    if depth:
        raise CrushError("crush text ends inside a block (missing '}')")
    return blocks


def render_blocks(blocks: Iterable[Block]) -> str:
    return "\n".join(line for block in blocks for line in block.lines) + "\n"


# -- exact weights -------------------------------------------------------------


def exact_bucket_lines(block: Block, crush: CrushMap) -> Block:
    """The bucket block with every ``item ... weight W`` made exact (from the dump)."""
    bucket = crush.bucket_named(block.key)
    if bucket is None:
        raise CrushError(f"bucket {block.key} is in the text but not in the compiled map")
    index = 0
    out: list[str] = []
    for line in block.lines:
        match = _ITEM_LINE.match(line)
        if match is None:
            out.append(line)
            continue
        item = bucket.items[index]
        index += 1
        rest = _WEIGHT_CLAUSE.sub("", match.group(3))
        if item.id < 0 and item.weight == crush.buckets[item.id].weight:
            # No weight clause: the compiler uses the child's exact sum, which
            # also works for sums too large for crushtool's float parsing.
            out.append(f"{match.group(1)}{match.group(2)}{rest}")
            continue
        try:
            weight = format_weight(item.weight)
        except ValueError:
            # only weights of 256.0 and more that crushtool's float parsing
            # cannot produce (EXACT_LIMIT); set by `ceph osd crush reweight`
            raise CrushError(
                f"bucket {bucket.name} item {match.group(2)} has weight {item.weight / 0x10000:.5f}"
                " which crushtool text cannot carry exactly; reweight that item to a value with "
                "3 decimals (ceph osd crush reweight-subtree or reweight)"
            ) from None
        comment = ""
        if "#" in rest:
            rest, comment = rest.split("#", 1)
            comment = "\t#" + comment
        out.append(f"{match.group(1)}{match.group(2)} weight {weight}{rest}{comment}")
    if index != len(bucket.items):
        raise CrushError(f"bucket {bucket.name}: text and compiled map disagree on its items")
    return Block(block.kind, block.key, tuple(out))


def with_exact_weights(blocks: Sequence[Block], crush: CrushMap) -> list[Block]:
    out: list[Block] = []
    for block in blocks:
        if block.kind == "bucket":
            out.append(exact_bucket_lines(block, crush))
        elif block.kind == "choose_args":
            out.append(render_choose_args(int(block.key), crush.choose_args[int(block.key)]))
        else:
            out.append(block)
    return out


# -- our own blocks ------------------------------------------------------------


def render_rule(
    name: str, rule_id: int, steps: Sequence[str], *, with_sizes: bool, max_size: int = 10,
    min_size: int = 1, rule_type: str = "replicated",
) -> Block:
    lines = [f"rule {name} {{", f"\tid {rule_id}", f"\ttype {rule_type}"]
    if with_sizes:
        lines += [f"\tmin_size {min_size}", f"\tmax_size {max_size}"]
    lines += [f"\tstep {step}" for step in steps]
    lines.append("}")
    return Block("rule", name, tuple(lines))


def render_choose_args(index: int, args: Iterable[ChooseArg], *, nearest: bool = False) -> Block:
    """crushtool text of a choose_args block.

    nearest: weights crushtool text cannot carry (256.0 and more, off its
    float32 grid) are written as the nearest value it can (our own sets,
    verified on the compiled map); otherwise such a weight is refused.
    """
    def text(weight: int) -> str:
        if nearest:
            return nearest_text_weight(weight)[0]
        try:
            return format_weight(weight)
        except ValueError:
            raise CrushError(
                f"the weight set choose_args {index} has weight {weight / 0x10000:.5f}, which "
                "crushtool text cannot carry exactly; sla-crush edits maps through that text, so "
                f"it cannot keep this set unchanged: remove it (ceph osd crush weight-set rm "
                f"<pool {index}>, or rm-compat for -1) or set its weights below 256"
            ) from None

    lines = [f"choose_args {index} {{"]
    for arg in sorted(args, key=lambda a: -a.bucket_id):
        lines += ["  {", f"    bucket_id {arg.bucket_id}"]
        if arg.weight_set:
            lines.append("    weight_set [")
            for position in arg.weight_set:
                lines.append("      [ " + " ".join(text(w) for w in position) + " ]")
            lines.append("    ]")
        if arg.ids:
            lines.append("    ids [ " + " ".join(str(i) for i in arg.ids) + " ]")
        lines.append("  }")
    lines.append("}")
    return Block("choose_args", str(index), tuple(lines))


def replace_owned(
    blocks: Sequence[Block],
    rules: Mapping[str, Block],
    choose_args: Mapping[int, Block],
) -> list[Block]:
    """Replace rules/choose_args we own in place and append the new ones.

    Rules go after the last rule, choose_args after the last choose_args (or
    the rules), so the order of everything else is untouched.
    """
    pending_rules = dict(rules)
    pending_args = {str(k): v for k, v in choose_args.items()}
    out: list[Block] = []
    for block in blocks:
        if block.kind == "rule" and block.key in pending_rules:
            out.append(pending_rules.pop(block.key))
        elif block.kind == "choose_args" and block.key in pending_args:
            out.append(pending_args.pop(block.key))
        else:
            out.append(block)

    def last_index(kinds: tuple[str, ...]) -> int:
        for i in range(len(out) - 1, -1, -1):
            if out[i].kind in kinds:
                return i
        for i in range(len(out) - 1, -1, -1):
            if out[i].kind == "bucket":
                return i
        return len(out) - 1

    if pending_rules:
        at = last_index(("rule",)) + 1
        out[at:at] = list(pending_rules.values())
    if pending_args:
        at = last_index(("choose_args", "rule")) + 1
        out[at:at] = [pending_args[k] for k in sorted(pending_args, key=int)]
    return out


def rule_steps_in_text(block: Block) -> list[str]:
    return [line.strip()[5:] for line in block.lines if line.strip().startswith("step ")]


def with_rule_steps(blocks: Sequence[Block], rule_id: int, steps: Sequence[str]) -> list[Block]:
    """A copy where the rule with id ``rule_id`` runs ``steps`` (for variant maps)."""
    out: list[Block] = []
    found = False
    for block in blocks:
        if block.kind == "rule" and any(
            line.split("#")[0].split() == ["id", str(rule_id)]
            or line.split("#")[0].split() == ["ruleset", str(rule_id)]
            for line in block.lines
        ):
            found = True
            kept = [line for line in block.lines[:-1] if not line.strip().startswith("step ")]
            out.append(
                Block("rule", block.key, tuple(kept + [f"\tstep {s}" for s in steps] + ["}"]))
            )
        else:
            out.append(block)
    if not found:
        raise CrushError(f"no rule with id {rule_id} in the map")
    return out

