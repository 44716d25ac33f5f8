"""Operations on a live cluster: install the rules, verify them, plan a switch."""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .crushmap import ChooseArg, crushmap_from_dump
from .crushtext import (
    Block,
    parse_blocks,
    render_blocks,
    rule_steps_in_text,
    with_exact_weights,
    with_rule_steps,
)
from .errors import CrushError
from .generate import GenerateOptions, generate, verify_map
from .reports import VerifyReport
from .safety import check_flat
from .sampling import Pool, map_rule, pool_sizes_needed, rule_at_size, rule_blocks
from .tools import CephCli, Cluster, Tools


@dataclass(frozen=True)
class InstallResult:
    changed: bool  # False: the live map already was what we would install
    rule_ids: dict[str, int]
    report: VerifyReport
    crush_version: int  # the version the compare-and-swap was made against
    # pools whose positional weight set (older sla-crush) was replaced by the flat
    # one, or whose drifted flat set was repaired -> PGs remapped by that (only
    # such pools may be remapped by install)
    upgraded_pools: Mapping[int, int] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "changed": self.changed,
            "rule_ids": dict(self.rule_ids),
            "crush_version": self.crush_version,
            "upgraded_pools": {str(k): v for k, v in self.upgraded_pools.items()},
            "report": self.report.to_dict(),
        }


@dataclass(frozen=True)
class MovePlan:
    pool: str
    pool_id: int
    from_rule: str
    to_rule: str
    pgs: int  # PGs in the pool
    pgs_moving: int  # PGs with at least one replica changing OSD
    replicas: int  # replicas that change OSD
    bytes: int  # sum over PGs of the PG's bytes times its replicas changing
    notes: tuple[str, ...] = field(default_factory=tuple)

    def to_dict(self) -> dict[str, Any]:
        return {
            "pool": self.pool, "pool_id": self.pool_id, "from_rule": self.from_rule,
            "to_rule": self.to_rule, "pgs": self.pgs, "pgs_moving": self.pgs_moving,
            "replicas": self.replicas, "bytes": self.bytes, "notes": list(self.notes),
        }


@dataclass(frozen=True)
class _Snapshot:
    osdmap: bytes
    crush: bytes
    crush_version: int
    pools: dict[int, dict[str, Any]]


def _snapshot(cli: Cluster, tools: Tools) -> _Snapshot:
    """One consistent view: the osdmap carries the crush map and its version."""
    osdmap = cli.get_osdmap()
    dump = tools.osdmap_dump(osdmap)
    try:
        version = int(dump["crush_version"])
    except (KeyError, TypeError, ValueError) as exc:
        raise CrushError("the osdmap has no crush_version; is this a Luminous+ cluster?") from exc
    pools = {int(p["pool"]): p for p in dump.get("pools", [])}
    return _Snapshot(osdmap, tools.export_crush(osdmap), version, pools)


def _check_pools_unmoved(
    tools: Tools, snap: _Snapshot, new_crush: bytes, upgraded: Collection[int] = ()
) -> dict[int, int]:
    """Installing rules and weight sets must not remap any existing pool.

    Except the ``upgraded`` pools, whose positional weight set (an older
    sla-crush) is replaced by the flat one: a positional set can abort every
    ceph-mon, so it goes even though those pools' PGs under sla_shared /
    sla_hybrid move back to the sla_isolated_normal placement.  Returns
    pool id -> PGs remapped, for those.
    """
    remapped: dict[int, int] = {}
    for pool_id, pool in sorted(snap.pools.items()):
        before = tools.map_pgs(snap.osdmap, None, pool_id, mark_up_in=False)
        after = tools.map_pgs(snap.osdmap, new_crush, pool_id, mark_up_in=False)
        changed = sum(1 for k, v in before.items() if k not in after or after[k].raw != v.raw)
        if not changed and set(before) == set(after):
            continue
        if pool_id in upgraded:
            remapped[pool_id] = changed
            continue
        raise CrushError(
            f"installing would remap pool {pool['pool_name']} (rule id {pool['crush_rule']}): "
            f"its rule draws from buckets that get its weight sets; give it with --pool-id "
            f"only once it uses an sla_ rule"
        )
    return remapped


def install(cli: Cluster, tools: Tools, options: GenerateOptions,
            repair: bool = False) -> InstallResult:
    """Generate from the live map, verify on the live pools, and set it (compare-and-swap).

    repair: the given pools' flat weight sets drifted (Ceph writes every
    reweight and new item into every weight set, `osd_crush_update_weight_set`),
    so their PGs under sla_shared / sla_hybrid no longer map like
    sla_isolated_normal; regenerating the sets remaps exactly those PGs back,
    which is allowed for the given pools only (reported in upgraded_pools)."""
    tools.check_available()
    snap = _snapshot(cli, tools)
    generated = generate(tools, snap.crush, options, live_osdmap=snap.osdmap)
    if not generated.report.ok:
        raise CrushError(f"not installed: {generated.report.failures[0]}")
    if generated.binary == snap.crush:
        return InstallResult(False, dict(generated.rule_ids), generated.report, snap.crush_version)
    # The last guard before the monitors see it: no weight set of ours with positions.
    ec = tuple(pool.pool_id for pool in options.ec_pools)
    check_flat(crushmap_from_dump(tools.dump(generated.binary)),
               dict.fromkeys(options.pool_ids + options.urgent_pool_ids + ec))
    allowed = set(generated.upgraded_pools)
    if repair:
        allowed |= set(options.pool_ids) | set(options.urgent_pool_ids) | set(ec)
    remapped = _check_pools_unmoved(tools, snap, generated.binary, allowed)
    cli.set_crushmap(generated.binary, snap.crush_version)
    return InstallResult(True, dict(generated.rule_ids), generated.report, snap.crush_version,
                         remapped)


def verify_live(cli: Cluster, tools: Tools, options: GenerateOptions) -> VerifyReport:
    """Check the installed rules on the live pools' PGs (nothing is changed)."""
    tools.check_available()
    snap = _snapshot(cli, tools)
    return verify_map(tools, snap.crush, options, osdmap=snap.osdmap)


def plan_switch(cli: CephCli, tools: Tools, pool: str, to_rule: str,
                pg_bytes: Mapping[int, int] | None = None) -> MovePlan:
    """What switching ``pool`` to ``to_rule`` would move, from the live maps (read-only).

    pg_bytes: PG seed -> bytes of one replica, when the caller has them (the
    mgr module does; its own key has no mgr caps for `ceph pg ls-by-pool`).
    """
    tools.check_available()
    snap = _snapshot(cli, tools)
    matches = [p for p in snap.pools.values() if p.get("pool_name") == pool]
    if not matches:
        raise CrushError(f"no pool named {pool}")
    info = matches[0]
    pool_id, rule_id = int(info["pool"]), int(info["crush_rule"])
    crush = crushmap_from_dump(tools.dump(snap.crush))
    target = crush.rule_named(to_rule)
    if target is None:
        raise CrushError(f"rule {to_rule} is not in the crush map; run sla-crush install first")
    current = crush.rules.get(rule_id)
    blocks = with_exact_weights(parse_blocks(tools.decompile(snap.crush)), crush)
    steps = next(rule_steps_in_text(b) for b in blocks if b.kind == "rule" and b.key == to_rule)
    variant = tools.compile(render_blocks(with_rule_steps(blocks, rule_id, steps)))
    before = tools.map_pgs(snap.osdmap, None, pool_id, mark_up_in=False)
    after = tools.map_pgs(snap.osdmap, variant, pool_id, mark_up_in=False)
    sizes = cli.pg_bytes(pool) if pg_bytes is None else pg_bytes
    pgs_moving = replicas = moved_bytes = 0
    for seed, now in before.items():
        then = after.get(seed)
        changed = len(set(then.up if then else ()) - set(now.up))
        if changed:
            pgs_moving += 1
            replicas += changed
            moved_bytes += changed * sizes.get(seed, 0)
    notes = ("up sets compared; upmap entries that the new rule invalidates are dropped by "
             "the monitors, so the real movement can differ slightly",)
    return MovePlan(pool, pool_id, current.name if current else str(rule_id), to_rule,
                    len(before), pgs_moving, replicas, moved_bytes, notes)



def rule_on_pools(cli: Cluster, tools: Tools, wanted: Sequence[tuple[int, str, int]]
                  ) -> dict[int, dict[int, tuple[int, ...]]]:
    """For each (pool id, rule, size): PG seed -> OSDs (raw CRUSH) of the live
    pool's PGs under that rule at that many replicas, whatever rule and size
    the pool has now; read-only, from one snapshot of the maps.

    The rule's take ... emit blocks are mapped one by one on the pool at its
    own size (sampling.rule_at_size), so a copy rule at N + 1 is mapped on a
    pool of size N; the weights are the map's exact ones, and the pool's own
    weight set, if it has one, maps any rule it is on."""
    tools.check_available()
    snap = _snapshot(cli, tools)
    crush = crushmap_from_dump(tools.dump(snap.crush))
    blocks = with_exact_weights(parse_blocks(tools.decompile(snap.crush)), crush)
    steps = {b.key: rule_steps_in_text(b) for b in blocks if b.kind == "rule"}
    out: dict[int, dict[int, tuple[int, ...]]] = {}
    for pool_id, rule, size in wanted:
        info = snap.pools.get(pool_id)
        if info is None:
            raise CrushError(f"no pool with id {pool_id}")
        if rule not in steps:
            raise CrushError(f"rule {rule} is not in the crush map")
        parts = rule_blocks(steps[rule])
        if pool_sizes_needed(parts, size) > int(info.get("size", 0) or 0):
            raise CrushError(f"{rule} at {size} replicas cannot be mapped on pool {pool_id} "
                             f"of size {info.get('size')}")
        pool = Pool(pool_id, int(info["crush_rule"]), int(info.get("pg_num", 0) or 0))
        map_block = _pool_mapper(tools, blocks, snap.osdmap, pool, crush.choose_args.get(pool_id))
        out[pool_id] = rule_at_size(parts, size, map_block, range(pool.pg_num))
    return out


def _pool_mapper(tools: Tools, blocks: Sequence[Block], osdmap: bytes, pool: Pool,
                 args: Sequence[ChooseArg] | None
                 ) -> Callable[[tuple[str, ...]], dict[int, tuple[int, ...]]]:
    """Maps one rule block on the pool, each distinct block once."""
    cache: dict[tuple[str, ...], dict[int, tuple[int, ...]]] = {}

    def map_block(steps: tuple[str, ...]) -> dict[int, tuple[int, ...]]:
        if steps not in cache:
            cache[steps] = map_rule(tools, blocks, osdmap, pool, steps, args, synthetic=False)
        return cache[steps]
    return map_block
