"""The `Module` shell against a small fake mgr (tests/unit/fake_mgr.py):
tick, commands and failover restore, with no Ceph. The real module in a real
ceph-mgr is what tests/integration covers."""
from __future__ import annotations

import json
import threading
from typing import Any

import pytest

from harness.fake_mgr import FakeCluster, make_module

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


@pytest.fixture
def cluster() -> FakeCluster:
    c = FakeCluster()
    c.add_pool(1, "fast", "sla_isolated_urgent")
    c.add_pool(2, "bulk", "sla_isolated_normal")
    return c


def managed(cluster: FakeCluster, store: dict[str, str], **options: Any) -> Any:
    # min_gain 0: the fake's pools have no client ops; the gain's own tests set it
    m = make_module(cluster, store, {"min_dwell_secs": 0, "sustain_secs": 0,
                                     "step_wait_secs": 0, "min_gain": 0, **options})
    m._rules.replace_check(lambda opts: None)  # crushtool/osdmaptool: the integration tests'
    assert m.cmd_pool_set("fast", role=_role("urgent")).retval == 0
    assert m.cmd_pool_set("bulk", role=_role("normal"), strategy=_strategy("move")).retval == 0
    return m


def _strategy(name: str) -> Any:
    from mgr_sla.core.state import Strategy
    return Strategy(name)


def _role(name: str) -> Any:
    from mgr_sla.core.state import Role
    return Role(name)


def ticks(m: Any, n: int) -> None:
    for _ in range(n):
        m.tick()
        m._rules.wait(5)
        m._admission.facts.limits.wait(5)  # the OSDs answer on a thread of their own
        m._placer.sender.wait(5)  # the upmap batch goes out on its own thread


def test_quiet_cluster_shares_with_upmaps_then_load_isolates(cluster: FakeCluster) -> None:
    store: dict[str, str] = {}
    m = managed(cluster, store)
    ticks(m, 4)
    assert cluster.rule_of(2) == "sla_shared"
    status = json.loads(m.cmd_status(format=_fmt("json")).stdout)
    bulk = next(p for p in status["pools"] if p["name"] == "bulk")
    assert status["mode"] == "shared"
    assert bulk["upmaps"]["pending"] == 0 and bulk["upmaps"]["pgs_with_upmaps"] > 0
    assert 0.3 < bulk["upmaps"]["urgent_replica_share"] < 0.6
    # every upmap entry keeps a normal replica and one replica per host
    for pg in cluster.upmaps:
        up = cluster.up_set(pg)
        assert any(o % 2 == 0 for o in up), (pg, up)
        assert len({o // 2 for o in up}) == 3, (pg, up)
    # urgent load: isolated at once, the mon's cancelling leaves no entry to ssd
    cluster.ops[1] += 10_000
    ticks(m, 1)
    cluster.ops[1] += 10_000
    ticks(m, 2)
    assert json.loads(m.cmd_status(format=_fmt("json")).stdout)["mode"] == "isolated"
    assert cluster.rule_of(2) == "sla_isolated_normal"
    assert not cluster.upmaps
    history = json.loads(m.cmd_history(format=_fmt("json")).stdout)
    assert [h["to"] for h in history] == ["isolated", "shared"]  # newest first


def test_failover_restores_the_mode_without_a_switch(cluster: FakeCluster) -> None:
    store: dict[str, str] = {}
    first = managed(cluster, store)
    ticks(first, 4)
    switches = json.loads(first.cmd_status(format=_fmt("json")).stdout)["switches_total"]
    sent = len(cluster.commands)
    second = make_module(cluster, store, {"min_dwell_secs": 0})
    second._rules.replace_check(lambda opts: None)
    ticks(second, 3)
    status = json.loads(second.cmd_status(format=_fmt("json")).stdout)
    assert status["mode"] == "shared" and status["switches_total"] == switches
    # nothing to redo: the new mgr finds the rules and entries in place
    assert cluster.commands[sent:] == []


def test_a_switch_is_on_record_before_its_first_command(cluster: FakeCluster) -> None:
    """A mgr that fails over while a switch's commands are out finds the switch in
    the store: it carries the switch on rather than switching back."""
    store: dict[str, str] = {}
    m = managed(cluster, store)
    stored_mode_at_rule_change: list[str] = []
    send = cluster.mon_command

    def watching(cmd: dict[str, Any]) -> Any:
        if cmd.get("prefix") == "osd pool set" and cmd.get("var") == "crush_rule":
            stored_mode_at_rule_change.append(json.loads(store["state"])["mode"])
        return send(cmd)

    cluster.mon_command = watching  # type: ignore[method-assign]
    ticks(m, 4)
    assert cluster.rule_of(2) == "sla_shared"
    assert stored_mode_at_rule_change and set(stored_mode_at_rule_change) == {"shared"}


def test_a_blocked_switch_is_a_health_warning_and_counted_once(cluster: FakeCluster) -> None:
    m = managed(cluster, {})
    cluster.pg_states = [{"state_name": "active+undersized+degraded", "count": 32}]
    ticks(m, 3)
    assert cluster.rule_of(2) == "sla_isolated_normal"
    check = m.health["SLA_SWITCH_BLOCKED"]
    assert "pgs_degraded" in check["summary"]
    status = json.loads(m.cmd_status(format=_fmt("json")).stdout)
    assert status["blocked_total"]["pgs_degraded"] == 1


def test_bad_input_changes_nothing(cluster: FakeCluster) -> None:
    m = managed(cluster, {})
    before = dict(m.options)
    assert m.cmd_set_threshold("abc").retval < 0
    assert m.cmd_set_threshold("10", "20").retval < 0
    assert m.cmd_pool_set("nosuch", role=_role("normal")).retval < 0
    assert m.cmd_pool_set("bulk", role=_role("urgent")).retval < 0
    assert m.options == before


def test_set_threshold_never_shows_an_invalid_pair_on_the_way(cluster: FakeCluster) -> None:
    """The two options are written one at a time: a tick or `status` between
    the writes must not meet low above high (either direction of change)."""
    from mgr_sla.core.decision import Thresholds

    m = managed(cluster, {})
    seen: list[tuple[Any, Any]] = []
    write = m.set_module_option

    def watch(name: str, value: Any) -> None:
        write(name, value)
        seen.append((m.options["threshold_iops"], m.options["threshold_low_iops"]))
    m.set_module_option = watch
    for high, low in (("1000000", "500000"), ("50", "20"), ("80", None), ("100", "100")):
        assert m.cmd_set_threshold(high, low).retval == 0
    for high, low in seen:
        Thresholds.parse(high, low if low > 0 else None)  # raises on an invalid pair
    assert seen[-1] == (100.0, 100.0), seen


def test_status_names_an_invalid_threshold_pair(cluster: FakeCluster) -> None:
    """A pair set past the command (`ceph config set`) that the tick refuses:
    status says so instead of failing."""
    m = managed(cluster, {})
    m.options.update({"threshold_iops": 50.0, "threshold_low_iops": 500.0})
    plain = m.cmd_status().stdout
    assert "thresholds:  invalid (low threshold 500 is above the high threshold 50" in plain
    status = json.loads(m.cmd_status(format=_fmt("json")).stdout)
    assert status["threshold_iops"] is None and "above the high" in status["threshold_error"]


def test_a_pool_the_mon_refuses_does_not_stop_the_others(cluster: FakeCluster) -> None:
    cluster.add_pool(3, "other", "sla_isolated_normal")
    m = managed(cluster, {})
    assert m.cmd_pool_set("other", role=_role("normal"), strategy=_strategy("move")).retval == 0
    real = cluster.mon_command

    def refuse_bulk(cmd: dict[str, Any]) -> Any:
        if cmd.get("pool") == "bulk" and cmd.get("var") == "crush_rule":
            return -22, b"", "Error EINVAL: refused"
        return real(cmd)
    cluster.mon_command = refuse_bulk  # type: ignore[method-assign]
    ticks(m, 3)
    assert cluster.rule_of(3) == "sla_shared"
    assert "apply_failed" in m.health["SLA_SWITCH_BLOCKED"]["summary"]


def _fmt(name: str) -> Any:
    from mgr_sla.shell.commands_io import OutputFormat
    return OutputFormat(name)


def test_pool_rm_and_release_undo_what_sla_did(cluster: FakeCluster) -> None:
    cluster.add_pool(3, "other", "replicated_rule")
    m = managed(cluster, {})
    assert m.cmd_pool_set("other", role=_role("normal"), strategy=_strategy("move")).retval == 0
    ticks(m, 4)
    assert cluster.rule_of(3) == "sla_shared"
    assert any(pg.startswith("3.") for pg in cluster.upmaps)
    out = m.cmd_pool_rm("other")
    assert out.retval == 0, out
    assert cluster.rule_of(3) == "replicated_rule"
    assert not any(pg.startswith("3.") for pg in cluster.upmaps)
    assert 3 not in cluster.weight_sets
    # release: bulk was on sla_isolated_normal when it was added: it stays
    # there (its original), and loses its entries and weight set
    out = m.cmd_release()
    assert out.retval == 0, out
    assert not cluster.upmaps and 2 not in cluster.weight_sets
    assert json.loads(m.cmd_status(format=_fmt("json")).stdout)["pools"] == []
    # the sla rules no pool uses are gone; the ones a pool still uses stay
    assert set(cluster.rules) == {"replicated_rule", "sla_isolated_normal",
                                  "sla_isolated_urgent"}
    assert "sla_shared removed" in out.stdout


def test_an_erasure_coded_pool_that_does_not_fit_is_refused_naming_why(
        cluster: FakeCluster) -> None:
    """An EC normal pool takes the ec strategy only; its profile is checked
    against the cluster's failure domains of each class (four hosts here, each
    an hdd and an ssd)."""
    cluster.ec_profiles["ec42"] = {"k": "4", "m": "2", "plugin": "jerasure"}
    cluster.add_pool(5, "ecpool", "replicated_rule", erasure=True)
    cluster.add_pool(6, "wide", "replicated_rule", erasure=True, ec_profile="ec42")
    m = make_module(cluster, {})
    out = m.cmd_pool_set("wide", role=_role("normal"))
    assert out.retval < 0 and "profile ec42: k=4 m=2" in out.stderr, out
    assert "puts 6 shards in 6 hosts; only 4 hold hdd" in out.stderr, out
    out = m.cmd_pool_set("ecpool", role=_role("normal"), strategy=_strategy("move"))
    assert out.retval < 0 and "--strategy ec for erasure-coded ones" in out.stderr, out
    out = m.cmd_pool_set("ecpool", role=_role("urgent"))
    assert out.retval < 0 and "erasure-coded" in out.stderr
    # its own rule must be an erasure rule of the normal class, checked before installing
    out = m.cmd_pool_set("ecpool", role=_role("normal"))
    assert out.retval < 0 and "erasure-coded, and its own rule replicated_rule is not an " \
        "erasure rule" in out.stderr, out
    out = m.cmd_pool_set("bulk", role=_role("normal"), strategy=_strategy("ec"))
    assert out.retval < 0 and "is replicated: the ec strategy shares erasure-coded" in out.stderr
    assert cluster.rule_of(5) == cluster.rule_of(6) == "replicated_rule"
    assert json.loads(m.cmd_status(format=_fmt("json")).stdout)["pools"] == []


def test_an_ec_pool_shares_by_its_shards_and_isolates_by_its_own_rule(
        cluster: FakeCluster) -> None:
    """The ec strategy on the fake: shared, the pool is on sla_ec_<own rule>
    and its entries put at most m shards of a PG on ssd OSDs, each in place;
    urgent load swaps the own rule back (the mon drops the entries)."""
    from mgr_sla.crush_rules.ec_rules import EcLayout, ec_shard_faults
    cluster.rules.update(ecpool=7, sla_ec_ecpool=8)
    cluster.hdd_takes.add("ecpool")
    cluster.add_pool(5, "ecdata", "ecpool", erasure=True)
    m = managed(cluster, {})
    out = m.cmd_pool_set("ecdata", role=_role("normal"))
    assert out.retval == 0 and "(ec)" in out.stdout, out
    from mgr_sla.core.decision import Mode
    ticks(m, 1)
    [before] = [p for p in m._pools.switch_moves(Mode.SHARED, ()) if p["pool"] == "ecdata"]
    assert 0 < before["pgs_moving"] == before["replicas"] <= before["pgs"], before  # m = 1
    ticks(m, 3)
    assert cluster.rule_of(5) == "sla_ec_ecpool"
    layout = EcLayout(2, 1, {o: "hdd" if o % 2 == 0 else "ssd" for o in range(8)},
                      {o: o // 2 for o in range(8)})
    moved = 0
    for pg, raw in cluster.raw.items():
        if pg.startswith("5."):
            up = cluster.up_set(pg)
            assert ec_shard_faults(raw, up, layout) == [], (pg, raw, up)
            moved += sum(1 for o in up if o % 2)
    assert moved > 0
    status = json.loads(m.cmd_status(format=_fmt("json")).stdout)
    entry = next(p for p in status["pools"] if p["name"] == "ecdata")
    assert entry["strategy"] == "ec" and entry["upmaps"]["shards_on_urgent"] == moved, entry
    plan = json.loads(m.cmd_plan(format=_fmt("json")).stdout)
    assert set(next(c for c in plan["costs"] if c["name"] == "ecdata")["costs"]) == {"ec"}
    cluster.ops[1] += 10_000
    ticks(m, 1)
    cluster.ops[1] += 10_000
    ticks(m, 2)
    assert cluster.rule_of(5) == "ecpool"
    assert not [pg for pg in cluster.upmaps if pg.startswith("5.")]


def test_off_changes_nothing_and_on_resumes(cluster: FakeCluster) -> None:
    m = managed(cluster, {})
    assert m.cmd_off().retval == 0
    ticks(m, 3)
    assert cluster.rule_of(2) == "sla_isolated_normal" and not cluster.upmaps
    assert json.loads(m.cmd_status(format=_fmt("json")).stdout)["active"] is False
    assert m.cmd_on().retval == 0
    ticks(m, 3)
    assert cluster.rule_of(2) == "sla_shared"


def test_unreadable_state_is_kept_and_reported(cluster: FakeCluster) -> None:
    store = {"state": "{broken"}
    m = make_module(cluster, store, {"min_dwell_secs": 0})
    m._rules.replace_check(lambda opts: None)
    ticks(m, 1)
    kept = [k for k in store if k.startswith("state.unreadable.")]
    assert kept and store[kept[0]] == "{broken"
    assert "SLA_STATE_RESET" in m.health


def test_a_pool_the_urgent_region_cannot_hold_stays_isolated(cluster: FakeCluster) -> None:
    """The admission projects each urgent OSD's bytes on the pool's planned
    placement: past nearfull, the pool stays isolated and says which OSD."""
    # not kept isolated for its drain time, nor for the urgent write budget
    m = managed(cluster, {}, max_isolation_secs=1e9, max_urgent_drive_writes=0)
    cluster.osd_used_gib = 60
    cluster.pool_bytes = 300 << 30  # half of it would land on 4 x 100 GiB SSDs
    ticks(m, 3)
    status = json.loads(m.cmd_status(format=_fmt("json")).stdout)
    bulk = next(p for p in status["pools"] if p["name"] == "bulk")
    assert status["mode"] == "shared" and cluster.rule_of(2) == "sla_isolated_normal"
    assert "past nearfull_ratio 85%" in bulk["kept_isolated"], bulk
    assert "the module's planned entries" in bulk["kept_isolated"]


def test_dry_run_changes_no_state(cluster: FakeCluster) -> None:
    store: dict[str, str] = {}
    m = managed(cluster, store, dry_run=True)
    ticks(m, 3)
    status = json.loads(m.cmd_status(format=_fmt("json")).stdout)
    assert status["mode"] == "isolated" and status["dry_run_mode"] == "shared"
    assert cluster.rule_of(2) == "sla_isolated_normal" and not cluster.upmaps
    history = json.loads(m.cmd_history(format=_fmt("json")).stdout)
    assert history[0]["dry_run"] is True and status["switches_total"] == 0
    # dry run off: the real state decides now and records a real switch
    m.options["dry_run"] = False
    ticks(m, 3)
    history = json.loads(m.cmd_history(format=_fmt("json")).stdout)
    assert history[0]["dry_run"] is False and history[0]["to"] == "shared"
    assert cluster.rule_of(2) == "sla_shared"


def test_a_switch_with_nothing_to_move_completes(cluster: FakeCluster) -> None:
    """Pools already where the new mode wants them (recreated by the operator):
    the switch's tracking ends at once, so the quiet time can start."""
    m = managed(cluster, {})  # installs the fake mgr_module commands_io imports
    from mgr_sla.shell.commands_io import ModeArg
    ticks(m, 4)
    assert cluster.rule_of(2) == "sla_shared"
    cluster.upmaps.clear()
    cluster.pools[2]["crush_rule"] = cluster.rules["sla_isolated_normal"]
    cluster.epoch += 1
    m.notify("osd_map", "")
    assert m.cmd_mode(ModeArg.ISOLATED).retval == 0
    ticks(m, 2)
    assert json.loads(m.cmd_status(format=_fmt("json")).stdout)["mode"] == "isolated"
    assert not m._tracker.isolating and not m._tracker.sharing, "the switch's tracking never ended"
    assert m.cmd_mode(ModeArg.AUTO).retval == 0
    ticks(m, 3)
    assert cluster.rule_of(2) == "sla_shared"


def test_isolation_cancels_the_move_to_shared_while_its_pgs_peer(cluster: FakeCluster) -> None:
    """Urgent load while the switch to shared still moves replicas: its PGs
    peer, and isolation does not wait for them (it cancels that move). Once
    the move is over, PGs peering for another reason hold isolation."""
    m = managed(cluster, {})
    ticks(m, 4)
    assert cluster.rule_of(2) == "sla_shared"
    peering = [{"state_name": "remapped+peering", "count": len(cluster.raw)}]
    if not m._tracker.sharing:  # the switch's move, still watched
        _watch(m._tracker)
    cluster.pg_states = peering
    cluster.ops[1] += 10_000
    ticks(m, 1)
    cluster.ops[1] += 10_000
    ticks(m, 1)
    assert cluster.rule_of(2) == "sla_isolated_normal", m.health

    # someone else's peering, no move of ours: the switch waits and says why
    other = FakeCluster()
    other.add_pool(1, "fast", "sla_isolated_urgent")
    other.add_pool(2, "bulk", "sla_isolated_normal")
    n = managed(other, {})
    for _ in range(10):
        ticks(n, 1)
        if not n._tracker.sharing and other.rule_of(2) == "sla_shared":
            break
    assert other.rule_of(2) == "sla_shared" and not n._tracker.sharing
    other.pg_states = peering
    other.ops[1] += 10_000
    ticks(n, 1)
    other.ops[1] += 10_000
    ticks(n, 1)
    assert other.rule_of(2) == "sla_shared"
    assert "pgs_inactive" in n.health["SLA_SWITCH_BLOCKED"]["summary"]


def _watch(tracker: Any) -> None:
    from mgr_sla.core.state import SwitchRecord
    tracker.start(SwitchRecord(0.0, "isolated", "shared", "test", epoch=0), {})


def test_status_does_not_wait_for_the_ticks_mon_round_trips(cluster: FakeCluster) -> None:
    """The tick sends rule changes and upmap entries without the status lock:
    a slow mon does not stall `ceph sla status` or a metrics scrape."""
    import threading

    m = managed(cluster, {})
    entered, release = threading.Event(), threading.Event()
    send = cluster.mon_command

    def slow_mon(cmd: dict[str, Any]) -> Any:
        if cmd["prefix"] == "osd pool set":
            entered.set()
            assert release.wait(30), "the test never released the mon"
        return send(cmd)

    cluster.mon_command = slow_mon  # type: ignore[method-assign]
    ticker = threading.Thread(target=ticks, args=(m, 4))
    ticker.start()
    try:
        assert entered.wait(30), "no rule change was sent"
        done = threading.Event()
        threading.Thread(target=lambda: (m.cmd_status(format=_fmt("json")), done.set())).start()
        assert done.wait(10), "status waited for the tick's mon command"
    finally:
        release.set()
        ticker.join(30)
    assert cluster.rule_of(2) == "sla_shared"


def test_advise_sizes_from_the_recorded_usage_and_says_where_figures_come_from(
        cluster: FakeCluster) -> None:
    store: dict[str, str] = {}
    m = managed(cluster, store)
    before = json.loads(m.cmd_advise(format=_fmt("json")).stdout)
    assert before["verdict"] == "no history yet" and before["urgent_osds"] == 4
    assert "not measured" in before["urgent_client_capacity_basis"]
    cluster.ops[1] += 10_000
    ticks(m, 3)
    assert m.cmd_advise(calibrate=True).retval == 0
    advice = json.loads(m.cmd_advise(cost_ratio=5.0, format=_fmt("json")).stdout)
    assert advice["urgent_osds"] == 4 and advice["urgent_osds_needed"] >= 3
    assert "osd bench 4 KiB on osd.1, osd.3" in advice["urgent_osds_basis"]
    # ssd OSDs measured 10x the hdd ones: SSD only pays at 1:5, not at 1:20
    assert advice["data_metadata"]["winner"] == "ssd"
    dearer = json.loads(m.cmd_advise(cost_ratio=20.0, format=_fmt("json")).stdout)
    assert dearer["data_metadata"]["winner"] == "hdd+ssd db"
    # the history is written to the store (at the latest USAGE_SAVE_SECS later)
    m._advisor._usage_saved_at -= 1000
    ticks(m, 1)
    assert json.loads(store["usage"])["v"] == 1
    assert m.cmd_advise(cost_ratio=-1.0).retval != 0


def test_a_report_with_urgent_ops_between_ticks_starts_a_tick_and_is_not_lost(
        cluster: FakeCluster) -> None:
    """Shared: the serve loop reads the perf query every PERF_POLL_SECS and
    ticks at once when urgent ops arrived; the tick still counts those ops."""
    m = managed(cluster, {})
    ticks(m, 4)
    assert cluster.rule_of(2) == "sla_shared"
    assert m._urgent_ops_arrived() is False  # nothing new
    cluster.ops[2] += 500  # normal ops only: no early tick
    assert m._urgent_ops_arrived() is False
    cluster.ops[1] += 10_000
    assert m._urgent_ops_arrived() is True
    ticks(m, 1)  # no new read brings them: they were kept from the poll
    assert cluster.rule_of(2) == "sla_isolated_normal"
    history = json.loads(m.cmd_history(format=_fmt("json")).stdout)
    assert history[0]["to"] == "isolated" and "IOPS >= high threshold" in history[0]["reason"]
    assert m._urgent_ops_arrived() is False  # isolated: no polling between ticks


def test_urgent_load_isolates_while_the_upmap_batch_is_still_going_out(
        cluster: FakeCluster) -> None:
    """The switch to shared's upmap entries go out on their own thread: the
    tick that sees urgent load right after the switch isolates at once, and the
    batch's remaining rounds are not sent."""
    import threading

    m = managed(cluster, {})
    from mgr_sla.core.switch_cost import UPMAP_PARALLEL
    release = threading.Event()
    send = cluster.mon_command
    upmaps_sent: list[str] = []

    def slow_upmaps(cmd: dict[str, Any]) -> Any:
        if cmd["prefix"] == "osd pg-upmap-items":
            assert release.wait(30), "never released"
            upmaps_sent.append(cmd["pgid"])
        return send(cmd)

    cluster.mon_command = slow_upmaps  # type: ignore[method-assign]
    try:
        for _ in range(4):
            m.tick()
            m._rules.wait(5)
            m._admission.facts.limits.wait(5)  # the OSDs answer on a thread of their own
        assert cluster.rule_of(2) == "sla_shared" and m._placer.sender.busy()
        cluster.ops[1] += 10_000
        m.tick()  # does not wait for the batch
        assert cluster.rule_of(2) == "sla_isolated_normal"
    finally:
        release.set()
        m._placer.sender.wait(10)
    assert not m._placer.sender.busy()
    assert len(upmaps_sent) <= UPMAP_PARALLEL  # the round in flight, no more


@pytest.mark.parametrize("out,err,iops", [
    ('{"bytes_written": 12288000, "blocksize": 4096, "elapsed_sec": 1.0, "iops": 3000.0}', "",
     3000.0),
    ('{"osd_bench_results": {"bytes_written": 12288000, "blocksize": 4096, '
     '"elapsed_sec": 2.0}}', "", 1500.0),
    ("", "bench: wrote 12 MiB in blocks of 4 KiB in 0.5 sec at 23 MiB/sec 6.0k IOPS", 6000.0),
])
def test_osd_bench_replies_of_every_shape_give_iops(out: str, err: str, iops: float) -> None:
    """Releases reply to `osd bench` differently (Tentacle's lacked the keys
    Pacific's JSON has): JSON at the top or one level down, or plain text."""
    from harness.fake_mgr import install_fake_mgr_module
    install_fake_mgr_module()
    from mgr_sla.shell.advice_commands import _bench_iops
    assert _bench_iops(3, 0, out, err) == iops
    with pytest.raises(RuntimeError, match="osd.3 bench: no IOPS"):
        _bench_iops(3, 0, "{}", "")


def test_a_class_whose_osd_bench_fails_falls_back_and_says_why(cluster: FakeCluster) -> None:
    """Tentacle's memstore OSDs refuse the bench's cache flush: advise still
    answers, with the class's mClock option and the bench's error as basis."""
    m = managed(cluster, {})
    real = cluster.send_command

    def refuse_hdd(result: Any, svc_type: str, svc_id: str, command: str, tag: str) -> None:
        if int(svc_id) % 2 == 0:
            result.complete(0, "", "Error flushing objectstore cache: (1) Operation not "
                                   "permitted")
            return
        real(result, svc_type, svc_id, command, tag)

    m.send_command = refuse_hdd
    assert m.cmd_advise(calibrate=True).retval == 0
    advice = json.loads(m.cmd_advise(format=_fmt("json")).stdout)
    assert "osd bench failed (osd.0 bench: no IOPS" in advice["normal_client_capacity_basis"]
    assert "osd bench 4 KiB on osd.1, osd.3" in advice["urgent_client_capacity_basis"]


def test_the_basis_names_the_osds_whose_bench_was_measured(cluster: FakeCluster) -> None:
    """One OSD of a class fails its bench: the basis names the one measured."""
    m = managed(cluster, {})
    real = cluster.send_command

    def refuse_osd0(result: Any, svc_type: str, svc_id: str, command: str, tag: str) -> None:
        if svc_id == "0":
            result.complete(-1, "", "Operation not permitted")
            return
        real(result, svc_type, svc_id, command, tag)

    m.send_command = refuse_osd0
    assert m.cmd_advise(calibrate=True).retval == 0
    advice = json.loads(m.cmd_advise(format=_fmt("json")).stdout)
    assert "osd bench 4 KiB on osd.2, median" in advice["normal_client_capacity_basis"]


def test_an_osd_bench_that_never_answers_counts_as_failed_by_the_deadline(
        cluster: FakeCluster, monkeypatch: pytest.MonkeyPatch) -> None:
    """A hung OSD never completes its bench: the calibration stops waiting at
    the deadline and its class takes the other OSD's figure; a class none of
    whose OSDs answered falls back to the mClock option, naming the silence."""
    import time

    from mgr_sla.shell import advice_commands
    monkeypatch.setattr(advice_commands, "BENCH_ANSWER_SECS", 0.5)
    m = managed(cluster, {})
    real = cluster.send_command

    def hang(result: Any, svc_type: str, svc_id: str, command: str, tag: str) -> None:
        if svc_id in ("0", "1", "3"):  # osd.0 (hdd), osd.1 and osd.3: all the ssd benched
            return
        real(result, svc_type, svc_id, command, tag)

    m.send_command = hang
    started = time.monotonic()
    assert m.cmd_advise(calibrate=True).retval == 0
    assert time.monotonic() - started < 5
    advice = json.loads(m.cmd_advise(format=_fmt("json")).stdout)
    assert "osd bench 4 KiB on osd.2, median" in advice["normal_client_capacity_basis"]
    assert "osd bench failed (osd.1 bench did not answer in 0.5 s)" in advice[
        "urgent_client_capacity_basis"], advice["urgent_client_capacity_basis"]


def test_a_pool_that_would_not_gain_stays_isolated_unless_shared_mode_is_pinned(
        cluster: FakeCluster) -> None:
    """min_gain at its default: a copy pool with no client ops measured is
    expected to gain 1.03x (the model at 50% reads), so managed in shared
    mode it goes to its isolated placement and says why, in status and plan;
    a pinned shared mode shares it (the operator asked), and auto again
    leaves the shared pool as it is for the period."""
    cluster.add_pool(3, "copied", "replicated_rule")
    m = managed(cluster, {}, min_gain=1.05)
    from mgr_sla.shell.commands_io import ModeArg  # the fake mgr_module is in place now
    ticks(m, 4)
    assert json.loads(m.cmd_status(format=_fmt("json")).stdout)["mode"] == "shared"
    # managed while shared: from its old rule straight to its place in shared mode,
    # unless kept isolated (its old rule is not a shared placement)
    assert m.cmd_pool_set("copied", role=_role("normal"), strategy=_strategy("copy")).retval == 0
    ticks(m, 4)
    assert cluster.rule_of(3) == "sla_isolated_normal" and cluster.pools[3]["size"] == 3
    status = json.loads(m.cmd_status(format=_fmt("json")).stdout)
    copied = next(p for p in status["pools"] if p["name"] == "copied")
    assert "under min_gain 1.05x" in copied["kept_isolated"], copied
    # what the module does with it, in shared mode: keeps it where it is
    assert (copied["expected_rule"], copied["expected_size"]) == ("sla_isolated_normal", 3)
    assert copied["gain"]["source"] == "model" and copied["gain"]["measured"] is None
    assert abs(copied["gain"]["expected"] - 1.033) < 0.01, copied["gain"]
    plan = m.cmd_plan(format=_fmt("plain")).stdout
    assert "gain: model 1.03x, not measured yet" in plan, plan
    assert m.cmd_mode(ModeArg.SHARED).retval == 0
    ticks(m, 4)
    assert cluster.rule_of(3) == "sla_copy_3" and cluster.pools[3]["size"] == 4
    pinned = json.loads(m.cmd_status(format=_fmt("json")).stdout)
    copied = next(p for p in pinned["pools"] if p["name"] == "copied")
    assert (copied["expected_rule"], copied["expected_size"]) == ("sla_copy_3", 4), copied
    assert m.cmd_mode(ModeArg.AUTO).retval == 0
    ticks(m, 4)
    assert cluster.rule_of(3) == "sla_copy_3" and cluster.pools[3]["size"] == 4


def test_a_copy_pool_shares_by_size_and_isolates_by_size(cluster: FakeCluster) -> None:
    """The copy strategy: sla_isolated_normal at size 3 (isolated), sla_copy_3
    at 4 (shared); its min_size is kept; `pool rm` gives back its rule, size
    and min_size."""
    cluster.add_pool(3, "copied", "replicated_rule")
    cluster.pools[3]["min_size"] = 1
    m = managed(cluster, {})
    out = m.cmd_pool_set("copied", role=_role("normal"), strategy=_strategy("copy"))
    assert out.retval == 0, out
    ticks(m, 4)
    pool = cluster.pools[3]
    assert cluster.rule_of(3) == "sla_copy_3" and pool["size"] == 4 and pool["min_size"] == 1
    assert all(cluster.up_set(pg)[0] % 2 == 1 for pg in cluster.raw if pg.startswith("3."))
    status = json.loads(m.cmd_status(format=_fmt("json")).stdout)
    copied = next(p for p in status["pools"] if p["name"] == "copied")
    assert (copied["strategy"], copied["size"], copied["expected_size"]) == ("copy", 4, 4)
    assert not any(m.health.get(c) for c in ("SLA_PLACEMENT_FAULT", "SLA_NORMAL_INCLUSION"))
    cluster.ops[1] += 10_000
    ticks(m, 1)
    cluster.ops[1] += 10_000
    ticks(m, 1)
    assert pool["size"] == 3 and pool["min_size"] == 1
    assert cluster.rule_of(3) == "sla_isolated_normal"
    steps = [(c["var"], c["val"]) for c in cluster.commands if c["prefix"] == "osd pool set"
             and c["pool"] == "copied" and c["var"] in ("size", "crush_rule")]
    # shared: the rule, then the copy; isolated: the copy goes, then the rule
    assert steps[-4:] == [("crush_rule", "sla_copy_3"), ("size", "4"), ("size", "3"),
                          ("crush_rule", "sla_isolated_normal")]
    out = m.cmd_pool_rm("copied")
    assert out.retval == 0, out
    assert cluster.rule_of(3) == "replicated_rule" and pool["size"] == 3


def test_a_copy_pool_refuses_a_strategy_change_and_bad_sizes(cluster: FakeCluster) -> None:
    m = managed(cluster, {})
    out = m.cmd_pool_set("bulk", role=_role("normal"), strategy=_strategy("copy"))
    assert out.retval < 0 and "pool rm bulk" in out.stderr
    cluster.add_pool(3, "wide", "replicated_rule")
    cluster.pools[3]["size"] = 9
    out = m.cmd_pool_set("wide", role=_role("normal"), strategy=_strategy("copy"))
    assert out.retval < 0 and "size 9" in out.stderr
    assert 3 not in json.loads(m.cmd_status(format=_fmt("json")).stdout)["pools"]


def test_a_move_pool_too_slow_to_isolate_stays_isolated_and_status_says_why(
        cluster: FakeCluster) -> None:
    m = managed(cluster, {}, max_isolation_secs=5)
    cluster.pool_bytes = 30 << 30  # moved back at the default drain rate: minutes
    ticks(m, 4)
    assert cluster.rule_of(2) == "sla_isolated_normal"
    status = json.loads(m.cmd_status(format=_fmt("json")).stdout)
    assert status["mode"] == "shared"
    bulk = next(p for p in status["pools"] if p["name"] == "bulk")
    assert "max_isolation_secs 5" in bulk["kept_isolated"]
    plan = json.loads(m.cmd_plan(format=_fmt("json")).stdout)
    cost = next(c for c in plan["costs"] if c["name"] == "bulk")
    assert cost["costs"]["copy"]["time_to_isolation_secs"] <= 10
    assert cost["costs"]["move"]["time_to_isolation_secs"] > 5


def test_status_names_what_holds_the_switch_and_how_to_release_it(cluster: FakeCluster
                                                                   ) -> None:
    m = managed(cluster, {}, min_dwell_secs=3600)
    ticks(m, 2)
    status = json.loads(m.cmd_status(format=_fmt("json")).stdout)
    assert status["mode"] == "isolated" and status["holds"] == []
    cluster.pg_states = [{"state_name": "active+undersized+degraded", "count": 16}]
    ticks(m, 1)
    status = json.loads(m.cmd_status(format=_fmt("json")).stdout)
    holds = {h["name"]: h for h in status["holds"]}
    assert "pgs_degraded" in holds and holds["pgs_degraded"]["release"]
    assert "holds:" in m.cmd_status().stdout


def test_the_balancer_is_kept_off_the_managed_pools_and_release_restores_it(
        cluster: FakeCluster) -> None:
    cluster.add_pool(3, "other", "replicated_rule")
    # none of the balancer's options set, as on a new cluster: they read as
    # None, and the mgr map says it is on in upmap mode
    assert not cluster.balancer
    m = managed(cluster, {})
    ticks(m, 2)
    # every pool but the normal one: the urgent pool (isolated placement, no
    # entries of ours) is the balancer's to balance within its class
    assert cluster.balancer["pool_ids"] == "1,3"
    assert "SLA_BALANCER_CONFLICT" not in m.health
    assert m.cmd_release().retval == 0
    assert "pool_ids" not in cluster.balancer  # the operator's default (every pool) back


def test_a_balancer_set_to_mode_none_is_left_alone(cluster: FakeCluster) -> None:
    cluster.add_pool(3, "other", "replicated_rule")
    cluster.balancer["mode"] = "none"
    m = managed(cluster, {})
    ticks(m, 2)
    assert "pool_ids" not in cluster.balancer
    assert not [c for c in cluster.commands if c.get("name") == "mgr/balancer/pool_ids"]


def test_a_cluster_below_luminous_is_refused_with_the_command_that_fixes_it(
        cluster: FakeCluster) -> None:
    m = managed(cluster, {})
    cluster.add_pool(3, "other", "replicated_rule")
    cluster.min_compat_client = "jewel"
    before = list(cluster.commands)
    for out in (m.cmd_rules_apply(), m.cmd_pool_set("other", role=_role("normal"))):
        assert out.retval < 0
        assert "ceph osd set-require-min-compat-client luminous" in out.stderr, out
    # nothing changed: the mon was only asked for its map and its epoch
    assert [c for c in cluster.commands[len(before):]
            if c["prefix"] not in ("osd dump", "osd stat")] == []
    # the fix just run, the mgr's copy of the map not there yet: the mon's floor counts
    cluster.mon_min_compat_client = "luminous"
    assert m.cmd_pool_set("other", role=_role("normal")).retval == 0


class _CountingLock:
    """The status lock, counting the sections entered from outside (not re-entries)."""

    def __init__(self, lock: Any) -> None:
        self._lock, self.depth, self.sections = lock, 0, 0
        self.holder: int | None = None

    def __enter__(self) -> Any:
        self._lock.__enter__()
        self.depth += 1
        self.sections += self.depth == 1
        self.holder = threading.get_ident()
        return self

    def __exit__(self, *exc: Any) -> Any:
        self.depth -= 1
        if not self.depth:
            self.holder = None
        return self._lock.__exit__(*exc)


@pytest.mark.parametrize("ticks_before", [1, 4])  # isolated (a switch), then shared
def test_a_tick_takes_the_status_lock_once_per_step(cluster: FakeCluster,
                                                    ticks_before: int) -> None:
    """measure, plan, track: three sections; act and persist (the mon and the
    store's round trips) run without it."""
    m = managed(cluster, {})
    ticks(m, ticks_before)
    counting = _CountingLock(m._store.lock)
    m._store.lock = counting
    mon_calls_locked: list[str] = []
    real = cluster.mon_command

    def watched(cmd: dict[str, Any]) -> Any:
        if counting.holder == threading.get_ident():
            mon_calls_locked.append(cmd["prefix"])
        return real(cmd)
    cluster.mon_command = watched  # type: ignore[method-assign]
    m.tick()
    assert counting.sections == 3
    assert mon_calls_locked == []


def test_a_pool_whose_sharing_would_pass_the_pg_limit_stays_isolated(
        cluster: FakeCluster) -> None:
    """The limit is the one each OSD runs with (its `config get`), not the mgr's."""
    m = managed(cluster, {})
    m.get_ceph_option = {"target_max_misplaced_ratio": 0.05, "mon_max_pg_per_osd": 250}.get
    cluster.osd_config = {o: {"mon_max_pg_per_osd": 6} for o in (1, 3, 5, 7)}
    m.tick()
    m._admission.facts.limits.wait(5)  # the OSDs answer on a thread of their own
    ticks(m, 4)
    status = json.loads(m.cmd_status(format=_fmt("json")).stdout)
    bulk = next(p for p in status["pools"] if p["name"] == "bulk")
    assert status["mode"] == "shared" and cluster.rule_of(2) == "sla_isolated_normal"
    assert "over mon_max_pg_per_osd 6 as osd." in bulk["kept_isolated"], bulk
    assert "SLA_PG_LIMIT" in m.health and "bulk" in m.health["SLA_PG_LIMIT"]["detail"][0]
    plan = json.loads(m.cmd_plan(format=_fmt("json")).stdout)
    slots = next(c for c in plan["costs"] if c["name"] == "bulk")["pg_slots_if_shared"]
    assert slots["pgs"] > 6 and slots["limit"] == 6
    space = next(c for c in plan["costs"] if c["name"] == "bulk")["urgent_space_if_shared"]
    assert space["osd"] % 2 == 1 and 0 < space["fill"] < 1 and space["nearfull_ratio"] == 0.85
    assert f"urgent space shared: osd.{space['osd']}" in m.cmd_plan().stdout
    # room again: it shares once the OSDs are read again
    cluster.osd_config = {}
    m._admission.facts.limits.forget()
    m.tick()
    m._admission.facts.limits.wait(5)
    ticks(m, 3)
    assert cluster.rule_of(2) == "sla_shared" and "SLA_PG_LIMIT" not in m.health


def test_a_pool_taken_over_in_isolated_mode_is_not_sent_back(cluster: FakeCluster) -> None:
    """Isolated, an urgent OSD at its limit and a pool `pool set` takes over
    from its own rule (between placements, its PGs on every class): the pool
    goes to its isolated rule, and nothing is sent back, logged or kept for
    the next shared period (it was not the module's sharing)."""
    m = managed(cluster, {})
    from mgr_sla.shell.commands_io import ModeArg
    assert m.cmd_mode(ModeArg.ISOLATED).retval == 0
    m.get_ceph_option = {"target_max_misplaced_ratio": 0.05, "mon_max_pg_per_osd": 250}.get
    cluster.osd_config = {o: {"mon_max_pg_per_osd": 6, "osd_max_pg_per_osd_hard_ratio": 1}
                          for o in (1, 3, 5, 7)}
    cluster.osd_pgs = {1: 9}
    ticks(m, 2)
    cluster.add_pool(3, "fresh", "replicated_rule")
    assert m.cmd_pool_set("fresh", role=_role("normal"),
                          strategy=_strategy("move")).retval == 0
    ticks(m, 3)
    assert cluster.rule_of(3) == "sla_isolated_normal"
    assert m._store.state().sent_back == {}
    status = json.loads(m.cmd_status(format=_fmt("json")).stdout)
    fresh = next(p for p in status["pools"] if p["name"] == "fresh")
    assert "it creates no more PGs" not in (fresh["kept_isolated"] or ""), fresh
    assert "SLA_SHARING_FAULT" not in m.health


def test_osds_withholding_pgs_isolate_every_shared_pool_at_once(cluster: FakeCluster) -> None:
    m = managed(cluster, {})
    m.get_ceph_option = {"target_max_misplaced_ratio": 0.05, "mon_max_pg_per_osd": 250}.get
    ticks(m, 4)
    assert cluster.rule_of(2) == "sla_shared"
    cluster.ceph_checks = {"PENDING_CREATING_PGS": {
        "severity": "HEALTH_WARN", "summary": {"message": "8 PGs pending on creation"}}}
    ticks(m, 1)  # no new epoch, within the admission's 30 s: the next tick acts
    assert cluster.rule_of(2) == "sla_isolated_normal"
    assert "PENDING_CREATING_PGS" in m.health["SLA_SHARING_FAULT"]["detail"][0]


def test_a_copy_pool_that_gets_nosizechange_says_it_cannot_go_back(
        cluster: FakeCluster) -> None:
    """The mon refuses every size change of a pool with nosizechange: shared by
    copy, the pool cannot drop its urgent copy. It says so, with the fix, and
    isolates as soon as the flag goes; `pool set` refuses such a pool."""
    cluster.add_pool(3, "copied", "replicated_rule")
    m = managed(cluster, {})
    assert m.cmd_pool_set("copied", role=_role("normal"), strategy=_strategy("copy")).retval == 0
    ticks(m, 4)
    assert cluster.pools[3]["size"] == 4  # shared
    cluster.pools[3]["flags_names"] = "hashpspool,nosizechange"
    cluster.epoch += 1
    cluster.on_change()
    ticks(m, 2)
    assert cluster.pools[3]["size"] == 4 and cluster.rule_of(2) == "sla_shared"
    detail = " ".join(m.health["SLA_COPY_SIZE_LOCKED"]["detail"])
    assert "'ceph osd pool set copied nosizechange false'" in detail, detail
    assert "nosizechange" in m.health["SLA_STRATEGY_REFUSED"]["detail"][0]
    status = json.loads(m.cmd_status(format=_fmt("json")).stdout)
    copied = next(p for p in status["pools"] if p["name"] == "copied")
    assert "nosizechange" in copied["kept_isolated"]
    cluster.pools[3]["flags_names"] = "hashpspool"  # the fix: nothing holds it any more
    cluster.epoch += 1
    cluster.on_change()
    ticks(m, 2)
    assert "SLA_COPY_SIZE_LOCKED" not in m.health
    from mgr_sla.shell.commands_io import ModeArg
    assert m.cmd_mode(ModeArg.ISOLATED).retval == 0
    ticks(m, 1)
    assert cluster.pools[3]["size"] == 3
    # and `pool set` refuses such a pool
    cluster.add_pool(4, "frozen", "replicated_rule")
    cluster.pools[4]["flags_names"] = "nosizechange"
    out = m.cmd_pool_set("frozen", role=_role("normal"), strategy=_strategy("copy"))
    assert out.retval < 0 and "nosizechange" in out.stderr


def test_a_copy_pool_placing_its_copy_says_so_and_real_degradation_apart(
        cluster: FakeCluster) -> None:
    cluster.add_pool(3, "copied", "replicated_rule")
    m = managed(cluster, {})
    assert m.cmd_pool_set("copied", role=_role("normal"), strategy=_strategy("copy")).retval == 0
    ticks(m, 4)
    assert cluster.pools[3]["size"] == 4  # shared: one more copy of each of its objects
    cluster.pool_sums = [{"poolid": 3, "stat_sum": {"num_objects": 100,
                                                     "num_objects_degraded": 40}}]
    cluster.epoch += 1
    cluster.on_change()
    ticks(m, 1)
    assert "40 object copies" in m.health["SLA_COPY_PLACING"]["detail"][0]
    assert "SLA_SHARED_POOL_DEGRADED" not in m.health
    cluster.pool_sums[0]["stat_sum"]["num_objects_degraded"] = 130
    cluster.epoch += 1
    cluster.on_change()
    ticks(m, 1)
    assert "30 object copies missing beyond" in m.health["SLA_SHARED_POOL_DEGRADED"][
        "detail"][0]


def test_an_urgent_osd_past_nearfull_sends_shared_pools_back_for_the_period(
        cluster: FakeCluster) -> None:
    """Space is checked while shared too: an urgent OSD past nearfull_ratio
    isolates the shared pools at the next cost refresh, and the room their
    isolation frees does not share them again in the same shared period."""
    m = managed(cluster, {})
    ticks(m, 4)
    assert cluster.rule_of(2) == "sla_shared"
    cluster.osd_used_gib = 90  # of 100: past the default nearfull_ratio 0.85
    m._admission.facts._at = -1e9  # the next refresh reads the OSDs' reports
    ticks(m, 2)
    status = json.loads(m.cmd_status(format=_fmt("json")).stdout)
    bulk = next(p for p in status["pools"] if p["name"] == "bulk")
    assert status["mode"] == "shared" and cluster.rule_of(2) == "sla_isolated_normal"
    assert "90% full, past nearfull_ratio 85%" in bulk["kept_isolated"]
    cluster.osd_used_gib = 10
    m._admission.facts._at = -1e9
    ticks(m, 2)
    assert cluster.rule_of(2) == "sla_isolated_normal"
    assert "sent back" in m.health["SLA_SHARING_FAULT"]["summary"]
    # a new shared period starts afresh, and so does a new pin of the mode
    from mgr_sla.shell.commands_io import ModeArg
    assert m.cmd_mode(ModeArg.ISOLATED).retval == 0
    m.tick()
    assert m.cmd_mode(ModeArg.SHARED).retval == 0
    ticks(m, 3)
    assert cluster.rule_of(2) == "sla_shared" and "SLA_SHARING_FAULT" not in m.health


def test_a_copy_pool_the_mon_would_refuse_to_raise_stays_isolated(cluster: FakeCluster) -> None:
    """The mon's own projection (here Pacific's, over all pools and in OSDs)
    is run before a size raise: a raise it would refuse with ERANGE is not
    sent, and the pool says why, while the move pool shares."""
    cluster.add_pool(3, "copied", "replicated_rule")
    cluster.add_pool(5, "other", "replicated_rule", pgs=100)  # not managed: 300 replicas
    m = managed(cluster, {})
    assert m.cmd_pool_set("copied", role=_role("normal"), strategy=_strategy("copy")).retval == 0
    # 48 + 48 + 48 + 300 = 444 now, 460 with copied at size 4; 57 x 8 OSDs = 456
    m.get_ceph_option = {"target_max_misplaced_ratio": 0.05, "mon_max_pg_per_osd": 57}.get
    ticks(m, 4)
    sent = [c for c in cluster.commands if c.get("var") == "size"]
    assert cluster.pools[3]["size"] == 3 and sent == [], sent
    assert cluster.rule_of(2) == "sla_shared"
    status = json.loads(m.cmd_status(format=_fmt("json")).stdout)
    copied = next(p for p in status["pools"] if p["name"] == "copied")
    assert "'osd pool set copied size 4' (ERANGE)" in copied["kept_isolated"]
    assert "460 PG replicas projected" in copied["kept_isolated"]
    # the raise fits, but this release counts the way back too: with a host's two
    # OSDs out, 460 > 58 x 6; the copy is shared only where it could be dropped
    m.get_ceph_option = {"target_max_misplaced_ratio": 0.05, "mon_max_pg_per_osd": 58}.get
    cluster.epoch += 1
    cluster.on_change()
    ticks(m, 2)
    copied = next(p for p in json.loads(m.cmd_status(format=_fmt("json")).stdout)["pools"]
                  if p["name"] == "copied")
    assert cluster.pools[3]["size"] == 3 and "its way back" in copied["kept_isolated"]
    m.get_ceph_option = {"target_max_misplaced_ratio": 0.05, "mon_max_pg_per_osd": 77}.get
    cluster.epoch += 1
    cluster.on_change()
    ticks(m, 2)
    assert cluster.pools[3]["size"] == 4


def test_share_past_min_size_replans_at_once_and_status_counts_its_cost(
        cluster: FakeCluster) -> None:
    """By default one replica of three on an SSD at most (min_size 2 stays on
    hdd); the option, set with no new OSD map, lets a second go at the next
    tick, and status counts the PGs that would stop with the SSDs."""
    store: dict[str, str] = {}
    m = managed(cluster, store)
    ticks(m, 4)

    def most_on_ssd() -> int:
        return max(sum(1 for o in cluster.up_set(pg) if o % 2) for pg in cluster.upmaps)
    bulk = next(p for p in json.loads(m.cmd_status(format=_fmt("json")).stdout)["pools"]
                if p["name"] == "bulk")
    assert most_on_ssd() == 1 and bulk["upmaps"]["pgs_stopping_with_urgent"] == 0
    m.set_module_option("share_past_min_size", True)
    m.config_notify()
    ticks(m, 3)
    bulk = next(p for p in json.loads(m.cmd_status(format=_fmt("json")).stdout)["pools"]
                if p["name"] == "bulk")
    assert most_on_ssd() == 2
    stopping = sum(1 for pg in cluster.upmaps
                   if sum(1 for o in cluster.up_set(pg) if o % 2 == 0) < 2)
    assert bulk["upmaps"]["pgs_stopping_with_urgent"] == stopping > 0
