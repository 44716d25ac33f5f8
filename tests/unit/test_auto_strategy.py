"""default_strategy 'auto': the strategy of each switch to shared chosen per
pool by its expected gain, changed only while the pool is isolated (where
both strategies place it alike), never for a pool set with --strategy."""
from __future__ import annotations

import json
import time
from typing import Any

import pytest

from harness.fake_mgr import FakeCluster, make_module
from mgr_sla.core.cluster import PoolInfo
from mgr_sla.core.decision import DecisionState, Mode
from mgr_sla.core.gain import ExpectedGain
from mgr_sla.core.models import registry
from mgr_sla.core.state import ModuleState, PoolRole, Role, Strategy
from mgr_sla.core.strategy_choice import STRATEGY_MARGIN, StrategyOption, choose_strategy

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def opt(strategy: str, gain: float, blocked: str | None = None, source: str = "model"
        ) -> StrategyOption:
    return StrategyOption(strategy, ExpectedGain(gain, source, ""), blocked)


def test_the_best_expected_gain_that_fits_wins_and_the_others_are_named() -> None:
    got = choose_strategy("copy", True, [opt("copy", 1.0, source="measured"), opt("move", 1.6)])
    assert got.strategy == "move" and got.auto
    assert got.why == "expected gain 1.60x (model); copy 1.00x (measured)"


def test_a_small_edge_keeps_the_strategy_a_pool_has() -> None:
    edge = 1.5 * STRATEGY_MARGIN * 0.99
    assert choose_strategy("copy", True, [opt("copy", 1.5), opt("move", edge)]).strategy == "copy"
    assert choose_strategy("move", True, [opt("copy", 1.5), opt("move", edge)]).strategy == "move"


def test_a_blocked_strategy_is_not_chosen_and_its_reason_shows() -> None:
    got = choose_strategy("copy", True, [opt("copy", 3.0, "needs 10.0 GiB"), opt("move", 1.2)])
    assert got.strategy == "move" and "copy: needs 10.0 GiB" in got.why
    none = choose_strategy("move", True, [opt("copy", 3.0, "no room"), opt("move", 1.2, "slow")])
    assert none.strategy == "move" and none.why == "no strategy fits: copy: no room; move: slow"


def test_a_strategy_set_by_the_operator_never_changes() -> None:
    got = choose_strategy("copy", False, [opt("copy", 1.0), opt("move", 3.0)])
    assert (got.strategy, got.auto, got.why) == ("copy", False, "set by --strategy")


def _info(size: int = 3) -> PoolInfo:
    return PoolInfo(pool_id=7, name="p", rule_id=0, size=size, min_size=size - 1)


def test_an_auto_pool_needs_what_every_strategy_needs_and_isolates_alike() -> None:
    role = registry.auto_role(_info(), "replicated_rule", Strategy.MOVE)
    assert role.auto and role.strategy is Strategy.MOVE and role.base_size == 3
    need = registry.role_needs(role)
    assert set(need.rules) == {"sla_isolated_normal", "sla_shared", "sla_copy_3"}
    assert need.weight_set and need.copy_size == 3
    copy = registry.with_strategy(role, Strategy.COPY, _info())
    move = registry.with_strategy(copy, Strategy.MOVE, _info())
    # the same rule at the size the pool has: the same mapping of every PG
    for one in (copy, move):
        isolated = registry.target(one, Mode.ISOLATED)
        assert isolated.rule == "sla_isolated_normal" and isolated.size in (None, 3)
        assert registry.isolated_size(one, 3) == 3
    assert registry.role_needs(copy) == need == registry.role_needs(move)
    # a pool the copy strategy cannot take: auto with move alone
    wide = registry.auto_role(_info(size=9), None, Strategy.MOVE)
    assert wide.base_size is None and "sla_copy_9" not in registry.role_needs(wide).rules


def test_the_auto_flag_survives_the_store_and_old_records_read_as_pinned() -> None:
    role = PoolRole(Role.NORMAL, strategy=Strategy.COPY, base_size=3, base_min_size=2, auto=True)
    state = ModuleState(DecisionState(Mode.ISOLATED, 0.0), roles={3: role})
    assert ModuleState.from_json(state.to_json(), 0.0).roles[3].auto
    raw = json.loads(state.to_json())
    del raw["roles"]["3"]["auto"]
    assert not ModuleState.from_json(json.dumps(raw), 0.0).roles[3].auto


# ---- the module shell, on the fake mgr -----------------------------------------

def _module(cluster: FakeCluster) -> Any:
    m = make_module(cluster, {}, {"min_dwell_secs": 0, "sustain_secs": 0,
                                  "step_wait_secs": 0, "min_gain": 0})
    m._rules.replace_check(lambda opts: None)
    assert m.cmd_pool_set("fast", role=Role.URGENT).retval == 0
    return m


def _ticks(m: Any, cluster: FakeCluster, n: int, reads: float, busy: bool = False,
           ops: int = 1000) -> None:
    """n ticks 5 s apart on the module's clock (rates and windows see them
    so): `ops` client ops a tick on pool 3, 10,000 on the urgent pool when busy."""
    for _ in range(n):
        cluster.ops[3] += ops
        cluster.reads[3] = cluster.reads.get(3, 0) + int(ops * reads)
        if busy:
            cluster.ops[1] += 10_000
        m.clock = getattr(m, "clock", time.time()) + 5.0
        with m._store.act_lock:
            m._ticker.run(m.clock)
        m._rules.wait(5)
        m._admission.facts.limits.wait(5)  # the OSDs answer on a thread of their own
        m._placer.sender.wait(5)


def _pool(m: Any, name: str) -> dict[str, Any]:
    from mgr_sla.shell.commands_io import OutputFormat
    status = json.loads(m.cmd_status(format=OutputFormat.JSON).stdout)
    return next(p for p in status["pools"] if p["name"] == name)


def _sent_for(cluster: FakeCluster, pool: str) -> list[dict[str, Any]]:
    return [c for c in cluster.commands if c.get("pool") == pool
            or (c["prefix"] == "osd pg-upmap-items" and c["pgid"].startswith("3."))]


def test_reads_share_by_copy_and_writes_by_move_with_no_command_while_isolated() -> None:
    cluster = FakeCluster()
    cluster.add_pool(1, "fast", "sla_isolated_urgent")
    cluster.add_pool(3, "mixed", "replicated_rule")
    m = _module(cluster)
    out = m.cmd_pool_set("mixed", role=Role.NORMAL)
    assert out.retval == 0 and "chosen again at each switch to shared" in out.stdout, out
    assert 3 in cluster.weight_sets and _pool(m, "mixed")["strategy_auto"]
    _ticks(m, cluster, 5, reads=1.0, busy=True)  # read-only, isolated
    assert _pool(m, "mixed")["next_strategy"]["strategy"] == "copy"
    _ticks(m, cluster, 8, reads=1.0)
    assert cluster.rule_of(3) == "sla_copy_3" and cluster.pools[3]["size"] == 4
    # shared by copy, one larger: copy is still the choice, judged at size 3
    choice = _pool(m, "mixed")["next_strategy"]
    assert choice["strategy"] == "copy" and choice["options"]["copy"]["blocked"] is None, choice
    _ticks(m, cluster, 3, reads=1.0, busy=True)
    assert cluster.rule_of(3) == "sla_isolated_normal" and cluster.pools[3]["size"] == 3
    before = ({pg: cluster.up_set(pg) for pg in cluster.raw if pg.startswith("3.")},
              len(_sent_for(cluster, "mixed")))
    _ticks(m, cluster, 30, reads=0.0, busy=True)  # the mix turns to writes while isolated
    pool = _pool(m, "mixed")
    assert pool["strategy"] == "move", pool
    after = ({pg: cluster.up_set(pg) for pg in cluster.raw if pg.startswith("3.")},
             len(_sent_for(cluster, "mixed")))
    assert after == before  # no PG moved, nothing sent for the pool
    assert "expected gain" in pool["next_strategy"]["why"], pool
    _ticks(m, cluster, 8, reads=0.0)
    assert cluster.rule_of(3) == "sla_shared" and cluster.pools[3]["size"] == 3
    assert any(pg.startswith("3.") for pg in cluster.upmaps)


def test_a_pool_set_with_a_strategy_keeps_it_whatever_the_mix() -> None:
    cluster = FakeCluster()
    cluster.add_pool(1, "fast", "sla_isolated_urgent")
    cluster.add_pool(3, "pinned", "replicated_rule")
    m = _module(cluster)
    assert m.cmd_pool_set("pinned", role=Role.NORMAL, strategy=Strategy.COPY).retval == 0
    _ticks(m, cluster, 8, reads=0.0)
    pool = _pool(m, "pinned")
    assert pool["strategy"] == "copy" and not pool["strategy_auto"]
    assert pool["next_strategy"]["why"] == "set by --strategy"
    assert cluster.rule_of(3) == "sla_copy_3"


def _auto_read_pool() -> tuple[FakeCluster, Any]:
    """An auto pool 'reads' (id 3) whose clients only read, isolated for 25 s."""
    cluster = FakeCluster()
    cluster.add_pool(1, "fast", "sla_isolated_urgent")
    cluster.add_pool(3, "reads", "replicated_rule")
    m = _module(cluster)
    assert m.cmd_pool_set("reads", role=Role.NORMAL).retval == 0
    _ticks(m, cluster, 5, reads=1.0, busy=True)
    return cluster, m


def test_pool_rm_of_an_auto_pool_on_copy_removes_its_weight_set_too() -> None:
    cluster, m = _auto_read_pool()
    assert _pool(m, "reads")["strategy"] == "copy" and 3 in cluster.weight_sets
    out = m.cmd_pool_rm("reads")
    assert out.retval == 0 and "weight set removed" in out.stdout, out
    assert 3 not in cluster.weight_sets and cluster.rule_of(3) == "replicated_rule"


def test_a_pool_created_a_moment_ago_is_found_once_the_mgr_has_the_mons_epoch() -> None:
    """`ceph osd pool create` then `ceph sla pool set` at once: the mgr's map
    may not have the pool yet; the command waits for the mon's epoch."""
    cluster = FakeCluster()
    cluster.add_pool(1, "fast", "sla_isolated_urgent")
    m = _module(cluster)
    stale = cluster.get("osd_map")
    cluster.add_pool(3, "fresh", "replicated_rule")
    calls = {"osd_map": 0}

    def lagging(what: str) -> Any:
        if what == "osd_map" and calls["osd_map"] < 4:
            calls["osd_map"] += 1
            return stale
        return cluster.get(what)
    m.get = lagging
    out = m.cmd_pool_set("fresh", role=Role.NORMAL)
    assert out.retval == 0 and calls["osd_map"] == 4, (out, calls)
    assert m.cmd_pool_set("nosuch", role=Role.NORMAL).retval < 0


def test_a_pool_whose_mix_is_not_measured_keeps_its_strategy() -> None:
    """50% reads assumed is no reason to change: the pool waits for its clients."""
    options = [opt("copy", 1.03), opt("move", 2.0)]
    got = choose_strategy("copy", True, options, mix_known=False)
    assert got.strategy == "copy" and "no client ops measured yet" in got.why
    assert choose_strategy("copy", True, options).strategy == "move"
    # unless its strategy does not fit at all
    blocked = [opt("copy", 1.03, "nosizechange"), opt("move", 2.0)]
    assert choose_strategy("copy", True, blocked, mix_known=False).strategy == "move"


def test_a_burst_of_writes_shorter_than_the_settle_time_changes_nothing() -> None:
    from mgr_sla.core.admission import SETTLE_SECS
    cluster, m = _auto_read_pool()
    seen, had = set(), set()
    for reads in (0.0, 0.0) + (1.0,) * 8:  # 10 s of writes, then reads again: 50 s
        cluster.epoch += 1  # a new map: the costs and choices are computed again
        _ticks(m, cluster, 1, reads=reads, busy=True)
        seen.add(_pool(m, "reads")["next_strategy"]["strategy"])
        had.add(_pool(m, "reads")["strategy"])
    assert seen == {"copy", "move"}, seen  # the burst made move the choice for a while
    assert had == {"copy"}, had
    _ticks(m, cluster, int(SETTLE_SECS / 5) + 10, reads=0.0, busy=True)
    assert _pool(m, "reads")["strategy"] == "move"  # a mix that holds does change it


def test_a_stale_gain_is_re_measured_by_the_strategy_that_places_least() -> None:
    """copy's low gain went stale: its prior (2.5x) beats move's (1.6x), but a
    trial by move places a third of it, so move re-measures; a fresh or an
    absent measurement leaves the best gain's strategy."""
    stale = ExpectedGain(2.5, "devices", "", stale=True)
    options = [StrategyOption("copy", stale, None, 30 * 2**30),
               StrategyOption("move", ExpectedGain(1.6, "devices", ""), None, 10 * 2**30)]
    got = choose_strategy("copy", True, options)
    assert got.strategy == "move", got.why
    assert "copy's gain re-measured by a trial share of move (10.00 GiB placed, not " \
           "30.00 GiB)" in got.why
    fresh = [StrategyOption("copy", ExpectedGain(2.5, "devices", ""), None, 30 * 2**30),
             options[1]]
    assert choose_strategy("copy", True, fresh).strategy == "copy"
    # move blocked: the trial is copy's own
    blocked = [options[0], StrategyOption("move", options[1].gain, "no room", 10 * 2**30)]
    assert choose_strategy("copy", True, blocked).strategy == "copy"


def test_a_pool_measured_slower_shared_goes_back_before_the_period_ends() -> None:
    """Shared on the model's word, the pool's ops take twice as long as they
    did isolated: once that is clear of min_gain it goes back at once, for the
    rest of the period, said in status, with no fault raised."""
    from mgr_sla.core.gain import LOSS_PREFIX
    from mgr_sla.shell.commands_io import ModeArg
    cluster = FakeCluster()
    cluster.add_pool(1, "fast", "sla_isolated_urgent")
    cluster.add_pool(3, "mixed", "replicated_rule")
    m = make_module(cluster, {}, {"min_dwell_secs": 0, "sustain_secs": 0,
                                  "step_wait_secs": 0, "min_gain": 1.05, "gain_prior": "model"})
    m._rules.replace_check(lambda opts: None)
    assert m.cmd_pool_set("fast", role=Role.URGENT).retval == 0
    assert m.cmd_pool_set("mixed", role=Role.NORMAL).retval == 0
    assert m.cmd_mode(ModeArg.ISOLATED).retval == 0
    _ticks(m, cluster, 16, reads=0.5)  # isolated windows at 1 ms
    assert m.cmd_mode(ModeArg.AUTO).retval == 0
    cluster.latency_ms[3] = 2.0  # a closed-loop client: half the ops at twice the latency
    shared_at = None
    for i in range(40):
        _ticks(m, cluster, 1, reads=0.5, ops=500)
        pool = _pool(m, "mixed")
        if shared_at is None and pool["rule"] != "sla_isolated_normal":
            shared_at = i
        if (pool["kept_isolated"] or "").startswith(LOSS_PREFIX):
            break
    assert shared_at is not None, pool
    why = pool["kept_isolated"] or ""
    assert why.startswith(LOSS_PREFIX + "0.50x") and "under min_gain 1.05x" in why, pool
    _ticks(m, cluster, 2, reads=0.5, ops=500)
    assert cluster.rule_of(3) == "sla_isolated_normal" and cluster.pools[3]["size"] == 3
    assert not any(pg.startswith("3.") for pg in cluster.upmaps)
    assert _pool(m, "mixed")["kept_isolated"] == why  # for the rest of the period
    assert "SLA_SHARING_FAULT" not in m.health, m.health
