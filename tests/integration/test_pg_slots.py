"""PG slots per urgent OSD on a real cluster: a copy pool whose extra copy
would take an urgent OSD past mon_max_pg_per_osd (a failure domain lost
included) stays isolated in shared mode, and status, plan and health name the
OSD, its projected count and the limit; with room again, it shares.

The limit is set from the cluster's own counts so that today's placement
fits and the copy pool's sharing does not, while the cluster-wide average
stays under it (Ceph's own guards, which are averages, say nothing). It is
set at runtime in the daemons (`ceph tell ... config set`): the mini cluster's
ceph.conf sets it, and a file setting wins over `ceph config set`."""
from __future__ import annotations

import math
import re
from typing import Any

import pytest

from harness.cephcluster import Cluster, wait_for, wait_mode
from harness.probes import settled_pg_counts

pytestmark = pytest.mark.integration

POOL = "slotpool"
PGS = 32
# The urgent pools fill the SSD OSDs, as in production, where SSDs are few: here
# the mini cluster's SSDs are as many as its HDDs, so one more urgent pool does it.
URGENT = "slots-urgent"
URGENT_PGS = 64


def _pool(cluster: Cluster) -> dict[str, Any]:
    return next(p for p in cluster.json("osd", "pool", "ls", "detail") if p["pool_name"] == POOL)


def _pool_up_on(cluster: Cluster, osds: set[int]) -> dict[int, int]:
    """The pool's PGs with a replica on each of `osds`, by their up sets."""
    out: dict[int, int] = {}
    listed = cluster.json("pg", "ls-by-pool", POOL)
    for pg in listed.get("pg_stats", []) if isinstance(listed, dict) else listed:
        for osd in set(pg["up"]) & osds:
            out[osd] = out.get(osd, 0) + 1
    return out


def _set_limit(cluster: Cluster, value: str) -> None:
    for who in ("mgr", "osd.*"):
        done = cluster.ceph_raw("tell", who, "config", "set", "mon_max_pg_per_osd", value,
                                cli=True)
        assert done.returncode == 0, done.stderr


def _entry(cluster: Cluster) -> dict[str, Any]:
    return next(p for p in cluster.sla_status()["pools"] if p["name"] == POOL)


def _kept_for_slots(cluster: Cluster) -> dict[str, Any]:
    """The pool's status entry once kept for PG slots; else what status and
    plan say of it (a wait's last seen value)."""
    entry = _entry(cluster)
    if "mon_max_pg_per_osd" in (entry["kept_isolated"] or ""):
        return entry
    plan = next(c for c in cluster.json("sla", "plan")["costs"] if c["name"] == POOL)
    raise AssertionError({"status": entry, "pg_slots_if_shared": plan["pg_slots_if_shared"]})


def test_a_copy_pool_past_the_pg_limit_stays_isolated_and_is_named(sla_pools: Cluster) -> None:
    cluster = sla_pools
    cluster.ceph("sla", "mode", "isolated")  # the counts below: nothing shared
    cluster.create_pool(URGENT, URGENT_PGS)
    cluster.create_pool(POOL, PGS, size=2)
    try:
        cluster.ceph("sla", "pool", "set", URGENT, "urgent", timeout=300)
        out = cluster.json("sla", "pool", "set", POOL, "normal", "--strategy", "copy",
                           timeout=300)
        assert out["strategy"] == "copy", out
        wait_for("the pools on their rules", lambda: cluster.pool_rule(POOL) ==
                 "sla_isolated_normal" and _pool(cluster)["size"] == 2
                 and cluster.pool_rule(URGENT) == "sla_isolated_urgent", 60)
        cluster.wait_clean(300)
        ssds = {n["id"] for n in cluster.json("osd", "df")["nodes"]
                if n.get("device_class") == "ssd"}
        # the OSDs' reports caught up with the map (strays of the pool's first
        # placement deleted): what the module counts is what the up sets say
        counts = settled_pg_counts(cluster)
        now = max(counts[o] for o in ssds)
        original = cluster.json("tell", "mgr", "config", "get", "mon_max_pg_per_osd")[
            "mon_max_pg_per_osd"]
        # the module's projection of sharing on CRUSH's mapping (worst urgent OSD,
        # a failure domain lost): the limit just under it, and no higher than
        # today's placement needs with a domain lost. Set again while the projection
        # moves (the OSDs' reports it counts can still move it by a PG): the limit
        # stands once the module has taken it and, a read later, still projects more
        limit = 0

        def limit_just_under() -> dict[str, Any] | None:
            nonlocal limit
            e = next(c for c in cluster.json("sla", "plan")["costs"] if c["name"] == POOL)[
                "pg_slots_if_shared"]
            if e["basis"] != "crush":
                return None
            want = min(now + math.ceil(now / 3) + 2, int(e["pgs"]) - 1)
            if want != limit:
                _set_limit(cluster, str(want))
                limit = want
                return None
            return e if e["limit"] == limit and int(e["pgs"]) > limit else None
        shared = wait_for("the module to take a limit just under its projection",
                          limit_just_under, 120, interval=2)
        assert limit >= now + 2, f"sharing adds too little to tell apart: {shared}, now {now}"
        assert (sum(counts.values()) + PGS) / len(counts) < limit, \
            "Ceph's average would refuse on its own"
        cluster.ceph("sla", "mode", "shared")
        kept = wait_for("the pool kept isolated for PG slots", lambda: _kept_for_slots(cluster), 90)
        assert f"over mon_max_pg_per_osd {limit}" in kept["kept_isolated"]
        wait_mode(cluster, "shared", 60)
        assert _pool(cluster)["size"] == 2 and _entry(cluster)["kept_isolated"]
        checks = cluster.json("health", "detail")["checks"]
        assert POOL in " ".join(d["message"] for d in checks["SLA_PG_LIMIT"]["detail"])
        # the extra copy's OSDs as CRUSH maps sla_copy_2 at 3 on the pool's PGs
        slots = wait_for("the projection from CRUSH's mapping", lambda: (
            e := next(c for c in cluster.json("sla", "plan")["costs"] if c["name"] == POOL)[
                "pg_slots_if_shared"])["basis"] == "crush" and e, 90)
        assert slots["limit"] == limit and slots["pgs"] > limit, slots
        projected = {int(o): n for o, n in slots["pool_pgs_per_urgent_osd"].items()}
        assert set(projected) <= ssds and sum(projected.values()) == PGS, projected
        assert f"limit {limit}" in cluster.ceph("sla", "plan")
        assert "CRUSH's mapping" in cluster.ceph("sla", "plan")
        # room again: the pool shares (one more copy, on its copy rule), and
        # each urgent OSD holds exactly the PGs the projection counted
        _set_limit(cluster, original)
        wait_for("the pool shared", lambda: _pool(cluster)["size"] == 3
                 and cluster.pool_rule(POOL) == "sla_copy_2", 120)
        placed = wait_for("the pool's up sets at size 3", lambda: (
            up := _pool_up_on(cluster, ssds)) and sum(up.values()) == PGS and up, 60)
        assert placed == projected, (placed, projected)
    finally:
        if "original" in locals():
            _set_limit(cluster, original)
        cluster.ceph_raw("sla", "mode", "auto")
        for pool in (POOL, URGENT):
            cluster.ceph_raw("sla", "pool", "rm", pool, timeout=300)
            cluster.ceph_raw("osd", "pool", "rm", pool, pool, "--yes-i-really-really-mean-it")


MON_POOL = "monproj"


def _set_mon_limit(cluster: Cluster, value: str) -> None:
    """The mon's and the mgr's mon_max_pg_per_osd (not the OSDs': they would
    withhold PGs), at runtime: the mini cluster's ceph.conf sets it."""
    for who in ("mon.*", "mgr"):
        done = cluster.ceph_raw("tell", who, "config", "set", "mon_max_pg_per_osd", value,
                                cli=True)
        assert done.returncode == 0, done.stderr


def _mon_reason(cluster: Cluster) -> str:
    entry = next(p for p in cluster.sla_status()["pools"] if p["name"] == MON_POOL)
    return entry["kept_isolated"] or ""


def _raise_by_hand(cluster: Cluster) -> Any:
    """What the module would send to share the pool: its copy rule, then size 3."""
    cluster.ceph("osd", "pool", "set", MON_POOL, "crush_rule", "sla_copy_2")
    return cluster.ceph_raw("osd", "pool", "set", MON_POOL, "size", "3")


def test_a_size_raise_the_mon_would_refuse_is_never_sent(sla_pools: Cluster) -> None:
    """The module runs the mon's own projection (this release's: cluster-wide
    up to Pacific, per rule from Reef): at the limit just under what the raise
    needs, the module keeps the pool isolated and names the mon's refusal, and
    the mon indeed refuses the same commands by hand (ERANGE); one higher, the
    module no longer names it and the mon accepts them."""
    cluster = sla_pools
    cluster.ceph("sla", "mode", "shared")
    cluster.create_pool(MON_POOL, 32, size=2)
    original = cluster.json("tell", "mgr", "config", "get", "mon_max_pg_per_osd")[
        "mon_max_pg_per_osd"]
    try:
        _set_mon_limit(cluster, "1")
        cluster.json("sla", "pool", "set", MON_POOL, "normal", "--strategy", "copy",
                     timeout=300)
        reason = wait_for("the mon's refusal named", lambda: "(ERANGE)" in (
            r := _mon_reason(cluster)) and r, 90)
        match = re.search(r"size 3' \(ERANGE\): (\d+) PG replicas projected, over "
                          r"mon_max_pg_per_osd 1 x (\d+)", reason)
        assert match, reason
        total, osds = int(match.group(1)), int(match.group(2))
        fits = math.ceil(total / osds)
        assert _pool_named(cluster, MON_POOL)["size"] == 2
        # the module decides but changes no pool while the commands go by hand
        cluster.ceph("config", "set", "mgr", "mgr/sla/dry_run", "true")
        wait_for("dry run in force", lambda: cluster.sla_status()["dry_run"], 30)
        _set_mon_limit(cluster, str(fits - 1))
        wait_for("the refusal at the new limit", lambda: f"mon_max_pg_per_osd {fits - 1} x" in
                 _mon_reason(cluster), 60)
        refused = _raise_by_hand(cluster)
        assert refused.returncode != 0 and "ERANGE" in refused.stderr + refused.stdout, \
            (refused.returncode, refused.stderr)
        assert _pool_named(cluster, MON_POOL)["size"] == 2
        _set_mon_limit(cluster, str(fits))
        wait_for("no refusal at the limit that fits", lambda: "(ERANGE)" not in
                 _mon_reason(cluster), 60)
        accepted = _raise_by_hand(cluster)
        assert accepted.returncode == 0, accepted.stderr
        assert _pool_named(cluster, MON_POOL)["size"] == 3
    finally:
        _set_mon_limit(cluster, str(original))
        # set, not removed: Pacific's mgr keeps a removed module option's last value
        cluster.ceph_raw("config", "set", "mgr", "mgr/sla/dry_run", "false")
        cluster.ceph_raw("sla", "mode", "auto")
        cluster.ceph_raw("sla", "pool", "rm", MON_POOL, timeout=300)
        cluster.ceph_raw("osd", "pool", "rm", MON_POOL, MON_POOL, "--yes-i-really-really-mean-it")


def _pool_named(cluster: Cluster, name: str) -> dict[str, Any]:
    return next(p for p in cluster.json("osd", "pool", "ls", "detail") if p["pool_name"] == name)
