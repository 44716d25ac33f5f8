"""Generate the SLA rules into a CRUSH map, calibrate sla_shared, and verify.

The flow is: dump the input (exact weights) -> check the topology -> build
rule and choose_args text -> calibrate the shared weight sets on a synthetic
pool -> compile -> prove nothing pre-existing changed -> verify requirements
1-5 on a pool's PG mappings.  Any failure raises CrushError and nothing is
written by the caller.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from . import rules as R
from .calibration import Measurement, next_params
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
from .fixedpoint import is_round_trip_safe
from .sampling import Pool, map_rule
from .tools import Tools
from .topology import Topology, analyse
from .verify import (
    Layout,
    PairReport,
    RuleReport,
    VerifyReport,
    check_rule,
    movement,
    requirement_failures,
)
from .weightsets import SharedParams, hybrid_choose_args, initial_params, shared_choose_args

CALIBRATION_PGS = 8192
CALIBRATION_ROUNDS = 5
SYNTHETIC_POOL = 1  # the pool osdmaptool --createsimple --with-default-pool makes


@dataclass(frozen=True)
class GenerateOptions:
    """What to generate; the CLI flags of ``sla-crush generate`` map onto these fields."""

    normal_class: str = "hdd"
    urgent_class: str = "ssd"
    failure_domain: str = "host"
    size: int = 3
    pool_ids: tuple[int, ...] = ()  # normal pools: get sla_shared weight sets
    urgent_pool_ids: tuple[int, ...] = ()  # urgent pools: get sla_hybrid weight sets
    release: str = "pacific"
    root: str = "default"
    pg_num: int = 256  # PGs of the synthetic pool the offline verification maps
    calibration_pgs: int = CALIBRATION_PGS

    def placement(self) -> R.Placement:
        return R.Placement(self.root, self.failure_domain, self.normal_class, self.urgent_class)


@dataclass(frozen=True)
class Generated:
    binary: bytes  # the compiled map to install
    text: str  # the same map as text in the requested release's syntax
    rule_ids: Mapping[str, int]
    params: SharedParams
    report: VerifyReport
    changed: bool  # False when the output equals the input
    seconds: Mapping[str, float] = field(default_factory=dict)


# -- input -------------------------------------------------------------------------


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
        return tools.compile(text)
    try:
        tools.decompile(data)
    except CrushError as exc:
        raise CrushError(f"not a crush map (binary or text): {exc}") from exc
    return data


# -- building ----------------------------------------------------------------------


def _rule_ids(crush: CrushMap) -> dict[str, int]:
    """Our rules keep their ids; new ones take the smallest free ids."""
    ids: dict[str, int] = {}
    used = set(crush.rules)
    for name in R.RULE_NAMES:
        rule = crush.rule_named(name)
        if rule is not None:
            ids[name] = rule.id
    free = (i for i in range(256) if i not in used)
    for name in R.RULE_NAMES:
        if name not in ids:
            try:
                ids[name] = next(free)
            except StopIteration:
                raise CrushError("the map has no free rule id (256 rules); remove a rule") from None
    return ids


def _check_pool_ids(crush: CrushMap, options: GenerateOptions) -> None:
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
    weights: dict[int, int] = {}
    for d in topo.domains:
        weights.update(crush.device_weights_under(d.id))
    return Layout(
        device_class=dict(crush.devices),
        domain_of_device=dict(topo.domain_of_device),
        normal_class=topo.placement.normal_class,
        urgent_class=topo.placement.urgent_class,
        size=topo.size,
        target_urgent_share=topo.target_urgent_share(),
        device_weight=weights,
    )


def _assemble(
    blocks: Sequence[Block],
    rule_ids: Mapping[str, int],
    placement: R.Placement,
    choose_args: Mapping[int, tuple[ChooseArg, ...]],
    *,
    with_sizes: bool,
) -> str:
    rule_blocks = {
        name: render_rule(
            name, rule_ids[name], R.rule_steps(name, placement), with_sizes=with_sizes
        )
        for name in R.RULE_NAMES
    }
    if not with_sizes:
        blocks = [_without_sizes(b) if b.kind == "rule" else b for b in blocks]
    arg_blocks = {pool: render_choose_args(pool, args) for pool, args in choose_args.items()}
    return render_blocks(replace_owned(blocks, rule_blocks, arg_blocks))


def _without_sizes(block: Block) -> Block:
    kept = tuple(
        line for line in block.lines
        if not line.strip().startswith(("min_size", "max_size"))
    )
    return Block(block.kind, block.key, kept)


def calibrate(
    tools: Tools,
    blocks: Sequence[Block],
    crush: CrushMap,
    topo: Topology,
    osdmap: bytes,
    pgs: int,
    rounds: int = CALIBRATION_ROUNDS,
) -> SharedParams:
    """Tune the shared weight sets on ``pgs`` PGs of the synthetic pool (bounded)."""
    params = initial_params(topo)
    steps = R.rule_steps(R.SHARED, topo.placement)
    pool = Pool(SYNTHETIC_POOL, 0, pgs)
    best: tuple[float, SharedParams] | None = None
    wanted = topo.target_urgent_share() * topo.size
    for _ in range(rounds):
        args = shared_choose_args(crush, topo, params)
        mapped = map_rule(tools, blocks, osdmap, pool, steps, args, synthetic=True)
        counts: dict[int, int] = {}
        for osds in mapped.values():
            for osd in osds:
                if crush.devices.get(osd) == topo.placement.urgent_class:
                    domain = topo.domain_of_device[osd]
                    counts[domain] = counts.get(domain, 0) + 1
        measured = Measurement(len(mapped), counts)
        error = abs(measured.urgent_per_pg - wanted) / wanted
        if best is None or error < best[0]:
            best = (error, params)
        params, converged = next_params(topo, params, measured)
        if converged:
            break
    assert best is not None
    return best[1]


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
) -> VerifyReport:
    """Map every SLA rule (and any extra rule steps) on the plan's pools and check 1-5.

    The steps are the map's own when it has the rule (so an installed map is
    checked as it is), else the ones we would generate.
    """
    layout = _layout(crush, topo)
    mapped: dict[str, dict[int, tuple[int, ...]]] = {}
    reports: dict[str, RuleReport] = {}
    in_map = {b.key: rule_steps_in_text(b) for b in blocks if b.kind == "rule"}
    all_rules: dict[str, Sequence[str]] = {
        n: in_map.get(n) or R.rule_steps(n, topo.placement) for n in R.RULE_NAMES
    }
    all_rules.update(extra_rules or {})
    for name, steps in all_rules.items():
        urgent_side = name in (R.ISOLATED_URGENT, R.FAST, R.HYBRID)
        pool = plan.urgent_pool if urgent_side else plan.normal_pool
        args = plan.hybrid_args if urgent_side else plan.normal_args
        label = plan.urgent_pool_label if urgent_side else plan.normal_pool_label
        mapped[name] = map_rule(tools, blocks, plan.osdmap, pool, steps, args,
                                synthetic=plan.synthetic)
        reports[name] = check_rule(
            name, mapped[name], layout, label,
            hybrid=name == R.HYBRID and plan.hybrid_args is not None,
        )
    pair: PairReport | None = movement(mapped[R.ISOLATED_NORMAL], mapped[R.SHARED], layout)
    failures, warnings = requirement_failures(reports, pair, plan.hybrid_args is not None)
    if plan.normal_args is None:
        warnings.append(
            f"{R.SHARED} has no choose_args for the pool tried (give --pool-id): "
            "it maps like Map_all there"
        )
    return VerifyReport(reports, pair, layout.target_urgent_share, tuple(failures),
                        tuple(warnings))


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


def _shape_keys(crush: CrushMap, root_id: int) -> tuple[list[int], list[int]]:
    """choose_args indexes that look like ours: (shared ones, hybrid ones).

    Shared sets put normal shadow ``ids`` on the root; hybrid sets weigh the
    root without ids.
    """
    shared: list[int] = []
    hybrid: list[int] = []
    for index, args in sorted(crush.choose_args.items()):
        root = [a for a in args if a.bucket_id == root_id]
        if index < 0 or not root or not root[0].weight_set:
            continue
        (shared if root[0].ids else hybrid).append(index)
    return shared, hybrid


def verify_map(
    tools: Tools,
    binary: bytes,
    options: GenerateOptions,
    osdmap: bytes | None = None,
) -> VerifyReport:
    """Check requirements 1-5 for a map that already carries the SLA rules.

    The weight sets tried are the map's own for options.pool_ids[0] (default:
    the first that looks like a shared set) and options.urgent_pool_ids[0].
    """
    crush = crushmap_from_dump(tools.dump(binary))
    topo = analyse(crush, options.placement(), options.size)
    missing = [n for n in R.RULE_NAMES if crush.rule_named(n) is None]
    if missing:
        raise CrushError(f"the map has no rule {missing[0]}; run sla-crush generate first")
    blocks = with_exact_weights(parse_blocks(tools.decompile(binary)), crush)
    shared_keys, hybrid_keys = _shape_keys(crush, topo.root.id)
    normal_id: int | None = options.pool_ids[0] if options.pool_ids else (
        shared_keys[0] if shared_keys else None)
    urgent_id: int | None = options.urgent_pool_ids[0] if options.urgent_pool_ids else (
        hybrid_keys[0] if hybrid_keys else None)
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
    report = verify_rules(tools, blocks, crush, topo, plan)
    return report


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
    before: Mapping[str, Any], after: Mapping[str, Any], owned_args: set[int]
) -> None:
    """Everything but our rules and weight sets must be identical (exact weights)."""
    owned = set(R.RULE_NAMES)
    a, b = _strip(before, owned, owned_args), _strip(after, owned, owned_args)
    for key in a:
        if a[key] != b[key]:
            raise CrushError(
                f"internal error: the generated map changed pre-existing {key}; nothing written"
            )


def round_trip(tools: Tools, binary: bytes, crush: CrushMap) -> list[str]:
    """Warnings from decompile -> compile of the output (empty when it reproduces the map)."""
    again = tools.compile(tools.decompile(binary))
    if again == binary:
        return []
    fine = [
        b.name for b in crush.buckets.values() if not b.is_shadow
        and any(not is_round_trip_safe(i.weight) for i in b.items)
    ]
    if fine:
        return [
            "decompile -> compile changes this map's own weights (finer than crushtool's "
            f"3 decimals, e.g. in bucket {fine[0]}); edit it as binary, not as decompiled text"
        ]
    raise CrushError("internal error: the generated map does not survive decompile -> compile")


# -- entry point -------------------------------------------------------------------


def generate(
    tools: Tools,
    input_map: bytes,
    options: GenerateOptions,
    live_osdmap: bytes | None = None,
) -> Generated:
    """Add the SLA rules and weight sets to ``input_map`` (binary), calibrated and verified.

    live_osdmap: verify on the real pools of this osdmap (options.pool_ids /
    urgent_pool_ids); default a synthetic pool of options.pg_num PGs.
    """
    if options.release not in R.RELEASES:
        raise CrushError(f"unknown --release {options.release}; use one of {', '.join(R.RELEASES)}")
    started = time.monotonic()
    before = tools.dump(input_map)
    crush = crushmap_from_dump(before)
    topo = analyse(crush, options.placement(), options.size)
    _check_pool_ids(crush, options)
    blocks = with_exact_weights(parse_blocks(tools.decompile(input_map)), crush)
    rule_ids = _rule_ids(crush)
    osdmap = synthetic_osdmap(tools, crush, options.size,
                              max(options.calibration_pgs, options.pg_num))
    base = parse_blocks(_assemble(blocks, rule_ids, topo.placement, {}, with_sizes=True))
    params = calibrate(tools, base, crush, topo, osdmap, options.calibration_pgs)
    shared = shared_choose_args(crush, topo, params)
    hybrid = hybrid_choose_args(crush, topo)
    choose_args = {pool: shared for pool in options.pool_ids}
    choose_args.update({pool: hybrid for pool in options.urgent_pool_ids})
    generated_at = time.monotonic()

    binary = tools.compile(_assemble(blocks, rule_ids, topo.placement, choose_args,
                                     with_sizes=True))
    after = tools.dump(binary)
    check_unchanged(before, after, set(choose_args))
    warnings = round_trip(tools, binary, crush)
    hybrid_used = hybrid if options.urgent_pool_ids else None
    if live_osdmap is not None and options.pool_ids:
        # Verify on the real normal pools' PGs. With none registered yet, a
        # live pool may be tiny (device_health_metrics has 1 PG): the design
        # is then checked on a synthetic pool of options.pg_num PGs instead.
        verify_plan = live_plan(tools, live_osdmap, options.pool_ids, options.urgent_pool_ids,
                                shared, hybrid_used)
    else:
        labels = (options.pool_ids[0] if options.pool_ids else None,
                  options.urgent_pool_ids[0] if options.urgent_pool_ids else None)
        verify_plan = synthetic_plan(osdmap, options.pg_num, shared, hybrid_used, labels)
    report = verify_rules(tools, base, crush, topo, verify_plan)
    report = VerifyReport(
        report.rules, report.pair, report.target_urgent_share, report.failures,
        report.warnings + tuple(warnings),
        {"shared_design": {"tail_positions": params.tail,
                           "middle_share": round(params.middle_share, 4)}},
    )
    verified_at = time.monotonic()
    text = _assemble(blocks, rule_ids, topo.placement, choose_args,
                     with_sizes=R.sizes_in_text(options.release))
    return Generated(
        binary=binary,
        text=text,
        rule_ids=rule_ids,
        params=params,
        report=report,
        changed=binary != input_map,
        seconds={"generate": round(generated_at - started, 3),
                 "verify": round(verified_at - generated_at, 3)},
    )
