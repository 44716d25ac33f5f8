"""End to end with crushtool/osdmaptool on built topologies: requirements 1-6 on every PG."""

import json
from pathlib import Path

import pytest

from crush_rules import rules as R
from crush_rules import synthetic
from crush_rules.cli import main
from crush_rules.crushmap import crushmap_from_dump
from crush_rules.crushtext import parse_blocks, with_exact_weights
from crush_rules.generate import (
    GenerateOptions,
    generate,
    read_map,
    synthetic_osdmap,
    synthetic_plan,
    verify_rules,
)
from crush_rules.rules import Placement
from crush_rules.tools import Tools
from crush_rules.topology import analyse

FIXTURES = Path(__file__).resolve().parents[2] / "crush_topologies"
TOPOLOGIES = ["paper", "few_ssd", "disjoint", "disjoint_large_ssd", "uneven40"]
TOOLS = Tools()


def _binary(name: str) -> bytes:
    return read_map(TOOLS, (FIXTURES / f"{name}.txt").read_bytes())


@pytest.fixture(scope="module", params=TOPOLOGIES)
def generated(request):
    options = GenerateOptions(pool_ids=(7,), urgent_pool_ids=(8,), pg_num=512)
    binary = _binary(request.param)
    return request.param, binary, generate(TOOLS, binary, options)


def test_requirements_hold_on_every_pg(generated):
    name, _, result = generated
    report = result.report
    assert report.ok, (name, report.failures)
    for rule, r in report.rules.items():
        assert r.pgs == 512
        assert r.duplicate_osd_pgs == 0 and r.failure_domain_violations == 0, rule
    assert report.rules[R.ISOLATED_NORMAL].isolation_violations == 0
    assert report.rules[R.ISOLATED_URGENT].isolation_violations == 0
    assert report.rules[R.SHARED].inclusion == 1.0
    assert 0.8 <= report.rules[R.SHARED].urgent_share_ratio <= 1.3
    assert report.pair.movement_efficiency >= 0.95
    assert report.rules[R.HYBRID].primary_urgent == 1.0
    assert report.rules[R.HYBRID].isolation_violations == 0


def test_pre_existing_rule_maps_as_before_and_round_trips(generated):
    _, before, result = generated
    compare = TOOLS.compare(before, result.binary, [0], 3)
    assert "0/" in compare and "mismatched" in compare
    assert TOOLS.compile(TOOLS.decompile(result.binary)) == result.binary


@pytest.mark.parametrize("name", ["paper", "disjoint"])
def test_regenerating_is_idempotent(name):
    options = GenerateOptions(pool_ids=(7,), urgent_pool_ids=(8,), pg_num=256)
    first = generate(TOOLS, _binary(name), options)
    again = generate(TOOLS, first.binary, options)
    assert again.binary == first.binary
    assert not again.changed
    assert dict(again.rule_ids) == dict(first.rule_ids)


def test_naive_two_emit_rule_is_caught_on_mixed_hosts():
    binary = _binary("paper")
    crush = crushmap_from_dump(TOOLS.dump(binary))
    topo = analyse(crush, Placement(), 3)
    blocks = with_exact_weights(parse_blocks(TOOLS.decompile(binary)), crush)
    osdmap = synthetic_osdmap(TOOLS, crush, 3, 1024)
    plan = synthetic_plan(osdmap, 1024, None, None, (None, None))
    report = verify_rules(TOOLS, blocks, crush, topo, plan,
                          extra_rules={"naive_two_emit": R.naive_two_emit_steps(Placement())})
    naive = report.rules["naive_two_emit"]
    assert naive.failure_domain_violations > 300  # measured 506/1024 in the facts file
    assert any("naive_two_emit" in f and "failure domain" in f for f in report.failures)


def test_different_roots_pair_moves_far_more_than_needed():
    """isolated (take default class hdd) vs plain Map_all (take default), no choose_args."""
    binary = _binary("paper")
    crush = crushmap_from_dump(TOOLS.dump(binary))
    topo = analyse(crush, Placement(), 3)
    blocks = with_exact_weights(parse_blocks(TOOLS.decompile(binary)), crush)
    osdmap = synthetic_osdmap(TOOLS, crush, 3, 1024)
    report = verify_rules(TOOLS, blocks, crush, topo, synthetic_plan(osdmap, 1024, None, None,
                                                                     (None, None)))
    assert report.pair.movement_efficiency < 0.95
    assert report.rules[R.SHARED].inclusion < 1.0


def test_cli_generate_verify_and_release_text(tmp_path, capsys):
    out, text = tmp_path / "out.bin", tmp_path / "out.txt"
    rc = main(["generate", "--in", str(FIXTURES / "few_ssd.txt"), "--out", str(out),
               "--text", str(text), "--pool-id", "3", "--release", "quincy"])
    assert rc == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["ok"] and set(summary["rule_ids"]) == set(R.RULE_NAMES)
    assert "min_size" not in text.read_text()
    assert "choose_args 3 {" in text.read_text()
    assert main(["verify", "--map", str(out), "--pool-id", "3"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["isolated_normal_to_shared"]["movement_efficiency"] >= 0.95


def test_verify_fails_with_exit_1_without_shared_weight_sets(tmp_path, capsys):
    out = tmp_path / "out.bin"
    assert main(["generate", "--in", str(FIXTURES / "paper.txt"), "--out", str(out)]) == 0
    capsys.readouterr()
    assert main(["verify", "--map", str(out)]) == 1  # no pool has sla_shared weight sets
    assert not json.loads(capsys.readouterr().out)["ok"]


@pytest.mark.parametrize(
    ("fixture", "extra", "needle"),
    [
        ("few_ssd", ["--size", "9"], "fewer than --size 9"),
        ("paper", ["--urgent-class", "nvme"], "no 'nvme' devices"),
        ("paper", ["--failure-domain", "shelf"], "not a bucket type"),
        ("bad", [], "does not compile"),
        ("missing", [], "cannot read"),
    ],
)
def test_refusals_exit_2_and_write_nothing(tmp_path, capsys, fixture, extra, needle):
    src = tmp_path / "bad.txt"
    src.write_text("device 0 osd.0 class hdd\nhost broken {\n")
    path = {"bad": src, "missing": tmp_path / "nope"}.get(fixture, FIXTURES / f"{fixture}.txt")
    out = tmp_path / "out.bin"
    assert main(["generate", "--in", str(path), "--out", str(out), *extra]) == 2
    err = capsys.readouterr().err.strip()
    assert needle in err and len(err.splitlines()) == 1
    assert not out.exists()


def test_missing_crushtool_is_a_refusal(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("SLA_CRUSHTOOL", str(tmp_path / "no-crushtool"))
    out = tmp_path / "out.bin"
    assert main(["generate", "--in", str(FIXTURES / "paper.txt"), "--out", str(out)]) == 2
    assert "not found" in capsys.readouterr().err
    assert not out.exists()


def test_synthetic_fixtures_are_current():
    assert (FIXTURES / "paper.txt").read_text() == synthetic.crush_text(synthetic.paper())
