"""install / verify_live / plan_switch against a fake ``ceph`` that serves a real osdmap."""

import json
from pathlib import Path

import pytest
from fake_ceph import make_cluster
from old_weight_sets import with_positional_sets

from crush_rules import (
    CephCli,
    CrushError,
    GenerateOptions,
    Tools,
    install,
    plan_switch,
    rule_on_pools,
    verify_live,
)
from crush_rules.crushmap import crushmap_from_dump
from crush_rules.generate import generate, read_map
from crush_rules.weightsets import positional_pools

FIXTURES = Path(__file__).resolve().parents[2] / "crush_topologies"

@pytest.fixture()
def cluster(tmp_path):
    return make_cluster(tmp_path, read_map(Tools(), (FIXTURES / "paper.txt").read_bytes()))


@pytest.fixture()
def old_cluster(tmp_path):
    """Pool 1 (rbd, whose rule takes the root like sla_shared) carries the positional
    sla_shared weight set an older sla-crush installed; pool 9 someone else's."""
    tools = Tools()
    paper = read_map(tools, (FIXTURES / "paper.txt").read_bytes())
    flat = generate(tools, paper, GenerateOptions(pool_ids=(1,))).binary
    return make_cluster(tmp_path, with_positional_sets(tools, flat, shared=(1,), foreign=(9,)))


def _live_crush(cli: CephCli, tools: Tools):
    return crushmap_from_dump(tools.dump(tools.export_crush(cli.get_osdmap())))


def _calls(state: Path) -> list[str]:
    calls = state / "calls"
    return calls.read_text().splitlines() if calls.exists() else []


def test_install_is_compare_and_swap_and_idempotent(cluster):
    cli, tools, state = cluster
    first = install(cli, tools, GenerateOptions())
    assert first.changed and first.report.ok
    assert _calls(state) == [f"osd setcrushmap {first.crush_version}"]
    second = install(cli, tools, GenerateOptions())
    assert not second.changed
    assert len(_calls(state)) == 1  # nothing set the second time
    assert dict(second.rule_ids) == dict(first.rule_ids)


def test_install_refuses_weight_sets_that_would_remap_a_pool(cluster):
    cli, tools, state = cluster
    # pool 1 uses replicated_rule (take default): its weight sets would move it at once
    with pytest.raises(CrushError, match="would remap pool rbd"):
        install(cli, tools, GenerateOptions(pool_ids=(1,)))
    assert _calls(state) == []


def test_verify_live_and_plan_switch(cluster):
    cli, tools, _ = cluster
    install(cli, tools, GenerateOptions())
    report = verify_live(cli, tools, GenerateOptions())
    assert report.rules["sla_isolated_normal"].isolation_violations == 0
    assert report.rules["sla_isolated_normal"].pgs == 64
    plan = plan_switch(cli, tools, "rbd", "sla_isolated_normal")
    assert plan.pgs == 64 and 0 < plan.pgs_moving <= 64
    assert plan.bytes == plan.replicas * 1000
    assert json.loads(json.dumps(plan.to_dict()))["to_rule"] == "sla_isolated_normal"
    with pytest.raises(CrushError, match="not in the crush map"):
        plan_switch(cli, tools, "rbd", "no_such_rule")


def test_install_upgrades_an_old_positional_weight_set(old_cluster):
    cli, tools, state = old_cluster
    assert positional_pools(_live_crush(cli, tools).choose_args) == {1: 3, 9: 3}
    assert not verify_live(cli, tools, GenerateOptions(pool_ids=(1,))).ok  # R4-R6 fail
    result = install(cli, tools, GenerateOptions(pool_ids=(1,)))
    assert result.changed and result.report.ok
    # pool 1 remapped (its urgent replicas go back to the isolated placement), allowed only
    # because its positional set was ours and had to go
    assert set(result.upgraded_pools) == {1} and 0 < result.upgraded_pools[1] <= 64
    assert result.to_dict()["upgraded_pools"] == {"1": result.upgraded_pools[1]}
    assert any("choose_args 9" in w and "weight-set rm" in w for w in result.report.warnings)
    live = _live_crush(cli, tools)
    assert positional_pools(live.choose_args) == {9: 3}
    assert {len(a.weight_set) for a in live.choose_args[1]} == {1}
    assert verify_live(cli, tools, GenerateOptions(pool_ids=(1,))).ok
    again = install(cli, tools, GenerateOptions(pool_ids=(1,)))
    assert not again.changed and dict(again.upgraded_pools) == {}
    assert len(_calls(state)) == 1



def test_rule_on_pool_maps_a_copy_rule_one_size_up_on_the_live_pool(cluster):
    """The extra copy's OSDs as CRUSH would place them at N + 1, read on the
    pool of size N: one ssd OSD in front of exactly the N normal OSDs."""
    cli, tools, _ = cluster
    install(cli, tools, GenerateOptions(copy_sizes=(2, 3)))
    crush = _live_crush(cli, tools)
    mapped = rule_on_pools(cli, tools, [(1, "sla_isolated_normal", 3)])
    isolated = mapped[1]
    shared = rule_on_pools(cli, tools, [(1, "sla_copy_3", 4)])[1]
    assert len(shared) == 64 and set(shared) == set(isolated)
    for seed, osds in shared.items():
        assert crush.devices[osds[0]] == "ssd", (seed, osds)
        assert osds[1:] == isolated[seed], (seed, osds, isolated[seed])
    assert rule_on_pools(cli, tools, [(1, "sla_copy_3", 3)])[1] == isolated
    with pytest.raises(CrushError, match="not in the crush map"):
        rule_on_pools(cli, tools, [(1, "sla_copy_5", 6)])
    with pytest.raises(CrushError, match="no pool with id 42"):
        rule_on_pools(cli, tools, [(42, "sla_copy_3", 4)])
