"""Bad input and unservable maps: exit 2 with one line naming reason and fix, never a
traceback, nothing written; and maps that used to be refused for no good reason."""

import json
import os
from pathlib import Path

import pytest

from crush_rules import cli as cli_module
from crush_rules import synthetic
from crush_rules.cli import main
from crush_rules.crushmap import crushmap_from_dump
from crush_rules.generate import GenerateOptions, generate, read_map, with_rule_sizes
from crush_rules.stats import chi2_sf, proportional_fit
from crush_rules.tools import Tools
from crush_rules.verify import fit_failure, primary_fit

FIXTURES = Path(__file__).resolve().parents[2] / "crush_topologies"
PAPER = FIXTURES / "paper.txt"
TOOLS = Tools()


def _run(capsys, *argv):
    rc = main(list(argv))
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    return rc, captured.out, captured.err.strip()


def _refused(capsys, needle, *argv):
    rc, _, err = _run(capsys, *argv)
    assert rc == 2, err
    assert len(err.splitlines()) == 1 and needle in err, err
    return err


def _map(tmp_path, text, name="in.txt"):
    path = tmp_path / name
    path.write_text(text)
    return str(path)


# -- the bad-input table (docs/crush-rules.md) ------------------------------------------


@pytest.mark.parametrize(("extra", "needle"), [
    (["--size", "1"], "--size 1 is refused"),
    (["--size", "0"], "--size 0 is out of range"),
    (["--size", "11"], "--size 11 is out of range"),
    (["--pool-id", "4", "--pool-id", "4"], "pool 4 is given twice"),
    (["--pool-id", "4", "4"], "pool 4 is given twice"),
    (["--urgent-pool-id", "4"], "given as both normal and urgent"),
    (["--release", "octopus"], "unknown --release octopus"),
    (["--root", "nowhere"], "pass --root with one of: default"),
])
def test_generate_option_refusals(tmp_path, capsys, extra, needle):
    out = tmp_path / "out.bin"
    _refused(capsys, needle, "generate", "--in", str(PAPER), "--out", str(out),
             "--pool-id", "4", *extra)
    assert not out.exists()


@pytest.mark.parametrize(("content", "needle"), [
    (b"", "the crush map is empty"),
    (b"   \n\n", "the crush map is empty"),
    (bytes(range(256)) * 8, "not a crush map"),
    (b"hello world\n", "not a crush map"),
    (b'{"devices": []}', "looks like JSON"),
    (b"device 0 osd.0 class hdd\nhost broken {\n", "does not compile"),
    (b"\x00\x01\x02crush\xff\xfe", "not a crush map"),
])
def test_garbage_input_is_refused(tmp_path, capsys, content, needle):
    src = tmp_path / "in"
    src.write_bytes(content)
    out = tmp_path / "out.bin"
    _refused(capsys, needle, "generate", "--in", str(src), "--out", str(out), "--pool-id", "1")
    assert not out.exists()


def test_outputs_are_checked_before_anything_is_written(tmp_path, capsys):
    out = tmp_path / "out.bin"
    _refused(capsys, "directory", "generate", "--in", str(PAPER), "--out", str(out),
             "--text", str(tmp_path / "missing" / "out.txt"), "--pool-id", "1")
    assert not out.exists()  # --out was writable but nothing was written
    _refused(capsys, "does not exist", "generate", "--in", str(PAPER),
             "--out", str(tmp_path / "missing" / "out.bin"), "--pool-id", "1")
    _refused(capsys, "it is a directory", "generate", "--in", str(PAPER),
             "--out", str(tmp_path), "--pool-id", "1")
    _refused(capsys, "two outputs", "generate", "--in", str(PAPER), "--out", str(out),
             "--text", str(out), "--pool-id", "1")
    if os.geteuid() != 0:
        locked = tmp_path / "locked"
        locked.mkdir(mode=0o500)
        _refused(capsys, "not writable", "generate", "--in", str(PAPER),
                 "--out", str(locked / "out.bin"), "--pool-id", "1")
    assert sorted(p.name for p in tmp_path.iterdir() if p.name != "locked") == []


def test_outputs_are_0644_and_replace_atomically(tmp_path, capsys):
    out, text = tmp_path / "out.bin", tmp_path / "out.txt"
    out.write_bytes(b"old")
    old_umask = os.umask(0o077)
    try:
        rc, _, err = _run(capsys, "generate", "--in", str(PAPER), "--out", str(out),
                          "--text", str(text), "--pool-id", "1")
    finally:
        os.umask(old_umask)
    assert rc == 0, err
    assert out.read_bytes() != b"old"
    assert {p.stat().st_mode & 0o777 for p in (out, text)} == {0o644}
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".sla-crush-")] == []


@pytest.mark.parametrize(("extra", "needle"), [
    (["--pg-num", "0"], "--pg-num 0 is out of range"),
    (["--pg-num", "-5"], "--pg-num -5 is out of range"),
    (["--size", "1"], "--size 1 is refused"),
    (["--size", "0"], "--size 0 is out of range"),
])
def test_verify_input_errors(tmp_path, capsys, extra, needle):
    out = tmp_path / "out.bin"
    assert _run(capsys, "generate", "--in", str(PAPER), "--out", str(out),
                "--pool-id", "1")[0] == 0
    _refused(capsys, needle, "verify", "--map", str(out), *extra)


@pytest.mark.parametrize("release", ["tentacle", "umbrella"])
def test_newer_releases_use_squid_syntax(tmp_path, capsys, release):
    out, text = tmp_path / "out.bin", tmp_path / "out.txt"
    rc, _, err = _run(capsys, "generate", "--in", str(PAPER), "--out", str(out),
                      "--text", str(text), "--pool-id", "1", "--release", release)
    assert rc == 0, err
    assert "min_size" not in text.read_text()


def test_an_unexpected_exception_is_one_line_saying_what_to_report(tmp_path, capsys,
                                                                   monkeypatch):
    def boom(*args, **kwargs):
        raise KeyError("weights")

    monkeypatch.setattr(cli_module, "generate", boom)
    err = _refused(capsys, "internal error (KeyError", "generate", "--in", str(PAPER),
                   "--out", str(tmp_path / "o.bin"), "--pool-id", "1")
    assert "please report it with the input map and the command line" in err


# -- unservable maps ----------------------------------------------------------------------


def _two_roots() -> str:
    """hdd hosts under 'default', ssd hosts under a root 'fast' (pre-Luminous style)."""
    text = synthetic.crush_text([[("hdd", 1.0)] * 2] * 3 + [[("ssd", 1.0)] * 2] * 3)
    head, rest = text.split("root default {", 1)
    body, rules = rest.split("}\n", 1)
    lines = body.splitlines()
    items = [x for x in lines if x.strip().startswith("item")]
    keep = [x for x in lines if not x.strip().startswith("item")]
    fast = ["root fast {", "\tid -20", "\talg straw2", "\thash 0"] + items[3:] + ["}"]
    default = ["root default {"] + keep[1:] + items[:3] + ["}"]
    return head + "\n".join(default + fast) + "\n" + rules


def test_classes_in_separate_roots_name_the_roots(tmp_path, capsys):
    src = _map(tmp_path, _two_roots())
    err = _refused(capsys, "the classes are in separate roots", "generate", "--in", src,
                   "--out", str(tmp_path / "o.bin"), "--pool-id", "1")
    assert "'ssd' devices are under root fast" in err
    assert "--root values: default (hdd); fast (ssd)" in err


def test_too_few_urgent_failure_domains_for_the_size(tmp_path, capsys):
    hosts = [[("hdd", 1.0)] * 2] * 4 + [[("hdd", 1.0), ("ssd", 1.0)]]
    src = _map(tmp_path, synthetic.crush_text(hosts))
    err = _refused(capsys, "only 1 host buckets under default hold ssd devices", "generate",
                   "--in", src, "--out", str(tmp_path / "o.bin"), "--pool-id", "1",
                   "--size", "2")
    assert "sla_isolated_urgent and sla_fast" in err and "add ssd OSDs to 1 more host" in err


def test_stretch_rule_choosing_per_datacenter_is_refused(tmp_path, capsys):
    text = synthetic.crush_text(synthetic.paper()).replace(
        "# end crush map",
        "rule stretch_like {\n\tid 1\n\ttype replicated\n\tmin_size 1\n\tmax_size 10\n"
        "\tstep take default\n\tstep choose firstn 0 type datacenter\n"
        "\tstep chooseleaf firstn 2 type host\n\tstep emit\n}\n\n# end crush map")
    _refused(capsys, "places 2 replicas in each datacenter", "generate",
             "--in", _map(tmp_path, text), "--out", str(tmp_path / "o.bin"), "--pool-id", "1")


def test_a_class_two_take_rule_is_not_a_stretch_rule(tmp_path, capsys):
    naive = ("rule ssd_primary {\n\tid 1\n\ttype replicated\n\tmin_size 1\n\tmax_size 10\n"
             "\tstep take default class ssd\n\tstep chooseleaf firstn 1 type host\n\tstep emit\n"
             "\tstep take default class hdd\n\tstep chooseleaf firstn -1 type host\n"
             "\tstep emit\n}\n\n# end crush map")
    text = synthetic.crush_text(synthetic.paper()).replace("# end crush map", naive)
    rc, _, err = _run(capsys, "generate", "--in", _map(tmp_path, text),
                      "--out", str(tmp_path / "o.bin"), "--pool-id", "1")
    assert rc == 0, err


def test_one_straw_bucket_is_named(tmp_path, capsys):
    text = synthetic.crush_text(synthetic.paper())
    text = text.replace("host node2 {\n\tid -4\n\talg straw2", "host node2 {\n\tid -4\n\talg straw")
    err = _refused(capsys, "1 buckets under root default are not straw2: node2 (straw)",
                   "generate", "--in", _map(tmp_path, text), "--out", str(tmp_path / "o.bin"),
                   "--pool-id", "1")
    assert "ceph osd crush set-all-straw-buckets-to-straw2" in err


# -- maps that used to be refused for no good reason ------------------------------------------


def _decompiled(hosts) -> bytes:
    """What `crushtool -d` prints for the hosts: every item carries a 3-decimal weight."""
    return TOOLS.decompile(read_map(TOOLS, synthetic.crush_text(hosts).encode())).encode()


def test_decompiled_three_decimal_weights_are_served_not_internal_error(tmp_path, capsys):
    """The issue's map: 3 mixed hosts with uneven weights, as crushtool -d prints it."""
    hosts = [[("hdd", 1.092)] * 4 + [("ssd", 0.447)] for _ in range(3)] + [[("hdd", 1.092)] * 3]
    src = tmp_path / "in.txt"
    src.write_bytes(_decompiled(hosts))
    rc, out, err = _run(capsys, "generate", "--in", str(src), "--out", str(tmp_path / "o.bin"),
                        "--pool-id", "1", "--urgent-pool-id", "2", "--size", "3")
    assert rc == 0, err
    summary = json.loads(out)
    assert summary["ok"]
    assert any("crushtool -d prints weights rounded" in w for w in summary["warnings"])


def test_weights_of_256_and_more_off_the_float_grid(tmp_path):
    hosts = [[("hdd", 15.001)] * 19 + [("ssd", 3.493)] for _ in range(4)]  # hosts > 256.0
    binary = read_map(TOOLS, synthetic.crush_text(hosts).encode())
    result = generate(TOOLS, binary, GenerateOptions(pool_ids=(1,), urgent_pool_ids=(2,)))
    assert result.report.ok, result.report.failures
    assert any("float32 grid" in w for w in result.report.warnings)
    assert result.report.rules["sla_shared"].pgs_differing_from_isolated == 0


def test_a_tiny_ssd_share_is_not_a_ratio_failure():
    """0.3% of the weight on SSD: nothing compares a ratio with a fixed band any more."""
    hosts = [[("hdd", 8.0)] * 10 + ([("ssd", 0.08)] if h < 3 else []) for h in range(6)]
    binary = read_map(TOOLS, synthetic.crush_text(hosts).encode())
    result = generate(TOOLS, binary, GenerateOptions(pool_ids=(1,)))
    assert result.report.ok, result.report.failures
    assert result.report.target_urgent_share < 0.005


def test_quincy_text_without_rule_sizes_compiles_with_pacific_crushtool():
    text = synthetic.crush_text(synthetic.paper()).replace("\tmin_size 1\n\tmax_size 10\n", "")
    assert "min_size" in with_rule_sizes(text)
    crush = crushmap_from_dump(TOOLS.dump(read_map(TOOLS, text.encode())))
    assert crush.rule_named("replicated_rule") is not None


# -- R7: the remaining share check is statistical ------------------------------------------


def test_chi_square_tail_matches_known_values():
    assert abs(chi2_sf(3.841, 1) - 0.05) < 1e-3
    assert abs(chi2_sf(11.07, 5) - 0.05) < 1e-3
    assert chi2_sf(0.0, 4) == 1.0


def test_small_samples_and_tiny_shares_pass_but_real_skew_fails():
    # 768 replicas, 0.3% share: 2.3 expected, 3 seen -> consistent
    assert proportional_fit({"ssd": 3, "hdd": 765}, {"ssd": 0.003, "hdd": 0.997}).ok
    # equal weights, one domain starved -> certain
    fit = proportional_fit({"a": 0, "b": 128, "c": 128}, {"a": 1, "b": 1, "c": 1})
    assert not fit.ok and fit.worst == "a" and fit.worst_observed == 0
    # anything on a zero-weight domain is impossible
    assert not proportional_fit({"a": 1, "b": 255}, {"a": 0, "b": 1}).ok


def test_r7_reports_a_rule_that_ignores_a_failure_domain():
    domain_of = {0: -2, 1: -3, 2: -4}
    names = {-2: "h0", -3: "h1", -4: "h2"}
    weights = {-2: 65536, -3: 65536, -4: 65536}
    skewed = {pg: (pg % 2, 1 - pg % 2) for pg in range(300)}  # h2 never first
    failure = fit_failure("sla_fast", primary_fit(skewed, domain_of, weights, names))
    assert failure is not None and failure.startswith("R7 sla_fast")
    assert "h2 got 0" in failure
    fair = {pg: (pg % 3,) for pg in range(300)}
    assert fit_failure("sla_fast", primary_fit(fair, domain_of, weights, names)) is None
