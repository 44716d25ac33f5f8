"""The copy strategy on a real cluster: a normal pool shares by one more copy
on the urgent region (size N+1 on sla_copy_N) and isolates by dropping it.

Measured from the OSD map itself (up sets through osdmaptool, acting sets
with the map's pg_temp), not from PG stats, which trail the map by a stats
period: time to isolation, from the start of urgent load until no PG of the
pool acts on an urgent OSD; the OSD map epochs of the switch; and that no PG
of the pool is ever degraded on the way (every object keeps its N normal
copies). The same at two data volumes 8x apart: isolation must not grow
with the data.
"""
from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from typing import Any

import pytest

from harness.cephcluster import Cluster, PacedWriter, wait_for, wait_mode

from .conftest import DWELL

pytestmark = pytest.mark.integration

POOL = "copypool"
TTI_LIMIT = 10.0  # seconds from urgent load to no acting urgent OSD


def _classes(cluster: Cluster) -> dict[int, str]:
    return {n["id"]: n.get("device_class", "") for n in cluster.json("osd", "tree")["nodes"]
            if n["id"] >= 0}


def _acting(cluster: Cluster, pool_id: int) -> tuple[int, dict[str, list[int]]]:
    """(epoch, pgid -> acting set) from the OSD map: CRUSH and upmaps through
    osdmaptool, then the map's pg_temp where it has one."""
    mapfile = cluster.path / "copy-test.osdmap"
    cluster.ceph("osd", "getmap", "-o", str(mapfile))
    out = subprocess.run(cluster.tool("osdmaptool", str(mapfile), "--test-map-pgs-dump-all",
                                      "--pool", str(pool_id)),
                         capture_output=True, text=True, check=True, timeout=60).stdout
    up: dict[str, list[int]] = {}
    for line in out.splitlines():
        words = line.split()
        if words and words[0].startswith(f"{pool_id}.") and "up" in line:
            # "<pgid> raw ([a,b], p) up ([a,b], p) acting ([a,b], p)"
            sets = [part.split("]")[0] for part in line.split("[")[1:]]
            up[words[0]] = [int(o) for o in sets[-1].split(",") if o]
    dump = cluster.json("osd", "dump")
    temp = {t["pgid"]: t["osds"] for t in dump.get("pg_temp", [])}
    return int(dump["epoch"]), {pg: temp.get(pg, osds) for pg, osds in up.items()}


def _degraded(cluster: Cluster) -> list[str]:
    pgs = cluster.json("pg", "ls-by-pool", POOL)
    pgs = pgs.get("pg_stats", pgs) if isinstance(pgs, dict) else pgs
    return [f"{p['pgid']} {p['state']}" for p in pgs
            if "degraded" in p["state"] or "undersized" in p["state"]]


def _pool(cluster: Cluster) -> dict[str, Any]:
    return next(p for p in cluster.json("osd", "pool", "ls", "detail") if p["pool_name"] == POOL)


def _write(cluster: Cluster, megabytes: int, tag: str) -> None:
    """Fill the pool with 4 MB objects (rados bench keeps them: --no-cleanup)."""
    subprocess.run(cluster.tool("rados", "-c", cluster.conf, "-p", POOL, "bench", "600",
                                "write", "-b", str(4 << 20), "-t", "4", "--no-cleanup",
                                "--run-name", tag, "--max-objects", str(megabytes // 4)),
                   capture_output=True, check=True, timeout=600)


@pytest.fixture(scope="module")
def copy_pool(sla_pools: Cluster) -> Iterator[Cluster]:
    cluster = sla_pools
    cluster.create_pool(POOL, 32)
    # pinned: under auto, the tests' write-only load would make it a move pool
    out = cluster.json("sla", "pool", "set", POOL, "normal", "--strategy", "copy", timeout=300)
    assert out["strategy"] == "copy" and not out["auto"], out
    yield cluster
    cluster.ceph("sla", "mode", "auto")  # the next test files' clusters run the module's own way
    cluster.ceph("sla", "pool", "rm", POOL, timeout=300)
    pool = _pool(cluster)
    assert pool["size"] == 3 and pool["min_size"] == 2, pool
    cluster.ceph("osd", "pool", "rm", POOL, POOL, "--yes-i-really-really-mean-it")


def _shared_and_placed(cluster: Cluster, pool_id: int, urgent: set[int]) -> None:
    """Shared mode, the pool at size 4, backfill done, every PG acting on
    one urgent OSD and the three normal ones."""
    wait_mode(cluster, "shared", DWELL + 120)
    wait_for("copypool at size 4", lambda: _shared_or_why(cluster), 60)
    sized = _isolated_by_the_map(cluster, pool_id, 3, urgent)[0]
    cluster.wait_clean(300)

    def copied() -> bool:
        """Every PG clean by a report made after the size change: the urgent
        copy complete (`pg stat` may still show the clean state of before)."""
        pgs = cluster.json("pg", "ls-by-pool", POOL)
        pgs = pgs.get("pg_stats", pgs) if isinstance(pgs, dict) else pgs
        return bool(pgs) and all(p["state"] == "active+clean"
                                 and int(p.get("reported_epoch", 0)) >= sized for p in pgs)
    wait_for("copypool's urgent copies complete", copied, 300)

    def placed() -> bool:
        _, acting = _acting(cluster, pool_id)
        return bool(acting) and all(len(a) == 4 and len(set(a) & urgent) == 1
                                    for a in acting.values())
    wait_for("every PG of copypool acting on one urgent OSD", placed, 120)


def _isolated_by_the_map(cluster: Cluster, pool_id: int, size: int, urgent: set[int]
                         ) -> tuple[int, bool]:
    """(epoch, whether no PG of the pool can act on an urgent OSD), from one
    `osd dump`: at the isolated size the pool's up sets are CRUSH's normal
    copies (checked with osdmaptool afterwards), so an urgent OSD can only
    act through a pg_temp."""
    dump = cluster.json("osd", "dump")
    pool = next(p for p in dump["pools"] if p["pool"] == pool_id)
    temp = [t for t in dump.get("pg_temp", []) if t["pgid"].startswith(f"{pool_id}.")
            and set(t["osds"]) & urgent]
    return int(dump["epoch"]), int(pool["size"]) == size and not temp


def _isolate_under_load(cluster: Cluster, pool_id: int, urgent: set[int]) -> dict[str, Any]:
    epoch0, _ = _isolated_by_the_map(cluster, pool_id, 3, urgent)
    bench = PacedWriter(cluster, "urgent", secs=120)
    degraded: list[str] = []
    try:
        started = bench.started
        deadline = started + 60
        while True:
            seen = time.monotonic()
            _, isolated = _isolated_by_the_map(cluster, pool_id, 3, urgent)
            if isolated:
                tti = seen - started
                break
            degraded += _degraded(cluster)
            assert time.monotonic() < deadline, "copypool still acting on urgent OSDs"
            time.sleep(0.1)
        for _ in range(10):  # and while the PGs settle after the drop
            degraded += _degraded(cluster)
            time.sleep(0.5)
        epoch_end, acting = _acting(cluster, pool_id)
        on_urgent = [pg for pg, a in acting.items() if set(a) & urgent]
        assert not on_urgent, f"up/acting sets on urgent OSDs after isolation: {on_urgent[:5]}"
    finally:
        bench.stop()
    return {"tti": tti, "epochs": epoch_end - epoch0, "degraded": degraded,
            "size": _pool(cluster)["size"]}


def test_copy_isolation_does_not_wait_for_the_data(copy_pool: Cluster) -> None:
    cluster = copy_pool
    pool_id = int(_pool(cluster)["pool_id"])
    classes = _classes(cluster)
    urgent = {o for o, c in classes.items() if c == "ssd"}
    rounds = []
    for megabytes in (16, 128):
        _write(cluster, megabytes, f"fill{megabytes}")
        _shared_and_placed(cluster, pool_id, urgent)
        result = _isolate_under_load(cluster, pool_id, urgent)
        result["megabytes"] = megabytes
        rounds.append(result)
        print(f"\ncopy strategy, {megabytes} MB written: time to isolation "
              f"{result['tti']:.1f} s, {result['epochs']} OSD map epochs")
        assert result["size"] == 3
        assert not result["degraded"], result["degraded"][:5]
        assert result["epochs"] <= 30, result
        assert result["tti"] <= TTI_LIMIT, result
        wait_for("the urgent load to be seen gone", lambda: (s := cluster.sla_status())[
            "urgent_iops"] is not None and s["urgent_iops"] < 1, 60)
    small, big = rounds
    # eight times the data, the same steps: isolation drops the copy and moves
    # nothing (its time depends on when the OSDs' next stats report lands, up
    # to mgr_stats_period, not on the data: bounded by TTI_LIMIT above)
    assert big["epochs"] <= small["epochs"] + 2, rounds
    status = cluster.sla_status()
    entry = next(p for p in status["pools"] if p["name"] == POOL)
    assert entry["strategy"] == "copy" and entry["kept_isolated"] is None
    print(json.dumps(rounds))


def _interval_starts(cluster: Cluster, pgs: list[str]) -> dict[str, int]:
    """pgid -> the epoch its current interval started, asked of each PG's
    primary (PG stats are not sent again when nothing changed for a PG)."""
    return {pg: int(cluster.json("pg", pg, "query", timeout=60)["info"]["history"][
        "same_interval_since"]) for pg in pgs}


def test_the_rule_swap_at_the_isolated_size_moves_no_pg_and_starts_no_interval(
        copy_pool: Cluster) -> None:
    """Isolated, a copy pool is on sla_isolated_normal, off the urgent take; the
    swap to sla_copy_3 (the first step to shared) and back maps every PG alike
    at size 3: no PG moves, no PG re-peers."""
    cluster = copy_pool
    pool_id = int(_pool(cluster)["pool_id"])
    cluster.ceph("sla", "mode", "isolated")
    try:
        wait_for("copypool isolated on sla_isolated_normal", lambda: _pool(cluster)[
            "size"] == 3 and cluster.pool_rule(POOL) == "sla_isolated_normal", 120)
        cluster.ceph("sla", "off")  # the module leaves the rule to this test now
        cluster.wait_clean(300)
        epoch, before = _acting(cluster, pool_id)
        # an interval is the pool's or no one's (a pool setting changes for all its
        # PGs at once): every 4th PG asked, each a round trip to its primary
        sample = sorted(before)[::4]
        intervals = _interval_starts(cluster, sample)
        for rule in ("sla_copy_3", "sla_isolated_normal"):
            cluster.ceph("osd", "pool", "set", POOL, "crush_rule", rule)
            epoch, after = _acting(cluster, pool_id)
            assert cluster.pool_rule(POOL) == rule
            moved = sorted(pg for pg in before if after.get(pg) != before[pg])
            assert not moved, f"{rule}: PGs mapped elsewhere: {moved[:5]}"
            now = _interval_starts(cluster, sample)
            restarted = sorted(pg for pg in intervals if now.get(pg) != intervals[pg])
            assert not restarted, f"{rule}: PGs with a new interval: {restarted[:5]}"
    finally:
        cluster.ceph("sla", "on")
        cluster.ceph("sla", "mode", "auto")


def _osd_values(cluster: Cluster, option: str) -> dict[int, str]:
    """What each OSD runs with (from the daemon, not the config database)."""
    return {o: str(cluster.json("tell", f"osd.{o}", "config", "get", option)[option])
            for o in _classes(cluster)}


@contextlib.contextmanager
def _backfill_held(cluster: Cluster) -> Iterator[None]:
    """osd_max_backfills 0 in every OSD, set and removed in the mon's config
    database: an OSD that is down (or frozen) while it is set or removed gets
    the value when it is back, so no OSD keeps backfill held after the test.
    Tentacle's mClock ignores the option unless its override is on as well."""
    held = [o for o, v in [("osd_mclock_override_recovery_settings", "true"),
                           ("osd_max_backfills", "0")]
            if cluster.ceph_raw("config", "set", "osd", o, v, cli=True).returncode == 0]
    try:
        assert "osd_max_backfills" in held, held
        wait_for("osd_max_backfills 0 in every OSD", lambda: set(
            _osd_values(cluster, "osd_max_backfills").values()) == {"0"}, 60)
        yield
    finally:
        for option in reversed(held):
            cluster.ceph_raw("config", "rm", "osd", option, cli=True)


def _backfill_restored(cluster: Cluster, before: dict[int, str]) -> None:
    wait_for(f"every OSD back at osd_max_backfills {before}", lambda: _osd_values(
        cluster, "osd_max_backfills") == before, 120)


def _checks(cluster: Cluster) -> dict[str, Any]:
    return cluster.json("health", "detail").get("checks", {})


def test_placing_the_copy_is_named_and_isolation_never_waits_for_it(copy_pool: Cluster) -> None:
    """Backfill held (osd_max_backfills 0): shared, the pool's PGs stay
    undersized+degraded for want of the extra copy. SLA_COPY_PLACING names the
    pool and says so by design, SLA_SHARED_POOL_DEGRADED stays quiet while
    Ceph's own PG_DEGRADED is raised; with an urgent OSD down too, isolation
    drops the copy at once (it waits for neither the copy nor the OSD), and
    the pool is clean again on its N normal copies."""
    cluster = copy_pool
    urgent = sorted(o for o, c in _classes(cluster).items() if c == "ssd")
    cluster.ceph("sla", "mode", "isolated")
    wait_for("copypool isolated", lambda: _pool(cluster)["size"] == 3, 60)
    cluster.wait_settled(300)
    # the urgent copies of the last shared spell deleted: one still there would
    # be brought up to date by recovery, which the held backfill does not hold,
    # and placed before the module's next look
    cluster.wait_no_strays(urgent, 300)
    _write(cluster, 8, "placing")
    backfills = _osd_values(cluster, "osd_max_backfills")
    pid = None
    with _backfill_held(cluster):
        try:
            cluster.ceph("sla", "mode", "shared")
            wait_for("copypool at size 4", lambda: _pool(cluster)["size"] == 4, 60)
            # the OSDs' next stats reports, then the module's cost refresh: slower
            # on a loaded machine (the suite's lanes side by side)
            placing = wait_for("SLA_COPY_PLACING", lambda: _checks(cluster).get(
                "SLA_COPY_PLACING"), 180)
            detail = " ".join(d["message"] for d in placing["detail"])
            assert POOL in detail and "undersized by design" in detail, detail
            checks = _checks(cluster)
            assert "PG_DEGRADED" in checks, sorted(checks)
            # other shared pools of the session (move) may be degraded: backfill is held
            beyond = checks.get("SLA_SHARED_POOL_DEGRADED", {}).get("detail", [])
            assert not [d for d in beyond if f"pool {POOL}:" in d["message"]], beyond
            # an urgent OSD frozen and marked down as well: isolation goes ahead
            pid = cluster.pids()[f"osd.{urgent[0]}"]
            os.kill(pid, signal.SIGSTOP)
            cluster.ceph("osd", "down", f"osd.{urgent[0]}")
            cluster.ceph("sla", "mode", "isolated")
            wait_for("copypool back at size 3 on its normal rule", lambda: _pool(cluster)["size"]
                     == 3 and cluster.pool_rule(POOL) == "sla_isolated_normal", 30)
            pgs = wait_for("copypool's PGs clean on their normal copies", lambda: _clean(
                _listed(cluster)), 120)
            assert all(not set(p["up"]) & set(urgent) for p in pgs), pgs[:3]
            wait_for("SLA_COPY_PLACING cleared", lambda: "SLA_COPY_PLACING" not in
                     _checks(cluster), 60)
        finally:
            if pid is not None:
                os.kill(pid, signal.SIGCONT)
    wait_for("every OSD up", lambda: cluster.json("osd", "stat")["num_up_osds"] == 8, 120)
    _backfill_restored(cluster, backfills)
    cluster.wait_clean(300)


def _clean(pgs: list[dict[str, Any]]) -> list[dict[str, Any]] | None:
    return pgs if pgs and all(p["state"] == "active+clean" for p in pgs) else None


def _listed(cluster: Cluster) -> list[dict[str, Any]]:
    pgs = cluster.json("pg", "ls-by-pool", POOL)
    return list(pgs.get("pg_stats", pgs) if isinstance(pgs, dict) else pgs)


def _entry(cluster: Cluster, name: str) -> dict[str, Any]:
    return next(p for p in cluster.sla_status()["pools"] if p["name"] == name)


def test_an_urgent_osd_past_nearfull_sends_the_shared_pool_back(copy_pool: Cluster) -> None:
    """Space is watched while shared: with the OSD map's nearfull_ratio under
    what an urgent OSD holds, the shared copy pool isolates and says why, and
    is not shared again until the ratio is back and a new shared period starts."""
    cluster = copy_pool
    _write(cluster, 8, "nearfull")
    cluster.ceph("sla", "mode", "shared")
    wait_for("copypool shared", lambda: _pool(cluster)["size"] == 4, 120)
    cluster.wait_clean(300)  # the extra copy placed: data on the urgent OSDs
    nearfull = cluster.json("osd", "dump")["nearfull_ratio"]
    ssd = {o for o, c in _classes(cluster).items() if c == "ssd"}
    stats = cluster.json("pg", "dump", "osds")
    fullest = max(o["kb_used"] / o["kb"] for o in stats.get("osd_stats", stats)
                  if o["osd"] in ssd and o["kb"])
    assert fullest > 0, fullest  # a ratio of 0 the mon would reset to its default
    try:
        _set_nearfull(cluster, f"{fullest / 2:.9f}")
        reason = wait_for("copypool isolated for space", lambda: _space_reason(cluster), 90)
        assert "of the urgent region is" in reason, reason
        wait_for("copypool back at size 3", lambda: _pool(cluster)["size"] == 3
                 and cluster.pool_rule(POOL) == "sla_isolated_normal", 60)
        assert cluster.sla_status()["mode"] == "shared"
    finally:
        _set_nearfull(cluster, f"{nearfull:.2f}")
    # a new shared period: isolated (seen by the module), then shared again, and it shares
    cluster.ceph("sla", "mode", "isolated")
    wait_mode(cluster, "isolated", 60)
    cluster.wait_clean(300)
    cluster.ceph("sla", "mode", "shared")
    wait_for("copypool shared again", lambda: _shared_or_why(cluster), 180)
    cluster.ceph("sla", "mode", "isolated")
    wait_for("copypool isolated", lambda: _pool(cluster)["size"] == 3, 60)
    cluster.wait_clean(300)


def _shared_or_why(cluster: Cluster) -> bool:
    if _pool(cluster)["size"] == 4:
        return True
    status = cluster.sla_status()
    raise AssertionError(f"mode {status['mode']}, gates {status['gates']}, holds "
                         f"{status['holds']}, kept {_entry(cluster, POOL)['kept_isolated']}")


def _set_nearfull(cluster: Cluster, ratio: str) -> None:
    """By the CLI: its float argument is the mon's to parse."""
    done = cluster.ceph_raw("osd", "set-nearfull-ratio", ratio, cli=True)
    assert done.returncode == 0, done.stderr
    wait_for(f"nearfull_ratio {ratio}", lambda: abs(cluster.json("osd", "dump")[
        "nearfull_ratio"] - float(ratio)) <= 1e-3 * float(ratio), 30)


def _space_reason(cluster: Cluster) -> str | None:
    """Why copypool is kept isolated, once it is for space; else raises with
    what the module and the map say (wait_for reports it)."""
    kept = _entry(cluster, POOL)["kept_isolated"] or ""
    if "past nearfull_ratio" in kept:
        return kept
    ratio = cluster.json("osd", "dump")["nearfull_ratio"]
    stats = cluster.json("pg", "dump", "osds")
    fills = {o["osd"]: round(o["kb_used"] / max(o["kb"], 1), 4)
             for o in stats.get("osd_stats", stats)}
    raise AssertionError(f"kept {kept!r}, nearfull_ratio {ratio}, fills {fills}, "
                         f"plan {cluster.json('sla', 'plan').get('costs')}")


def _size(cluster: Cluster, name: str) -> int:
    return int(next(p for p in cluster.json("osd", "pool", "ls", "detail")
                    if p["pool_name"] == name)["size"])


def test_a_switch_to_shared_goes_a_pool_a_step(copy_pool: Cluster) -> None:
    """max_step_pgs at one pool's PGs: the second copy pool's size is raised
    at least step_wait_secs after the first, and status names it while it waits."""
    cluster = copy_pool
    second = "copypool2"
    cluster.ceph("sla", "mode", "isolated")
    cluster.create_pool(second, 32)
    cluster.json("sla", "pool", "set", second, "normal", "--strategy", "copy", timeout=300)
    cluster.wait_clean(300)
    cluster.ceph("config", "set", "mgr", "mgr/sla/max_step_pgs", "32")
    cluster.ceph("config", "set", "mgr", "mgr/sla/step_wait_secs", "8")

    def alone() -> bool:
        sizes = (_size(cluster, POOL), _size(cluster, second))
        if sizes == (4, 3):
            return True
        status = cluster.sla_status()
        raise AssertionError(f"sizes {sizes}, waiting {status['waiting_for_next_step']}, "
                             f"gates {status['gates']}, holds {status['holds']}")
    try:
        cluster.ceph("sla", "mode", "shared")
        wait_for(f"{second} waiting for a step", lambda: second in cluster.sla_status()[
            "waiting_for_next_step"], 60, interval=0.25)
        wait_for(f"{POOL} raised alone", alone, 120, interval=0.25)
        first_at = time.monotonic()
        wait_for(f"{second} shared", lambda: _size(cluster, second) == 4, 120)
        assert time.monotonic() - first_at >= 6, "the second step came too soon"
        assert "next step:" not in cluster.ceph("sla", "status")
    finally:
        # the defaults, set: Pacific's mgr keeps a removed module option's last value
        cluster.ceph("config", "set", "mgr", "mgr/sla/max_step_pgs", "512")
        cluster.ceph("config", "set", "mgr", "mgr/sla/step_wait_secs", "5")
        cluster.ceph("sla", "mode", "isolated")
        cluster.ceph_raw("sla", "pool", "rm", second, timeout=300)
        cluster.ceph_raw("osd", "pool", "rm", second, second, "--yes-i-really-really-mean-it")
    wait_for("copypool isolated", lambda: _pool(cluster)["size"] == 3, 60)
    cluster.wait_clean(300)
