"""Generate the SLA rules and their flat weight sets into a CRUSH map, and verify.

The flow is: dump the input (exact weights) -> check the topology -> build
rule and choose_args text (one-position weight sets only) -> compile -> prove
nothing pre-existing changed -> verify requirements R1-R8 on a pool's PG
mappings.  Any failure raises CrushError and nothing is written by the caller.
The guards are in safety.py; verification maps the rules per verify_plan.py
and checks them in verify_run.py.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from . import rules as R
from .crushmap import ChooseArg, CrushMap, crushmap_from_dump
from .crushtext import (
    Block,
    parse_blocks,
    render_blocks,
    render_choose_args,
    render_rule,
    replace_owned,
    with_exact_weights,
)
from .ec_generate import EcPool, ec_failures, ec_rule_blocks, ec_shared_rules
from .ec_rules import EcSharedRule
from .errors import CrushError
from .reports import VerifyReport
from .safety import REPORT, check_output, positional_notes
from .tools import Tools
from .topology import analyse
from .verify_plan import VerifyPlan, live_plan, synthetic_osdmap, synthetic_plan

# tests import _copy_region_failure from here, where it lived
from .verify_run import _copy_region_failure as _copy_region_failure
from .verify_run import verify_rules
from .weightsets import (
    MAX_POSITIONS,
    ensure_flat,
    hybrid_choose_args,
    positional_failures,
    shaped_like_ours,
    shared_choose_args,
)


@dataclass(frozen=True)
class GenerateOptions:
    """What to generate; the CLI flags of ``sla-crush generate`` map onto these fields."""

    normal_class: str = R.DEFAULT_SCOPE.normal_class
    urgent_class: str = R.DEFAULT_SCOPE.urgent_class
    failure_domain: str = R.DEFAULT_SCOPE.failure_domain
    size: int = R.DEFAULT_SIZE
    pool_ids: tuple[int, ...] = ()  # normal pools: get sla_shared weight sets
    urgent_pool_ids: tuple[int, ...] = ()  # urgent pools: get sla_hybrid weight sets
    release: str = R.DEFAULT_RELEASE
    root: str = R.DEFAULT_SCOPE.root
    pg_num: int = 256  # PGs of the synthetic pool the offline verification maps
    # base sizes N of the copy rules sla_copy_N written and verified (R8); 1..9
    copy_sizes: tuple[int, ...] = (R.DEFAULT_SIZE,)
    # erasure-coded normal pools: sla_ec_<own rule> and a flat weight set each
    ec_pools: tuple[EcPool, ...] = ()

    def scope(self) -> R.RuleScope:
        return R.RuleScope(self.root, self.failure_domain, self.normal_class, self.urgent_class)

    def copy_rule_names(self) -> tuple[str, ...]:
        """sla_copy_N for each copy size, ascending; CrushError for a size outside 1..9."""
        return tuple(R.copy_rule_name(n) for n in R.copy_sizes(self.copy_sizes))


@dataclass(frozen=True)
class Generated:
    binary: bytes  # the compiled map to install
    text: str  # the same map as text in the requested release's syntax
    rule_ids: Mapping[str, int]
    report: VerifyReport
    changed: bool  # False when the output equals the input
    seconds: Mapping[str, float] = field(default_factory=dict)
    # pools given whose weight set in the input had several positions (an older
    # sla-crush): replaced by the flat set, so their PGs under sla_shared /
    # sla_hybrid move back to the sla_isolated_normal placement.
    upgraded_pools: tuple[int, ...] = ()


# -- input -------------------------------------------------------------------------


def check_release(release: str) -> None:
    if release not in R.RELEASES:
        raise CrushError(
            f"unknown --release {release}; use one of {', '.join(R.RELEASES)} "
            "(a later release: squid's syntax, --release squid)"
        )


def with_rule_sizes(text: str) -> str:
    """The text with ``min_size 1`` / ``max_size 10`` in every rule that has neither."""
    out: list[str] = []
    try:
        blocks = parse_blocks(text)
    except CrushError:
        return text  # crushtool's own error says more
    for block in blocks:
        lines = list(block.lines)
        if block.kind == "rule" and not any(
                line.split("#")[0].split()[:1] in (["min_size"], ["max_size"]) for line in lines):
            at = next((i + 1 for i, line in enumerate(lines)
                       if line.split("#")[0].split()[:1] == ["type"]), 1)
            lines[at:at] = ["\tmin_size 1", "\tmax_size 10"]
        out.extend(lines)
    return "\n".join(out) + "\n"


def read_map(tools: Tools, data: bytes) -> bytes:
    """The compiled map from a binary or text crush map (detected by content)."""
    if not data.strip():
        raise CrushError("the crush map is empty")
    try:
        text = data.decode("utf-8")
        is_text = "\0" not in text and ("{" in text or "device" in text or "tunable" in text)
    except UnicodeDecodeError:
        is_text = False
    if is_text:
        if text.lstrip().startswith("{"):
            raise CrushError(
                "this looks like JSON (ceph osd crush dump?), not a crush map; give the binary "
                "map (ceph osd getcrushmap -o FILE) or its text (crushtool -d FILE)"
            )
        try:
            return tools.compile(text)
        except CrushError as first:
            sized = with_rule_sizes(text)
            if sized == text:
                raise
            try:
                # Quincy and later write rules without min_size/max_size, which
                # Pacific's crushtool requires: add the neutral 1..10 and retry.
                return tools.compile(sized)
            except CrushError:
                raise first from None
    try:
        tools.decompile(data)
    except CrushError:
        raise CrushError(
            "not a crush map: crushtool cannot decode it as a binary map and it is not crushtool "
            "text; give ceph osd getcrushmap -o FILE output or crushtool -d text"
        ) from None
    return data


# -- building ----------------------------------------------------------------------


def _rule_ids(crush: CrushMap, copy_names: Sequence[str] = ()) -> dict[str, int]:
    """Our rules keep their ids; new ones take the smallest free ids (copy rules last)."""
    ids: dict[str, int] = {}
    used = set(crush.rules)
    names = tuple(R.RULE_NAMES) + tuple(copy_names)
    for name in names:
        rule = crush.rule_named(name)
        if rule is not None:
            ids[name] = rule.id
    free = (i for i in range(256) if i not in used)
    for name in names:
        if name not in ids:
            try:
                ids[name] = next(free)
            except StopIteration:
                raise CrushError("the map has no free rule id (256 rules); remove a rule") from None
    return ids


def _check_pool_ids(crush: CrushMap, options: GenerateOptions) -> None:
    ec = [p.pool_id for p in options.ec_pools]
    if set(ec) & set(options.pool_ids + options.urgent_pool_ids) or len(set(ec)) < len(ec):
        raise CrushError("an --ec-pool is given twice or also as a replicated pool; give it once")
    given = list(options.pool_ids) + list(options.urgent_pool_ids)
    twice = sorted({p for p in given if given.count(p) > 1}
                   - (set(options.pool_ids) & set(options.urgent_pool_ids)))
    if twice:
        raise CrushError(f"pool {twice[0]} is given twice; give each pool id once")
    both = set(options.pool_ids) & set(options.urgent_pool_ids)
    if both:
        raise CrushError(f"pool {min(both)} is given as both normal and urgent; give it once")
    if any(p < 0 for p in options.pool_ids + options.urgent_pool_ids):
        raise CrushError("pool ids are >= 0")
    ours = any(crush.rule_named(n) is not None for n in R.RULE_NAMES)
    for pool in options.pool_ids + options.urgent_pool_ids:
        if pool in crush.choose_args and not ours:
            raise CrushError(
                f"pool {pool} already has a weight set (choose_args {pool}); remove it first: "
                f"ceph osd crush weight-set rm <pool {pool}>"
            )


def _assemble(
    blocks: Sequence[Block],
    rule_ids: Mapping[str, int],
    scope: R.RuleScope,
    choose_args: Mapping[int, tuple[ChooseArg, ...]],
    *,
    with_sizes: bool,
    copy_names: Sequence[str] = (),
    ec: Mapping[str, EcSharedRule] | None = None,
) -> str:
    ours = {
        name: render_rule(
            name, rule_ids[name], R.rule_steps(name, scope), with_sizes=with_sizes
        )
        for name in tuple(R.RULE_NAMES) + tuple(copy_names)
    }
    ours.update(ec_rule_blocks(ec or {}, rule_ids, with_sizes=with_sizes))
    if not with_sizes:
        blocks = [_without_sizes(b) if b.kind == "rule" else b for b in blocks]
    for pool, args in choose_args.items():
        ensure_flat(pool, args)  # never render a positional set of ours
    arg_blocks = {pool: render_choose_args(pool, args, nearest=True)
                  for pool, args in choose_args.items()}
    return render_blocks(replace_owned(blocks, ours, arg_blocks))


def _without_sizes(block: Block) -> Block:
    kept = tuple(
        line for line in block.lines
        if not line.strip().startswith(("min_size", "max_size"))
    )
    return Block(block.kind, block.key, kept)


# -- verification ------------------------------------------------------------------


def verify_map(
    tools: Tools,
    binary: bytes,
    options: GenerateOptions,
    osdmap: bytes | None = None,
) -> VerifyReport:
    """Check requirements R1-R8 for a map that already carries the SLA rules.

    The weight sets tried are the map's own for options.pool_ids[0] (default:
    the first that looks like ours) and options.urgent_pool_ids[0].  A copy
    rule of options.copy_sizes that the map lacks fails R8.
    """
    crush = crushmap_from_dump(tools.dump(binary))
    topo = analyse(crush, options.scope(), options.size)
    R.copy_sizes(options.copy_sizes)  # CrushError for a size outside 1..9
    missing = [n for n in R.RULE_NAMES if crush.rule_named(n) is None]
    if missing:
        raise CrushError(f"the map has no rule {missing[0]}; run sla-crush generate first")
    blocks = with_exact_weights(parse_blocks(tools.decompile(binary)), crush)
    ours = shaped_like_ours(crush, topo.root.id)
    normal_id: int | None = options.pool_ids[0] if options.pool_ids else (
        ours[0] if ours else None)
    urgent_id: int | None = options.urgent_pool_ids[0] if options.urgent_pool_ids else None
    normal_args = crush.choose_args.get(normal_id) if normal_id is not None else None
    hybrid_args = crush.choose_args.get(urgent_id) if urgent_id is not None else None
    if osdmap is None:
        sample = synthetic_osdmap(tools, crush, options.size, options.pg_num)
        plan = synthetic_plan(sample, options.pg_num, normal_args, hybrid_args,
                              (normal_id, urgent_id))
    else:
        plan = live_plan(tools, osdmap, [normal_id] if normal_id is not None else [],
                         [urgent_id] if urgent_id is not None else [], normal_args, hybrid_args)
        # the real pools carry the weight sets already: do not re-add them
    report = verify_rules(tools, blocks, crush, topo, plan, copy_sizes=options.copy_sizes)
    ec = tuple(pool.pool_id for pool in options.ec_pools)
    verified = list(options.pool_ids) + list(options.urgent_pool_ids) + [normal_id, *ec]
    failures, warnings = positional_failures(crush, verified)
    # each EC pool's own set, as the map has it (a drift of its own is repaired too)
    failures += ec_failures(tools, render_blocks(blocks), options.ec_pools,
                            ec_shared_rules(crush, topo.scope, options.ec_pools),
                            crush.choose_args)
    return VerifyReport(report.rules, report.pair, report.target_urgent_share,
                        report.failures + tuple(failures), report.warnings + tuple(warnings),
                        report.extra, report.copy_rules)


# -- entry point -------------------------------------------------------------------


def generate(
    tools: Tools,
    input_map: bytes,
    options: GenerateOptions,
    live_osdmap: bytes | None = None,
) -> Generated:
    """Add the SLA rules and flat weight sets to ``input_map`` (binary), and verify.

    live_osdmap: verify on the real pools of this osdmap (options.pool_ids /
    urgent_pool_ids); default a synthetic pool of options.pg_num PGs.

    A weight set with several positions in the input is replaced by the flat
    one when its pool is given (an older sla-crush made it), and reported as
    a warning otherwise (we never touch other pools' weight sets).
    """
    check_release(options.release)
    started = time.monotonic()
    before = tools.dump(input_map)
    crush = crushmap_from_dump(before)
    topo = analyse(crush, options.scope(), options.size)
    copy_names = options.copy_rule_names()
    _check_pool_ids(crush, options)
    ec = ec_shared_rules(crush, topo.scope, options.ec_pools)
    blocks = with_exact_weights(parse_blocks(tools.decompile(input_map)), crush)
    rule_ids = _rule_ids(crush, (*copy_names, *ec))
    base = parse_blocks(_assemble(blocks, rule_ids, topo.scope, {}, with_sizes=True,
                                  copy_names=copy_names))
    shared, hybrid = shared_choose_args(crush, topo), hybrid_choose_args(crush, topo)
    choose_args = _weight_sets(options, shared, hybrid)
    upgraded, notes = positional_notes(tools, crush, choose_args, live_osdmap)
    binary = _compile_with_rules(tools, blocks, rule_ids, topo.scope, choose_args, copy_names, ec)
    warnings = check_output(tools, before, binary, choose_args, (*copy_names, *ec))
    generated_at = time.monotonic()
    plan = _generation_plan(tools, crush, options, live_osdmap, shared, hybrid)
    report = verify_rules(tools, base, crush, topo, plan, copy_sizes=options.copy_sizes)
    report = VerifyReport(
        report.rules, report.pair, report.target_urgent_share, report.failures + tuple(
            ec_failures(tools, tools.decompile(binary), options.ec_pools, ec, choose_args)),
        report.warnings + tuple(notes) + tuple(warnings),
        {"weight_set_positions": MAX_POSITIONS, "upgraded_pools": list(upgraded)},
        report.copy_rules,
    )
    verified_at = time.monotonic()
    text = _assemble(blocks, rule_ids, topo.scope, choose_args,
                     with_sizes=R.sizes_in_text(options.release), copy_names=copy_names, ec=ec)
    return Generated(binary=binary, text=text, rule_ids=rule_ids, report=report,
                     changed=binary != input_map,
                     seconds={"generate": round(generated_at - started, 3),
                              "verify": round(verified_at - generated_at, 3)},
                     upgraded_pools=upgraded)


def _weight_sets(options: GenerateOptions, shared: tuple[ChooseArg, ...],
                 hybrid: tuple[ChooseArg, ...]) -> dict[int, tuple[ChooseArg, ...]]:
    """Each pool given, its flat weight set: normal and EC pools sla_shared's,
    urgent ones sla_hybrid's."""
    choose_args = {pool: shared for pool in options.pool_ids}
    choose_args.update({pool: hybrid for pool in options.urgent_pool_ids})
    choose_args.update({pool.pool_id: shared for pool in options.ec_pools})
    return choose_args


def _compile_with_rules(
    tools: Tools,
    blocks: Sequence[Block],
    rule_ids: Mapping[str, int],
    scope: R.RuleScope,
    choose_args: Mapping[int, tuple[ChooseArg, ...]],
    copy_names: Sequence[str],
    ec: Mapping[str, EcSharedRule],
) -> bytes:
    """The compiled map with our rules and weight sets; any failure is a bug of ours."""
    try:
        return tools.compile(_assemble(blocks, rule_ids, scope, choose_args,
                                       with_sizes=True, copy_names=copy_names, ec=ec))
    except CrushError as exc:
        raise CrushError(f"internal error: the map with the sla rules does not compile ({exc}); "
                         + REPORT) from exc


def _generation_plan(
    tools: Tools,
    crush: CrushMap,
    options: GenerateOptions,
    live_osdmap: bytes | None,
    shared: tuple[ChooseArg, ...],
    hybrid: tuple[ChooseArg, ...],
) -> VerifyPlan:
    """Where generate verifies: the live normal pools when given, else a synthetic pool;
    the hybrid weight set is tried only when urgent pools are given."""
    hybrid_used = hybrid if options.urgent_pool_ids else None
    if live_osdmap is not None and options.pool_ids:
        # Verify on the real normal pools' PGs. With none registered yet, a
        # live pool may be tiny (device_health_metrics has 1 PG): the design
        # is then checked on a synthetic pool of options.pg_num PGs instead.
        return live_plan(tools, live_osdmap, options.pool_ids, options.urgent_pool_ids,
                         shared, hybrid_used)
    osdmap = synthetic_osdmap(tools, crush, options.size, options.pg_num)
    labels = (options.pool_ids[0] if options.pool_ids else None,
              options.urgent_pool_ids[0] if options.urgent_pool_ids else None)
    return synthetic_plan(osdmap, options.pg_num, shared, hybrid_used, labels)
