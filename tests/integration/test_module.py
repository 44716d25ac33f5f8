"""The `sla` module on a real cluster, driven by real client load (rados bench).

The tests run in file order and share one setup: rules applied, an urgent
and a normal pool, short intervals so a scenario takes seconds, not minutes.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.cephcluster import (
    ROOT,
    Cluster,
    PacedWriter,
    mode,
    placed,
    scrape,
    wait_for,
    wait_mode,
)
from harness.mgr_cmdline import restart_mgr_with_mon_host_argument
from harness.objects import Objects

from .conftest import DWELL, HIGH, LOW

pytestmark = pytest.mark.integration



@pytest.fixture(scope="module")
def sla(sla_pools: Cluster) -> Iterator[Objects]:
    # under the cluster's DIR: visible to a release root's rados as well
    scratch = sla_pools.path / "objects"
    scratch.mkdir(exist_ok=True)
    objects = Objects(sla_pools, "normal", scratch)
    objects.write(20, "before")
    yield objects
    objects.verify()


def test_pools_get_their_rules(cluster: Cluster, sla: Objects) -> None:
    wait_for("urgent pool on sla_isolated_urgent",
             lambda: cluster.pool_rule("urgent") == "sla_isolated_urgent", 30)
    status = cluster.sla_status()
    roles = {p["name"]: p["role"] for p in status["pools"]}
    assert roles == {"urgent": "urgent", "normal": "normal"}


def test_the_mon_knows_every_option_default(cluster: Cluster, sla: Objects) -> None:
    """`ceph config help` shows what the module uses when the option is unset
    (a time span default Ceph cannot parse shows as 0)."""
    from mgr_sla.core.settings import SETTINGS_SPECS, Settings
    for spec in SETTINGS_SPECS:
        if spec.type not in ("secs", "int", "float"):
            continue
        out = cluster.ceph("config", "help", f"mgr/sla/{spec.name}")
        [shown] = [line.split(":", 1)[1].strip() for line in out.splitlines()
                   if line.strip().startswith("Default:")]
        assert float(shown) == getattr(Settings(), spec.name), (spec.name, out)


def test_no_urgent_load_gives_shared(cluster: Cluster, sla: Objects) -> None:
    cluster.wait_clean(240)
    wait_mode(cluster, "shared", DWELL + 90)
    wait_for("normal pool on sla_shared", lambda: cluster.pool_rule("normal") == "sla_shared", 30)
    # shared mode uses the urgent OSDs: the module's pg_upmap_items put a
    # weight-proportional share of the replicas there (the rules alone map
    # like the isolated one)
    status = wait_for("upmap entries placed", lambda: placed(cluster), 120)
    share = next(p for p in status["pools"] if p["name"] == "normal")["upmaps"][
        "urgent_replica_share"]
    print(f"\nurgent share of the normal pool's replicas in shared mode: {share:.2f}")
    assert 0.25 <= share <= 0.6, share
    cluster.wait_clean(240)
    sla.write(10, "shared")
    # normal inclusion on the real up sets (upmaps included), as the module checks it
    status = wait_for("the inclusion check", lambda: (s := cluster.sla_status())[
        "pgs_without_normal_replica"] is not None and s, 60)
    assert status["pgs_without_normal_replica"] == 0
    hdd = {n["id"] for n in cluster.json("osd", "tree")["nodes"] if n.get("device_class") == "hdd"}
    for pg in cluster.json("pg", "ls-by-pool", "normal")["pg_stats"]:
        assert hdd & set(pg["up"]), pg["pgid"]


def _inclusion_breaking_upmap(cluster: Cluster) -> tuple[str, list[tuple[int, int]]]:
    """A shared-mode PG of the normal pool with an ssd replica (its entry), and
    pairs that move each of its hdd replicas to the ssd OSD of its own host (no
    other replica there): (pgid, those pairs)."""
    nodes = cluster.json("osd", "tree")["nodes"]
    cls = {n["id"]: n.get("device_class") for n in nodes if n["id"] >= 0}
    host = {child: n["id"] for n in nodes if n["type"] == "host" for child in n["children"]}
    for pg in cluster.json("pg", "ls-by-pool", "normal")["pg_stats"]:
        if not any(cls[o] == "ssd" for o in pg["up"]):
            continue
        pairs = [(o, next(s for s, c in cls.items() if c == "ssd" and host[s] == host[o]))
                 for o in pg["up"] if cls[o] == "hdd"]
        if pairs and not any(to in pg["up"] for _, to in pairs):
            return pg["pgid"], pairs
    raise AssertionError("no shared PG whose hdd replicas' hosts have a free ssd")


def test_upmap_that_breaks_inclusion_is_repaired(cluster: Cluster, sla: Objects) -> None:
    """The balancer's kind of upmap can move a PG's one hdd replica to an ssd
    (sla_shared takes the whole root, so Ceph accepts it); the module owns the
    normal pools' upmap entries in shared mode and puts its own back."""
    wait_mode(cluster, "shared", DWELL + 90)  # also when run alone
    wait_for("upmap entries placed", lambda: placed(cluster), 120)
    # the balancer (on by default, upmap mode) must not add upmaps of its own
    # meanwhile; afterwards it is as it was (its option unset if it was)
    active_set = any(e["name"] == "mgr/balancer/active" for e in cluster.json("config", "dump"))
    balancer_was_on = cluster.json("balancer", "status")["active"]
    cluster.ceph("balancer", "off")
    try:
        # the PG stats' up sets lag the map the module placed on by a report
        pgid, breaking = wait_for("a shared PG in the PG stats",
                                  lambda: _inclusion_breaking_upmap(cluster), 60)
        ours = next((e for e in cluster.json("osd", "dump")["pg_upmap_items"]
                     if e["pgid"] == pgid), None)
        assert ours is not None, f"pg {pgid} has no sla entry"
        # the PG's entry is replaced whole: ours plus pairs that take its hdd
        # replicas to ssds
        pairs = [str(o) for m in ours["mappings"] for o in (m["from"], m["to"])]
        cluster.ceph("osd", "pg-upmap-items", pgid, *pairs,
                     *(str(o) for pair in breaking for o in pair))
        cls = {n["id"]: n.get("device_class") for n in cluster.json("osd", "tree")["nodes"]
               if n["id"] >= 0}
        wait_for(f"the module to put back its own entry for pg {pgid}", lambda: next(
            (e for e in cluster.json("osd", "dump")["pg_upmap_items"] if e["pgid"] == pgid),
            None) == ours, 60)
        wait_for(f"pg {pgid} up set with a hdd replica again", lambda: any(
            cls[o] == "hdd" for o in cluster.json("pg", "map", pgid)["up"]), 60)
    finally:
        if not active_set:
            cluster.ceph("config", "rm", "mgr", "mgr/balancer/active")
        elif balancer_was_on:
            cluster.ceph("balancer", "on")
    # the module checks the up sets on the new epoch: the warning (if it was
    # raised while the foreign entry stood) clears a tick later
    wait_for("SLA_NORMAL_INCLUSION clear", lambda: "SLA_NORMAL_INCLUSION" not in
             cluster.json("health", "detail")["checks"], 30)
    cluster.wait_clean(240)


def test_urgent_load_isolates_and_quiet_shares_again(cluster: Cluster, sla: Objects) -> None:
    wait_mode(cluster, "shared", DWELL + 90)  # also when run alone
    # shared and placed: the switch to isolated then has replicas to move back
    wait_for("normal placed", lambda: placed(cluster, "normal"), 180)
    bench = PacedWriter(cluster, "urgent")
    try:
        wait_mode(cluster, "isolated", 60)
        reaction = time.monotonic() - bench.started
        # the mode is the decision; the rule change follows it by a mon commit
        wait_for("the normal pool on its isolated rule", lambda: cluster.pool_rule("normal")
                 == "sla_isolated_normal", 30)
        sla.write(5, "isolating")
        print(f"\nreaction time: {reaction:.1f} s after rados bench started")
        status = wait_for("time to isolation recorded", lambda: (
            s := cluster.sla_status())["time_to_isolation_secs"] is not None and s, 240)
        print(f"time to isolation: {status['time_to_isolation_secs']:.1f} s")
        # the module's own switch record names the reason and the moved PGs
        last = cluster.json("sla", "history")[0]
        assert last["to"] == "isolated" and "high threshold" in last["reason"]
        assert last["pgs_moved"] is not None and last["pgs_moved"] > 0
        # the urgent OSDs' write latency, read from their perf counters (the gain's
        # prior), newest first, with the bytes those writes carried
        writes = wait_for("the urgent region's write latency in plan", lambda: (cluster.json(
            "sla", "plan", timeout=120)["devices"].get("urgent", {}).get("write") or [None])[0],
            90)
        assert writes["ops"] >= 100 and 0 < writes["ms"] < 10_000, writes
        assert writes["kib_per_op"] > 0, writes
    finally:
        bench.stop()
    quiet = time.monotonic()
    wait_mode(cluster, "shared", DWELL + 120)
    assert time.monotonic() - quiet >= DWELL - 1, "went back to shared before the dwell"
    cluster.wait_clean(240)


def test_advise_sizes_the_urgent_region_from_what_the_module_saw(cluster: Cluster,
                                                                  sla: Objects) -> None:
    """After the urgent load above: `ceph sla advise` sizes the urgent region
    from the recorded peak, with OSD capacity measured by osd bench, and says
    where every figure comes from."""
    advice = cluster.json("sla", "advise", "--calibrate", "--cost-ratio", "5", timeout=300)
    assert advice["urgent_osds"] == 4, advice
    assert advice["urgent_osds_needed"] is not None and advice["urgent_osds_needed"] >= 3
    assert "urgent peak" in advice["urgent_osds_basis"], advice["urgent_osds_basis"]
    # measured, or (Tentacle's memstore refuses the bench) the fallback, saying why
    assert ("osd bench 4 KiB on osd." in advice["urgent_osds_basis"]
            or "osd bench failed" in advice["urgent_osds_basis"]), advice["urgent_osds_basis"]
    assert advice["threshold_iops"] > 0 and advice["threshold_iops_basis"]
    assert advice["data_metadata"]["winner"] in ("hdd", "ssd", "hdd+ssd db")
    bad = cluster.ceph_raw("sla", "advise", "--cost-ratio", "0")
    assert bad.returncode != 0 and "ssd_hdd_cost_ratio" in bad.stderr, bad


def test_oscillating_load_switches_a_bounded_number_of_times(cluster: Cluster,
                                                             sla: Objects) -> None:
    before = cluster.sla_status()["switches_total"]
    end = time.monotonic() + 40
    while time.monotonic() < end:  # 4 s bursts, 4 s pauses: faster than the dwell
        bench = PacedWriter(cluster, "urgent")
        time.sleep(4)
        bench.stop()
        time.sleep(4)
    switches = cluster.sla_status()["switches_total"] - before
    # one switch to isolated; shared needs DWELL s of quiet, which never came
    assert 1 <= switches <= 2, switches


def test_mgr_failover_keeps_the_mode_without_a_switch(cluster: Cluster, sla: Objects) -> None:
    wait_mode(cluster, "shared", DWELL + 120)
    before = cluster.sla_status()
    assert not before["pinned"]
    # what the next mgr reads: the switch is on record before its first command
    wait_for("shared mode on record", lambda: json.loads(cluster.ceph(
        "config-key", "get", "mgr/sla/state"))["mode"] == "shared", 30)
    cluster.ceph("mgr", "fail", "x")
    wait_for("sla to answer after failover", lambda: cluster.ceph_raw(
        "sla", "status").returncode == 0, 120)
    # watch the new mgr over several ticks: same mode, no switch
    deadline = time.monotonic() + 8
    while time.monotonic() < deadline:
        after = cluster.sla_status()
        assert after["mode"] == "shared", after
        assert after["switches_total"] == before["switches_total"], after
        time.sleep(0.2)


def test_a_mgr_with_the_mon_address_only_on_its_command_line_still_acts(
        cluster: Cluster, sla: Objects) -> None:
    """Rook's way: `--mon-host` on the mgr's command line, no `mon host`
    in its conf. Every mon command of the module goes through its own librados
    handle, so rules apply and both switches still work."""
    if cluster.release == "reef":
        pytest.skip("run on Pacific and Tentacle (the oldest and newest live releases): the "
                    "mgr's --mon-host start and librados are the same code on Reef; "
                    "saves a minute of the suite")
    pid = restart_mgr_with_mon_host_argument(cluster)
    cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    conf = Path(cmdline[cmdline.index(b"-c") + 1].decode())
    assert b"--mon-host" in cmdline and "mon host" not in conf.read_text()
    # getcrushmap, osd getmap, setcrushmap: all through the mgr's librados handle
    # (installed or unchanged, depending on what earlier tests left in the map)
    assert "sla CRUSH rules" in cluster.ceph("sla", "rules", "apply", timeout=300)
    cluster.ceph("sla", "mode", "isolated")
    wait_for("the pin to isolate the normal pool", lambda: cluster.pool_rule("normal")
             == "sla_isolated_normal", 60)
    cluster.ceph("sla", "mode", "auto")
    wait_mode(cluster, "shared", DWELL + 120)
    wait_for("the shared placement", lambda: placed(cluster), 120)


def test_plan_tells_what_the_next_switch_moves(cluster: Cluster, sla: Objects) -> None:
    wait_mode(cluster, "shared", DWELL + 120)
    # bytes come from the PG stats, which trail fresh writes by a report, and
    # the costs from `df`, which the module reads every 30 s
    plan = wait_for("a plan with the PGs' bytes and their costs", lambda: (
        p := cluster.json("sla", "plan", timeout=120))["bytes"] > 0
        and p["costs"] and p["costs"][0]["costs"]["move"]["bytes_to_isolated"] > 0 and p, 90)
    assert plan["to_mode"] == "isolated"
    (pool,) = plan["pools"]
    assert pool["pool"] == "normal" and pool["pgs"] == 32 and pool["strategy"] == "move"
    # shared -> isolated moves the replicas on ssd back: some, never all
    assert 0 < pool["replicas"] < 32 * 3 and pool["bytes"] > 0
    # and what a switch costs with either strategy
    (cost,) = plan["costs"]
    assert cost["name"] == "normal" and cost["strategy"] == "move"
    assert cost["costs"]["copy"]["bytes_to_isolated"] == 0
    assert cost["costs"]["move"]["bytes_to_isolated"] > 0
    assert cost["recommended"] in ("copy", "move", "keep isolated") and cost["reason"]


def test_dry_run_decides_but_changes_nothing(cluster: Cluster, sla: Objects) -> None:
    wait_mode(cluster, "shared", DWELL + 120)
    cluster.ceph("config", "set", "mgr", "mgr/sla/dry_run", "true")
    bench = PacedWriter(cluster, "urgent")
    try:
        status = wait_for("the dry run to decide isolated", lambda: (
            s := cluster.sla_status())["dry_run_mode"] == "isolated" and s, 60)
        assert status["dry_run"] and status["mode"] == "shared"
        normal = next(p for p in status["pools"] if p["name"] == "normal")
        assert normal["rule"] == "sla_shared" and normal["expected_rule"] == "sla_shared"
        assert cluster.json("sla", "history")[0]["dry_run"] is True
        assert cluster.pool_rule("normal") == "sla_shared"
        switches = status["switches_total"]
    finally:
        bench.stop()
        # the urgent client has stopped: end the dry run once the module sees it
        wait_for("urgent IOPS to fall", lambda: (cluster.sla_status()["urgent_iops"] or 0)
                 < LOW, 60)
        cluster.ceph("config", "set", "mgr", "mgr/sla/dry_run", "false")
    # back to real mode: nothing happened to the real state, so no switch
    status = wait_mode(cluster, "shared", 30)
    assert status["switches_total"] == switches
    wait_for("normal pool on sla_shared", lambda: cluster.pool_rule("normal") == "sla_shared", 60)
    cluster.wait_clean(240)


def test_bad_input_is_refused_and_changes_nothing(cluster: Cluster, sla: Objects) -> None:
    before = cluster.sla_status()
    cases = [
        (["sla", "set-threshold", "abc"], "must be a number"),
        (["sla", "set-threshold", "-5"], "must be > 0"),
        (["sla", "set-threshold", "0"], "must be > 0"),
        (["sla", "set-threshold", "10", "20"], "above the high threshold"),
        (["sla", "pool", "set", "nosuchpool", "normal"], "does not exist"),
        (["sla", "pool", "set", "normal", "urgent"], "already normal"),
        (["sla", "pool", "rm", "nosuchpool"], "does not exist"),
        (["sla", "mode", "sideways"], ""),
    ]
    for args, message in cases:
        p = cluster.ceph_raw(*args)
        assert p.returncode != 0, args
        assert message in p.stderr, (args, p.stderr)
    after = cluster.sla_status()
    for key in ("threshold_iops", "threshold_low_iops", "pinned"):
        assert after[key] == before[key], key

    def roles(status: dict) -> list[tuple]:  # what a command could have changed
        return [(p["name"], p["role"], p["placement"]) for p in status["pools"]]
    assert roles(after) == roles(before)


def test_write_commands_need_write_caps(cluster: Cluster, sla: Objects) -> None:
    keyring = cluster.path / "ro.keyring"
    cluster.ceph("auth", "get-or-create", "client.ro", "mon", "allow r", "mgr", "allow r",
                 "-o", str(keyring))
    ro = ("-n", "client.ro", "-k", str(keyring))
    assert cluster.ceph_raw("sla", "status", extra=ro).returncode == 0
    for write in (("sla", "set-threshold", "500"), ("sla", "advise", "--calibrate")):
        p = cluster.ceph_raw(*write, extra=ro)
        assert p.returncode == 13 or "EACCES" in p.stderr or "denied" in p.stderr, (write, p)
    assert cluster.sla_status()["threshold_iops"] == HIGH


def test_latency_objective_isolates_below_the_iops_threshold(cluster: Cluster,
                                                             sla: Objects) -> None:
    """The IOPS threshold far above the load, an objective below what the
    cluster gives: the latency alone isolates, and the reason says so."""
    wait_mode(cluster, "shared", DWELL + 120)
    cluster.ceph("sla", "set-threshold", "1000000", "500000")
    out = cluster.ceph("sla", "set-slo", "0.01")
    assert "0.01 ms" in out
    bench = PacedWriter(cluster, "urgent")
    try:
        wait_mode(cluster, "isolated", 60)
        last = cluster.json("sla", "history")[0]
        assert last["to"] == "isolated" and "urgent latency" in last["reason"] \
            and "SLO 0.01 ms" in last["reason"], last
        status = cluster.sla_status()
        urgent = next(p for p in status["pools"] if p["name"] == "urgent")
        lat = urgent["latency"]
        print(f"\nurgent write latency p75 {lat['write_ms']} ms, p99 {lat['write_p99_ms']} ms "
              f"over {lat['periods']} periods")
        assert lat["write_ms"] is not None and lat["write_ms"] > 0.01
        assert status["slo"]["latency_ms"] == 0.01
        wait_for("seconds in violation", lambda: next(
            p for p in cluster.sla_status()["pools"] if p["name"] == "urgent")["latency"][
            "slo_violation_seconds"] > 0, 30)
    finally:
        bench.stop()
    # the objective off: back to shared once quiet for the dwell
    cluster.ceph("sla", "set-slo", "0")
    cluster.ceph("sla", "set-threshold", str(HIGH), str(LOW))
    assert cluster.sla_status()["slo"] is None
    wait_mode(cluster, "shared", DWELL + 120)
    p = cluster.ceph_raw("sla", "set-slo", "-3")
    assert p.returncode != 0 and ">= 0" in p.stderr
    cluster.wait_clean(240)


def test_osd_down_blocks_the_switch_to_shared(cluster: Cluster, sla: Objects) -> None:
    cluster.ceph("sla", "mode", "isolated")
    wait_mode(cluster, "isolated", 30)
    cluster.wait_clean(240)
    osd = cluster.pids()["osd.2"]
    os.kill(osd, signal.SIGSTOP)  # a stopped OSD: frozen, then marked down
    try:
        cluster.ceph("osd", "down", "osd.2")
        cluster.ceph("sla", "mode", "shared")
        health = wait_for("SLA_SWITCH_BLOCKED", lambda: (h := cluster.json("health", "detail"))
                          ["checks"].get("SLA_SWITCH_BLOCKED") and h, 30)
        detail = " ".join(d["message"] for d in
                          health["checks"]["SLA_SWITCH_BLOCKED"]["detail"])
        assert "osd.2" in detail
        assert mode(cluster) == "isolated"
        assert cluster.pool_rule("normal") == "sla_isolated_normal"
    finally:
        os.kill(osd, signal.SIGCONT)
    # the OSD comes back by itself; the pinned switch then goes through
    cluster.ceph("sla", "mode", "auto")
    wait_for("osd.2 up", lambda: cluster.json("osd", "stat")["num_up_osds"] == 8, 120)
    cluster.wait_clean(240)
    wait_for("health warning cleared", lambda: "SLA_SWITCH_BLOCKED" not in
             cluster.json("health", "detail")["checks"], 60)


def test_metrics_are_valid_and_complete_where_the_mgr_has_no_prometheus_client(
        cluster: Cluster, sla: Objects) -> None:
    """The mini cluster hides any prometheus_client from the mgr (as Ceph's images
    have none): the module serves every family the dashboard queries, in a
    format promtool accepts, from its own copy of the library."""
    hidden = cluster.path / "mgr-modules" / "prometheus_client.py"
    assert "ImportError" in hidden.read_text()
    port = cluster.ports()["SLA_METRICS_PORT"]
    text = wait_for("a scrape with the mode", lambda: (t := scrape(port)) and
                    "ceph_sla_mode " in t and t, 60)
    families = {line.split()[2] for line in text.splitlines() if line.startswith("# TYPE ")}
    dashboard = (ROOT / "deploy" / "grafana" / "ceph-sla.json").read_text()
    wanted = {name.removesuffix("_bucket") for name in re.findall(r"ceph_sla_\w+", dashboard)}
    assert sorted(wanted - families) == [], "dashboard metrics missing from the scrape"
    promtool = shutil.which("promtool")
    if promtool is None:
        pytest.skip("promtool missing: apt-get install -y --no-install-recommends prometheus")
    check = subprocess.run([promtool, "check", "metrics"], input=text, capture_output=True,
                           text=True, timeout=60)
    assert check.returncode == 0, check.stdout + check.stderr

