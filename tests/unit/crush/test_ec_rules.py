"""The EC shared rule: made from the pool's own erasure rule, it maps every PG shard by
shard like that rule under the pool's flat weight set (crushtool --test, indep holes
included); shapes it cannot copy are refused with the reason; a PG's shared shards are
judged against its own mapping."""

import subprocess
from pathlib import Path

import pytest

from crush_rules.crushmap import CrushMap, Rule, Step, crushmap_from_dump
from crush_rules.crushtext import parse_blocks, render_blocks, render_choose_args
from crush_rules.ec_rules import (
    ITEM_NONE,
    EcLayout,
    ec_profile_fit,
    ec_shard_faults,
    ec_shared_rule,
    render_ec_rule,
    urgent_shards_cap,
)
from crush_rules.errors import CrushError
from crush_rules.rules import DEFAULT_SCOPE
from crush_rules.tools import Tools
from crush_rules.topology import analyse
from crush_rules.weightsets import flat_choose_args

TOOLS = Tools()
FIXTURES = Path(__file__).resolve().parents[2] / "crush_topologies"
COMPAT = 2**64 - 1  # the compat weight set's index in crushtool text
# what `ceph osd erasure-code-profile set P k=K m=M crush-device-class=hdd` makes
OWN_RULE = """rule ecpool {{
\tid 9
\ttype erasure
\tmin_size 3
\tmax_size {size}
\tstep set_chooseleaf_tries 5
\tstep set_choose_tries 100
\tstep take default class hdd
\tstep chooseleaf indep 0 type host
\tstep emit
}}"""


def _with_own_rule(name: str, size: int) -> tuple[str, CrushMap]:
    text = (FIXTURES / f"{name}.txt").read_text()
    text = text.replace("# rules\n", "# rules\n" + OWN_RULE.format(size=size) + "\n", 1)
    crush = crushmap_from_dump(TOOLS.dump(TOOLS.compile(text)))
    return text, crush


def _mappings(binary: bytes, rule: int, num_rep: int, tmp: Path) -> list[str]:
    path = tmp / "map.bin"
    path.write_bytes(binary)
    out = subprocess.run(
        [TOOLS.crushtool, "-i", str(path), "--test", "--rule", str(rule), "--num-rep",
         str(num_rep), "--min-x", "0", "--max-x", "1023", "--show-mappings"],
        capture_output=True, text=True, check=True).stdout
    # "CRUSH rule 9 x 0 [1,4,2147483647]": the rule id differs, the rest must not
    return [line.split(" x ", 1)[1] for line in out.splitlines() if " x " in line]


@pytest.mark.parametrize("name,k,m", [("paper", 2, 1), ("uneven40", 4, 2), ("disjoint", 5, 2),
                                      ("few_ssd", 2, 1)])
def test_shared_rule_maps_shard_by_shard_like_the_pools_own(name, k, m, tmp_path):
    text, crush = _with_own_rule(name, k + m)
    own = crush.rule_named("ecpool")
    assert own is not None
    shared = ec_shared_rule(own, crush, DEFAULT_SCOPE)
    assert shared.name == "sla_ec_ecpool" and shared.steps[:2] == (
        "set_chooseleaf_tries 5", "set_choose_tries 100")
    assert "take default" in shared.steps and shared.failure_domain == "host"
    blocks = parse_blocks(text)
    blocks.insert(max(i for i, b in enumerate(blocks) if b.kind == "rule") + 1,
                  render_ec_rule(shared, 10, with_sizes=True))
    bare = TOOLS.compile(render_blocks(blocks))
    # the pool's flat weight set; crushtool --test draws with the compat index's
    flat = flat_choose_args(crush, analyse(crush, DEFAULT_SCOPE, 3))
    binary = TOOLS.compile(render_blocks([*blocks, render_choose_args(COMPAT, flat)]))
    mine = _mappings(binary, 9, k + m, tmp_path)
    assert len(mine) == 1024 and mine == _mappings(bare, 9, k + m, tmp_path)
    assert _mappings(binary, 10, k + m, tmp_path) == mine
    # the check can fail: without the weight set the whole root's draws differ
    assert _mappings(bare, 10, k + m, tmp_path) != mine
    if name == "disjoint":  # fewer hdd hosts than shards: the same holes, in place
        assert any(str(ITEM_NONE) in line for line in mine)


def _rule(steps: list[Step], rule_type: int = 3, name: str = "ecpool") -> Rule:
    return Rule(9, name, rule_type, 3, 3, tuple(steps))


TAKE = Step("take", -3, "default~hdd")
CHOOSE = Step("chooseleaf_indep", num=0, type="host")
EMIT = Step("emit")


@pytest.mark.parametrize("rule,reason", [
    (_rule([TAKE, CHOOSE, EMIT], rule_type=1), "not an erasure rule"),
    (_rule([TAKE, CHOOSE, EMIT], name="sla_ec_x"), "is an sla rule itself"),
    (_rule([Step("take", -4, "default~ssd"), CHOOSE, EMIT]), "takes default class ssd"),
    (_rule([Step("take", -1, "default"), CHOOSE, EMIT]), "takes default, not default class hdd"),
    (_rule([Step("take", -9, "other~hdd"), CHOOSE, EMIT]), "takes other class hdd"),
    (_rule([TAKE, CHOOSE, EMIT, TAKE, CHOOSE, EMIT]), "2 takes and 2 emits"),
    (_rule([TAKE, Step("chooseleaf_firstn", num=0, type="host"), EMIT]),
     "'chooseleaf_firstn' step"),
    (_rule([TAKE, Step("choose_msr", num=3, type="host"), EMIT]), "'choose_msr' step"),
    (_rule([TAKE, Step("choose_indep", num=2, type="rack"), CHOOSE, EMIT]), "2 choose steps"),
    (_rule([TAKE, Step("chooseleaf_indep", num=0, type="rack"), EMIT]),
     "separates shards by rack"),
    (_rule([TAKE, Step("set_choose_tries", num=100), CHOOSE, EMIT]), "after its take"),
])
def test_shapes_it_cannot_copy_are_refused_with_the_reason(rule, reason):
    crush = crushmap_from_dump(TOOLS.dump(TOOLS.compile((FIXTURES / "paper.txt").read_text())))
    with pytest.raises(CrushError, match=reason):
        ec_shared_rule(rule, crush, DEFAULT_SCOPE)


# four hosts, each an hdd (even ids) and an ssd (odd ids)
LAYOUT = EcLayout(k=2, m=1, device_class={o: "hdd" if o % 2 == 0 else "ssd" for o in range(8)},
                  domain_of={o: o // 2 for o in range(8)})


@pytest.mark.parametrize("shared,fault", [
    ([0, 2, 4], None),  # as its own rule
    ([1, 2, 4], None),  # shard 0 to the ssd of its own host
    ([0, 2, 7], None),  # shard 2 to an ssd of a host the PG does not use
    ([1, 3, 4], "2 shards on ssd OSDs, more than m = 1"),
    ([0, 4, 2], "shard 1 moved from osd.2 to osd.4, which is not ssd"),
    ([0, 3, 4], None),
    ([0, 2, 3], "two shards in one failure domain"),
    ([0, 2], "2 shards against 3"),
])
def test_shared_shards_are_judged_against_the_pools_own_mapping(shared, fault):
    faults = ec_shard_faults([0, 2, 4], shared, LAYOUT)
    if fault is None:
        assert faults == []
    else:
        assert any(fault in f for f in faults), faults


def test_one_osd_twice_is_a_fault():
    layout = EcLayout(k=1, m=2, device_class=LAYOUT.device_class, domain_of=LAYOUT.domain_of)
    assert any("osd.3 holds two shards" in f for f in ec_shard_faults([0, 2, 4], [3, 3, 4],
                                                                       layout))


def test_holes_are_neither_urgent_nor_a_shared_domain():
    assert ec_shard_faults([0, ITEM_NONE, 4], [1, ITEM_NONE, 4], LAYOUT) == []


@pytest.mark.parametrize("k,m,normal,urgent,reason", [
    (2, 1, 4, 4, None),
    (4, 2, 6, 1, None),
    (4, 2, 5, 4, "puts 6 shards in 6 hosts; only 5 hold hdd"),
    (2, 1, 4, 0, "no host holds ssd"),
    (2, 0, 4, 4, "needs k >= 1 and m >= 1"),
])
def test_profile_fit(k, m, normal, urgent, reason):
    got = ec_profile_fit(k, m, normal, urgent)
    assert got == reason if reason is None else reason in (got or ""), got


def test_urgent_shards_cap():
    assert urgent_shards_cap(4, 2, 8) == 2
    assert urgent_shards_cap(4, 2, 1) == 1
    assert urgent_shards_cap(2, 1, 0) == 0


# -- the generator: sla_ec_<own rule> and the pool's flat weight set, proved --------

def test_generate_writes_the_ec_rule_and_weight_set_and_proves_nothing_moves():
    from crush_rules.ec_generate import EcPool
    from crush_rules.generate import GenerateOptions, generate
    text, crush = _with_own_rule("uneven40", 6)
    gen = generate(TOOLS, TOOLS.compile(text), GenerateOptions(
        pool_ids=(3,), ec_pools=(EcPool(7, "ecpool", 6),)))
    assert gen.report.ok, gen.report.failures
    after = crushmap_from_dump(TOOLS.dump(gen.binary))
    assert after.rule_named("sla_ec_ecpool") is not None and 7 in after.choose_args
    assert after.rule_named("ecpool") == crush.rule_named("ecpool")  # read, never written
    assert "rule sla_ec_ecpool" in gen.text and "type erasure" in gen.text
    # generating again keeps the rule's id and changes nothing
    again = generate(TOOLS, gen.binary, GenerateOptions(
        pool_ids=(3,), ec_pools=(EcPool(7, "ecpool", 6),)))
    assert not again.changed and again.rule_ids["sla_ec_ecpool"] == gen.rule_ids["sla_ec_ecpool"]


def test_the_proof_fails_on_a_weight_set_that_moves_shards():
    """The check can fail: a weight set of the buckets' own weights (urgent
    devices weighed) under the whole root's take draws other shards."""
    from crush_rules.crushmap import ChooseArg
    from crush_rules.ec_generate import EcPool, ec_failures, ec_shared_rules
    text, crush = _with_own_rule("paper", 3)
    pools = (EcPool(7, "ecpool", 3),)
    shared = ec_shared_rules(crush, DEFAULT_SCOPE, pools)
    blocks = parse_blocks(text)
    blocks.insert(max(i for i, b in enumerate(blocks) if b.kind == "rule") + 1,
                  render_ec_rule(shared["sla_ec_ecpool"], 10, with_sizes=True))
    topo = analyse(crush, DEFAULT_SCOPE, 3)
    good = ec_failures(TOOLS, render_blocks(blocks), pools, shared,
                       {7: flat_choose_args(crush, topo)})
    assert good == []
    own_weights = tuple(ChooseArg(b.id, (tuple(i.weight for i in b.items),))
                        for b in crush.buckets_under(topo.root.id))
    bad = ec_failures(TOOLS, render_blocks(blocks), pools, shared, {7: own_weights})
    assert bad and "R5 pool 7: sla_ec_ecpool with" in bad[-1] and "shards would move" in bad[-1]
    assert ec_failures(TOOLS, render_blocks(blocks), pools, shared, {}) == [
        "R4 pool 7: no sla weight set"]



def test_verify_finds_an_ec_pools_own_weight_set_drifted():
    """A weight set Ceph changed under the EC pool alone (a reweight written
    into it) fails R5 for that pool, which the module's verifier repairs; the
    untouched map passes."""
    from crush_rules.crushmap import ChooseArg
    from crush_rules.ec_generate import EcPool
    from crush_rules.generate import GenerateOptions, generate, verify_map
    text, crush = _with_own_rule("paper", 3)
    options = GenerateOptions(pool_ids=(3,), ec_pools=(EcPool(7, "ecpool", 3),))
    gen = generate(TOOLS, TOOLS.compile(text), options)
    assert gen.report.ok, gen.report.failures
    assert verify_map(TOOLS, gen.binary, options).ok
    # osd.0 (hdd) reweighted to a tenth, in pool 7's set only
    flat = crushmap_from_dump(TOOLS.dump(gen.binary)).choose_args[7]
    buckets = {b.id: b for b in crush.buckets_under(analyse(crush, DEFAULT_SCOPE, 3).root.id)}
    assert crush.devices[0] == "hdd"
    drifted = render_choose_args(7, tuple(
        ChooseArg(a.bucket_id, (tuple(w // 10 if i.id == 0 else w for i, w in zip(
            buckets[a.bucket_id].items, a.weight_set[0])),)) for a in flat))
    blocks = [drifted if (b.kind, b.key) == ("choose_args", "7") else b
              for b in parse_blocks(TOOLS.decompile(gen.binary))]
    report = verify_map(TOOLS, TOOLS.compile(render_blocks(blocks)), options)
    assert [f for f in report.failures if f.startswith("R5 pool 7: sla_ec_ecpool with its weight")
            and "shards would move" in f], report.failures
    assert not [f for f in report.failures if "pool 3" in f], report.failures

@pytest.mark.parametrize("pools,words", [
    ((("ecpool", 7, 3), ("ecpool", 7, 3)), "given twice"),
    ((("nosuch", 7, 3),), "the map has no rule nosuch"),
    ((("replicated_rule", 7, 3),), "not an erasure rule"),
    ((("ecpool", 3, 3),), "also as a replicated pool"),
])
def test_generate_refuses_ec_pools_it_cannot_share(pools, words):
    from crush_rules.ec_generate import EcPool
    from crush_rules.generate import GenerateOptions, generate
    text, _ = _with_own_rule("paper", 3)
    with pytest.raises(CrushError, match=words):
        generate(TOOLS, TOOLS.compile(text), GenerateOptions(
            pool_ids=(3,), ec_pools=tuple(EcPool(p, r, n) for r, p, n in pools)))


@pytest.mark.parametrize("text,ok", [("7:ecpool:3", True), ("7:ecpool", False),
                                      ("x:ecpool:3", False), ("7::3", False), ("7:ec:1", False)])
def test_the_cli_names_an_ec_pool_by_id_rule_and_shards(text, ok):
    from crush_rules.ec_generate import EcPool, parse_ec_pool
    if ok:
        assert parse_ec_pool(text) == EcPool(7, "ecpool", 3)
    else:
        with pytest.raises(CrushError, match="POOL_ID:OWN_RULE:K"):
            parse_ec_pool(text)
