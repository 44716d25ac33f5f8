"""A verification run: every SLA rule mapped on a VerifyPlan's pools (osdmaptool),
and requirements R1-R5, R7 and R8 checked on the mappings.

The checks on mappings held in memory are in verify.py, the reports in
reports.py; R6 (flat weight sets) is checked on the map itself.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace

from . import rules as R
from .crushmap import ChooseArg, CrushMap
from .crushtext import Block, rule_steps_in_text
from .errors import CrushError
from .reports import CopyReport, PairReport, RuleReport, VerifyReport
from .sampling import (
    Pool,
    RuleBlock,
    map_rule,
    pool_sizes_needed,
    rule_at_size,
    rule_blocks,
)
from .tools import Tools
from .topology import Topology
from .verify import (
    Layout,
    check_copy,
    check_rule,
    copy_failures,
    fit_failure,
    movement,
    primary_fit,
    requirement_failures,
)
from .verify_plan import SYNTHETIC_PG_NUM, SYNTHETIC_POOL, VerifyPlan, synthetic_osdmap


def _layout(crush: CrushMap, topo: Topology) -> Layout:
    return Layout(
        device_class=dict(crush.devices),
        domain_of_device=dict(topo.domain_of_device),
        normal_class=topo.scope.normal_class,
        urgent_class=topo.scope.urgent_class,
        size=topo.size,
        target_urgent_share=topo.target_urgent_share(),
    )


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
    in_map = {b.key: rule_steps_in_text(b) for b in blocks if b.kind == "rule"}
    all_rules: dict[str, Sequence[str]] = {
        n: in_map.get(n) or R.rule_steps(n, topo.scope) for n in R.RULE_NAMES
    }
    all_rules.update(extra_rules or {})
    mapped, isolated_on_urgent_pool = _map_rules(tools, blocks, plan, all_rules)
    reports = _rule_reports(mapped, isolated_on_urgent_pool, layout, plan)
    pair: PairReport | None = movement(mapped[R.ISOLATED_NORMAL], mapped[R.SHARED], layout)
    failures, warnings = requirement_failures(reports, pair, plan.hybrid_args is not None)
    if plan.synthetic:
        # R7 needs every OSD up and in at full reweight, as in the synthetic osdmap:
        # a live osdmap's reweights and down OSDs shift the draws on purpose.
        failures += _primary_fit_failures(reports, mapped, layout, topo)
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


def _map_rules(
    tools: Tools,
    blocks: Sequence[Block],
    plan: VerifyPlan,
    all_rules: Mapping[str, Sequence[str]],
) -> tuple[dict[str, dict[int, tuple[int, ...]]], dict[int, tuple[int, ...]]]:
    """(each rule's mappings on its side's pool, sla_isolated_normal's on the urgent pool).

    The urgent-side rules run on the plan's urgent pool with the hybrid weight
    set; sla_isolated_normal there is sla_hybrid's reference (R4).
    """
    def run(steps: Sequence[str], urgent_side: bool) -> dict[int, tuple[int, ...]]:
        pool = plan.urgent_pool if urgent_side else plan.normal_pool
        args = plan.hybrid_args if urgent_side else plan.normal_args
        return map_rule(tools, blocks, plan.osdmap, pool, steps, args, synthetic=plan.synthetic)

    mapped: dict[str, dict[int, tuple[int, ...]]] = {}
    for name, steps in all_rules.items():
        mapped[name] = run(steps, name in (R.ISOLATED_URGENT, R.FAST, R.HYBRID))
    isolated_on_urgent_pool = mapped[R.ISOLATED_NORMAL]
    if plan.urgent_pool != plan.normal_pool:
        isolated_on_urgent_pool = run(all_rules[R.ISOLATED_NORMAL], True)
    return mapped, isolated_on_urgent_pool


def _rule_reports(
    mapped: Mapping[str, dict[int, tuple[int, ...]]],
    isolated_on_urgent_pool: dict[int, tuple[int, ...]],
    layout: Layout,
    plan: VerifyPlan,
) -> dict[str, RuleReport]:
    """check_rule on each rule's mappings, sla_shared and sla_hybrid against their reference."""
    reports: dict[str, RuleReport] = {}
    for name in mapped:
        urgent_side = name in (R.ISOLATED_URGENT, R.FAST, R.HYBRID)
        label = plan.urgent_pool_label if urgent_side else plan.normal_pool_label
        reference: dict[int, tuple[int, ...]] | None = None
        if name == R.SHARED:
            reference = mapped[R.ISOLATED_NORMAL]
        elif name == R.HYBRID:
            reference = isolated_on_urgent_pool
        reports[name] = check_rule(name, mapped[name], layout, label, isolated=reference)
    return reports


def _primary_fit_failures(
    reports: dict[str, RuleReport],
    mapped: Mapping[str, dict[int, tuple[int, ...]]],
    layout: Layout,
    topo: Topology,
) -> list[str]:
    """R7 failures of the isolated rules; sets each one's proportional_p in ``reports``."""
    failures: list[str] = []
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
    return failures


def _copy_region_failure(name: str, size: int, topo: Topology) -> str | None:
    """Why the region under the root cannot give sla_copy_N its copies, else None."""
    pl = topo.scope
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
    sizes = R.copy_sizes(copy_sizes)
    warnings = _unverified_copy_rules(in_map, sizes)
    if not sizes:
        return reports, failures, warnings
    layout = _layout(crush, topo)
    pl = topo.scope
    plan_size = _pool_size(tools, plan.osdmap, plan.normal_pool.id)
    cache: dict[tuple[int, int], dict[tuple[str, ...], dict[int, tuple[int, ...]]]] = {}
    osdmaps: dict[int, bytes] = {}
    for n in sizes:
        name = R.copy_rule_name(n)
        parsed = _copy_rule_blocks(name, n, in_map.get(name), isolated_steps, topo)
        if isinstance(parsed, str):
            failures.append(parsed)
            continue
        copy_blocks, iso_blocks = parsed
        need = _pool_size_needed(copy_blocks, iso_blocks, n)
        target, pool_warnings = _copy_pool(tools, crush, plan, plan_size, name, need, osdmaps)
        warnings += pool_warnings
        map_block = _block_mapper(tools, blocks, target.osdmap, target.pool, plan.normal_args,
                                  target.synthetic,
                                  cache.setdefault((id(target.osdmap), target.pool.id), {}))
        report = _copy_report(n, copy_blocks, iso_blocks, map_block, layout, target)
        reports[name] = report
        fail, warn = copy_failures(report, pl.urgent_class, pl.normal_class,
                                   pl.failure_domain)
        failures += fail
        warnings += warn
    return reports, failures, warnings


def _unverified_copy_rules(in_map: Mapping[str, Sequence[str]], sizes: Sequence[int]) -> list[str]:
    """A warning naming the copy rules of the map that are not among the sizes verified."""
    names = {R.copy_rule_name(n) for n in sizes}
    others = sorted(n for n in in_map if R.copy_rule_size(n) is not None and n not in names)
    if not others:
        return []
    return [
        f"{', '.join(others)} in the map {'is' if len(others) == 1 else 'are'} not verified "
        f"(not among the copy sizes given: --copy-size "
        f"{' '.join(str(R.copy_rule_size(n)) for n in others)})"
    ]


def _copy_rule_blocks(
    name: str,
    size: int,
    steps: Sequence[str] | None,
    isolated_steps: Sequence[str],
    topo: Topology,
) -> tuple[list[RuleBlock], list[RuleBlock]] | str:
    """The rule blocks of sla_copy_N and sla_isolated_normal, or the R8 failure that
    stops the check: the rule is missing, the region cannot serve it, its steps
    cannot be evaluated at N and N + 1."""
    if steps is None:
        return (f"R8 the map has no rule {name}; run sla-crush generate or install "
                f"with --copy-size {size} (ceph sla rules apply)")
    region = _copy_region_failure(name, size, topo)
    if region:
        return region
    try:
        return rule_blocks(steps), rule_blocks(isolated_steps)
    except CrushError as exc:
        return (f"R8 {name}: its steps cannot be checked at sizes {size} and {size + 1}: "
                f"{exc}")


def _pool_size_needed(
    copy_blocks: Sequence[RuleBlock], iso_blocks: Sequence[RuleBlock], size: int
) -> int:
    """The pool size that serves the copy rule at N and N + 1 and sla_isolated_normal at N."""
    return max(pool_sizes_needed(copy_blocks, size), pool_sizes_needed(copy_blocks, size + 1),
               pool_sizes_needed(iso_blocks, size))


@dataclass(frozen=True)
class _CopyPool:
    """Where one copy rule is mapped: the plan's normal pool, or a synthetic pool."""

    osdmap: bytes
    pool: Pool
    synthetic: bool
    label: int | None  # the pool id the report names (None: synthetic)
    pool_size: int | None  # the live pool's size (None: synthetic)


def _copy_pool(
    tools: Tools,
    crush: CrushMap,
    plan: VerifyPlan,
    plan_size: int,
    name: str,
    need: int,
    osdmaps: dict[int, bytes],
) -> tuple[_CopyPool, list[str]]:
    """The pool a copy rule needing pools of size ``need`` is mapped on, and a warning
    when the plan's live pool is smaller (a synthetic pool serves instead).

    osdmaps: the synthetic osdmaps made so far, by pool size (reused across rules).
    """
    warnings: list[str] = []
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
    return _CopyPool(osdmap, pool, synthetic, label, pool_size), warnings


def _copy_report(
    size: int,
    copy_blocks: Sequence[RuleBlock],
    iso_blocks: Sequence[RuleBlock],
    map_block: Callable[[tuple[str, ...]], dict[int, tuple[int, ...]]],
    layout: Layout,
    target: _CopyPool,
) -> CopyReport:
    """check_copy of the copy rule at N and N + 1 and sla_isolated_normal at N, on the
    target pool's PGs."""
    pgs = range(target.pool.pg_num)
    return check_copy(
        size,
        rule_at_size(copy_blocks, size, map_block, pgs),
        rule_at_size(copy_blocks, size + 1, map_block, pgs),
        rule_at_size(iso_blocks, size, map_block, pgs),
        layout, target.label, target.pool_size,
    )


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
