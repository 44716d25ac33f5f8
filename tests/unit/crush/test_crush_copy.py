"""The copy rules sla_copy_N (R8): names, the size emulation, generation, verification.

Everything runs crushtool/osdmaptool on the topologies of tests/crush_topologies
and on a published map (tests/data/real-maps); the mutated rules show the
checks can fail.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from fake_ceph import make_cluster

from crush_rules import (
    COPY_PREFIX,
    CrushError,
    GenerateOptions,
    Tools,
    copy_rule_name,
    copy_rule_size,
    install,
    plan_switch,
    verify_live,
)
from crush_rules import rules as R
from crush_rules.cli import main
from crush_rules.crushmap import crushmap_from_dump
from crush_rules.crushtext import (
    parse_blocks,
    render_blocks,
    rule_steps_in_text,
    with_exact_weights,
    with_rule_steps,
)
from crush_rules.generate import (
    _copy_region_failure,
    generate,
    read_map,
    synthetic_osdmap,
    verify_map,
)
from crush_rules.rules import RuleScope
from crush_rules.sampling import Pool, map_rule, pool_sizes_needed, rule_at_size, rule_blocks
from crush_rules.topology import analyse
from crush_rules.verify import Layout, check_copy, copy_failures

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "crush_topologies"
REAL = ROOT / "data" / "real-maps" / "pcadmin-second-device-class.txt"
TOOLS = Tools()
PAPER = RuleScope()


def _binary(name: str) -> bytes:
    return read_map(TOOLS, (FIXTURES / f"{name}.txt").read_bytes())


def _blocks(binary: bytes):
    crush = crushmap_from_dump(TOOLS.dump(binary))
    return crush, with_exact_weights(parse_blocks(TOOLS.decompile(binary)), crush)


def _with_steps(binary: bytes, rule: str, steps: list[str]) -> bytes:
    """The map with ``rule`` running ``steps`` (a mutated copy rule)."""
    crush, blocks = _blocks(binary)
    rule_id = crush.rule_named(rule).id
    return TOOLS.compile(render_blocks(with_rule_steps(blocks, rule_id, steps)))


# -- names and steps ---------------------------------------------------------------


def test_names_and_sizes():
    assert COPY_PREFIX == "sla_copy_"
    assert copy_rule_name(3) == "sla_copy_3" and copy_rule_name(1) == "sla_copy_1"
    assert copy_rule_size("sla_copy_3") == 3 and copy_rule_size("sla_copy_9") == 9
    for name in ("sla_copy_0", "sla_copy_10", "sla_copy_03", "sla_copy_", "sla_shared",
                 "sla_copy_3x", "xsla_copy_3"):
        assert copy_rule_size(name) is None, name
    for bad in (0, 10, -3):
        with pytest.raises(CrushError, match=f"copy size {bad} is out of range; use 1 to 9"):
            copy_rule_name(bad)
    with pytest.raises(CrushError, match="not an integer"):
        copy_rule_name(True)
    assert R.copy_sizes((3, 2, 3)) == (2, 3)


def test_copy_rule_steps():
    assert R.rule_steps("sla_copy_3", PAPER) == R.copy_rule_steps(3, PAPER) == [
        "take default class ssd", "chooseleaf firstn -3 type host", "emit",
        "take default class hdd", "chooseleaf firstn 3 type host", "emit",
    ]
    rack = RuleScope("top", "rack", "hdd7", "nvme")
    assert R.copy_rule_steps(1, rack) == [
        "take top class nvme", "chooseleaf firstn -1 type rack", "emit",
        "take top class hdd7", "chooseleaf firstn 1 type rack", "emit",
    ]
    with pytest.raises(CrushError, match="copy size 10"):
        R.copy_rule_steps(10, PAPER)


def test_rule_blocks_and_the_shapes_refused():
    blocks = rule_blocks(["set_chooseleaf_tries 5"] + R.copy_rule_steps(3, PAPER))
    assert [b.count for b in blocks] == [-3, 3]
    assert [b.numrep(3) for b in blocks] == [0, 3] and [b.numrep(4) for b in blocks] == [1, 3]
    assert blocks[1].absolute(4) == ("set_chooseleaf_tries 5", "take default class hdd",
                                     "chooseleaf firstn 3 type host", "emit")
    assert pool_sizes_needed(blocks, 4) == 3  # a pool of size 3 serves sizes 3 and 4
    for steps, needle in [
        (["take default", "chooseleaf indep 0 type host", "emit"], "firstn N type T"),
        (["take default", "choose firstn 0 type rack", "chooseleaf firstn 1 type host",
          "emit"], "two choose steps"),
        (["take default", "chooseleaf firstn 0 type host"], "ends without an emit"),
        (["take default", "take default class hdd"], "without an emit"),
        (["take default", "emit"], "emit without"),
        (["chooseleaf firstn 0 type host"], "before any take"),
        (["take default", "chooseleaf firstn x type host", "emit"], "no integer count"),
    ]:
        with pytest.raises(CrushError, match=needle):
            rule_blocks(steps)


# -- the size emulation is CRUSH at the real size -----------------------------------


MUTANTS = {
    "urgent firstn 1": lambda n: ["take default class ssd", "chooseleaf firstn 1 type host",
                                  "emit", "take default class hdd",
                                  f"chooseleaf firstn {n} type host", "emit"],
    "normal first": lambda n: ["take default class hdd", f"chooseleaf firstn {n} type host",
                               "emit", "take default class ssd",
                               f"chooseleaf firstn -{n} type host", "emit"],
    "urgent takes the root": lambda n: ["take default", f"chooseleaf firstn -{n} type host",
                                        "emit", "take default class hdd",
                                        f"chooseleaf firstn {n} type host", "emit"],
    "normal firstn 0": lambda n: ["take default class ssd", f"chooseleaf firstn -{n} type host",
                                  "emit", "take default class hdd",
                                  "chooseleaf firstn 0 type host", "emit"],
    "normal firstn -1": lambda n: ["take default class ssd",
                                   f"chooseleaf firstn -{n} type host", "emit",
                                   "take default class hdd", "chooseleaf firstn -1 type host",
                                   "emit"],
    "one choose from the root": lambda n: ["take default", "chooseleaf firstn 0 type host",
                                           "emit"],
}


@pytest.mark.parametrize("topology", ["paper", "few_ssd", "uneven40"])
@pytest.mark.parametrize("n", [2, 3])
def test_rule_at_size_equals_crush_at_that_pool_size(topology, n):
    """Each block alone on a pool of size N, joined and cut, is what osdmaptool maps
    for the whole rule on a pool of size N and N + 1 (the rule and the mutants)."""
    binary = _binary(topology)
    crush, blocks = _blocks(binary)
    pgs = 256
    pool = Pool(1, 0, pgs)
    osdmaps = {s: synthetic_osdmap(TOOLS, crush, s, pgs) for s in (n, n + 1)}
    cases = {"copy": R.copy_rule_steps(n, PAPER), **{k: f(n) for k, f in MUTANTS.items()}}
    for label, steps in cases.items():
        parsed = rule_blocks(steps)
        for size in (n, n + 1):
            direct = map_rule(TOOLS, blocks, osdmaps[size], pool, steps, None, synthetic=True)
            at_n = osdmaps[max(n, pool_sizes_needed(parsed, size))]
            emulated = rule_at_size(
                parsed, size,
                lambda st, m=at_n: map_rule(TOOLS, blocks, m, pool, list(st), None,
                                            synthetic=True),
                range(pgs))
            assert emulated == direct, (topology, label, size)


def test_copy_rule_at_n_is_isolated_at_n_in_crush_itself():
    """Without the emulator: the real rule on pools of size N and N + 1."""
    gen = generate(TOOLS, _binary("few_ssd"), GenerateOptions(pool_ids=(7,), copy_sizes=(2, 3)))
    crush, blocks = _blocks(gen.binary)
    steps = {b.key: rule_steps_in_text(b) for b in blocks if b.kind == "rule"}
    args = crush.choose_args[7]
    pool = Pool(1, 0, 512)
    for n in (2, 3):
        small = synthetic_osdmap(TOOLS, crush, n, 512)
        large = synthetic_osdmap(TOOLS, crush, n + 1, 512)
        iso = map_rule(TOOLS, blocks, small, pool, steps[R.ISOLATED_NORMAL], args,
                       synthetic=True)
        copy_n = map_rule(TOOLS, blocks, small, pool, steps[f"sla_copy_{n}"], args,
                          synthetic=True)
        copy_n1 = map_rule(TOOLS, blocks, large, pool, steps[f"sla_copy_{n}"], args,
                           synthetic=True)
        assert copy_n == iso
        assert all(copy_n1[pg][1:] == iso[pg] for pg in iso)
        assert all(crush.devices[copy_n1[pg][0]] == "ssd" for pg in iso)


# -- generation and R8 on the topologies and a published map --------------------------


@pytest.fixture(scope="module", params=["paper", "few_ssd", "disjoint", "disjoint_large_ssd",
                                        "uneven40"])
def generated(request):
    options = GenerateOptions(pool_ids=(7,), urgent_pool_ids=(8,), pg_num=512,
                              copy_sizes=(2, 3))
    return request.param, generate(TOOLS, _binary(request.param), options)


def test_r8_holds_on_every_topology(generated):
    name, result = generated
    report = result.report
    assert report.ok, (name, report.failures)
    assert set(report.copy_rules) == {"sla_copy_2", "sla_copy_3"}
    for rule, r in report.copy_rules.items():
        assert r.pgs == 512 and r.pool_id == 7, rule
        assert r.pgs_differing_from_isolated == 0  # at N: moves nothing
        assert (r.short_pgs, r.duplicate_osd_pgs, r.urgent_not_first_pgs, r.urgent_count_pgs,
                r.normal_off_class_pgs, r.normal_failure_domain_pgs,
                r.normal_differing_pgs) == (0,) * 7
        assert r.replicas_added == 512 and r.replicas_moved == 0  # only the extra copy
    rules = {r.name for r in crushmap_from_dump(TOOLS.dump(result.binary)).rules.values()}
    assert {"sla_copy_2", "sla_copy_3"} <= rules
    disjoint = name.startswith("disjoint")
    for r in report.copy_rules.values():
        assert (r.shared_failure_domain_pgs == 0) == disjoint, (name, r)
        warned = [w for w in report.warnings if w.startswith(r.rule) and "shares a host" in w]
        assert bool(warned) != disjoint


def test_shared_failure_domain_figures_on_the_paper_topology():
    """4 hosts with one hdd and one ssd each: the ssd copy falls on one of the N hosts
    holding an hdd copy with probability N/4."""
    result = generate(TOOLS, _binary("paper"),
                      GenerateOptions(pool_ids=(7,), pg_num=1024, copy_sizes=(2, 3)))
    two, three = (result.report.copy_rules[f"sla_copy_{n}"] for n in (2, 3))
    assert 0.45 < two.shared_failure_domain_fraction < 0.55
    assert 0.70 < three.shared_failure_domain_fraction < 0.80
    assert result.report.ok


@pytest.mark.parametrize("n", [2, 3])
def test_real_map_corpus(tmp_path, capsys, n):
    """hdd on 3 hosts, hdd_rs on 2 others: served, and the extra copy never shares a host."""
    out = tmp_path / "out.bin"
    assert main(["generate", "--in", str(REAL), "--out", str(out), "--pool-id", "5",
                 "--urgent-class", "hdd_rs", "--size", "2", "--copy-size", str(n)]) == 0
    summary = json.loads(capsys.readouterr().out)
    copy = summary["copy_rules"][f"sla_copy_{n}"]
    assert summary["ok"] and copy["normal_differing_pgs"] == 0
    assert copy["urgent_not_first_pgs"] == 0 and copy["pgs_differing_from_isolated"] == 0
    assert copy["shared_failure_domain_fraction"] == 0.0
    assert main(["verify", "--map", str(out), "--pool-id", "5", "--urgent-class", "hdd_rs",
                 "--size", "2", "--copy-size", str(n), "--pg-num", "1024"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["copy_rules"][f"sla_copy_{n}"]["pgs"] == 1024


@pytest.mark.parametrize("release", ["pacific", "squid"])
def test_release_syntax_of_the_copy_rule(tmp_path, capsys, release):
    out, text = tmp_path / "out.bin", tmp_path / "out.txt"
    assert main(["generate", "--in", str(FIXTURES / "paper.txt"), "--out", str(out),
                 "--text", str(text), "--pool-id", "7", "--copy-size", "2", "--copy-size", "3",
                 "--release", release]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert set(summary["rule_ids"]) == {*R.RULE_NAMES, "sla_copy_2", "sla_copy_3"}
    blocks = {b.key: b for b in parse_blocks(text.read_text()) if b.kind == "rule"}
    lines = [line.strip() for line in blocks["sla_copy_3"].lines]
    sized = ["min_size 1", "max_size 10"] if release == "pacific" else []
    assert lines == ["rule sla_copy_3 {", f"id {summary['rule_ids']['sla_copy_3']}",
                     "type replicated", *sized,
                     *(f"step {s}" for s in R.copy_rule_steps(3, PAPER)), "}"]
    # the text is the same map (squid text: crushtool 16 gets the neutral sizes back)
    assert read_map(TOOLS, text.read_bytes()) == out.read_bytes()


def test_adding_copy_rules_keeps_everything_else_and_is_idempotent():
    options = GenerateOptions(pool_ids=(7,), urgent_pool_ids=(8,))
    without = generate(TOOLS, _binary("paper"), replace(options, copy_sizes=()))
    assert set(without.rule_ids) == set(R.RULE_NAMES) and without.report.copy_rules == {}
    added = generate(TOOLS, without.binary, options)
    assert added.changed and added.report.ok
    assert {k: v for k, v in added.rule_ids.items() if k in R.RULE_NAMES} == dict(
        without.rule_ids)
    assert added.rule_ids["sla_copy_3"] == max(without.rule_ids.values()) + 1
    before, after = TOOLS.dump(without.binary), TOOLS.dump(added.binary)
    assert [r for r in after["rules"] if r["rule_name"] != "sla_copy_3"] == before["rules"]
    assert {k: v for k, v in after.items() if k != "rules"} == {
        k: v for k, v in before.items() if k != "rules"}
    again = generate(TOOLS, added.binary, options)
    assert again.binary == added.binary and not again.changed


def test_a_copy_rule_not_asked_for_stays_as_it_is_and_is_named():
    first = generate(TOOLS, _binary("paper"), GenerateOptions(pool_ids=(7,), copy_sizes=(2,)))
    second = generate(TOOLS, first.binary, GenerateOptions(pool_ids=(7,), copy_sizes=(3,)))
    assert second.report.ok and set(second.report.copy_rules) == {"sla_copy_3"}
    old = [r for r in TOOLS.dump(first.binary)["rules"] if r["rule_name"] == "sla_copy_2"]
    new = [r for r in TOOLS.dump(second.binary)["rules"] if r["rule_name"] == "sla_copy_2"]
    assert old == new and len(new) == 1
    assert any(w.startswith("sla_copy_2 in the map is not verified") and "--copy-size 2" in w
               for w in second.report.warnings)


# -- the checks fail ----------------------------------------------------------------


@pytest.fixture(scope="module")
def paper_map():
    return generate(TOOLS, _binary("paper"),
                    GenerateOptions(pool_ids=(7,), copy_sizes=(2, 3))).binary


@pytest.mark.parametrize(("mutant", "needles"), [
    ("urgent firstn 1", ["at size 3 map differently from sla_isolated_normal"]),
    ("normal first", ["do not start with an ssd OSD", "do not keep the sla_isolated_normal"]),
    ("urgent takes the root", ["do not have exactly one ssd OSD"]),
    ("normal firstn -1", ["at size 3 map differently"]),  # N - 1 copies at N
    # with the pool's flat weight set the root maps like sla_isolated_normal at N (R4),
    # so only N + 1 gives it away
    ("one choose from the root", ["at size 4 do not start with an ssd OSD",
                                  "do not have exactly one ssd OSD"]),
])
def test_mutated_copy_rules_fail_r8(paper_map, mutant, needles):
    binary = _with_steps(paper_map, "sla_copy_3", MUTANTS[mutant](3))
    report = verify_map(TOOLS, binary, GenerateOptions(pool_ids=(7,), copy_sizes=(2, 3)))
    assert not report.ok
    mine = [f for f in report.failures if f.startswith("R8 sla_copy_3")]
    assert mine and len(mine) == len(report.failures), report.failures  # sla_copy_2 still fine
    for needle in needles:
        assert any(needle in f for f in mine), (needle, mine)
    assert report.copy_rules["sla_copy_2"].normal_differing_pgs == 0


def test_urgent_firstn_minus_n_minus_1_fails_and_firstn_0_for_normal_is_equivalent(paper_map):
    # -(N-1): one urgent copy already at size N -> a pool put on it moves data
    binary = _with_steps(paper_map, "sla_copy_3", [
        "take default class ssd", "chooseleaf firstn -2 type host", "emit",
        "take default class hdd", "chooseleaf firstn 3 type host", "emit"])
    report = verify_map(TOOLS, binary, GenerateOptions(pool_ids=(7,)))
    assert report.copy_rules["sla_copy_3"].pgs_differing_from_isolated == 256
    assert any("at size 4 have fewer than 4 OSDs" not in f and "at size 3 map differently" in f
               for f in report.failures)
    # firstn 0 in the normal block draws pool-size items and emit keeps N: the same
    # mapping at N and N + 1, so it is accepted (CRUSH maps it identically)
    same = _with_steps(paper_map, "sla_copy_3", MUTANTS["normal firstn 0"](3))
    ok = verify_map(TOOLS, same, GenerateOptions(pool_ids=(7,)))
    assert ok.ok, ok.failures


def test_a_rule_shape_the_verifier_cannot_evaluate_fails(paper_map):
    binary = _with_steps(paper_map, "sla_copy_3", [
        "take default class ssd", "chooseleaf indep -3 type host", "emit",
        "take default class hdd", "chooseleaf firstn 3 type host", "emit"])
    report = verify_map(TOOLS, binary, GenerateOptions(pool_ids=(7,)))
    assert any(f.startswith("R8 sla_copy_3: its steps cannot be checked") and "indep" in f
               for f in report.failures)


def test_a_missing_copy_rule_fails_verification(tmp_path, capsys):
    old = generate(TOOLS, _binary("paper"), GenerateOptions(pool_ids=(7,), copy_sizes=()))
    report = verify_map(TOOLS, old.binary, GenerateOptions(pool_ids=(7,)))
    assert report.failures == ("R8 the map has no rule sla_copy_3; run sla-crush generate or "
                               "install with --copy-size 3 (ceph sla rules apply)",)
    path = tmp_path / "old.bin"
    path.write_bytes(old.binary)
    assert main(["verify", "--map", str(path), "--pool-id", "7"]) == 1
    capsys.readouterr()


def test_a_region_that_cannot_give_the_copies_is_refused(tmp_path, capsys):
    # disjoint: 6 hdd hosts
    result = generate(TOOLS, _binary("disjoint"), GenerateOptions(pool_ids=(7,),
                                                                  copy_sizes=(3, 7)))
    assert result.report.failures == (
        "R8 sla_copy_7: only 6 host buckets under default hold hdd devices, fewer than 7: the 7 "
        "hdd copies cannot be in distinct hosts; drop copy size 7 or add hdd OSDs to 1 more "
        "host",)
    out = tmp_path / "out.bin"
    assert main(["generate", "--in", str(FIXTURES / "disjoint.txt"), "--out", str(out),
                 "--pool-id", "7", "--copy-size", "7"]) == 2
    err = capsys.readouterr().err
    assert "refused: R8 sla_copy_7: only 6 host buckets" in err and not out.exists()
    # no urgent weight under the root (analyse refuses a class with no devices before this)
    crush = crushmap_from_dump(TOOLS.dump(_binary("paper")))
    topo = analyse(crush, PAPER, 3)
    empty = replace(topo, domains=tuple(replace(d, urgent_weight=0) for d in topo.domains))
    assert "no ssd devices with weight under default" in _copy_region_failure(
        "sla_copy_3", 3, empty)
    assert _copy_region_failure("sla_copy_3", 3, topo) is None


def test_cli_copy_size_flags(tmp_path, capsys):
    out = tmp_path / "out.bin"
    assert main(["generate", "--in", str(FIXTURES / "few_ssd.txt"), "--out", str(out),
                 "--pool-id", "7", "--size", "2"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert set(summary["copy_rules"]) == {"sla_copy_2"}  # default: --size
    assert main(["generate", "--in", str(FIXTURES / "few_ssd.txt"), "--out", str(out),
                 "--pool-id", "7", "--copy-size", "1", "2"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert set(summary["copy_rules"]) == {"sla_copy_1", "sla_copy_2"}
    assert summary["copy_rules"]["sla_copy_1"]["normal_differing_pgs"] == 0
    for bad in ("0", "10"):
        assert main(["generate", "--in", str(FIXTURES / "few_ssd.txt"), "--out", str(out),
                     "--pool-id", "7", "--copy-size", bad]) == 2
        assert f"copy size {bad} is out of range; use 1 to 9" in capsys.readouterr().err


# -- live pools: the real PG ids ----------------------------------------------------


def test_live_pools_are_checked_on_their_own_pgs(tmp_path):
    cli, tools, _ = make_cluster(tmp_path, _binary("paper"))
    options = GenerateOptions(copy_sizes=(2, 3, 4))
    result = install(cli, tools, options)
    assert result.changed and result.report.ok, result.report.failures
    report = verify_live(cli, tools, options)
    # rbd has no flat weight set (R4/R5 fail for sla_shared there); R8 holds
    assert not [f for f in report.failures if f.startswith("R8")], report.failures
    for n in (2, 3):  # pool rbd: size 3, 64 PGs
        r = report.copy_rules[f"sla_copy_{n}"]
        assert (r.pool_id, r.pool_size, r.pgs) == (1, 3, 64)
        assert r.normal_differing_pgs == 0 and r.pgs_differing_from_isolated == 0
    four = report.copy_rules["sla_copy_4"]  # a pool of size 3 cannot show 4 normal copies
    assert (four.pool_id, four.pool_size, four.pgs) == (None, None, 256)
    assert any(w.startswith("sla_copy_4: pool 1 has size 3, smaller than 4") for w in
               report.warnings)
    # independent of R8: at the pool's size 3, switching to sla_copy_3 moves what a switch
    # to sla_isolated_normal moves, PG for PG
    to_copy = plan_switch(cli, tools, "rbd", "sla_copy_3")
    to_iso = plan_switch(cli, tools, "rbd", "sla_isolated_normal")
    assert (to_copy.pgs_moving, to_copy.replicas) == (to_iso.pgs_moving, to_iso.replicas)
    assert not install(cli, tools, options).changed


# -- the counts on hand-made mappings -------------------------------------------------

# 4 hosts, each with an hdd (even ids) and an ssd (odd ids)
LAYOUT = Layout(
    device_class={o: ("hdd" if o % 2 == 0 else "ssd") for o in range(8)},
    domain_of_device={o: o // 2 for o in range(8)},
    normal_class="hdd",
    urgent_class="ssd",
    size=3,
)


def test_check_copy_counts_each_defect():
    iso = {0: (0, 2, 4), 1: (2, 4, 6), 2: (4, 6, 0)}
    good = check_copy(3, iso, {0: (1, 0, 2, 4), 1: (1, 2, 4, 6), 2: (3, 4, 6, 0)}, iso,
                      LAYOUT, 7)
    assert copy_failures(good, "ssd", "hdd", "host")[0] == []
    assert good.shared_failure_domain_pgs == 1 and good.shared_failure_domain_fraction == 0.3333
    assert (good.replicas_added, good.replicas_moved) == (3, 0)
    bad = check_copy(
        3,
        {0: (0, 2, 4), 1: (2, 4, 6), 2: (4, 0, 6)},  # PG 2 reordered at N
        {0: (7, 2, 0, 4),  # same OSDs, another order
         1: (2, 1, 4, 6),  # urgent not first
         2: (3, 5, 4, 6)},  # two urgent copies, one normal gone
        iso, LAYOUT, None)
    assert bad.pgs_differing_from_isolated == 1
    assert bad.urgent_not_first_pgs == 1 and bad.urgent_count_pgs == 1
    assert bad.normal_off_class_pgs == 2  # PG 1 (ssd second) and PG 2 (ssd second)
    assert bad.normal_differing_pgs == 3
    # new OSDs: the first of PGs 0 and 2 (the extra copy), osd.1 in PG 1 and osd.5 in PG 2
    assert (bad.replicas_added, bad.replicas_moved) == (2, 2)
    failures, _ = copy_failures(bad, "ssd", "hdd", "host")
    assert all(f.startswith("R8 sla_copy_3: ") for f in failures)
    assert any("1/3 PGs at size 3 map differently" in f for f in failures)
    assert any("3/3 PGs at size 4 do not keep the sla_isolated_normal OSDs" in f
               for f in failures)
    twice = check_copy(2, {0: (0, 2)}, {0: (1, 0, 0)}, {0: (0, 2)}, LAYOUT, None)
    assert twice.duplicate_osd_pgs == 1 and twice.normal_failure_domain_pgs == 1
    short = check_copy(2, {0: (0, 2)}, {0: (0, 2)}, {0: (0, 2)}, LAYOUT, None)
    assert short.short_pgs == 1 and short.urgent_not_first_pgs == 1
