"""Parsing and rendering crushtool text, and the fixed-point weight rules."""

from crush_rules.crushmap import Bucket, ChooseArg, CrushMap, Item
from crush_rules.crushtext import (
    parse_blocks,
    render_blocks,
    render_choose_args,
    render_rule,
    replace_owned,
    rule_steps_in_text,
    with_exact_weights,
    with_rule_steps,
)
from crush_rules.fixedpoint import format_weight, is_round_trip_safe, parse_weight, quantize

TEXT = """# begin crush map
tunable choose_total_tries 50

# devices
device 0 osd.0 class hdd
device 1 osd.1 class ssd

# types
type 0 osd
type 1 host
type 11 root

# buckets
host node0 {
\tid -2\t\t# do not change unnecessarily
\tid -3 class hdd\t\t# do not change unnecessarily
\t# weight 1.123
\talg straw2
\thash 0\t# rjenkins1
\titem osd.0 weight 1.000
\titem osd.1 weight 0.123
}
root default {
\tid -1\t\t# do not change unnecessarily
\talg straw2
\thash 0\t# rjenkins1
\titem node0 weight 1.123
}

# rules
rule replicated_rule {
\tid 0
\ttype replicated
\tmin_size 1
\tmax_size 10
\tstep take default
\tstep chooseleaf firstn 0 type host
\tstep emit
}

# end crush map
"""


def _crush(osd1_weight: int) -> CrushMap:
    node = Bucket(-2, "node0", "host", "straw2", (Item(0, 65536), Item(1, osd1_weight)))
    root = Bucket(-1, "default", "root", "straw2", (Item(-2, 65536 + osd1_weight),))
    return CrushMap({0: "hdd", 1: "ssd"}, {0: "osd.0", 1: "osd.1"}, {0: "osd", 1: "host"},
                    {-1: root, -2: node}, {}, {})


def test_blocks_round_trip_verbatim():
    blocks = parse_blocks(TEXT)
    assert [b.kind for b in blocks if b.kind != "line"] == ["bucket", "bucket", "rule"]
    assert [b.key for b in blocks if b.kind == "bucket"] == ["node0", "default"]
    assert render_blocks(blocks) == TEXT


def test_exact_weights_replace_rounded_ones():
    blocks = with_exact_weights(parse_blocks(TEXT), _crush(1277))  # 0.01949 TiB-style weight
    node = next(b for b in blocks if b.key == "node0")
    assert "\titem osd.1 weight 0.0194854736328125" in node.lines
    assert parse_weight("0.0194854736328125") == 1277
    root = next(b for b in blocks if b.key == "default")
    # a bucket item equal to its child's sum carries no weight: the compiler sums exactly
    assert "\titem node0" in root.lines


def test_fixed_point_formatting():
    assert format_weight(65536) == "1.000"
    assert format_weight(8060) == "0.123"  # what crushtool stores for "0.123"
    assert is_round_trip_safe(quantize(2.3456))
    assert quantize(0.00001) > 0  # a device that should get data keeps some weight
    for fixed in (1, 1277, 73626, 3 * 65536 + 17):
        assert parse_weight(format_weight(fixed)) == fixed


def test_rule_rendering_per_release():
    pacific = render_rule("sla_shared", 7, ["take default", "emit"], with_sizes=True)
    quincy = render_rule("sla_shared", 7, ["take default", "emit"], with_sizes=False)
    assert "\tmin_size 1" in pacific.lines and "\tmax_size 10" in pacific.lines
    assert not any("size" in line for line in quincy.lines)
    assert rule_steps_in_text(pacific) == ["take default", "emit"]


def test_replace_owned_keeps_ids_and_order():
    blocks = parse_blocks(TEXT)
    new_rule = render_rule("sla_fast", 1, ["take default class ssd", "emit"], with_sizes=True)
    args = render_choose_args(5, [ChooseArg(-1, ((65536,), (0,)), (-3,))])
    out = replace_owned(blocks, {"sla_fast": new_rule}, {5: args})
    kinds = [b.key for b in out if b.kind in ("rule", "choose_args")]
    assert kinds == ["replicated_rule", "sla_fast", "5"]
    # replacing again is in place, not appended
    again = replace_owned(out, {"sla_fast": new_rule}, {5: args})
    assert render_blocks(again) == render_blocks(out)
    text = render_blocks(out)
    assert "    ids [ -3 ]" in text and "      [ 0.000 ]" in text


def test_variant_rule_steps():
    blocks = with_rule_steps(parse_blocks(TEXT), 0, ["take default class hdd", "emit"])
    rule = next(b for b in blocks if b.kind == "rule")
    assert rule_steps_in_text(rule) == ["take default class hdd", "emit"]
    assert "\tmin_size 1" in rule.lines
