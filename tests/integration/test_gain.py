"""Share only what pays, each pool its way: under default_strategy auto a
normal pool whose clients only write is never copied onto the urgent region (a
copy there serves no write: every write still costs the N normal copies) but
shared by move, while a pool whose clients read is shared with copy; when the
read pool's clients turn to writes, its strategy changes while it is isolated
(no pool change, no PG moved) and its next switch to shared is a move. Once
the write pool's gain is measured and its interval falls under min_gain, the
next switch to shared keeps it isolated, and `plan` says why."""
from __future__ import annotations

import time
from typing import Any

import pytest

from harness.cephcluster import Cluster, PacedWriter, wait_for, wait_mode

from .conftest import DWELL, GAIN_WINDOW

pytestmark = pytest.mark.integration

WRITES, READS = "gainwrites", "gainreads"
ISOLATED_SPELL = 3 * GAIN_WINDOW


def _size(cluster: Cluster, name: str) -> int:
    return int(next(p for p in cluster.json("osd", "pool", "ls", "detail")
                    if p["pool_name"] == name)["size"])


def _entry(cluster: Cluster, name: str) -> dict[str, Any]:
    return next(p for p in cluster.sla_status()["pools"] if p["name"] == name)


def _or_say(cluster: Cluster, done: bool, *names: str) -> bool:
    """For wait_for: True when done, else what the pools are (it reports that)."""
    if done:
        return True
    status = cluster.sla_status()
    raise AssertionError(f"mode {status['mode']}, " + "; ".join(
        f"{p['name']}: {p['strategy']} on {p['rule']} size {p['size']}, reads "
        f"{p['read_fraction']}, kept {p['kept_isolated']!r}, next {p['next_strategy']}"
        for p in status["pools"] if p["name"] in names))


def _kept_for_its_measurement(cluster: Cluster) -> float:
    """min_gain set above the write pool's measured gain by move (the top of
    its interval, which moves as isolated windows come); once `plan` keeps
    the pool isolated for that measurement, the bar."""
    bar = [0.0]

    def kept() -> bool:
        plan = next(c for c in cluster.json("sla", "plan")["costs"] if c["name"] == WRITES)
        move = plan["next_strategy"]["options"]["move"]
        measured = move.get("measured") or {}
        high = measured.get("high")
        assert high is not None, f"{WRITES}: no bounded measurement by move: {move}"
        if bar[0] <= high:
            bar[0] = round(high * 1.05 + 0.01, 2)
            cluster.ceph("config", "set", "mgr", "mgr/sla/min_gain", str(bar[0]))
            return False
        why = plan["kept_isolated"] or ""
        # auto may have put it on copy meanwhile, whose model gain for writes,
        # 1.00x, is no better: the reason then names copy
        return (why.startswith("expected gain ") and why.endswith(f"under min_gain {bar[0]:g}x")
                and move["source"] == "measured" and move["gain"] < bar[0]) or \
            _or_say(cluster, False, WRITES)
    wait_for(f"{WRITES} kept isolated for its measured gain", kept, 120, interval=3)
    return bar[0]


def _pool_record(cluster: Cluster, name: str) -> tuple[Any, ...]:
    """What a change of the pool in the OSD map would show: its own last
    change epoch, rule, size, min_size, and the upmap entries of its PGs."""
    dump = cluster.json("osd", "dump")
    pool = next(p for p in dump["pools"] if p["pool_name"] == name)
    entries = sorted(e["pgid"] for e in dump.get("pg_upmap_items", [])
                     if e["pgid"].startswith(f"{pool['pool']}."))
    return pool["last_change"], pool["crush_rule"], pool["size"], pool["min_size"], entries


def test_auto_copies_a_read_pool_moves_a_write_pool_and_follows_a_change_of_mix(
        sla_pools: Cluster) -> None:
    cluster = sla_pools
    cluster.ceph("sla", "mode", "isolated")
    for name in (WRITES, READS):
        cluster.create_pool(name, 16)
        out = cluster.json("sla", "pool", "set", name, "normal", timeout=300)
        assert out["strategy"] == "copy" and out["auto"], out  # the urgent region has room
    # its default, set (Pacific's mgr keeps a removed module option's last value)
    cluster.ceph("config", "set", "mgr", "mgr/sla/min_gain", "1.05")
    # the measurement and auto's choice on the work model's prior: the OSDs here
    # are alike in both regions (memstore), so the devices' prior would keep
    # every pool isolated (tests/unit/test_device_prior.py tests that prior)
    cluster.ceph("config", "set", "mgr", "mgr/sla/gain_prior", "model")
    clients = [PacedWriter(cluster, WRITES, secs=900, ops=20),
               PacedWriter(cluster, READS, secs=900, ops=20, reads=1.0)]
    started = time.monotonic()
    sizes: set[int] = set()

    def shared_each_its_way() -> bool:
        sizes.add(_size(cluster, WRITES))
        writes, reads = _entry(cluster, WRITES), _entry(cluster, READS)
        return _or_say(cluster, writes["strategy"] == "move" and writes["rule"] == "sla_shared"
                       and reads["strategy"] == "copy" and _size(cluster, READS) == 4,
                       WRITES, READS)
    try:
        # isolated, each pool takes the strategy its clients gain most from
        wait_for("the read pool on copy, the write pool on move", lambda: _or_say(
            cluster, _entry(cluster, READS)["strategy"] == "copy"
            and _entry(cluster, WRITES)["strategy"] == "move", WRITES, READS), 180)
        # the clients' isolated spell: long enough for the module to measure it
        # (the gain needs two windows of each side; a third for the spell's start)
        time.sleep(max(0.0, ISOLATED_SPELL - (time.monotonic() - started)))
        cluster.ceph("sla", "mode", "auto")  # no urgent client: shared after the dwell
        wait_for("the read pool copied, the write pool moved", shared_each_its_way,
                 DWELL + 180)
        assert sizes == {3}, f"{WRITES} was given a copy: sizes seen {sizes}"
        plan = {c["name"]: c for c in cluster.json("sla", "plan")["costs"]}
        assert plan[WRITES]["next_strategy"]["options"]["copy"]["gain"] < 1.05, plan[WRITES]
        # the write pool's gain by move, measured
        wait_for(f"{WRITES}'s gain measured", lambda: (
            _entry(cluster, WRITES)["gain"] or {}).get("measured"), 180)
        # urgent clients isolate both; then the read pool's clients only write
        clients.append(PacedWriter(cluster, "urgent", secs=900))
        wait_mode(cluster, "isolated", 60)
        wait_for(f"{READS} isolated", lambda: _size(cluster, READS) == 3 and cluster.pool_rule(
            READS) == "sla_isolated_normal", 60)
        cluster.wait_clean(300)
        clients[1].stop()
        clients[1] = PacedWriter(cluster, READS, secs=900, ops=20)
        before = _pool_record(cluster, READS)
        wait_for(f"{READS} on move for the next switch to shared", lambda: _or_say(
            cluster, _entry(cluster, READS)["strategy"] == "move", READS), 180)
        assert cluster.sla_status()["mode"] == "isolated"
        assert _pool_record(cluster, READS) == before  # nothing sent for the pool, no PG moved
        # both regions' write latency read from the OSDs' counters (Tentacle's
        # get_unlabeled_counter), shown by plan whatever the prior
        devices = wait_for("both regions' write latency in plan", lambda: (
            d := cluster.json("sla", "plan", timeout=120)["devices"]).get("urgent", {}).get(
            "write") and d.get("normal", {}).get("write") and d, 90)
        assert all(devices[r]["write"][0]["ops"] >= 100 for r in ("normal", "urgent")), devices
        # a bar above the write pool's measured gain by move, clear of its interval:
        # the next switch keeps it isolated for that measurement, and says so
        bar = _kept_for_its_measurement(cluster)
        # the bar back to its default: the next switch shares the read pool by move
        cluster.ceph("config", "set", "mgr", "mgr/sla/min_gain", "1.05")
        clients.pop().stop()
        wait_for(f"{READS} shared by move", lambda: _or_say(
            cluster, cluster.pool_rule(READS) == "sla_shared", READS), DWELL + 120)
        assert _size(cluster, READS) == 3
        print(f"\n{WRITES} kept isolated under min_gain {bar}")
    finally:
        for client in clients:
            client.stop()
        cluster.ceph("config", "set", "mgr", "mgr/sla/min_gain", "0")
        cluster.ceph("config", "set", "mgr", "mgr/sla/gain_prior", "devices")
        for name in (WRITES, READS):
            cluster.ceph_raw("sla", "pool", "rm", name, timeout=300)
            cluster.ceph_raw("osd", "pool", "rm", name, name, "--yes-i-really-really-mean-it")
    cluster.wait_clean(300)
