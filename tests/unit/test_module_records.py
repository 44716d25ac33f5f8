"""What the module records of a pool, on the `Module` shell against the fake
mgr (harness/fake_mgr.py): `pool set`, `pool rm` and `release` act on the
OSD map at the mon's epoch, never on the mgr's older copy; and a size or
min_size an operator sets on a copy pool is taken as its base, or refused
and left alone, never undone in silence."""
from __future__ import annotations

import errno
import json
from typing import Any

import pytest

from harness.fake_mgr import FakeCluster, install_fake_mgr_module, make_module

install_fake_mgr_module()  # before the shell's modules are imported
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


@pytest.fixture
def cluster() -> FakeCluster:
    c = FakeCluster()
    c.add_pool(1, "fast", "sla_isolated_urgent")
    c.add_pool(3, "copied", "replicated_rule")
    return c


def module(cluster: FakeCluster, store: dict[str, str]) -> Any:
    # min_gain 0: the fake's pools have no client ops
    m = make_module(cluster, store, {"min_dwell_secs": 0, "sustain_secs": 0,
                                     "step_wait_secs": 0, "min_gain": 0})
    m._rules.replace_check(lambda opts: None)  # crushtool/osdmaptool: the integration tests'
    return m


def managed(cluster: FakeCluster, store: dict[str, str], mode: str) -> Any:
    """fast urgent, copied a copy pool, the mode pinned, the pools placed."""
    from mgr_sla.core.state import Role, Strategy
    from mgr_sla.shell.commands_io import ModeArg
    m = module(cluster, store)
    assert m.cmd_pool_set("fast", role=Role.URGENT).retval == 0
    out = m.cmd_pool_set("copied", role=Role.NORMAL, strategy=Strategy.COPY)
    assert out.retval == 0, out
    assert m.cmd_mode(ModeArg(mode)).retval == 0
    ticks(m, 3)
    return m


def ticks(m: Any, n: int) -> None:
    for _ in range(n):
        m.tick()
        m._rules.wait(5)
        m._admission.facts.limits.wait(5)
        m._placer.sender.wait(5)


def by_hand(cluster: FakeCluster, var: str, value: int) -> None:
    """`ceph osd pool set copied VAR VALUE`, as an operator runs it."""
    rc, _, err = cluster.mon_command({"prefix": "osd pool set", "pool": "copied", "var": var,
                                      "val": str(value)})
    assert rc == 0, err


def sets_since(cluster: FakeCluster, start: int) -> list[tuple[str, str]]:
    """The module's `osd pool set` of copied's size and min_size since `start`."""
    return [(c["var"], c["val"]) for c in cluster.commands[start:]
            if c["prefix"] == "osd pool set" and c["pool"] == "copied"
            and c["var"] in ("size", "min_size")]


def role_of(store: dict[str, str], pool_id: int) -> dict[str, Any]:
    return dict(json.loads(store["state"])["roles"][str(pool_id)])


def status_pool(m: Any, name: str) -> dict[str, Any]:
    from mgr_sla.shell.commands_io import OutputFormat
    status = json.loads(m.cmd_status(format=OutputFormat.JSON).stdout)
    return dict(next(p for p in status["pools"] if p["name"] == name))


# ---- the map at the mon's epoch --------------------------------------------


def test_pool_set_records_the_rule_the_mon_has_once_the_mgr_map_catches_up(
        cluster: FakeCluster) -> None:
    """`osd pool set P crush_rule R` then at once `sla pool set P normal`: the
    mgr's map is an epoch behind, with P on the rule it was created with.
    `pool set` waits for the mon's epoch and records R, which `pool rm` puts
    back (recorded from the mgr's map: replicated_rule, both classes)."""
    from mgr_sla.core.state import Role, Strategy
    cluster.rules["custom_hdd"] = 6
    store: dict[str, str] = {}
    m = module(cluster, store)
    cluster.hold_mgr_map(reads=3)
    rc, _, _ = cluster.mon_command({"prefix": "osd pool set", "pool": "copied",
                                    "var": "crush_rule", "val": "custom_hdd"})
    assert rc == 0 and cluster.mgr_map is not None  # the mgr's copy still has replicated_rule
    out = m.cmd_pool_set("copied", role=Role.NORMAL, strategy=Strategy.MOVE)
    assert out.retval == 0, out
    assert cluster.mgr_map is None  # it waited for the mgr's map to catch up
    assert role_of(store, 3)["original_rule"] == "custom_hdd"
    ticks(m, 2)
    assert cluster.rule_of(3) != "custom_hdd"
    assert m.cmd_pool_rm("copied").retval == 0
    assert cluster.rule_of(3) == "custom_hdd"


def test_commands_refuse_and_change_nothing_when_the_mgr_map_stays_behind(
        cluster: FakeCluster, monkeypatch: pytest.MonkeyPatch) -> None:
    from mgr_sla.core.state import Role, Strategy
    from mgr_sla.shell import map_reader
    monkeypatch.setattr(map_reader, "MON_EPOCH_WAIT_SECS", 0.2)
    store: dict[str, str] = {}
    m = managed(cluster, store, "isolated")
    cluster.add_pool(4, "late", "replicated_rule")
    cluster.hold_mgr_map()  # never catches up
    behind = cluster.mgr_map["epoch"] if cluster.mgr_map else 0
    cluster.epoch += 1
    start, saved = len(cluster.commands), store["state"]
    for out in (m.cmd_pool_set("late", role=Role.NORMAL, strategy=Strategy.MOVE),
                m.cmd_pool_rm("copied"), m.cmd_release()):
        assert out.retval == -errno.EAGAIN, out
        assert f"epoch {behind}, the mon's at {cluster.epoch}" in out.stderr, out.stderr
        assert "nothing changed" in out.stderr
    sent = [c["prefix"] for c in cluster.commands[start:]]
    assert sent.count("osd stat") == 3  # each asked the mon's epoch, then nothing
    # (the module's background readers may fetch the map meanwhile: reads only)
    assert [p for p in sent if p not in ("osd stat", "osd getmap", "osd dump")] == [], sent
    assert store["state"] == saved


# ---- an operator's size and min_size -----------------------------------------


def test_an_operators_min_size_on_an_isolated_copy_pool_becomes_its_base(
        cluster: FakeCluster) -> None:
    """min_size 1 during an incident: the pool's base min_size from then on
    (the tick keeps 1, through the size changes of a switch too), said in the
    logs and shown by status; `pool rm` leaves it."""
    from mgr_sla.shell.commands_io import ModeArg
    store: dict[str, str] = {}
    m = managed(cluster, store, "isolated")
    pool = cluster.pools[3]
    assert (pool["size"], pool["min_size"]) == (3, 2)
    start = len(cluster.commands)
    by_hand(cluster, "min_size", 1)
    ticks(m, 3)
    assert pool["min_size"] == 1 and sets_since(cluster, start + 1) == []
    assert role_of(store, 3)["base_min_size"] == 1
    assert "SLA_POOL_CHANGED_BY_HAND" not in m.health
    hand = status_pool(m, "copied")["by_hand"]
    assert hand["base_min_size"]["value"] == 1, hand
    from mgr_sla.shell.commands_io import OutputFormat
    assert "base_min_size 1 (set by hand at" in m.cmd_status(format=OutputFormat.PLAIN).stdout
    assert m.cmd_mode(ModeArg.SHARED).retval == 0
    ticks(m, 3)
    assert (cluster.rule_of(3), pool["size"], pool["min_size"]) == ("sla_copy_3", 4, 1)
    assert m.cmd_pool_rm("copied").retval == 0
    assert (cluster.rule_of(3), pool["size"], pool["min_size"]) == ("replicated_rule", 3, 1)


def test_the_mons_min_size_reset_between_the_modules_size_and_min_size_is_set_back(
        cluster: FakeCluster) -> None:
    """The mon resets min_size with every size change (here to 3:
    osd_pool_default_min_size); a failover between the module's size and
    min_size commands leaves it so. What the module set was saved before the
    commands went out: the next mgr sets the base back, and takes nothing."""
    cluster.default_min_size = 3
    store: dict[str, str] = {}
    m = managed(cluster, store, "isolated")
    cluster.refuse[("copied", "min_size")] = "the mgr failed over"  # the step never sent
    from mgr_sla.shell.commands_io import ModeArg
    assert m.cmd_mode(ModeArg.SHARED).retval == 0
    ticks(m, 3)
    pool = cluster.pools[3]
    assert (pool["size"], pool["min_size"]) == (4, 3)
    del cluster.refuse[("copied", "min_size")]
    after = module(cluster, store)  # the next active mgr, from the store
    ticks(after, 1)
    assert (pool["size"], pool["min_size"]) == (4, 2)
    assert role_of(store, 3)["base_min_size"] == 2
    assert "SLA_POOL_CHANGED_BY_HAND" not in after.health
    assert status_pool(after, "copied")["by_hand"] is None


def test_an_operators_size_on_an_isolated_copy_pool_needs_its_copy_rule(
        cluster: FakeCluster) -> None:
    """Size 4 by hand on a pool isolated at 3: its base from then on once
    sla_copy_4 is installed; until then refused and left alone (isolated,
    even in shared mode), the warning naming the pool, the values and the fix."""
    from mgr_sla.shell.commands_io import ModeArg
    store: dict[str, str] = {}
    m = managed(cluster, store, "isolated")
    start = len(cluster.commands)
    by_hand(cluster, "size", 4)
    ticks(m, 2)
    pool = cluster.pools[3]
    assert (pool["size"], pool["min_size"]) == (4, 2) and sets_since(cluster, start + 1) == []
    detail = " ".join(m.health["SLA_POOL_CHANGED_BY_HAND"]["detail"])
    for words in ("pool copied: size 4 set by hand (the module had set 3)", "sla_copy_4",
                  "'ceph sla pool set copied normal --strategy copy'"):
        assert words in detail, detail
    assert "size 4 set by hand" in status_pool(m, "copied")["by_hand"]["refused"]
    assert m.cmd_mode(ModeArg.SHARED).retval == 0
    ticks(m, 3)
    assert (cluster.rule_of(3), pool["size"]) == ("sla_isolated_normal", 4)
    assert role_of(store, 3)["base_size"] == 3
    cluster.rules["sla_copy_4"] = 6  # 'ceph sla pool set' again installs it
    cluster.epoch += 1
    cluster.on_change()
    ticks(m, 1)
    assert "SLA_POOL_CHANGED_BY_HAND" not in m.health
    assert (role_of(store, 3)["base_size"], role_of(store, 3)["base_min_size"]) == (4, 2)
    ticks(m, 2)
    assert (cluster.rule_of(3), pool["size"], pool["min_size"]) == ("sla_copy_4", 5, 2)


def test_an_operators_size_on_a_shared_copy_pool_is_refused_until_set_back(
        cluster: FakeCluster) -> None:
    """Size 5 by hand on a pool shared at 4 (3 + its urgent copy): which base
    is meant cannot be told. Refused, left at 5, kept isolated; `pool rm`
    would leave it at 5; set back to 4, the module keeps it again."""
    store: dict[str, str] = {}
    m = managed(cluster, store, "shared")
    pool = cluster.pools[3]
    assert (cluster.rule_of(3), pool["size"]) == ("sla_copy_3", 4)
    start = len(cluster.commands)
    by_hand(cluster, "size", 5)
    ticks(m, 3)
    assert pool["size"] == 5 and sets_since(cluster, start + 1) == []
    assert cluster.rule_of(3) == "sla_isolated_normal"  # kept isolated: no urgent copy
    detail = " ".join(m.health["SLA_POOL_CHANGED_BY_HAND"]["detail"])
    assert "pool copied: size 5 set by hand (the module had set 4)" in detail, detail
    assert "'ceph osd pool set copied size 4'" in detail
    by_hand(cluster, "size", 4)
    ticks(m, 3)
    assert "SLA_POOL_CHANGED_BY_HAND" not in m.health
    assert (cluster.rule_of(3), pool["size"], pool["min_size"]) == ("sla_copy_3", 4, 2)


def test_pool_set_again_and_pool_rm_take_a_refused_size_as_it_is(
        cluster: FakeCluster) -> None:
    """`pool set` again makes the operator's size the base (installing the
    copy rule it needs); `pool rm` leaves a size set by hand as it is."""
    from mgr_sla.core.state import Role, Strategy
    store: dict[str, str] = {}
    m = managed(cluster, store, "shared")
    by_hand(cluster, "size", 5)
    ticks(m, 2)
    assert "SLA_POOL_CHANGED_BY_HAND" in m.health
    out = m.cmd_pool_set("copied", role=Role.NORMAL, strategy=Strategy.COPY)
    assert out.retval < 0, out  # it installs sla_copy_5: not in the fake (no crushtool)
    assert role_of(store, 3)["base_size"] == 3  # and changes nothing
    cluster.rules["sla_copy_5"] = 6
    out = m.cmd_pool_set("copied", role=Role.NORMAL, strategy=Strategy.COPY)
    assert out.retval == 0, out
    assert (role_of(store, 3)["base_size"], role_of(store, 3)["base_min_size"]) == (5, 3)
    ticks(m, 1)
    assert "SLA_POOL_CHANGED_BY_HAND" not in m.health
    ticks(m, 2)
    assert (cluster.rule_of(3), cluster.pools[3]["size"]) == ("sla_copy_5", 6)
    by_hand(cluster, "size", 7)  # shared: refused again
    ticks(m, 2)
    assert "SLA_POOL_CHANGED_BY_HAND" in m.health
    out = m.cmd_pool_rm("copied")
    assert out.retval == 0, out
    assert "size 7, min_size 4 left as set by hand" in out.stdout
    assert (cluster.rule_of(3), cluster.pools[3]["size"]) == ("replicated_rule", 7)
