"""The admission and the check after the fact on a real cluster shaped like
production: fewer urgent than normal OSDs (10 OSDs on 5 hosts made 7 hdd + 3
ssd), an urgent pool on them, normal pools under each strategy.

Each scenario runs with client ops on the normal and the urgent pools and a
watch on the PG states: no PG inactive for more than 15 s and no client op
waiting more than 30 s because of the module (a PG an OSD the test hangs
makes inactive is left out).
"""
from __future__ import annotations

import os
import shutil
import signal
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness.cephcluster import Cluster, PacedWriter, wait_for, wait_mode
from harness.probes import InactiveWatch, OpProbe, assert_served, settled_pg_counts

pytestmark = pytest.mark.integration

URGENT = "adm-urgent"
SSD = (1, 3, 5)  # after the fixture: osd.7 and osd.9 are hdd
HUNG = 5
HIGH, LOW = 60, 25


@pytest.fixture(scope="module")
def few_ssd() -> Iterator[Cluster]:
    path = Path(tempfile.mkdtemp(prefix="sla-adm-"))
    try:
        cluster = Cluster.up(path, osds=10)
        for osd in (7, 9):
            cluster.ceph("osd", "crush", "rm-device-class", f"osd.{osd}")
            cluster.ceph("osd", "crush", "set-device-class", "hdd", f"osd.{osd}")
        cluster.enable_sla()
        for name, value in [("interval_secs", 1), ("min_dwell_secs", 5),
                            ("rate_window_secs", 3), ("min_gain", 0),
                            ("max_misplaced_ratio", 0.5)]:
            cluster.ceph("config", "set", "mgr", f"mgr/sla/{name}", str(value))
        cluster.ceph("sla", "set-threshold", str(HIGH), str(LOW))
        cluster.ceph("sla", "rules", "apply", timeout=300)
        cluster.create_pool(URGENT, 16, size=2)
        # one copy left serves its clients: an urgent OSD a test hangs holds none of them
        cluster.ceph("osd", "pool", "set", URGENT, "min_size", "1")
        cluster.ceph("sla", "pool", "set", URGENT, "urgent", timeout=120)
        cluster.wait_clean(300)
        yield cluster
    finally:
        if (path / "pids").exists():
            Cluster(path).down()
        shutil.rmtree(path, ignore_errors=True)


def _pool(cluster: Cluster, name: str) -> dict[str, Any]:
    return next(p for p in cluster.json("osd", "pool", "ls", "detail") if p["pool_name"] == name)


def _entry(cluster: Cluster, name: str) -> dict[str, Any]:
    return next(p for p in cluster.sla_status()["pools"] if p["name"] == name)


def _plan(cluster: Cluster, name: str) -> dict[str, Any]:
    return next(c for c in cluster.json("sla", "plan")["costs"] if c["name"] == name)


def _normal(cluster: Cluster, name: str, strategy: str, pgs: int = 32) -> None:
    cluster.create_pool(name, pgs, size=3)
    cluster.ceph("sla", "pool", "set", name, "normal", "--strategy", strategy, timeout=300)
    wait_for(f"{name} on its isolated rule", lambda: cluster.pool_rule(name)
             == "sla_isolated_normal" and _pool(cluster, name)["size"] == 3, 60)


def _drop(cluster: Cluster, *names: str) -> None:
    for name in names:
        cluster.ceph_raw("sla", "pool", "rm", name, timeout=300)
        cluster.ceph_raw("osd", "pool", "rm", name, name, "--yes-i-really-really-mean-it")


def _osd_config(cluster: Cluster, osd: int, key: str) -> str:
    return str(cluster.json("tell", f"osd.{osd}", "config", "get", key)[key])


def _tell_osds(cluster: Cluster, key: str, value: str) -> None:
    done = cluster.ceph_raw("tell", "osd.*", "config", "set", key, value, cli=True)
    assert done.returncode == 0, done.stderr


def _held(what: str, probe: Any, secs: float) -> None:
    """`probe` stays true for `secs` (checked twice a second): nothing moved."""
    deadline = time.monotonic() + secs
    while time.monotonic() < deadline:
        seen = probe()
        assert seen, f"{what} stopped holding: {seen!r}"
        time.sleep(0.5)


@pytest.mark.parametrize("strategy", ["copy", "move"])
def test_a_pg_limit_lowered_on_the_osds_only_keeps_the_pool_isolated(
        few_ssd: Cluster, strategy: str) -> None:
    """The OSDs withhold PGs at mon_max_pg_per_osd x osd_max_pg_per_osd_hard_ratio as
    they run them; set at runtime on the OSDs only (the mgr keeps its own, larger
    value), the module reads them from the OSDs and keeps the pool isolated,
    naming the OSD, its projected PGs and the limit."""
    cluster, pool = few_ssd, f"lim-{strategy}"
    cluster.ceph("sla", "mode", "isolated")
    original = {k: _osd_config(cluster, SSD[0], k)
                for k in ("mon_max_pg_per_osd", "osd_max_pg_per_osd_hard_ratio")}
    _normal(cluster, pool, strategy, pgs=64)
    cluster.wait_clean(300)
    counts = settled_pg_counts(cluster)
    limit = max(counts[o] for o in SSD) + 8  # today's placement fits; sharing adds about 20
    mgr = int(cluster.json("tell", "mgr", "config", "get", "mon_max_pg_per_osd")[
        "mon_max_pg_per_osd"])
    assert mgr > 2 * limit, "the mgr's own value would keep the pool isolated by itself"
    ops = inactive = None
    try:
        _tell_osds(cluster, "osd_max_pg_per_osd_hard_ratio", "1")
        _tell_osds(cluster, "mon_max_pg_per_osd", str(limit))
        # the module asks the OSDs every 30 s (a runtime change shows within that)
        wait_for("the module to read the OSDs' limit", lambda: (
            slots := _plan(cluster, pool)["pg_slots_if_shared"]) and slots[
                "hard_limit"] == limit and slots, 90)
        ops, inactive = OpProbe(cluster, [pool, URGENT]), InactiveWatch(cluster)
        cluster.ceph("sla", "mode", "shared")
        entry = wait_for("the pool kept isolated for the OSDs' own limit",
                         lambda: _kept_for(cluster, pool, f"mon_max_pg_per_osd {limit}"), 60)
        assert "osd_max_pg_per_osd_hard_ratio 1 as osd." in entry["kept_isolated"], entry
        slots = _plan(cluster, pool)["pg_slots_if_shared"]
        assert slots["limit_basis"] == "the OSD" and slots["hard_limit"] == limit, slots
        assert slots["osd"] in SSD and slots["pgs"] > slots["limit"], slots
        wait_for("SLA_PG_LIMIT naming the pool", lambda: pool in " ".join(
            d["message"] for d in cluster.json("health", "detail")["checks"].get(
                "SLA_PG_LIMIT", {}).get("detail", [])), 30)
        _held("the pool on its isolated rule and size", lambda: cluster.pool_rule(pool)
              == "sla_isolated_normal" and _pool(cluster, pool)["size"] == 3, 20)
        assert_served(ops.stop(), inactive.stop(), inactive.states)
    finally:
        for probe in (ops, inactive):
            if probe is not None:
                probe.stop()
        for key, value in original.items():
            _tell_osds(cluster, key, value)
        cluster.ceph_raw("sla", "mode", "auto")
        _drop(cluster, pool)


def _kept_for(cluster: Cluster, pool: str, words: str) -> dict[str, Any]:
    """The pool's status entry once kept isolated for `words`; else raises
    with what status and plan say of it (a wait's last seen value)."""
    entry = _entry(cluster, pool)
    if words in (entry["kept_isolated"] or ""):
        return entry
    plan = _plan(cluster, pool)
    raise AssertionError({"rule": entry["rule"], "size": entry["size"],
                          "kept": entry["kept_isolated"],
                          "slots": plan["pg_slots_if_shared"]})


def test_an_urgent_osd_past_nearfull_during_a_paced_switch_sends_the_step_back(
        few_ssd: Cluster) -> None:
    """Two copy pools shared a step at a time; past nearfull after the first
    step, the first goes back at once although the second still waits for
    its step (a change toward isolation never waits for one toward shared)."""
    cluster = few_ssd
    first, second = "pace-1", "pace-2"
    cluster.ceph("sla", "mode", "isolated")
    ratio = float(cluster.json("osd", "dump")["nearfull_ratio"])
    for name in (first, second):
        _normal(cluster, name, "copy", pgs=16)
    cluster.wait_clean(300)
    for name, value in [("max_step_pgs", 16), ("step_wait_secs", 3600)]:
        cluster.ceph("config", "set", "mgr", f"mgr/sla/{name}", str(value))
    ops = inactive = None
    try:
        ops, inactive = OpProbe(cluster, [first, second, URGENT]), InactiveWatch(cluster)
        cluster.ceph("sla", "mode", "shared")
        wait_for("the first step shared", lambda: _pool(cluster, first)["size"] == 4, 120)
        status = cluster.sla_status()
        assert _pool(cluster, second)["size"] == 3 and second in status[
            "waiting_for_next_step"], status
        fill = max(n["utilization"] for n in cluster.json("osd", "df")["nodes"]
                   if n["id"] in SSD) / 100
        assert fill > 0, "an empty urgent OSD cannot be past any ratio"
        cluster.ceph("osd", "set-nearfull-ratio", f"{fill / 2:.6f}")
        went = time.monotonic()
        wait_for("the first pool back to its own size", lambda: _pool(cluster, first)[
            "size"] == 3, 60)
        assert time.monotonic() - went < 30
        entry = _entry(cluster, first)
        assert "past nearfull_ratio" in (entry["kept_isolated"] or ""), entry
        assert _pool(cluster, second)["size"] == 3
        assert "is " in entry["kept_isolated"] and "full, past" in entry["kept_isolated"], entry
        wait_for("SLA_SHARING_FAULT naming the pool", lambda: first in " ".join(
            d["message"] for d in cluster.json("health", "detail")["checks"].get(
                "SLA_SHARING_FAULT", {}).get("detail", [])), 30)
        assert_served(ops.stop(), inactive.stop(), inactive.states)
    finally:
        for probe in (ops, inactive):
            if probe is not None:
                probe.stop()
        cluster.ceph_raw("osd", "set-nearfull-ratio", str(ratio))
        for name, value in [("max_step_pgs", 512), ("step_wait_secs", 5)]:
            cluster.ceph_raw("config", "set", "mgr", f"mgr/sla/{name}", str(value))
        cluster.ceph_raw("sla", "mode", "auto")
        _drop(cluster, first, second)


def test_a_copy_pool_isolates_beside_a_move_pool_with_an_urgent_osd_hung(
        few_ssd: Cluster) -> None:
    """Urgent load while an urgent OSD hangs (stopped, marked down) and a second
    urgent pool (size 2, min_size 2) has PGs inactive on it: the copy pool
    drops its copy and the move pool swaps its rule at once: neither another
    pool's inactive PGs nor the other strategy's change holds them."""
    cluster = few_ssd
    copy, move, frail = "hung-copy", "hung-move", "hung-urgent"
    cluster.ceph("sla", "mode", "isolated")
    _normal(cluster, copy, "copy", pgs=16)
    _normal(cluster, move, "move", pgs=16)
    cluster.create_pool(frail, 16, size=2)
    cluster.ceph("osd", "pool", "set", frail, "min_size", "2")
    cluster.ceph("sla", "pool", "set", frail, "urgent", timeout=120)
    frail_id = int(_pool(cluster, frail)["pool_id"])
    cluster.wait_clean(300)
    pid = cluster.pids()[f"osd.{HUNG}"]
    ops = inactive = load = None
    stopped = False
    try:
        cluster.ceph("sla", "mode", "shared")
        wait_for("both pools shared", lambda: _pool(cluster, copy)["size"] == 4
                 and (_entry(cluster, move).get("upmaps") or {}).get("pending") == 0
                 and cluster.pool_rule(move) == "sla_shared", 180)
        cluster.ceph("sla", "mode", "auto")  # shared stays while urgent clients are quiet
        ops = OpProbe(cluster, [copy, move, URGENT])
        inactive = InactiveWatch(cluster, ignore=[frail_id])
        os.kill(pid, signal.SIGSTOP)
        stopped = True
        cluster.ceph("osd", "down", str(HUNG))
        wait_for("the frail urgent pool's PGs inactive", lambda: any(
            pg["pgid"].startswith(f"{frail_id}.") and "active" not in pg["state"].split("+")
            for pg in cluster.json("pg", "dump", "pgs_brief")["pg_stats"]), 60)
        load = PacedWriter(cluster, URGENT, secs=120, ops=200)
        wait_mode(cluster, "isolated", 60)
        switched = time.monotonic()
        wait_for("the copy pool back to its own size and the move pool off sla_shared",
                 lambda: _pool(cluster, copy)["size"] == 3 and cluster.pool_rule(move)
                 == "sla_isolated_normal", 60)
        assert time.monotonic() - switched < 15
        load.stop()
        assert_served(ops.stop(), inactive.stop(), inactive.states)
    finally:
        for probe in (ops, inactive, load):
            if probe is not None:
                probe.stop()
        if stopped:
            os.kill(pid, signal.SIGCONT)
            wait_for(f"osd.{HUNG} up again", lambda: any(
                o["osd"] == HUNG and o["up"] for o in cluster.json("osd", "dump")["osds"]), 120)
        cluster.ceph_raw("sla", "mode", "auto")
        _drop(cluster, copy, move, frail)
        cluster.wait_clean(300)


def test_nosizechange_on_a_shared_copy_pool_names_the_fix(few_ssd: Cluster) -> None:
    """The mon refuses the size change that drops the copy: the pool stays at
    N+1 on the urgent OSDs, SLA_COPY_SIZE_LOCKED says so and how to fix it; once
    the flag goes, the pool isolates at once."""
    cluster, pool = few_ssd, "locked"
    cluster.ceph("sla", "mode", "isolated")
    _normal(cluster, pool, "copy", pgs=16)
    cluster.wait_clean(300)
    try:
        cluster.ceph("sla", "mode", "shared")
        wait_for("the pool shared", lambda: _pool(cluster, pool)["size"] == 4, 120)
        cluster.ceph("osd", "pool", "set", pool, "nosizechange", "true")
        cluster.ceph("sla", "mode", "isolated")
        check = wait_for("SLA_COPY_SIZE_LOCKED", lambda: cluster.json("health", "detail")[
            "checks"].get("SLA_COPY_SIZE_LOCKED"), 60)
        text = " ".join(d["message"] for d in check["detail"])
        assert f"ceph osd pool set {pool} nosizechange false" in text, check
        assert _pool(cluster, pool)["size"] == 4
        cluster.ceph("osd", "pool", "set", pool, "nosizechange", "false")
        freed = time.monotonic()
        wait_for("the pool isolated", lambda: _pool(cluster, pool)["size"] == 3
                 and cluster.pool_rule(pool) == "sla_isolated_normal", 60)
        assert time.monotonic() - freed < 15
        wait_for("SLA_COPY_SIZE_LOCKED cleared", lambda: "SLA_COPY_SIZE_LOCKED" not in
                 cluster.json("health", "detail")["checks"], 60)
    finally:
        cluster.ceph_raw("osd", "pool", "set", pool, "nosizechange", "false")
        cluster.ceph_raw("sla", "mode", "auto")
        _drop(cluster, pool)

