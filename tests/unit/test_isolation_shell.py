"""Isolation against the normal OSDs' own PG limits, on the `Module` shell with
the fake mgr (harness/fake_mgr.py): SLA_ISOLATION_PG_LIMIT while shared, the
pool held on its shared placement when the module isolates, status; and the
bounded reading of the normal OSDs' limits (shell/normal_limits.py)."""
from __future__ import annotations

import json
import logging
from typing import Any

import pytest

from harness.fake_mgr import FakeCluster, make_module
from mgr_sla.core.pg_slots import PgLimit
from mgr_sla.shell import normal_limits
from mgr_sla.shell.normal_limits import ASK_MAX, NormalLimits

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")
HDD = (0, 2, 4, 6)


def managed(cluster: FakeCluster) -> Any:
    from mgr_sla.core.state import Role, Strategy
    m = make_module(cluster, {}, {"min_dwell_secs": 0, "sustain_secs": 0,
                                  "step_wait_secs": 0, "min_gain": 0})
    m._rules.replace_check(lambda opts: None)  # crushtool/osdmaptool: the integration tests'
    assert m.cmd_pool_set("fast", role=Role("urgent")).retval == 0
    assert m.cmd_pool_set("bulk", role=Role("normal"), strategy=Strategy("move")).retval == 0
    return m


def ticks(m: Any, n: int) -> None:
    for _ in range(n):
        m.tick()
        m._rules.wait(5)
        m._admission.facts.limits.wait(5)  # the OSDs answer on threads of their own
        m._admission.isolation.limits.wait(5)
        m._placer.sender.wait(5)  # the upmap batch goes out on its own thread


def shared_near_the_hdds_limit(cluster: FakeCluster) -> Any:
    """bulk shared by the module, its HDDs running with a limit of 14 PGs
    (their own `config get`; the mgr's value is not readable here) and
    holding 12: isolating bulk would bring some of its PGs back to each, past 14."""
    cluster.osd_config = {o: {"mon_max_pg_per_osd": 14, "osd_max_pg_per_osd_hard_ratio": 1}
                          for o in HDD}
    cluster.osd_pgs = dict.fromkeys(HDD, 12)
    m = managed(cluster)
    ticks(m, 5)
    assert cluster.rule_of(2) == "sla_shared" and cluster.upmaps
    return m


def status(m: Any) -> dict[str, Any]:
    from mgr_sla.shell.commands_io import OutputFormat
    return json.loads(m.cmd_status(format=OutputFormat("json")).stdout)


@pytest.fixture
def cluster() -> FakeCluster:
    c = FakeCluster()
    c.add_pool(1, "fast", "sla_isolated_urgent")
    c.add_pool(2, "bulk", "sla_isolated_normal")
    return c


def test_isolation_past_an_hdds_own_limit_is_warned_while_shared_then_held(
        cluster: FakeCluster) -> None:
    """Isolating bulk would take its HDDs past their own limit: warned while
    shared, then held when the module isolates."""
    m = shared_near_the_hdds_limit(cluster)
    check = m.health["SLA_ISOLATION_PG_LIMIT"]  # raised while shared: time to act
    assert "would put" in check["detail"][0] and "past the 14 PGs it holds at most" \
        in check["detail"][0] and "pools bulk" in check["detail"][0]
    iso = status(m)["isolation"]
    assert iso["over"] and iso["hard_limit"] == 14 and iso["limit_basis"] == "the OSD"
    assert iso["osd"] in HDD and iso["pgs"] > 14 and iso["held"] == {}
    # urgent load: the module isolates, and holds bulk where it is
    cluster.ops[1] += 10_000
    ticks(m, 1)
    cluster.ops[1] += 10_000
    ticks(m, 2)
    st = status(m)
    assert st["mode"] == "isolated" and cluster.rule_of(2) == "sla_shared" and cluster.upmaps
    assert "bulk" in st["isolation"]["held"]
    bulk = next(p for p in st["pools"] if p["name"] == "bulk")
    assert bulk["expected_rule"] == "sla_shared"
    detail = m.health["SLA_ISOLATION_PG_LIMIT"]["detail"]
    assert detail[0].startswith("pool bulk: isolating it would put")
    assert "Held on its shared placement" in detail[0]
    assert "held on their shared placement" in m.health["SLA_ISOLATION_PG_LIMIT"]["summary"]
    assert "normal_pg_limit" in m.health["SLA_SWITCH_BLOCKED"]["summary"]
    assert "held shared: bulk:" in m.cmd_status().stdout
    assert not st["isolating"]  # a pool held does not keep the switch open
    # held where it is: an entry gone (someone removed it) is not placed again
    # while isolated (no data onto the urgent OSDs under urgent load)
    gone = sorted(cluster.upmaps)[0]
    cluster.upmaps.pop(gone)
    cluster.epoch += 1
    cluster.on_change()
    sent = len(cluster.commands)
    ticks(m, 2)
    assert gone not in cluster.upmaps and cluster.rule_of(2) == "sla_shared"
    assert not [c for c in cluster.commands[sent:] if c["prefix"] == "osd pg-upmap-items"]
    # the limit raised on the OSDs: read again, bulk isolates
    cluster.osd_config = {}
    m._admission.isolation.limits.forget()
    ticks(m, 4)
    assert cluster.rule_of(2) == "sla_isolated_normal" and not cluster.upmaps
    assert "SLA_ISOLATION_PG_LIMIT" not in m.health and status(m)["isolation"] is None


def test_pool_rm_and_release_refuse_what_would_pass_an_hdds_own_limit(
        cluster: FakeCluster) -> None:
    """Releasing a shared pool removes its pairs to the SSDs as isolating does:
    past an HDD's own limit, `pool rm` and `release` refuse, naming the OSD and
    the fix, and change nothing; with the limit raised, both go."""
    m = shared_near_the_hdds_limit(cluster)
    entries, sent = dict(cluster.upmaps), len(cluster.commands)
    rm = m.cmd_pool_rm("bulk")
    assert rm.retval != 0 and "pool 'bulk' is still managed: releasing it would put" in rm.stderr
    assert "past the 14 PGs it holds at most" in rm.stderr and "mon_max_pg_per_osd" in rm.stderr
    released = m.cmd_release()
    assert released.retval != 0 and released.stderr.startswith("nothing released: pool bulk:")
    assert [c for c in cluster.commands[sent:] if c["prefix"] != "osd stat"] == []
    assert cluster.upmaps == entries
    assert {p["name"] for p in status(m)["pools"]} == {"fast", "bulk"}
    cluster.osd_config = {}
    m._admission.isolation.limits.forget()
    ticks(m, 1)
    assert m.cmd_pool_rm("bulk").retval == 0
    assert cluster.rule_of(2) != "sla_shared" and not cluster.upmaps


def test_within_the_limits_nothing_is_raised_or_held(cluster: FakeCluster) -> None:
    cluster.osd_pgs = dict.fromkeys(HDD, 12)
    m = managed(cluster)
    ticks(m, 5)
    iso = status(m)["isolation"]
    assert iso is not None and not iso["over"] and iso["hard_limit"] == 750
    assert "SLA_ISOLATION_PG_LIMIT" not in m.health
    cluster.ops[1] += 10_000
    ticks(m, 1)
    cluster.ops[1] += 10_000
    ticks(m, 2)
    assert cluster.rule_of(2) == "sla_isolated_normal" and not cluster.upmaps


# ---- the normal OSDs' limits, bounded ------------------------------------------------


class Port:
    """`config get` answered by every OSD: 250 x 3 as the mgr has it, but
    osd.5 runs 110 x 1 (set at runtime: the config database knows nothing)."""

    def __init__(self) -> None:
        self.asked: list[int] = []
        self.log = logging.getLogger("test")

    def send_command(self, result: Any, svc: str, who: str, command: str, tag: str) -> None:
        cmd = json.loads(command)
        self.asked.append(int(who))
        runs = {"mon_max_pg_per_osd": 110, "osd_max_pg_per_osd_hard_ratio": 1} if who == "5" \
            else {"mon_max_pg_per_osd": 250, "osd_max_pg_per_osd_hard_ratio": 3}
        result.complete(0, json.dumps({cmd["var"]: str(runs[cmd["var"]])}), "")

    def get_ceph_option(self, name: str) -> Any:
        return {"mon_max_pg_per_osd": 250, "osd_max_pg_per_osd_hard_ratio": 3.0}[name]

    def get_foreign_ceph_option(self, who: str, name: str) -> Any:
        raise KeyError(name)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def monotonic(self) -> float:
        return self.now


def test_a_thousand_normal_osds_are_read_a_bounded_few_at_a_time(
        monkeypatch: pytest.MonkeyPatch) -> None:
    clock = Clock()
    monkeypatch.setattr(normal_limits, "time", clock)
    port = Port()
    limits = NormalLimits(port)  # type: ignore[arg-type]
    projected = dict.fromkeys(range(1000), 100)
    projected[777] = 700  # near the mgr's 750: asked first
    up = frozenset(projected)

    def round_() -> dict[int, PgLimit | None]:
        got = limits.limits(projected, up)
        limits.wait(5)
        return got
    got = round_()
    # until an OSD answers: the mgr's value, with its basis
    assert got[5] == PgLimit(250, 3.0, "the mgr's value")
    assert len(port.asked) == 2 * ASK_MAX and port.asked[:2] == [777, 777]
    got = round_()  # the same round: nothing more asked
    assert got[5] == PgLimit(110, 1.0, "the OSD") and len(port.asked) == 2 * ASK_MAX
    # a round every ROUND_SECS: the others in turn, while the near ones (777,
    # and 5 by its own limit) are asked again every round
    rounds = 1
    while len(set(port.asked)) < 1000:
        clock.now += normal_limits.ROUND_SECS
        round_()
        rounds += 1
    assert rounds == 1 + -(-(1000 - ASK_MAX) // (ASK_MAX - 2)) == 17
    assert len(port.asked) <= rounds * 2 * ASK_MAX  # 128 commands a round at most
    # every OSD read: until SLOW_SECS, only the near ones, every round
    before = len(port.asked)
    while clock.now + normal_limits.ROUND_SECS < 1000 + normal_limits.SLOW_SECS:
        clock.now += normal_limits.ROUND_SECS
        round_()
    assert set(port.asked[before:]) == {5, 777}
    # and the first round's OSDs again once SLOW_SECS passed
    clock.now += normal_limits.ROUND_SECS
    round_()
    assert len(set(port.asked[-2 * ASK_MAX:])) == ASK_MAX


def test_pgs_whose_pairs_left_the_map_count_on_their_way_until_reported() -> None:
    """An OSD reports the PGs brought back a stats period or more later: a pool
    held is not let go on a count that predates the pools isolated before it."""
    from mgr_sla.core.health import HealthChecks
    from mgr_sla.shell.isolation_watch import ARRIVE_SECS, IsolationWatch
    watch = IsolationWatch(Port(), HealthChecks(), lambda osd: 0)  # type: ignore[arg-type]
    assert watch._arriving(0.0, {2: {0: 30}, 3: {0: 40, 2: 5}}) == {}
    assert watch._arriving(1.0, {3: {0: 40, 2: 5}}) == {0: 30}  # pool 2 isolated
    assert watch._arriving(ARRIVE_SECS, {3: {0: 40}}) == {0: 30, 2: 5}
    assert watch._arriving(1.0 + ARRIVE_SECS, {3: {0: 40}}) == {2: 5}
    assert watch._arriving(2 * ARRIVE_SECS, {3: {0: 40}}) == {}
