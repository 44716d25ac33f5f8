"""The guards on a generated map before anyone may write it.

Nothing but our rules and weight sets changed, every weight set of ours is
flat, crushtool's decompile / compile round trip reproduces the map (weight
rounding aside, reported as a warning), and a note when weight-set values had
to go on crushtool's float32 grid.  A failed guard is a bug of ours: the
CrushError says so (REPORT) and the caller writes nothing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from . import rules as R
from .crushmap import ChooseArg, CrushMap, crushmap_from_dump
from .errors import CrushError
from .fixedpoint import nearest_text_weight
from .tools import Tools
from .weightsets import ensure_flat, positional_pools, positional_warning


def _strip(dump: Mapping[str, Any], owned_rules: set[str], owned_args: set[int]) -> dict[str, Any]:
    return {
        "devices": dump["devices"],
        "types": dump["types"],
        "buckets": dump["buckets"],
        "tunables": dump["tunables"],
        "rules": [r for r in dump["rules"] if r["rule_name"] not in owned_rules],
        "choose_args": {
            k: v for k, v in dump.get("choose_args", {}).items() if int(k) not in owned_args
        },
    }


def check_unchanged(
    before: Mapping[str, Any], after: Mapping[str, Any], owned_args: set[int],
    owned_rules: Sequence[str] = (),
) -> None:
    """Everything but our rules and weight sets must be identical (exact weights).

    owned_rules: the copy rules written (other sla_copy_ rules must stay as they were).
    """
    owned = set(R.RULE_NAMES) | set(owned_rules)
    a, b = _strip(before, owned, owned_args), _strip(after, owned, owned_args)
    for key in a:
        if a[key] != b[key]:
            raise CrushError(
                f"internal error: the generated map changed pre-existing {key}; " + REPORT
            )


def check_flat(crush: CrushMap, pools: Mapping[int, Any]) -> None:
    """Our pools' weight sets in a compiled map have one position (the last guard)."""
    for pool in pools:
        ensure_flat(pool, crush.choose_args.get(pool, ()))


REPORT = ("this is a bug in sla-crush: please report it with the input map and the command "
          "line (nothing was written)")
# A weight that crushtool's decompiler rounds (3 decimals on Pacific, 5 later)
# comes back within half a unit of its last digit: 0.0005 * 0x10000 < 33.
_ROUNDING = 34


def _weights_close(a: Any, b: Any) -> bool:
    return abs(round(float(a) * 0x10000) - round(float(b) * 0x10000)) <= _ROUNDING


def _round_trip_diff(before: Mapping[str, Any], after: Mapping[str, Any]) -> tuple[str, int]:
    """(what differs beyond weight rounding, or '', number of weights rounded)."""
    rounded = 0
    for key in ("devices", "types", "rules", "tunables"):
        if before.get(key) != after.get(key):
            return key, rounded
    a_buckets = {b["id"]: b for b in before["buckets"]}
    b_buckets = {b["id"]: b for b in after["buckets"]}
    if set(a_buckets) != set(b_buckets):
        return "buckets", rounded
    for bid, a in a_buckets.items():
        b = b_buckets[bid]
        if (a["name"], a["alg"], a["type_id"], [i["id"] for i in a["items"]]) != (
                b["name"], b["alg"], b["type_id"], [i["id"] for i in b["items"]]):
            return f"bucket {a['name']}", rounded
        if "~" in a["name"]:
            continue  # shadow weights are sums Ceph recomputes from the devices
        for x, y in zip(a["items"], b["items"]):
            if x["weight"] != y["weight"]:
                if abs(x["weight"] - y["weight"]) > _ROUNDING:
                    return f"bucket {a['name']} weights", rounded
                rounded += 1
    a_args, b_args = before.get("choose_args", {}), after.get("choose_args", {})
    if set(a_args) != set(b_args):
        return "choose_args", rounded
    for index, args in a_args.items():
        others = b_args[index]
        if [(x["bucket_id"], x.get("ids"), [len(p) for p in x.get("weight_set", [])])
                for x in args] != [(y["bucket_id"], y.get("ids"),
                                    [len(p) for p in y.get("weight_set", [])]) for y in others]:
            return f"choose_args {index}", rounded
        for x, y in zip(args, others):
            for p, q in zip(x.get("weight_set", []), y.get("weight_set", [])):
                for v, w in zip(p, q):
                    if v != w:
                        if not _weights_close(v, w):
                            return f"choose_args {index} weights", rounded
                        rounded += 1
    return "", rounded


def round_trip(tools: Tools, binary: bytes) -> list[str]:
    """Warnings from crushtool -d | crushtool -c of the output (empty when it reproduces the map).

    crushtool's decompiler prints weights rounded, and the weight sets copy
    class sums that are rarely round numbers, so a decompiled copy of a map
    with weight sets is usually not the same map: that is reported as a
    warning (the binary we write is the map, and our --text output carries
    exact weights).  Any other difference is a bug.
    """
    again = tools.compile(tools.decompile(binary))
    if again == binary:
        return []
    what, rounded = _round_trip_diff(tools.dump(binary), tools.dump(again))
    if what:
        raise CrushError(
            f"internal error: crushtool -d | crushtool -c of the generated map changes {what}; "
            + REPORT
        )
    if not rounded:
        return []
    return [
        f"crushtool -d prints weights rounded: a decompiled and recompiled copy of this map "
        f"differs in {rounded} weights, so its weight sets would no longer copy the class "
        "weights exactly; install this binary (or compile the --text output, which carries "
        "exact weights), and re-run sla-crush generate after editing decompiled text"
    ]


def grid_notes(choose_args: Mapping[int, Sequence[ChooseArg]]) -> list[str]:
    """A note when weights of 256 and more had to go on crushtool's float32 grid."""
    off = sum(
        1 for args in choose_args.values() for arg in args for row in arg.weight_set
        for w in row if nearest_text_weight(w)[1] != w
    )
    if not off:
        return []
    return [
        f"{off} weight-set values are 256 or more and off crushtool's float32 grid: they were "
        "written as the nearest value crushtool can hold (within 2**-15 relative); R4 is "
        "measured on the compiled map"
    ]


def check_output(
    tools: Tools,
    before: Mapping[str, Any],
    binary: bytes,
    choose_args: Mapping[int, tuple[ChooseArg, ...]],
    owned_rules: Sequence[str],
) -> list[str]:
    """Every guard on the compiled map (CrushError on a bug of ours); their warnings.

    before: the input map's dump; choose_args: our weight sets written, by
    pool; owned_rules: the copy rules written.
    """
    after = tools.dump(binary)
    check_unchanged(before, after, set(choose_args), owned_rules)
    check_flat(crushmap_from_dump(after), choose_args)
    return grid_notes(choose_args) + round_trip(tools, binary)


def _pool_names(tools: Tools, osdmap: bytes | None) -> dict[int, str]:
    if osdmap is None:
        return {}
    pools = tools.osdmap_dump(osdmap).get("pools", [])
    return {int(p["pool"]): str(p.get("pool_name", "")) for p in pools}


def positional_notes(
    tools: Tools,
    crush: CrushMap,
    choose_args: Mapping[int, tuple[ChooseArg, ...]],
    live_osdmap: bytes | None,
) -> tuple[tuple[int, ...], list[str]]:
    """(the pools given whose positional weight set the flat one replaces, a note on
    each of them and a warning on each positional set of a pool not given)."""
    positional = positional_pools(crush.choose_args)
    upgraded = tuple(p for p in positional if p in choose_args)
    notes = [
        f"pool {p}: its weight set had {positional[p]} positions (an older sla-crush); "
        f"replaced by the flat one, so its PGs under {R.SHARED}/{R.HYBRID} move back to the "
        f"{R.ISOLATED_NORMAL} placement"
        for p in upgraded
    ]
    foreign = {p: n for p, n in positional.items() if p not in choose_args}
    if foreign:
        names = _pool_names(tools, live_osdmap)
        notes += [positional_warning(p, n, names.get(p)) for p, n in foreign.items()]
    return upgraded, notes
