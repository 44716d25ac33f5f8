"""One admission, one answer: `pool set`, `plan`, `status` and the tick give
every normal pool the same strategy and the same reason to stay isolated,
and the shell's fact reader and admission step do what they say (the real
module on harness/fake_mgr.py's stand-in for ceph-mgr)."""
from __future__ import annotations

import json
import time
from dataclasses import replace
from typing import Any

import pytest

from harness.fake_mgr import FakeCluster, make_module
from mgr_sla.core.admission_facts import Placement
from mgr_sla.core.state import Role, Strategy

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def ticks(m: Any, n: int) -> None:
    for _ in range(n):
        m.tick()
        m._rules.wait(5)
        m._admission.facts.limits.wait(5)
        m._placer.sender.wait(5)


def json_of(result: Any) -> Any:
    assert result.retval == 0, result
    return json.loads(result.stdout)


def three_pools() -> tuple[FakeCluster, Any]:
    """An urgent pool, a move pool that fits, a copy pool whose gain is under
    min_gain, and an auto pool set last."""
    cluster = FakeCluster()
    cluster.add_pool(1, "fast", "sla_isolated_urgent")
    for pid, name in ((2, "fits"), (3, "writes"), (4, "auto")):
        cluster.add_pool(pid, name, "replicated_rule")
    m = make_module(cluster, {}, {"min_dwell_secs": 0, "sustain_secs": 0, "step_wait_secs": 0})
    m._rules.replace_check(lambda opts: None)
    from mgr_sla.shell.commands_io import OutputFormat
    assert m.cmd_pool_set("fast", role=Role.URGENT).retval == 0
    assert m.cmd_pool_set("fits", role=Role.NORMAL, strategy=Strategy.MOVE).retval == 0
    assert m.cmd_pool_set("writes", role=Role.NORMAL, strategy=Strategy.COPY).retval == 0
    ticks(m, 2)
    set_auto = json_of(m.cmd_pool_set("auto", role=Role.NORMAL, format=OutputFormat.JSON))
    m.set_first = set_auto
    return cluster, m


def test_pool_set_plan_status_and_the_tick_agree_on_every_pool() -> None:
    cluster, m = three_pools()
    from mgr_sla.shell.commands_io import OutputFormat
    ticks(m, 4)
    status = json_of(m.cmd_status(format=OutputFormat.JSON))
    plan = json_of(m.cmd_plan(format=OutputFormat.JSON))
    assert status["mode"] == "shared"
    costs = {c["name"]: c for c in plan["costs"]}
    pools = {p["name"]: p for p in status["pools"] if p["role"] == "normal"}
    assert set(costs) == set(pools) == {"fits", "writes", "auto"}
    # pool set took the admission's choice, which plan and status show now
    assert m.set_first["strategy"] == costs["auto"]["strategy"] == pools["auto"]["strategy"]
    assert costs["auto"]["next_strategy"] == pools["auto"]["next_strategy"]
    for name, pool in pools.items():
        assert pool["kept_isolated"] == costs[name]["kept_isolated"], name
        assert pool["gain"] == costs[name]["gain"], name
        # the tick acted on the same result: kept pools on their isolated rule
        on_shared = pool["rule"] != "sla_isolated_normal"
        assert on_shared is (pool["kept_isolated"] is None), (name, pool)
    assert "under min_gain" in (pools["writes"]["kept_isolated"] or "")
    assert pools["fits"]["kept_isolated"] is None
    assert costs["writes"]["recommended"] == "keep isolated"
    assert costs["fits"]["recommended"] == "move"


def test_the_fact_reader_sees_each_pools_placement_and_projection() -> None:
    cluster, m = three_pools()
    ticks(m, 4)
    reader = m._admission.facts
    with m._store.lock:
        state = m._store.state()
        maps = m._maps.last()
        facts = reader.admission_facts(0.0, state, maps, m._settings)
    pools = {p.name: p for p in facts.pools}
    assert pools["fits"].placement is Placement.SHARED
    assert sum(pools["fits"].live.values()) > 0  # its up sets on the urgent OSDs
    assert pools["writes"].placement is Placement.ISOLATED and pools["writes"].live == {}
    auto = pools["auto"]
    # the planner's entries for an isolated pool that may move, in place of an estimate
    assert auto.projections["move"].basis == "planned"
    assert set(facts.urgent) == {1, 3, 5, 7}
    assert all(u.limit is not None and u.limit.basis == "the OSD" for u in facts.urgent.values())
    assert facts.mon.limit is None  # the fake mgr has no mon_max_pg_per_osd of its own


def test_a_stuck_pg_with_an_urgent_osd_sends_its_pools_back_at_once() -> None:
    """The check after the fact, on the live module: PGs of a shared pool stuck
    activating with an urgent OSD send the pool back at the next tick, past
    every gate, and status, plan and health name it."""
    cluster, m = three_pools()
    from mgr_sla.shell.commands_io import OutputFormat
    ticks(m, 4)
    assert cluster.rule_of(2) == "sla_shared"
    cluster.pg_states = [{"state_name": "activating+undersized+degraded", "count": 1}]
    reader = m._admission.facts
    reader._inactive_since = {pg: -1e9 for pg in cluster.raw if pg.startswith("2.")}
    ticks(m, 1)
    assert cluster.rule_of(2) == "sla_isolated_normal"
    status = json_of(m.cmd_status(format=OutputFormat.JSON))
    fits = next(p for p in status["pools"] if p["name"] == "fits")
    assert "not active for" in fits["kept_isolated"] and "with urgent osd." in \
        fits["kept_isolated"]
    assert "fits" in m.health["SLA_SHARING_FAULT"]["detail"][0]
    assert status["mode"] == "shared"  # the others stay as they are
    # the pool stays back, also once its PGs are active again, until the period ends
    cluster.pg_states = [{"state_name": "active+clean", "count": len(cluster.raw)}]
    ticks(m, 2)
    assert cluster.rule_of(2) == "sla_isolated_normal"
    plan = json_of(m.cmd_plan(format=OutputFormat.JSON))
    assert "not active for" in next(c for c in plan["costs"]
                                    if c["name"] == "fits")["kept_isolated"]


def test_a_step_settles_once_its_pgs_report_the_osds_the_map_gives_them() -> None:
    """The next step toward shared waits for the last one's PGs; a PG whose
    stats still show other OSDs than the map (its new primary withheld it: the
    old stats say active+clean) keeps it waiting, and after UNREPORTED_SECS
    counts as stuck: the check after the fact sends its pool back."""
    from mgr_sla.core.state import StepRecord
    from mgr_sla.shell.facts import STATS_SECS, UNREPORTED_SECS
    cluster, m = three_pools()
    ticks(m, 4)
    reader = m._admission.facts
    step = StepRecord(1000.0, cluster.epoch, (2,))
    assert reader.step_settled(step, 1000.0)
    cluster.stale_up = {"2.1": [0, 2, 4]}  # what the PG reported before the step
    assert not reader.step_settled(step, 1000.0 + STATS_SECS)
    later = 1000.0 + STATS_SECS + UNREPORTED_SECS
    unreported = reader._step_pgs(step, later)[1]
    assert [(pg.pgid, pg.secs) for pg in unreported] == [("2.1", UNREPORTED_SECS)]
    assert "as last reported" in unreported[0].state
    cluster.stale_up = {}
    assert reader.step_settled(step, later + STATS_SECS)


def test_a_pool_deleted_after_its_step_is_forgotten_and_the_next_pool_shares() -> None:
    """A step's pool deleted while the step is on record: the tick goes on
    (the mgr cannot map a pool its map lacks), the record forgets the pool,
    and a pool set normal later shares."""
    from mgr_sla.core.state import StepRecord
    cluster, m = three_pools()
    ticks(m, 4)
    assert cluster.rule_of(2) == "sla_shared"
    with m._store.lock:
        m._store.state().last_step = StepRecord(0.0, cluster.epoch, (2, 3))
    cluster.remove_pool(2)
    ticks(m, 1)
    with m._store.lock:
        state = m._store.state()
        assert 2 not in state.roles
        assert state.last_step is None or 2 not in state.last_step.pools
    cluster.add_pool(5, "later", "replicated_rule")
    assert m.cmd_pool_set("later", role=Role.NORMAL, strategy=Strategy.MOVE).retval == 0
    ticks(m, 4)
    assert cluster.rule_of(5) == "sla_shared"


def test_ticks_failing_in_a_row_raise_a_health_check_that_a_good_tick_clears() -> None:
    cluster, m = three_pools()
    ticks(m, 1)
    run = m._ticker.run

    def broken(now: float) -> None:
        raise RuntimeError("the map is not what it was")
    m._ticker.run = broken
    for n in range(3):
        assert "SLA_TICK_FAILED" not in m.health, n
        with pytest.raises(RuntimeError):
            m.tick()
    check = m.health["SLA_TICK_FAILED"]
    assert "3 ticks failed" in check["summary"]
    assert "RuntimeError: the map is not what it was" in check["detail"][0]
    m._ticker.run = run
    ticks(m, 1)
    assert "SLA_TICK_FAILED" not in m.health


def _devices_and_calibration() -> tuple[FakeCluster, dict[str, str]]:
    """Every OSD's last perf samples (500 reads and 500 writes of 16 KiB over
    100 s: hdd 8 and 20 ms, ssd 24 and 60 ms, on the urgent clients' own
    ops) and an `osd bench` calibration in the store that says the SSDs are
    33 times the HDDs: the device prior speaks, by the calibration."""
    cluster = FakeCluster()
    for osd in range(8):
        r, w = (24.0, 60.0) if osd % 2 else (8.0, 20.0)
        cluster.counters[osd] = {
            "osd.op_r_latency": [[0.0, 1e9, 100], [100.0, 1e9 + 500 * r * 1e6, 600]],
            "osd.op_w_latency": [[0.0, 1e9, 100], [100.0, 1e9 + 500 * w * 1e6, 600]],
            "osd.op_r_out_bytes": [[0.0, 1e6], [100.0, 1e6 + 500 * 16384]],
            "osd.op_w_in_bytes": [[0.0, 1e6], [100.0, 1e6 + 500 * 16384]]}
    store = {"calibration": json.dumps({"time": 0.0, "classes": {
        "hdd": {"iops": 150.0, "osds": [0]}, "ssd": {"iops": 5000.0, "osds": [1]}}})}
    return cluster, store


def clocked(m: Any, cluster: FakeCluster, n: int, reads: dict[int, float]) -> None:
    """`n` ticks 5 s apart, each pool of `reads` serving 1000 ops at its read share."""
    for _ in range(n):
        for pid, share in reads.items():
            cluster.ops[pid] += 1000
            cluster.reads[pid] = cluster.reads.get(pid, 0) + int(1000 * share)
        m.clock = getattr(m, "clock", time.time()) + 5.0
        with m._store.act_lock:
            m._ticker.run(m.clock)
        m._rules.wait(5)
        m._admission.facts.limits.wait(5)
        m._placer.sender.wait(5)


def test_pool_set_plan_status_and_the_tick_agree_when_the_devices_decide() -> None:
    """Device latencies and a calibration in the facts, where the device
    prior and the work model pick different strategies: `pool set` (of a
    pool whose mix is known: managed before) takes the strategy `plan`,
    `status` and the tick then show and act on, and every pool is kept or
    shared alike in all three."""
    from mgr_sla.core.admission import admit
    cluster, store = _devices_and_calibration()
    cluster.add_pool(1, "fast", "sla_isolated_urgent")
    cluster.add_pool(2, "writes", "replicated_rule")
    cluster.add_pool(3, "mixed", "replicated_rule")
    m = make_module(cluster, store, {"min_dwell_secs": 0, "sustain_secs": 0,
                                     "step_wait_secs": 0, "min_gain": 1.05})
    m._rules.replace_check(lambda opts: None)
    from mgr_sla.shell.commands_io import OutputFormat
    assert m.cmd_pool_set("fast", role=Role.URGENT).retval == 0
    assert m.cmd_pool_set("writes", role=Role.NORMAL, strategy=Strategy.COPY).retval == 0
    assert m.cmd_pool_set("mixed", role=Role.NORMAL).retval == 0
    mix = {2: 0.1, 3: 0.9}
    clocked(m, cluster, 5, mix)
    assert m.cmd_pool_rm("mixed").retval == 0
    cluster.weight_sets.add(3)  # the fake mon cannot install one again: it stays
    clocked(m, cluster, 1, mix)
    set_again = json_of(m.cmd_pool_set("mixed", role=Role.NORMAL, format=OutputFormat.JSON))
    clocked(m, cluster, 4, mix)
    # the premise: on these facts the work model alone would pick move
    facts = m._admission._facts
    model = admit(replace(facts, devices={}, calibration=None)).pools[3].choice
    assert model.strategy == "move" != admit(facts).pools[3].choice.strategy, model
    status = json_of(m.cmd_status(format=OutputFormat.JSON))
    plan = json_of(m.cmd_plan(format=OutputFormat.JSON))
    assert status["mode"] == "shared"
    costs = {c["name"]: c for c in plan["costs"]}
    pools = {p["name"]: p for p in status["pools"] if p["role"] == "normal"}
    assert set(costs) == set(pools) == {"writes", "mixed"}
    assert set_again["strategy"] == "copy" == costs["mixed"]["strategy"] \
        == costs["mixed"]["next_strategy"]["strategy"] == pools["mixed"]["strategy"]
    for name, pool in pools.items():
        assert pool["strategy"] == costs[name]["strategy"], name
        assert pool["kept_isolated"] == costs[name]["kept_isolated"], name
        pid = pool["pool_id"]
        # the tick acted on the same answer: kept on the isolated rule, else shared by copy
        placed = (cluster.rule_of(pid), cluster.pools[pid]["size"])
        assert placed == (("sla_isolated_normal", 3) if pool["kept_isolated"]
                          else ("sla_copy_3", 4)), (name, placed, pool)
    assert pools["mixed"]["kept_isolated"] is None
    assert "(devices: copy, 10% reads" in (pools["writes"]["kept_isolated"] or ""), pools


def test_plan_counts_no_move_for_a_pool_the_admission_keeps_isolated() -> None:
    """Isolated, the next switch shares `fits` (move) and not `writes` (copy,
    its gain under min_gain): plan moves nothing of `writes`, and the switch
    then leaves it where it is."""
    cluster = FakeCluster()
    cluster.add_pool(1, "fast", "sla_isolated_urgent")
    cluster.add_pool(2, "fits", "replicated_rule")
    cluster.add_pool(3, "writes", "replicated_rule")
    m = make_module(cluster, {}, {"sustain_secs": 0, "step_wait_secs": 0})
    m._rules.replace_check(lambda opts: None)
    from mgr_sla.shell.commands_io import OutputFormat
    assert m.cmd_pool_set("fast", role=Role.URGENT).retval == 0
    assert m.cmd_pool_set("fits", role=Role.NORMAL, strategy=Strategy.MOVE).retval == 0
    assert m.cmd_pool_set("writes", role=Role.NORMAL, strategy=Strategy.COPY).retval == 0
    ticks(m, 2)
    plan = json_of(m.cmd_plan(format=OutputFormat.JSON))
    assert plan["to_mode"] == "shared"
    kept = {c["name"]: c["kept_isolated"] for c in plan["costs"]}
    assert "under min_gain" in (kept["writes"] or "") and kept["fits"] is None
    moves = {p["pool"]: p for p in plan["pools"]}
    assert moves["writes"]["pgs"] == 16
    assert (moves["writes"]["pgs_moving"], moves["writes"]["replicas"],
            moves["writes"]["bytes"]) == (0, 0, 0), moves["writes"]
    assert moves["fits"]["pgs_moving"] > 0
    assert (plan["pgs"], plan["replicas"]) == (moves["fits"]["pgs_moving"],
                                               moves["fits"]["replicas"])
    m.set_module_option("min_dwell_secs", 0)
    ticks(m, 3)
    assert json_of(m.cmd_status(format=OutputFormat.JSON))["mode"] == "shared"
    assert (cluster.rule_of(3), cluster.pools[3]["size"]) == ("sla_isolated_normal", 3)
    assert cluster.rule_of(2) == "sla_shared"
    assert not any(pg.startswith("3.") for pg in cluster.upmaps)
