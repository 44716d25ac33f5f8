"""Generate the SLA rules and their flat weight sets into a CRUSH map, and verify.

The flow is: dump the input (exact weights) -> check the topology -> build
rule and choose_args text (one-position weight sets only) -> compile -> prove
nothing pre-existing changed -> verify requirements R1-R8 on a pool's PG
mappings.  Any failure raises CrushError and nothing is written by the caller.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from . import rules as R
from .crushmap import ChooseArg, CrushMap, crushmap_from_dump
from .crushtext import (
    Block,
    parse_blocks,
    render_blocks,
    render_choose_args,
    render_rule,
    replace_owned,
    rule_steps_in_text,
    with_exact_weights,
)
from .errors import CrushError
from .fixedpoint import nearest_text_weight
from .sampling import Pool, map_rule, pool_sizes_needed, rule_at_size, rule_blocks
from .tools import Tools
from .topology import Topology, analyse
from .verify import (
    CopyReport,
    Layout,
    PairReport,
    RuleReport,
    VerifyReport,
    check_copy,
    check_rule,
    copy_failures,
    fit_failure,
    movement,
    primary_fit,
    requirement_failures,
)
from .weightsets import (
    MAX_POSITIONS,
    ensure_flat,
    hybrid_choose_args,
    positional_pools,
    positional_warning,
    shared_choose_args,
)

SYNTHETIC_POOL = 1  # the pool osdmaptool --createsimple --with-default-pool makes
SYNTHETIC_PG_NUM = 256  # PGs of the synthetic pool used when a live pool cannot serve R8


@dataclass(frozen=True)
class GenerateOptions:
    """What to generate; the CLI flags of ``sla-crush generate`` map onto these fields."""

    normal_class: str = R.DEFAULT_PLACEMENT.normal_class
    urgent_class: str = R.DEFAULT_PLACEMENT.urgent_class
    failure_domain: str = R.DEFAULT_PLACEMENT.failure_domain
    size: int = R.DEFAULT_SIZE
    pool_ids: tuple[int, ...] = ()  # normal pools: get sla_shared weight sets
    urgent_pool_ids: tuple[int, ...] = ()  # urgent pools: get sla_hybrid weight sets
    release: str = R.DEFAULT_RELEASE
    root: str = R.DEFAULT_PLACEMENT.root
    pg_num: int = 256  # PGs of the synthetic pool the offline verification maps
    # base sizes N of the copy rules sla_copy_N written and verified (R8); 1..9
    copy_sizes: tuple[int, ...] = (R.DEFAULT_SIZE,)

    def placement(self) -> R.Placement:
        return R.Placement(self.root, self.failure_domain, self.normal_class, self.urgent_class)

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


def _layout(crush: CrushMap, topo: Topology) -> Layout:
    return Layout(
        device_class=dict(crush.devices),
        domain_of_device=dict(topo.domain_of_device),
        normal_class=topo.placement.normal_class,
        urgent_class=topo.placement.urgent_class,
        size=topo.size,
        target_urgent_share=topo.target_urgent_share(),
    )


def _assemble(
    blocks: Sequence[Block],
    rule_ids: Mapping[str, int],
    placement: R.Placement,
    choose_args: Mapping[int, tuple[ChooseArg, ...]],
    *,
    with_sizes: bool,
    copy_names: Sequence[str] = (),
) -> str:
    ours = {
        name: render_rule(
            name, rule_ids[name], R.rule_steps(name, placement), with_sizes=with_sizes
        )
        for name in tuple(R.RULE_NAMES) + tuple(copy_names)
    }
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


@dataclass(frozen=True)
class VerifyPlan:
    """Which pools of which osdmap the rules are tried on."""

    osdmap: bytes
    synthetic: bool
    normal_pool: Pool
    urgent_pool: Pool
    normal_args: tuple[ChooseArg, ...] | None
    hybrid_args: tuple[ChooseArg, ...] | None
    normal_pool_label: int | None
    urgent_pool_label: int | None


def verify_rules(
    tools: Tools,
    blocks: Sequence[Block],
    crush: CrushMap,
    topo: Topology,
    plan: VerifyPlan,
    extra_rules: Mapping[str, Sequence[str]] | None = None,
    copy_sizes: Sequence[int] = (),
) -> VerifyReport:
    """Map every SLA rule (and any extra rule steps) on the plan's pools and check R1-R5,
    R7 (synthetic plans) and R8 (the copy rules of ``copy_sizes``).

    The steps are the map's own when it has the rule (so an installed map is
    checked as it is), else the ones we would generate (copy rules: the map's
    only; a missing one fails R8).  sla_shared and sla_hybrid are compared PG
    by PG with sla_isolated_normal on their own pool (R4).
    """
    layout = _layout(crush, topo)
    mapped: dict[str, dict[int, tuple[int, ...]]] = {}
    reports: dict[str, RuleReport] = {}
    in_map = {b.key: rule_steps_in_text(b) for b in blocks if b.kind == "rule"}
    all_rules: dict[str, Sequence[str]] = {
        n: in_map.get(n) or R.rule_steps(n, topo.placement) for n in R.RULE_NAMES
    }
    all_rules.update(extra_rules or {})

    def run(steps: Sequence[str], urgent_side: bool) -> dict[int, tuple[int, ...]]:
        pool = plan.urgent_pool if urgent_side else plan.normal_pool
        args = plan.hybrid_args if urgent_side else plan.normal_args
        return map_rule(tools, blocks, plan.osdmap, pool, steps, args, synthetic=plan.synthetic)

    for name, steps in all_rules.items():
        mapped[name] = run(steps, name in (R.ISOLATED_URGENT, R.FAST, R.HYBRID))
    isolated_on_urgent_pool = mapped[R.ISOLATED_NORMAL]
    if plan.urgent_pool != plan.normal_pool:
        isolated_on_urgent_pool = run(all_rules[R.ISOLATED_NORMAL], True)
    for name in all_rules:
        urgent_side = name in (R.ISOLATED_URGENT, R.FAST, R.HYBRID)
        label = plan.urgent_pool_label if urgent_side else plan.normal_pool_label
        reference: dict[int, tuple[int, ...]] | None = None
        if name == R.SHARED:
            reference = mapped[R.ISOLATED_NORMAL]
        elif name == R.HYBRID:
            reference = isolated_on_urgent_pool
        reports[name] = check_rule(name, mapped[name], layout, label, isolated=reference)
    pair: PairReport | None = movement(mapped[R.ISOLATED_NORMAL], mapped[R.SHARED], layout)
    failures, warnings = requirement_failures(reports, pair, plan.hybrid_args is not None)
    if plan.synthetic:
        # R7 needs every OSD up and in at full reweight, as in the synthetic osdmap:
        # a live osdmap's reweights and down OSDs shift the draws on purpose.
        names = {d.id: d.name for d in topo.domains}
        weights = {
            R.ISOLATED_NORMAL: {d.id: d.normal_weight for d in topo.domains},
            R.ISOLATED_URGENT: {d.id: d.urgent_weight for d in topo.domains},
        }
        weights[R.FAST] = weights[R.ISOLATED_URGENT]
        for name, by_domain in weights.items():
            fit = primary_fit(mapped[name], layout.domain_of_device, by_domain, names)
            reports[name] = replace(reports[name], proportional_p=fit.p_value)
            failure = fit_failure(name, fit)
            if failure:
                failures.append(failure)
    if plan.normal_args is None:
        warnings.append(
            f"{R.SHARED} has no choose_args for the pool tried (give --pool-id): "
            "it maps like Map_all there"
        )
    copies, copy_fail, copy_warn = verify_copy_rules(
        tools, blocks, crush, topo, plan, in_map, all_rules[R.ISOLATED_NORMAL], copy_sizes)
    return VerifyReport(reports, pair, layout.target_urgent_share,
                        tuple(failures + copy_fail), tuple(warnings + copy_warn),
                        copy_rules=copies)


def _copy_region_failure(name: str, size: int, topo: Topology) -> str | None:
    """Why the region under the root cannot give sla_copy_N its copies, else None."""
    pl = topo.placement
    fd = pl.failure_domain
    normal = sum(1 for d in topo.domains if d.normal_weight > 0)
    if normal < size:
        more = size - normal
        return (
            f"R8 {name}: only {normal} {fd} buckets under {topo.root.name} hold "
            f"{pl.normal_class} devices, fewer than {size}: the {size} {pl.normal_class} copies "
            f"cannot be in distinct {fd}s; drop copy size {size} or add {pl.normal_class} OSDs "
            f"to {more} more {fd}{'s' if more > 1 else ''}"
        )
    if topo.urgent_weight <= 0:
        return (
            f"R8 {name}: no {pl.urgent_class} devices with weight under {topo.root.name}: "
            f"there is no {pl.urgent_class} OSD for the extra copy"
        )
    return None


def verify_copy_rules(
    tools: Tools,
    blocks: Sequence[Block],
    crush: CrushMap,
    topo: Topology,
    plan: VerifyPlan,
    in_map: Mapping[str, Sequence[str]],
    isolated_steps: Sequence[str],
    copy_sizes: Sequence[int],
) -> tuple[dict[str, CopyReport], list[str], list[str]]:
    """R8: each copy rule at N and N + 1 replicas on the plan's normal pool.

    The rule runs at both sizes on the same PG ids, with the pool's weight set,
    and sla_isolated_normal at N on the same PGs (sampling.rule_at_size: a
    pool's rule can be evaluated at any size up to the pool's own, and up to N
    from a pool of size N, so a live pool of size N serves N and N + 1).  A
    live pool smaller than N is replaced by a synthetic pool, with a warning.
    """
    reports: dict[str, CopyReport] = {}
    failures: list[str] = []
    warnings: list[str] = []
    sizes = R.copy_sizes(copy_sizes)
    names = {R.copy_rule_name(n) for n in sizes}
    others = sorted(n for n in in_map if R.copy_rule_size(n) is not None and n not in names)
    if others:
        warnings.append(
            f"{', '.join(others)} in the map {'is' if len(others) == 1 else 'are'} not verified "
            f"(not among the copy sizes given: --copy-size "
            f"{' '.join(str(R.copy_rule_size(n)) for n in others)})"
        )
    if not sizes:
        return reports, failures, warnings
    layout = _layout(crush, topo)
    pl = topo.placement
    plan_size = _pool_size(tools, plan.osdmap, plan.normal_pool.id)
    cache: dict[tuple[int, int], dict[tuple[str, ...], dict[int, tuple[int, ...]]]] = {}
    osdmaps: dict[int, bytes] = {}
    for n in sizes:
        name = R.copy_rule_name(n)
        steps = in_map.get(name)
        if steps is None:
            failures.append(f"R8 the map has no rule {name}; run sla-crush generate or install "
                            f"with --copy-size {n} (ceph sla rules apply)")
            continue
        region = _copy_region_failure(name, n, topo)
        if region:
            failures.append(region)
            continue
        try:
            copy_blocks = rule_blocks(steps)
            iso_blocks = rule_blocks(isolated_steps)
        except CrushError as exc:
            failures.append(f"R8 {name}: its steps cannot be checked at sizes {n} and {n + 1}: "
                            f"{exc}")
            continue
        need = max(pool_sizes_needed(copy_blocks, n), pool_sizes_needed(copy_blocks, n + 1),
                   pool_sizes_needed(iso_blocks, n))
        osdmap, pool, synthetic = plan.osdmap, plan.normal_pool, plan.synthetic
        label, pool_size = plan.normal_pool_label, None if plan.synthetic else plan_size
        if need > plan_size:
            if not plan.synthetic:
                warnings.append(
                    f"{name}: pool {plan.normal_pool.id} has size {plan_size}, smaller than "
                    f"{need}: checked on a synthetic pool of {SYNTHETIC_PG_NUM} PGs instead"
                )
                pool, synthetic, label, pool_size = (
                    Pool(SYNTHETIC_POOL, 0, SYNTHETIC_PG_NUM), True, None, None)
            if need not in osdmaps:
                osdmaps[need] = synthetic_osdmap(tools, crush, need, pool.pg_num)
            osdmap = osdmaps[need]

        map_block = _block_mapper(tools, blocks, osdmap, pool, plan.normal_args, synthetic,
                                  cache.setdefault((id(osdmap), pool.id), {}))
        pgs = range(pool.pg_num)
        report = check_copy(
            n,
            rule_at_size(copy_blocks, n, map_block, pgs),
            rule_at_size(copy_blocks, n + 1, map_block, pgs),
            rule_at_size(iso_blocks, n, map_block, pgs),
            layout, label, pool_size,
        )
        reports[name] = report
        fail, warn = copy_failures(report, pl.urgent_class, pl.normal_class,
                                   pl.failure_domain)
        failures += fail
        warnings += warn
    return reports, failures, warnings


def _block_mapper(
    tools: Tools,
    blocks: Sequence[Block],
    osdmap: bytes,
    pool: Pool,
    args: tuple[ChooseArg, ...] | None,
    synthetic: bool,
    cache: dict[tuple[str, ...], dict[int, tuple[int, ...]]],
) -> Callable[[tuple[str, ...]], dict[int, tuple[int, ...]]]:
    """Maps one rule block (absolute steps) on the pool, each distinct block once."""
    def map_block(steps: tuple[str, ...]) -> dict[int, tuple[int, ...]]:
        if steps not in cache:
            cache[steps] = map_rule(tools, blocks, osdmap, pool, list(steps), args,
                                    synthetic=synthetic)
        return cache[steps]
    return map_block


def _pool_size(tools: Tools, osdmap: bytes, pool_id: int) -> int:
    for pool in tools.osdmap_dump(osdmap).get("pools", []):
        if int(pool["pool"]) == pool_id:
            return int(pool["size"])
    raise CrushError(f"pool id {pool_id} is not in the osdmap")


def synthetic_osdmap(tools: Tools, crush: CrushMap, size: int, pgs: int) -> bytes:
    """An osdmap with every device of the map and a pool 1 of >= pgs PGs."""
    return tools.simple_osdmap(max(crush.devices, default=0) + 1, pgs, size)


def synthetic_plan(
    osdmap: bytes,
    pg_num: int,
    normal_args: tuple[ChooseArg, ...] | None,
    hybrid_args: tuple[ChooseArg, ...] | None,
    labels: tuple[int | None, int | None],
) -> VerifyPlan:
    """Verify on the first pg_num PGs of the synthetic pool 1, with the given weight sets."""
    pool = Pool(SYNTHETIC_POOL, 0, pg_num)
    return VerifyPlan(osdmap, True, pool, pool, normal_args, hybrid_args, labels[0], labels[1])


def live_plan(
    tools: Tools,
    osdmap: bytes,
    pool_ids: Sequence[int],
    urgent_pool_ids: Sequence[int],
    normal_args: tuple[ChooseArg, ...] | None,
    hybrid_args: tuple[ChooseArg, ...] | None,
) -> VerifyPlan:
    """Verify on real pools: the first normal pool, the first urgent one (or the normal one)."""
    pools = {int(p["pool"]): p for p in tools.osdmap_dump(osdmap).get("pools", [])}
    if not pools:
        raise CrushError("the osdmap has no pools to verify on; create a pool or verify offline")
    for pool_id in list(pool_ids) + list(urgent_pool_ids):
        if pool_id not in pools:
            raise CrushError(f"pool id {pool_id} is not in the osdmap (pools: {sorted(pools)})")
    normal_id = pool_ids[0] if pool_ids else min(pools)
    urgent_id = urgent_pool_ids[0] if urgent_pool_ids else normal_id

    def pool(pool_id: int) -> Pool:
        raw = pools[pool_id]
        return Pool(pool_id, int(raw["crush_rule"]), int(raw["pg_num"]))

    return VerifyPlan(osdmap, False, pool(normal_id), pool(urgent_id), normal_args, hybrid_args,
                      normal_id, urgent_id if urgent_pool_ids else None)


def _shape_keys(crush: CrushMap, root_id: int) -> list[int]:
    """choose_args indexes (pools) that look like ours: the root weighed, with shadow ids."""
    keys: list[int] = []
    for index, args in sorted(crush.choose_args.items()):
        root = [a for a in args if a.bucket_id == root_id]
        if index >= 0 and root and root[0].weight_set and root[0].ids:
            keys.append(index)
    return keys


def _positional_failures(
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
    topo = analyse(crush, options.placement(), options.size)
    R.copy_sizes(options.copy_sizes)  # CrushError for a size outside 1..9
    missing = [n for n in R.RULE_NAMES if crush.rule_named(n) is None]
    if missing:
        raise CrushError(f"the map has no rule {missing[0]}; run sla-crush generate first")
    blocks = with_exact_weights(parse_blocks(tools.decompile(binary)), crush)
    ours = _shape_keys(crush, topo.root.id)
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
    verified = list(options.pool_ids) + list(options.urgent_pool_ids) + [normal_id]
    failures, warnings = _positional_failures(crush, verified)
    return VerifyReport(report.rules, report.pair, report.target_urgent_share,
                        report.failures + tuple(failures), report.warnings + tuple(warnings),
                        report.extra, report.copy_rules)


# -- safety ------------------------------------------------------------------------


def _strip(dump: Mapping[str, Any], owned_rules: set[str], owned_args: set[int]) -> dict[str, Any]:
    return {
        "devices": dump["devices"],
        "types": dump["types"],
        "buckets": dump["buckets"],
        "tunables": dump["tunables"],
        "rules": [r for r in dump["rules"] if r["rule_name"] not in owned_rules],
        "choose_args": {
            k: v for k, v in dump.get("choose_args", {}).items() if int(k) not in owned_args
        },
    }


def check_unchanged(
    before: Mapping[str, Any], after: Mapping[str, Any], owned_args: set[int],
    owned_rules: Sequence[str] = (),
) -> None:
    """Everything but our rules and weight sets must be identical (exact weights).

    owned_rules: the copy rules written (other sla_copy_ rules must stay as they were).
    """
    owned = set(R.RULE_NAMES) | set(owned_rules)
    a, b = _strip(before, owned, owned_args), _strip(after, owned, owned_args)
    for key in a:
        if a[key] != b[key]:
            raise CrushError(
                f"internal error: the generated map changed pre-existing {key}; " + REPORT
            )


def check_flat(crush: CrushMap, pools: Mapping[int, Any]) -> None:
    """Our pools' weight sets in a compiled map have one position (the last guard)."""
    for pool in pools:
        ensure_flat(pool, crush.choose_args.get(pool, ()))


REPORT = ("this is a bug in sla-crush: please report it with the input map and the command "
          "line (nothing was written)")
# A weight that crushtool's decompiler rounds (3 decimals on Pacific, 5 later)
# comes back within half a unit of its last digit: 0.0005 * 0x10000 < 33.
_ROUNDING = 34


def _weights_close(a: Any, b: Any) -> bool:
    return abs(round(float(a) * 0x10000) - round(float(b) * 0x10000)) <= _ROUNDING


def _round_trip_diff(before: Mapping[str, Any], after: Mapping[str, Any]) -> tuple[str, int]:
    """(what differs beyond weight rounding, or '', number of weights rounded)."""
    rounded = 0
    for key in ("devices", "types", "rules", "tunables"):
        if before.get(key) != after.get(key):
            return key, rounded
    a_buckets = {b["id"]: b for b in before["buckets"]}
    b_buckets = {b["id"]: b for b in after["buckets"]}
    if set(a_buckets) != set(b_buckets):
        return "buckets", rounded
    for bid, a in a_buckets.items():
        b = b_buckets[bid]
        if (a["name"], a["alg"], a["type_id"], [i["id"] for i in a["items"]]) != (
                b["name"], b["alg"], b["type_id"], [i["id"] for i in b["items"]]):
            return f"bucket {a['name']}", rounded
        if "~" in a["name"]:
            continue  # shadow weights are sums Ceph recomputes from the devices
        for x, y in zip(a["items"], b["items"]):
            if x["weight"] != y["weight"]:
                if abs(x["weight"] - y["weight"]) > _ROUNDING:
                    return f"bucket {a['name']} weights", rounded
                rounded += 1
    a_args, b_args = before.get("choose_args", {}), after.get("choose_args", {})
    if set(a_args) != set(b_args):
        return "choose_args", rounded
    for index, args in a_args.items():
        others = b_args[index]
        if [(x["bucket_id"], x.get("ids"), [len(p) for p in x.get("weight_set", [])])
                for x in args] != [(y["bucket_id"], y.get("ids"),
                                    [len(p) for p in y.get("weight_set", [])]) for y in others]:
            return f"choose_args {index}", rounded
        for x, y in zip(args, others):
            for p, q in zip(x.get("weight_set", []), y.get("weight_set", [])):
                for v, w in zip(p, q):
                    if v != w:
                        if not _weights_close(v, w):
                            return f"choose_args {index} weights", rounded
                        rounded += 1
    return "", rounded


def round_trip(tools: Tools, binary: bytes) -> list[str]:
    """Warnings from crushtool -d | crushtool -c of the output (empty when it reproduces the map).

    crushtool's decompiler prints weights rounded, and the weight sets copy
    class sums that are rarely round numbers, so a decompiled copy of a map
    with weight sets is usually not the same map: that is reported as a
    warning (the binary we write is the map, and our --text output carries
    exact weights).  Any other difference is a bug.
    """
    again = tools.compile(tools.decompile(binary))
    if again == binary:
        return []
    what, rounded = _round_trip_diff(tools.dump(binary), tools.dump(again))
    if what:
        raise CrushError(
            f"internal error: crushtool -d | crushtool -c of the generated map changes {what}; "
            + REPORT
        )
    if not rounded:
        return []
    return [
        f"crushtool -d prints weights rounded: a decompiled and recompiled copy of this map "
        f"differs in {rounded} weights, so its weight sets would no longer copy the class "
        "weights exactly; install this binary (or compile the --text output, which carries "
        "exact weights), and re-run sla-crush generate after editing decompiled text"
    ]


def grid_notes(choose_args: Mapping[int, Sequence[ChooseArg]]) -> list[str]:
    """A note when weights of 256 and more had to go on crushtool's float32 grid."""
    off = sum(
        1 for args in choose_args.values() for arg in args for row in arg.weight_set
        for w in row if nearest_text_weight(w)[1] != w
    )
    if not off:
        return []
    return [
        f"{off} weight-set values are 256 or more and off crushtool's float32 grid: they were "
        "written as the nearest value crushtool can hold (within 2**-15 relative); R4 is "
        "measured on the compiled map"
    ]


# -- entry point -------------------------------------------------------------------


def _pool_names(tools: Tools, osdmap: bytes | None) -> dict[int, str]:
    if osdmap is None:
        return {}
    pools = tools.osdmap_dump(osdmap).get("pools", [])
    return {int(p["pool"]): str(p.get("pool_name", "")) for p in pools}


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
    topo = analyse(crush, options.placement(), options.size)
    copy_names = options.copy_rule_names()
    _check_pool_ids(crush, options)
    blocks = with_exact_weights(parse_blocks(tools.decompile(input_map)), crush)
    rule_ids = _rule_ids(crush, copy_names)
    base = parse_blocks(_assemble(blocks, rule_ids, topo.placement, {}, with_sizes=True,
                                  copy_names=copy_names))
    shared = shared_choose_args(crush, topo)
    hybrid = hybrid_choose_args(crush, topo)
    choose_args = {pool: shared for pool in options.pool_ids}
    choose_args.update({pool: hybrid for pool in options.urgent_pool_ids})
    positional = positional_pools(crush.choose_args)
    upgraded = tuple(p for p in positional if p in choose_args)
    notes = [
        f"pool {p}: its weight set had {positional[p]} positions (an older sla-crush); "
        f"replaced by the flat one, so its PGs under {R.SHARED}/{R.HYBRID} move back to the "
        f"{R.ISOLATED_NORMAL} placement"
        for p in upgraded
    ]
    foreign = {p: n for p, n in positional.items() if p not in choose_args}
    if foreign:
        names = _pool_names(tools, live_osdmap)
        notes += [positional_warning(p, n, names.get(p)) for p, n in foreign.items()]

    try:
        binary = tools.compile(_assemble(blocks, rule_ids, topo.placement, choose_args,
                                         with_sizes=True, copy_names=copy_names))
    except CrushError as exc:
        raise CrushError(f"internal error: the map with the sla rules does not compile ({exc}); "
                         + REPORT) from exc
    after = tools.dump(binary)
    check_unchanged(before, after, set(choose_args), copy_names)
    check_flat(crushmap_from_dump(after), choose_args)
    warnings = grid_notes(choose_args) + round_trip(tools, binary)
    generated_at = time.monotonic()
    hybrid_used = hybrid if options.urgent_pool_ids else None
    if live_osdmap is not None and options.pool_ids:
        # Verify on the real normal pools' PGs. With none registered yet, a
        # live pool may be tiny (device_health_metrics has 1 PG): the design
        # is then checked on a synthetic pool of options.pg_num PGs instead.
        verify_plan = live_plan(tools, live_osdmap, options.pool_ids, options.urgent_pool_ids,
                                shared, hybrid_used)
    else:
        osdmap = synthetic_osdmap(tools, crush, options.size, options.pg_num)
        labels = (options.pool_ids[0] if options.pool_ids else None,
                  options.urgent_pool_ids[0] if options.urgent_pool_ids else None)
        verify_plan = synthetic_plan(osdmap, options.pg_num, shared, hybrid_used, labels)
    report = verify_rules(tools, base, crush, topo, verify_plan,
                          copy_sizes=options.copy_sizes)
    report = VerifyReport(
        report.rules, report.pair, report.target_urgent_share, report.failures,
        report.warnings + tuple(notes) + tuple(warnings),
        {"weight_set_positions": MAX_POSITIONS, "upgraded_pools": list(upgraded)},
        report.copy_rules,
    )
    verified_at = time.monotonic()
    text = _assemble(blocks, rule_ids, topo.placement, choose_args,
                     with_sizes=R.sizes_in_text(options.release), copy_names=copy_names)
    return Generated(
        binary=binary,
        text=text,
        rule_ids=rule_ids,
        report=report,
        changed=binary != input_map,
        seconds={"generate": round(generated_at - started, 3),
                 "verify": round(verified_at - generated_at, 3)},
        upgraded_pools=upgraded,
    )
