"""End to end with crushtool/osdmaptool on built topologies: requirements R1-R6 on every PG."""

import importlib
import json
import subprocess
from pathlib import Path

import pytest
from old_weight_sets import with_positional_sets

from crush_rules import rules as R
from crush_rules import synthetic
from crush_rules.cli import main
from crush_rules.crushmap import ChooseArg, crushmap_from_dump
from crush_rules.crushtext import parse_blocks, with_exact_weights
from crush_rules.errors import CrushError
from crush_rules.generate import (
    GenerateOptions,
    generate,
    read_map,
    synthetic_osdmap,
    synthetic_plan,
    verify_map,
    verify_rules,
)
from crush_rules.rules import RuleScope
from crush_rules.tools import Tools
from crush_rules.topology import analyse
from crush_rules.weightsets import positional_pools

FIXTURES = Path(__file__).resolve().parents[2] / "crush_topologies"
TOPOLOGIES = sorted(p.stem for p in FIXTURES.glob("*.txt"))
TOOLS = Tools()


def _binary(name: str) -> bytes:
    return read_map(TOOLS, (FIXTURES / f"{name}.txt").read_bytes())


@pytest.fixture(scope="module", params=TOPOLOGIES)
def generated(request):
    options = GenerateOptions(pool_ids=(7,), urgent_pool_ids=(8,), pg_num=512)
    binary = _binary(request.param)
    return request.param, binary, generate(TOOLS, binary, options)


def test_topologies_are_all_there():
    assert {"paper", "few_ssd", "disjoint", "disjoint_large_ssd", "uneven40"} <= set(TOPOLOGIES)


def test_requirements_hold_on_every_pg(generated):
    name, _, result = generated
    report = result.report
    assert report.ok, (name, report.failures)
    for rule, r in report.rules.items():
        assert r.pgs == 512
        assert r.duplicate_osd_pgs == 0 and r.failure_domain_violations == 0, rule  # R1
    assert report.rules[R.ISOLATED_NORMAL].isolation_violations == 0  # R2
    assert report.rules[R.ISOLATED_URGENT].isolation_violations == 0
    assert report.rules[R.SHARED].inclusion == 1.0  # R3
    assert report.rules[R.SHARED].pgs_differing_from_isolated == 0  # R4
    assert report.rules[R.HYBRID].pgs_differing_from_isolated == 0
    assert report.rules[R.SHARED].urgent_share == 0.0
    assert report.pair.replicas_moved == 0  # R5
    crush = crushmap_from_dump(TOOLS.dump(result.binary))
    assert positional_pools(crush.choose_args) == {}  # R6
    assert {len(a.weight_set) for p in (7, 8) for a in crush.choose_args[p]} == {1}
    assert result.upgraded_pools == ()


def crushtool_compare(before: bytes, after: bytes, rule: int, num_rep: int, tmp: Path) -> str:
    """crushtool --compare: an independent check that a rule maps as before."""
    a, b = tmp / "a.bin", tmp / "b.bin"
    a.write_bytes(before)
    b.write_bytes(after)
    return subprocess.run([TOOLS.crushtool, "-i", str(a), "--compare", str(b), "--rule",
                           str(rule), "--num-rep", str(num_rep)], capture_output=True,
                          text=True, check=True).stdout


def test_pre_existing_rule_maps_as_before_and_round_trips(generated, tmp_path):
    _, before, result = generated
    compare = crushtool_compare(before, result.binary, 0, 3, tmp_path)
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
    topo = analyse(crush, RuleScope(), 3)
    blocks = with_exact_weights(parse_blocks(TOOLS.decompile(binary)), crush)
    osdmap = synthetic_osdmap(TOOLS, crush, 3, 1024)
    plan = synthetic_plan(osdmap, 1024, None, None, (None, None))
    report = verify_rules(TOOLS, blocks, crush, topo, plan,
                          extra_rules={"naive_two_emit": R.naive_two_emit_steps(RuleScope())})
    naive = report.rules["naive_two_emit"]
    assert naive.failure_domain_violations > 300  # measured 506/1024 in the facts file
    assert any("naive_two_emit" in f and "failure domain" in f for f in report.failures)


def test_different_roots_pair_moves_far_more_than_needed():
    """isolated (take default class hdd) vs plain Map_all (take default), no choose_args."""
    binary = _binary("paper")
    crush = crushmap_from_dump(TOOLS.dump(binary))
    topo = analyse(crush, RuleScope(), 3)
    blocks = with_exact_weights(parse_blocks(TOOLS.decompile(binary)), crush)
    osdmap = synthetic_osdmap(TOOLS, crush, 3, 1024)
    report = verify_rules(TOOLS, blocks, crush, topo, synthetic_plan(osdmap, 1024, None, None,
                                                                     (None, None)))
    assert report.pair.movement_efficiency < 0.95
    assert report.rules[R.SHARED].inclusion < 1.0
    assert report.rules[R.SHARED].pgs_differing_from_isolated > 500
    assert any(f.startswith("R4 sla_shared") for f in report.failures)


def test_cli_generate_verify_and_release_text(tmp_path, capsys):
    out, text = tmp_path / "out.bin", tmp_path / "out.txt"
    rc = main(["generate", "--in", str(FIXTURES / "few_ssd.txt"), "--out", str(out),
               "--text", str(text), "--pool-id", "3", "--release", "quincy"])
    assert rc == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["ok"] and set(summary["rule_ids"]) == {*R.RULE_NAMES, "sla_copy_3"}
    assert "min_size" not in text.read_text()
    assert "choose_args 3 {" in text.read_text()
    assert main(["verify", "--map", str(out), "--pool-id", "3"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["isolated_normal_to_shared"]["replicas_moved"] == 0
    assert report["rules"]["sla_shared"]["pgs_differing_from_isolated"] == 0


def test_generate_without_pool_id_is_refused_and_verify_fails_a_pool_without_its_set(
        tmp_path, capsys):
    out = tmp_path / "out.bin"
    # without --pool-id sla_shared would have no weight set: refused, nothing written
    assert main(["generate", "--in", str(FIXTURES / "paper.txt"), "--out", str(out)]) == 2
    assert "give --pool-id" in capsys.readouterr().err
    assert not out.exists()
    assert main(["generate", "--in", str(FIXTURES / "paper.txt"), "--out", str(out),
                 "--pool-id", "7"]) == 0
    capsys.readouterr()
    assert main(["verify", "--map", str(out)]) == 0  # finds pool 7's set by its shape
    capsys.readouterr()
    assert main(["verify", "--map", str(out), "--pool-id", "3"]) == 1  # pool 3 has none
    report = json.loads(capsys.readouterr().out)
    assert not report["ok"] and any(f.startswith("R4 sla_shared") for f in report["failures"])


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
    assert main(["generate", "--in", str(path), "--out", str(out), "--pool-id", "1",
                 *extra]) == 2
    err = capsys.readouterr().err.strip()
    assert needle in err and len(err.splitlines()) == 1
    assert not out.exists()


def test_missing_crushtool_is_a_refusal(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("SLA_CRUSHTOOL", str(tmp_path / "no-crushtool"))
    out = tmp_path / "out.bin"
    assert main(["generate", "--in", str(FIXTURES / "paper.txt"), "--out", str(out),
                 "--pool-id", "1"]) == 2
    assert "not found" in capsys.readouterr().err
    assert not out.exists()


def test_synthetic_fixtures_are_current():
    assert (FIXTURES / "paper.txt").read_text() == synthetic.crush_text(synthetic.paper())


def test_rack_failure_domains_map_identically():
    hosts = synthetic.few_ssd() + synthetic.paper()
    binary = read_map(TOOLS, synthetic.crush_text(hosts, racks=4).encode())
    options = GenerateOptions(failure_domain="rack", pool_ids=(7,), urgent_pool_ids=(8,),
                              pg_num=512)
    report = generate(TOOLS, binary, options).report
    assert report.ok, report.failures
    assert report.rules[R.SHARED].pgs_differing_from_isolated == 0
    assert report.pair.replicas_moved == 0


# -- maps from an older sla-crush: positional weight sets -----------------------------


@pytest.fixture(scope="module")
def old_map():
    """paper with our rules, old positional sets for pools 7 (shared) and 8 (hybrid),
    and a positional set of someone else's pool 9."""
    flat = generate(TOOLS, _binary("paper"), GenerateOptions(pool_ids=(7,), urgent_pool_ids=(8,)))
    return with_positional_sets(TOOLS, flat.binary, shared=(7,), hybrid=(8,), foreign=(9,))


def test_old_positional_map_fails_verification(old_map, tmp_path, capsys):
    crush = crushmap_from_dump(TOOLS.dump(old_map))
    assert positional_pools(crush.choose_args) == {7: 3, 8: 3, 9: 3}
    report = verify_map(TOOLS, old_map, GenerateOptions(pool_ids=(7,), urgent_pool_ids=(8,)))
    assert not report.ok
    codes = {f.split()[0] for f in report.failures}
    assert {"R4", "R5", "R6"} <= codes
    assert any(f.startswith("R6 pool 7") for f in report.failures)
    assert report.rules[R.HYBRID].pgs_differing_from_isolated == 256  # old: ssd primary
    assert any("pool 9" in w and "weight-set rm" in w for w in report.warnings)
    path = tmp_path / "old.bin"
    path.write_bytes(old_map)
    assert main(["verify", "--map", str(path), "--pool-id", "7"]) == 1


def test_generate_upgrades_old_positional_sets_and_keeps_foreign_ones(old_map):
    options = GenerateOptions(pool_ids=(7,), urgent_pool_ids=(8,))
    result = generate(TOOLS, old_map, options)
    assert result.report.ok, result.report.failures
    assert result.upgraded_pools == (7, 8)
    assert result.report.to_dict()["upgraded_pools"] == [7, 8]
    crush = crushmap_from_dump(TOOLS.dump(result.binary))
    assert positional_pools(crush.choose_args) == {9: 3}  # not ours: left, but warned about
    before = crushmap_from_dump(TOOLS.dump(old_map))
    assert crush.choose_args[9] == before.choose_args[9]
    warnings = result.report.warnings
    assert any("pool 7" in w and "replaced by the flat one" in w for w in warnings)
    foreign = [w for w in warnings if "choose_args 9" in w]
    assert foreign and "aborts every ceph-mon" in foreign[0]
    assert "ceph osd crush weight-set rm" in foreign[0]
    # the result is what a fresh generate gives for our pools, and stable from now on
    fresh = generate(TOOLS, _binary("paper"), options)
    assert crush.choose_args[7] == crushmap_from_dump(TOOLS.dump(fresh.binary)).choose_args[7]
    again = generate(TOOLS, result.binary, options)
    assert again.binary == result.binary and again.upgraded_pools == ()
    assert verify_map(TOOLS, result.binary, options).ok


def test_cli_upgrades_an_old_map(old_map, tmp_path, capsys):
    src, out = tmp_path / "old.bin", tmp_path / "new.bin"
    src.write_bytes(old_map)
    assert main(["generate", "--in", str(src), "--out", str(out), "--pool-id", "7",
                 "--urgent-pool-id", "8"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["ok"] and summary["upgraded_pools"] == [7, 8]
    assert any("choose_args 9" in w for w in summary["warnings"])
    assert main(["verify", "--map", str(out), "--pool-id", "7", "--urgent-pool-id", "8"]) == 0


def test_a_positional_set_of_ours_is_never_written(tmp_path, capsys, monkeypatch):
    G = importlib.import_module("crush_rules.generate")  # the package exports generate()
    real = G.shared_choose_args
    monkeypatch.setattr(G, "shared_choose_args", lambda crush, topo: tuple(
        type(a)(a.bucket_id, a.weight_set * 3, a.ids) for a in real(crush, topo)))
    out = tmp_path / "out.bin"
    assert main(["generate", "--in", str(FIXTURES / "paper.txt"), "--out", str(out),
                 "--pool-id", "7"]) == 2
    err = capsys.readouterr().err.strip()
    assert "pool 7 has 3 positions" in err and len(err.splitlines()) == 1
    assert not out.exists()
    blocks = parse_blocks(TOOLS.decompile(_binary("paper")))
    rule_ids = {name: i for i, name in enumerate(R.RULE_NAMES, 1)}
    with pytest.raises(CrushError, match="pool 5 has 2 positions"):
        G._assemble(blocks, rule_ids, RuleScope(), {5: (ChooseArg(-1, ((1,), (2,))),)},
                    with_sizes=True)
