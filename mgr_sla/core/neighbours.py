"""The other mgr modules that act on the pools this module manages, and what
to do about them (pure: the shell reads their settings and acts).

* The balancer (always on; upmap mode and active by default) works on the
  pools of `mgr/balancer/pool_ids`, a comma-separated list of pool ids, every
  pool when it is empty. On a managed pool it aims at CRUSH weights over both
  classes (`sla_shared` takes the whole root) and drops and adds entries, and
  this module puts its own back: a tug of war. So the managed pools are kept
  out of its list. An empty list cannot be shortened (`ceph balancer pool rm`
  does nothing then): it becomes the explicit list of every other pool, kept
  up to date as pools come and go, and `release` puts the operator's own value
  back. When every pool is managed no list can leave them out (the balancer
  prunes ids of pools that no longer exist and an empty list means every
  pool), so the module warns instead.
* The pg_autoscaler changes pg_num on pools in autoscale mode `on`: the
  planner follows splits and merges (upmaps.plan_pool with the pool's
  counts); the helpers here say what is under way, for status.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .cluster import PoolInfo
from .upmap.pg_plan import harmless_pairs, raw_set
from .upmap.regions import Pairs, Regions, mapping_faults

# Balancer modes that change the mapping of the pools it works on: upmap
# (pg_upmap_items), read and upmap-read (pg_upmap_primary, Reef and later),
# crush-compat (the compat weight set). Only 'none' leaves them alone.
IDLE_BALANCER_MODES = frozenset({"none", ""})

# The balancer's own defaults (Octopus and later), for when neither its
# option nor the mgr map's module metadata says: never set, it is on, in
# upmap mode.
BALANCER_DEFAULTS: dict[str, Any] = {"mode": "upmap", "active": True, "pool_ids": ""}


def module_option_default(mgr_map: Mapping[str, Any] | None, module: str, key: str
                          ) -> str | None:
    """The default of another module's option as the running mgr declares it
    (`mgr dump`: available_modules[].module_options[key].default_value).

    An option never set reads as None from get_module_option_ex on recent
    releases (the default is the other module's to apply), so "unset" must
    not be taken for "off": the balancer is active in upmap mode then."""
    for entry in (mgr_map or {}).get("available_modules", []) or []:
        if entry.get("name") != module:
            continue
        option = (entry.get("module_options") or {}).get(key) or {}
        value = option.get("default_value")
        return None if value is None else str(value)
    return None


def parse_pool_ids(value: str | None) -> tuple[int, ...]:
    """'3,1, 2' -> (1, 2, 3); anything that is not an id is skipped (the
    balancer itself would fail on it)."""
    out = set()
    for part in str(value or "").split(","):
        part = part.strip()
        if part.lstrip("-").isdigit():
            out.add(int(part))
    return tuple(sorted(out))


def format_pool_ids(ids: Iterable[int]) -> str:
    return ",".join(str(i) for i in sorted(set(ids)))


@dataclass(frozen=True)
class BalancerView:
    """What the balancer is set to: `mode` and `active` (its module options,
    or `ceph balancer status`), `pool_ids` as set ('' = every pool)."""

    mode: str
    active: bool
    pool_ids: str = ""

    @property
    def moves_data(self) -> bool:
        """Its mode changes mappings. Checked whether it is active or not:
        `ceph balancer on` starts a round at once, before anyone sees it."""
        return self.mode not in IDLE_BALANCER_MODES


def balancer_view(status: Mapping[str, Any], pool_ids: str | None) -> BalancerView:
    """From `ceph balancer status` (or the module options `mode`, `active`)
    and the value of mgr/balancer/pool_ids (None when unset)."""
    active = status.get("active", False)
    if isinstance(active, str):
        active = active.strip().lower() in ("1", "true", "yes", "on")
    return BalancerView(str(status.get("mode") or "none"), bool(active), str(pool_ids or ""))


@dataclass(frozen=True)
class BalancerAction:
    """What to do with mgr/balancer/pool_ids.

    `write`: the value to set, None to leave it. `intent`: the operator's own
    value, which `release` puts back; `written`: the value the module has
    put in force. The shell keeps both (its store) and hands them back next
    time. `reaches`: managed pools the balancer still works on after this;
    `warning`: why, with the command that keeps it off them."""

    write: str | None
    intent: str | None
    written: str | None
    reaches: tuple[int, ...] = ()
    warning: str | None = None


def operator_intent(current: str, intent: str | None, written: str | None) -> str:
    """The operator's value of pool_ids, given what is set now and what the
    module saved and wrote before.

    Never written: what is set is theirs. Unchanged since the module wrote
    it: what they had. Changed by someone since: an empty value is theirs
    (every pool); pools only added to the module's list keep 'every pool';
    otherwise their new list, plus the managed pools the module had taken
    out of their explicit list."""
    if intent is None or written is None:
        return current
    if current == written:
        return intent
    now, ours = set(parse_pool_ids(current)), set(parse_pool_ids(written))
    if not now:
        return ""
    if intent == "":
        return "" if now >= ours else format_pool_ids(now)
    taken_out = set(parse_pool_ids(intent)) - ours
    return format_pool_ids(now | taken_out)


def balancer_exclusion(view: BalancerView, pools: Iterable[int], managed: Iterable[int],
                       intent: str | None = None, written: str | None = None,
                       names: Mapping[int, str] | None = None) -> BalancerAction:
    """What to set mgr/balancer/pool_ids to so that the balancer leaves the
    `managed` pools alone (the normal pools, and urgent pools with hybrid
    placement: every pool with this module's entries), given every pool id
    that exists. `names` (pool id -> name) only makes the warning readable."""
    everything = set(pools)
    ours = set(managed) & everything
    wanted_by_operator = operator_intent(view.pool_ids, intent, written)
    if not view.moves_data:
        # nothing to do while its mode changes nothing; what the module wrote stays
        return BalancerAction(None, intent, written)
    base = everything if wanted_by_operator == "" else \
        set(parse_pool_ids(wanted_by_operator)) & everything
    reach = base & ours
    if not reach:
        return BalancerAction(None, wanted_by_operator if written is not None else intent,
                              written)
    keep = base - ours
    if not keep:
        label = ", ".join((names or {}).get(p, str(p)) for p in sorted(reach))
        warning = (f"the balancer (mode {view.mode}) works on pools managed by sla ({label}) "
                   "and no pool_ids value can leave them out: every pool it may balance is "
                   "managed (an empty list means every pool). Run `ceph balancer off`, or "
                   "`ceph balancer mode none`, while sla manages them")
        return BalancerAction(None, wanted_by_operator if written is not None else intent,
                              written, tuple(sorted(reach)), warning)
    value = format_pool_ids(keep)
    write = None if view.pool_ids and set(parse_pool_ids(view.pool_ids)) == keep else value
    return BalancerAction(write, wanted_by_operator, value)


def balancer_release(current: str, intent: str | None, written: str | None
                     ) -> str | None:
    """The value `release` puts back into mgr/balancer/pool_ids (None: leave
    it, the module never wrote it). '' is the balancer's default: every pool
    (`ceph config rm mgr mgr/balancer/pool_ids` says it best)."""
    if intent is None or written is None:
        return None
    value = operator_intent(current, intent, written)
    return None if value == current else value


def balancer_health(action: BalancerAction) -> dict[str, dict[str, Any]]:
    """The health check for a balancer the module cannot keep off its pools."""
    if not action.warning:
        return {}
    return {"SLA_BALANCER_CONFLICT": {
        "severity": "warning",
        "summary": f"the balancer works on {len(action.reaches)} pools managed by sla",
        "count": len(action.reaches),
        "detail": [action.warning]}}


@dataclass(frozen=True)
class EntryClasses:
    """A pool's pg_upmap_items by kind: `ours` (pairs onto urgent OSDs, or a
    PG's repair), `harmless` foreign pairs (normal to normal, kept), PGs with
    `conflicting` pairs (replaced or removed by the planner)."""

    ours: int = 0
    harmless: int = 0
    conflicting: tuple[str, ...] = ()


def classify_entries(up_sets: Mapping[str, Sequence[int]], current: Mapping[str, Pairs],
                     regions: Regions) -> EntryClasses:
    """Which pairs of the pool's entries are harmless to keep (source and
    target both normal class, no OSD or failure domain twice), which are the
    module's kind (onto an urgent OSD, in a PG whose up set breaks nothing),
    and which PGs carry pairs that conflict (anything else, or an up set with
    an OSD or a failure domain twice). PGs whose up set is not known are
    skipped."""
    ours = harmless = 0
    conflicting = []
    urgent = regions.urgent_class
    for pgid, pairs in sorted(current.items()):
        up = up_sets.get(pgid)
        if up is None or not pairs:
            continue
        keep, rest = harmless_pairs(raw_set(up, pairs), pairs, regions)
        harmless += len(keep)
        mine = [p for p in rest if p[1] in regions.osds and regions.osds[p[1]].cls == urgent]
        if len(mine) != len(rest) or mapping_faults({pgid: up}, regions, False).any:
            conflicting.append(pgid)
        else:
            ours += len(mine)
    return EntryClasses(ours, harmless, tuple(conflicting))


def autoscaler_view(pools: Mapping[int, PoolInfo], managed: Iterable[int]
                    ) -> dict[int, dict[str, Any]]:
    """Per managed pool: its autoscale mode and any PG count change under way
    ('merge' or 'split', toward pg_num_target), for status. The pg_autoscaler
    starts merges on its own in mode `on`: while one runs, the planner leaves
    the PGs it will touch alone (upmaps.merge_bound_seeds)."""
    out: dict[int, dict[str, Any]] = {}
    for pid in sorted(managed):
        info = pools.get(pid)
        if info is None:
            continue
        change = "merge" if info.merging else "split" if info.splitting else None
        out[pid] = {"pg_autoscale_mode": info.pg_autoscale_mode or None,
                    "pg_num": info.pg_num or None,
                    "pg_num_target": info.pg_num_target or None,
                    "pgp_num": info.pgp_num or None,
                    "changing": change}
    return out
