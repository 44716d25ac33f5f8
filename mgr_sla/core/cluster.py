"""Plain views of what the mgr hands the module (`osd_map`, `osd_map_crush`,
`pg_dump`, ...). Pure functions on the dicts, so the shell stays thin and the
parsing is unit-tested without Ceph."""
from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class PoolInfo:
    """One pool of the osd_map dump (`pg_pool_t::dump`).

    The PG counts follow Ceph's names: `pg_num` PGs exist (the mon refuses an
    upmap entry for a PG at or above it), `pg_num_pending` is the count a
    merge is about to shrink to (below `pg_num` only while the last PG merges
    into its parent), `pg_num_target` is where the mgr steps `pg_num` to, and
    `pgp_num` (`pg_placement_num` in the dump) is how many PGs CRUSH places on
    their own seed: a PG at or above it maps like its ancestor
    (`placement_seed`). 0 means the dump did not say (an older dump, a test's
    dict): then nothing is known to be splitting or merging."""

    pool_id: int
    name: str
    rule_id: int
    size: int
    erasure: bool = False  # an erasure-coded pool (osd_map pool type 3)
    min_size: int = 0
    pg_num: int = 0
    pg_num_pending: int = 0
    pg_num_target: int = 0
    pgp_num: int = 0
    pgp_num_target: int = 0
    quota_max_bytes: int = 0  # 0: no quota
    pg_autoscale_mode: str = ""  # 'on', 'warn', 'off'; '' when the dump has none
    flags: frozenset[str] = frozenset()  # `flags_names`: nosizechange, nodelete, ...
    ec_profile: str = ""  # an erasure-coded pool's profile (`erasure_code_profile`)
    ec_k: int = 0  # its data shards per PG, by the profile (0: replicated, or not known)
    ec_m: int = 0  # its coding shards per PG

    @property
    def pieces_per_object(self) -> int:
        """What one copy of a PG holds of its data: all of it (a replica), or
        one of k pieces (a shard of an erasure-coded PG)."""
        return max(self.ec_k, 1) if self.erasure else 1

    @property
    def merging(self) -> bool:
        """A merge is under way or coming: the mgr steps pg_num down toward
        pg_num_target, one PG at a time (the balancer's `pools_with_pg_merge`),
        or the mon already waits for the last PG to merge (pg_num_pending)."""
        return 0 < self.pg_num_target < self.pg_num or 0 < self.pg_num_pending < self.pg_num

    @property
    def splitting(self) -> bool:
        """pg_num grows toward pg_num_target, or pgp_num still lags pg_num: new
        PGs exist or will, and some map like their parent for now."""
        return (self.pg_num_target > self.pg_num > 0
                or (0 < self.pgp_num < self.pg_num and not self.merging)
                or self.pgp_num_target > self.pgp_num > 0)


def _int(entry: Mapping[str, Any], key: str, default: int) -> int:
    try:
        return int(entry.get(key, default))
    except (TypeError, ValueError):
        return default


@dataclass(frozen=True)
class EcProfile:
    """One `erasure_code_profiles` entry of the osd_map dump (all strings there)."""

    name: str
    k: int
    m: int
    plugin: str
    failure_domain: str  # crush-failure-domain (Ceph's default: host)
    device_class: str  # crush-device-class ('' for every class)


def ec_profile(osd_map: Mapping[str, Any], name: str) -> EcProfile | None:
    """The profile `name` of the osd_map dump, None when the map has none of that name."""
    return _profile(osd_map.get("erasure_code_profiles"), name)


def _profile(profiles: Mapping[str, Any] | None, name: str) -> EcProfile | None:
    raw = (profiles or {}).get(name) if name else None
    if not isinstance(raw, Mapping):
        return None
    return EcProfile(name, _int(raw, "k", 0), _int(raw, "m", 0),
                     str(raw.get("plugin") or "jerasure"),
                     str(raw.get("crush-failure-domain") or "host"),
                     str(raw.get("crush-device-class") or ""))


def pool_info(p: Mapping[str, Any], ec_profiles: Mapping[str, Any] | None = None) -> PoolInfo:
    """A PoolInfo from one `pools` entry of the osd_map dump. Pacific through
    Tentacle dump every field used here (`pg_pool_t::dump`: `min_size`,
    `pg_num`, `pg_placement_num`, `pg_placement_num_target`, `pg_num_target`,
    `pg_num_pending`, `quota_max_bytes`, `pg_autoscale_mode`, `flags_names`); a missing key
    falls back to what changes nothing (the counts to `pg_num`, no quota)."""
    pg_num = _int(p, "pg_num", 0)
    pgp_num = _int(p, "pg_placement_num", _int(p, "pgp_num", pg_num))
    size = int(p["size"])
    profile = _profile(ec_profiles, str(p.get("erasure_code_profile") or ""))
    return PoolInfo(
        int(p["pool"]), str(p["pool_name"]), int(p["crush_rule"]), size,
        int(p.get("type", 1)) == 3,
        min_size=_int(p, "min_size", 0),
        pg_num=pg_num,
        pg_num_pending=_int(p, "pg_num_pending", pg_num),
        pg_num_target=_int(p, "pg_num_target", pg_num),
        pgp_num=pgp_num,
        pgp_num_target=_int(p, "pg_placement_num_target", pgp_num),
        quota_max_bytes=_int(p, "quota_max_bytes", 0),
        pg_autoscale_mode=str(p.get("pg_autoscale_mode") or ""),
        flags=frozenset(f for f in str(p.get("flags_names") or "").split(",") if f),
        ec_profile=str(p.get("erasure_code_profile") or ""),
        ec_k=profile.k if profile else 0,
        ec_m=profile.m if profile else 0,
    )


@dataclass(frozen=True)
class ClusterView:
    epoch: int
    crush_version: int
    pools: dict[int, PoolInfo]
    rules: dict[str, int]  # rule name -> id
    device_class: dict[int, str]  # osd id -> class
    down_in_osds: tuple[int, ...]  # marked in but not up
    choose_args_pools: frozenset[int]  # pool ids with their own choose_args
    # choose_args keys (pool ids, -1 for compat) whose weight sets have more
    # than one position: adding a host or root aborts ceph-mon with them
    # installed (docs/known-issues.md)
    positional_choose_args: tuple[int, ...] = ()
    in_osds: frozenset[int] = frozenset()  # marked in, up or not
    # rule id -> the device class of each of its takes ('' for a take without one)
    rule_takes: dict[int, frozenset[str]] = field(default_factory=dict)

    def in_under_takes(self, rule_id: int) -> int:
        """The in OSDs under the rule's takes, as the mon counts them for its
        per-rule PG projection (a class take: that class's OSDs)."""
        takes = self.rule_takes.get(rule_id, frozenset())
        if "" in takes:
            return len(self.in_osds)
        return sum(1 for o in self.in_osds if self.device_class.get(o) in takes)

    def pool_by_name(self, name: str) -> PoolInfo | None:
        return next((p for p in self.pools.values() if p.name == name), None)

    def rule_name(self, rule_id: int) -> str:
        return next((n for n, i in self.rules.items() if i == rule_id), f"rule {rule_id}")

    def osds_of_class(self, cls: str) -> frozenset[int]:
        return self._by_class.get(cls, frozenset())

    @functools.cached_property
    def _by_class(self) -> dict[str, frozenset[int]]:
        """Each class's OSDs, worked out once per converted map (asked every tick)."""
        out: dict[str, set[int]] = {}
        for osd, cls in self.device_class.items():
            out.setdefault(cls, set()).add(osd)
        return {c: frozenset(osds) for c, osds in out.items()}


def cluster_view(osd_map: Mapping[str, Any], crush: Mapping[str, Any]) -> ClusterView:
    profiles = osd_map.get("erasure_code_profiles")
    pools = {int(p["pool"]): pool_info(p, profiles) for p in osd_map.get("pools", [])}
    rules = {str(r["rule_name"]): int(r["rule_id"]) for r in crush.get("rules", [])}
    classes = {int(d["id"]): str(d.get("class", "")) for d in crush.get("devices", [])}
    down_in = tuple(sorted(int(o["osd"]) for o in osd_map.get("osds", [])
                           if o.get("in") and not o.get("up")))
    choose_args = frozenset(int(k) for k in (crush.get("choose_args") or {}) if k.lstrip("-")
                            .isdigit() and int(k) >= 0)
    positional = tuple(sorted(
        int(k) for k, args in (crush.get("choose_args") or {}).items()
        if k.lstrip("-").isdigit() and any(len(a.get("weight_set") or []) > 1 for a in args)))
    in_osds = frozenset(int(o["osd"]) for o in osd_map.get("osds", []) if o.get("in"))
    return ClusterView(
        in_osds=in_osds,
        rule_takes={int(r["rule_id"]): _take_classes(r) for r in crush.get("rules", [])},
        epoch=int(osd_map.get("epoch", 0)),
        crush_version=int(osd_map.get("crush_version", 0)),
        pools=pools,
        rules=rules,
        device_class=classes,
        down_in_osds=down_in,
        choose_args_pools=choose_args,
        positional_choose_args=positional,
    )


def _take_classes(rule: Mapping[str, Any]) -> frozenset[str]:
    """'default~ssd' -> 'ssd'; a take of a plain bucket -> ''."""
    names = [str(step.get("item_name", "")) for step in rule.get("steps", [])
             if step.get("op") == "take"]
    return frozenset(n.split("~", 1)[1] if "~" in n else "" for n in names)


def pools_with_pg_merge(view: ClusterView) -> frozenset[int]:
    """Pools with a PG merge pending, as Ceph's balancer defines it
    (`pg_num > pg_num_target`), plus those whose last PG already waits to
    merge (`pg_num_pending < pg_num`). The mon cancels upmap entries of PGs
    at or above pg_num_pending and of PGs pending a merge (still answering
    rc=0), and the mgr removes those of the next merge source and target
    itself (DaemonServer::adjust_pgs): the balancer skips such pools."""
    return frozenset(pid for pid, p in view.pools.items() if p.merging)


def pools_changing_pg_num(view: ClusterView) -> dict[int, str]:
    """Pool id -> 'merge' or 'split' for every pool whose PG count or
    placement count is still moving (for status, and to know that the next
    epochs will bring new PGs or take some away)."""
    out: dict[int, str] = {}
    for pid, p in view.pools.items():
        if p.merging:
            out[pid] = "merge"
        elif p.splitting:
            out[pid] = "split"
    return out


def pool_misplaced_ratios(pg_dump: Mapping[str, Any]) -> dict[int, float]:
    """Misplaced object copies / object copies, per pool (pg_dump pool_stats)."""
    out = {}
    for entry in pg_dump.get("pool_stats", []):
        stats = entry.get("stat_sum", {})
        copies = int(stats.get("num_object_copies", 0))
        misplaced = int(stats.get("num_objects_misplaced", 0))
        out[int(entry["poolid"])] = misplaced / copies if copies else 0.0
    return out


def pgs_acting_on(pg_stats: Iterable[Mapping[str, Any]], pool_ids: Iterable[int],
                  osds: frozenset[int]) -> int:
    """How many PGs of the pools may still serve I/O on one of `osds`.

    Acting, not up: after a rule change the old OSDs keep serving through
    pg_temp until backfill ends, so isolation is real only once acting
    sets have left them (docs/known-issues.md). A PG that is not active yet
    counts too, whatever its acting set says: while it peers, the stats show
    the new up set before the primary has asked for the pg_temp that keeps
    the old OSDs acting."""
    wanted = {str(p) for p in pool_ids}
    count = 0
    for pg in pg_stats:
        if str(pg.get("pgid", "")).split(".")[0] not in wanted:
            continue
        state = set(str(pg.get("state", "")).split("+"))
        settled = "active" in state and "peering" not in state
        if not settled or osds & set(pg.get("acting", [])):
            count += 1
    return count


def pgs_without(pg_stats: Iterable[Mapping[str, Any]], pool_ids: Iterable[int],
                osds: frozenset[int]) -> list[str]:
    """PGs of the pools whose up set holds none of `osds`.

    Normal inclusion checked on the real up sets, pg_upmap entries included:
    the CRUSH rule guarantees it, but an upmap (the balancer's) may move the
    one normal replica of a PG onto the urgent class."""
    wanted = {str(p) for p in pool_ids}
    return sorted(str(pg["pgid"]) for pg in pg_stats
                  if str(pg.get("pgid", "")).split(".")[0] in wanted
                  and not osds & set(pg.get("up", [])))


def is_settled(state: str) -> bool:
    """active+clean, whatever else runs on the PG: scrubbing, deep, snaptrim,
    laggy... (on a big cluster some PG always scrubs)."""
    parts = set(state.split("+"))
    return "active" in parts and "clean" in parts


def moving_pools(by_pool: Mapping[str, Mapping[str, int]] | None) -> frozenset[int]:
    """The pools with a PG not active+clean (pg_summary's by_pool): their
    data moves or their PGs re-peer, so their client latency says nothing
    about the placement they are headed for."""
    return frozenset(int(p) for p, states in (by_pool or {}).items()
                     if any(not is_settled(str(s)) for s in states))


def pgs_not_clean(pg_stats: Iterable[Mapping[str, Any]], pool_ids: Iterable[int]) -> int:
    wanted = {str(p) for p in pool_ids}
    return sum(1 for pg in pg_stats
               if str(pg.get("pgid", "")).split(".")[0] in wanted
               and not is_settled(str(pg.get("state", ""))))


def pgs_reported_elsewhere(pg_stats: Iterable[Mapping[str, Any]],
                           up: Mapping[str, Sequence[int]]) -> int:
    """PGs whose last reported up set is not the map's: their OSDs have not
    reported since an epoch moved them, so their state is the old mapping's
    (with a stats period of seconds, a map change shows as clean at first)."""
    count = 0
    for pg in pg_stats:
        want = up.get(str(pg.get("pgid", "")))
        if want is not None and [int(o) for o in pg.get("up") or []] != list(want):
            count += 1
    return count


def mapping_change(before: Mapping[str, list[int]], after: Mapping[str, list[int]]
                   ) -> tuple[int, int]:
    """(PGs whose up set changed, replicas that land on a new OSD)."""
    pgs = replicas = 0
    for pgid, old in before.items():
        new = after.get(pgid, old)
        added = len(set(new) - set(old))
        if added:
            pgs += 1
            replicas += added
    return pgs, replicas


def pg_bytes_by_seed(pg_stats: Iterable[Mapping[str, Any]], pool_id: int) -> dict[int, int]:
    """PG seed -> bytes of one replica, for one pool (pg_dump pg_stats)."""
    prefix = f"{pool_id}."
    return {int(str(pg["pgid"])[len(prefix):], 16): int(pg.get("stat_sum", {}).get("num_bytes", 0))
            for pg in pg_stats if str(pg.get("pgid", "")).startswith(prefix)}


def pool_refusal(info: PoolInfo, crush: Mapping[str, Any], failure_domain: str) -> str | None:
    """Why a pool cannot be managed, or None. The sla rules are replicated
    chooseleaf rules from root `default` with one failure domain type; a pool
    whose own rule is erasure-coded, or draws from another root or failure
    domain, would be silently moved off its own placement, so it is refused."""
    if info.erasure:
        return (f"pool '{info.name}' is erasure-coded: the sla rules are replicated rules "
                "(chooseleaf firstn), and an EC pool cannot use them; keep it out of sla")
    rule = next((r for r in crush.get("rules", []) if int(r.get("rule_id", -1)) == info.rule_id),
                None)
    if rule is None or str(rule.get("rule_name", "")).startswith("sla_"):
        return None
    for step in rule.get("steps", []):
        op = str(step.get("op", ""))
        if op == "take":
            root = str(step.get("item_name", "")).split("~")[0]
            if root != "default":
                return (f"pool '{info.name}' uses rule {rule['rule_name']}, which takes root "
                        f"'{root}'; the sla rules take 'default': move the pool's data there "
                        "first or keep it out of sla")
        if op.startswith(("chooseleaf", "choose_")) and step.get("type") not in (
                None, failure_domain):
            return (f"pool '{info.name}' uses rule {rule['rule_name']} with failure domain "
                    f"'{step.get('type')}'; the sla rules use '{failure_domain}' "
                    f"(mgr/sla/failure_domain): set that option to match, or keep it out")
    return None


def pool_pg_stats(pg_stats: Any, pool_ids: Iterable[int]) -> list[Mapping[str, Any]]:
    """The PG stats of the given pools from the mgr's `pg_stats` (a dict with
    a "pg_stats" list, or the list itself): the scan while a switch moves
    data looks at the pools that matter only."""
    entries = pg_stats.get("pg_stats", []) if isinstance(pg_stats, Mapping) else pg_stats
    wanted = {f"{p}." for p in pool_ids}
    return [pg for pg in entries or []
            if str(pg.get("pgid", ""))[: str(pg.get("pgid", "")).find(".") + 1] in wanted]
