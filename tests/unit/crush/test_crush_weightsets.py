"""choose_args generation on hand-made CRUSH models (no tools run)."""

import pytest

from crush_rules.crushmap import Bucket, CrushMap, Item
from crush_rules.errors import CrushError
from crush_rules.rules import RuleScope, naive_two_emit_steps, rule_steps
from crush_rules.topology import analyse
from crush_rules.weightsets import (
    MAX_POSITIONS,
    ensure_flat,
    flat_choose_args,
    hybrid_choose_args,
    positional_pools,
    positional_warning,
    shared_choose_args,
)

W = 65536


def model(hosts: list[list[tuple[str, int]]]) -> CrushMap:
    """Real hosts under root 'default' plus the ~hdd / ~ssd shadow trees Ceph would make.

    Besides hdd and ssd a device may be of class 'nvme' (a third class, no shadow tree).
    """
    devices: dict[int, str | None] = {}
    buckets: dict[int, Bucket] = {}
    next_id = -2
    host_ids = []
    osd = 0
    shadows: dict[str, list[Item]] = {"hdd": [], "ssd": []}
    for h, host in enumerate(hosts):
        items = []
        for cls, weight in host:
            devices[osd] = cls
            items.append(Item(osd, weight))
            osd += 1
        hid = next_id
        next_id -= 1
        buckets[hid] = Bucket(hid, f"node{h}", "host", "straw2", tuple(items))
        host_ids.append(hid)
        for cls in ("hdd", "ssd"):
            sid = next_id
            next_id -= 1
            own = tuple(i for i in items if devices[i.id] == cls)
            buckets[sid] = Bucket(sid, f"node{h}~{cls}", "host", "straw2", own)
            shadows[cls].append(Item(sid, sum(i.weight for i in own)))
    buckets[-1] = Bucket(-1, "default", "root", "straw2",
                         tuple(Item(h, buckets[h].weight) for h in host_ids))
    for cls in ("hdd", "ssd"):
        buckets[next_id] = Bucket(next_id, f"default~{cls}", "root", "straw2",
                                  tuple(shadows[cls]))
        next_id -= 1
    names = {o: f"osd.{o}" for o in devices}
    return CrushMap(devices, names, {0: "osd", 1: "host", 11: "root"}, buckets, {}, {})


PAPER = [[("hdd", W), ("ssd", W)] for _ in range(4)]
DISJOINT_BIG = [[("hdd", W)] * 2 for _ in range(4)] + [[("ssd", W)] * 2 for _ in range(4)]


def _args_by_bucket(args):
    return {a.bucket_id: a for a in args}


@pytest.mark.parametrize("hosts", [PAPER, DISJOINT_BIG])
def test_every_weight_set_has_exactly_one_position(hosts):
    crush = model(hosts)
    topo = analyse(crush, RuleScope(), 3)
    for args in (shared_choose_args(crush, topo), hybrid_choose_args(crush, topo)):
        assert args and all(len(a.weight_set) == MAX_POSITIONS == 1 for a in args)
        assert {a.bucket_id for a in args} == {b.id for b in crush.buckets_under(-1)}


def test_root_reuses_normal_shadow_ids_and_exact_weights():
    crush = model(DISJOINT_BIG)
    topo = analyse(crush, RuleScope(), 3)
    root = _args_by_bucket(shared_choose_args(crush, topo))[-1]
    shadow_root = crush.bucket_named("default~hdd")
    assert root.ids == tuple(i.id for i in shadow_root.items)
    assert root.weight_set == (tuple(i.weight for i in shadow_root.items),)
    assert root.weight_set[0][4:] == (0, 0, 0, 0)  # ssd-only hosts: no hdd weight


def test_inside_a_host_normal_devices_keep_their_weight_and_others_weigh_zero():
    crush = model([[("hdd", 3 * W), ("ssd", W), ("nvme", W)]] + [[("hdd", W), ("ssd", W)]] * 2)
    topo = analyse(crush, RuleScope(), 3)
    host = _args_by_bucket(shared_choose_args(crush, topo))[-2]
    assert host.weight_set == ((3 * W, 0, 0),)  # hdd kept, ssd and the third class none
    assert host.ids == ()  # devices hash with their own ids


def test_hybrid_is_the_same_flat_set():
    crush = model(PAPER)
    topo = analyse(crush, RuleScope(), 3)
    assert hybrid_choose_args(crush, topo) == shared_choose_args(crush, topo)
    assert flat_choose_args(crush, topo) == shared_choose_args(crush, topo)


def test_buckets_between_root_and_domains_hash_with_shadow_ids():
    crush = model(PAPER)
    buckets = dict(crush.buckets)
    hosts = [b for b in buckets.values() if b.type_name == "host" and "~" not in b.name]
    shadows = {
        c: [b for b in buckets.values() if b.name.endswith("~" + c) and b.type_name == "host"]
        for c in ("hdd", "ssd")
    }
    buckets[-100] = Bucket(-100, "rack0", "rack", "straw2",
                           tuple(Item(h.id, h.weight) for h in hosts))
    for n, c in enumerate(("hdd", "ssd")):
        buckets[-101 - n] = Bucket(-101 - n, f"rack0~{c}", "rack", "straw2",
                                   tuple(Item(s.id, s.weight) for s in shadows[c]))
    buckets[-1] = Bucket(-1, "default", "root", "straw2", (Item(-100, 8 * W),))
    crush = CrushMap(crush.devices, crush.device_names, {0: "osd", 1: "host", 3: "rack"},
                     buckets, {}, {})
    rack = _args_by_bucket(flat_choose_args(crush, analyse(crush, RuleScope("default", "host"),
                                                             3)))[-100]
    assert rack.ids == tuple(s.id for s in shadows["hdd"])
    assert rack.weight_set == ((W,) * 4,)


def test_a_positional_set_is_refused():
    crush = model(PAPER)
    topo = analyse(crush, RuleScope(), 3)
    flat = shared_choose_args(crush, topo)
    ensure_flat(7, flat)  # one position: fine
    positional = tuple(type(a)(a.bucket_id, a.weight_set * 3, a.ids) for a in flat)
    with pytest.raises(CrushError, match="pool 7 has 3 positions") as err:
        ensure_flat(7, positional)
    assert "ceph-mon abort" in str(err.value) and "\n" not in str(err.value)
    assert positional_pools({7: positional, 8: flat, -1: positional}) == {-1: 3, 7: 3}


def test_positional_warning_names_the_pool_the_risk_and_the_fix():
    text = positional_warning(9, 3, "rbd")
    assert "pool 9 (rbd)" in text and "3 positions" in text
    assert "aborts every ceph-mon" in text and "ceph osd crush weight-set rm rbd" in text
    assert "ceph osd crush weight-set rm-compat" in positional_warning(-1, 2)


@pytest.mark.parametrize(
    ("hosts", "scope", "size", "needle"),
    [
        (PAPER, RuleScope(), 5, "fewer than --size 5"),
        (PAPER, RuleScope(urgent_class="nvme"), 3, "no 'nvme' devices"),
        (PAPER, RuleScope(failure_domain="rack"), 3, "not a bucket type"),
        (PAPER, RuleScope(root="nope"), 3, "root 'nope'"),
    ],
)
def test_refusals_name_the_fix(hosts, scope, size, needle):
    with pytest.raises(CrushError) as err:
        analyse(model(hosts), scope, size)
    assert needle in str(err.value)
    assert "\n" not in str(err.value)


def test_rule_steps():
    p = RuleScope()
    assert rule_steps("sla_isolated_normal", p)[0] == "take default class hdd"
    assert rule_steps("sla_shared", p) == rule_steps("sla_hybrid", p)
    assert naive_two_emit_steps(p).count("emit") == 2
