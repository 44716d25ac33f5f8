"""choose_args generation on hand-made CRUSH models (no tools run)."""

import pytest

from crush_rules.crushmap import Bucket, CrushMap, Item
from crush_rules.errors import CrushError
from crush_rules.rules import Placement, naive_two_emit_steps, rule_steps
from crush_rules.topology import analyse
from crush_rules.weightsets import (
    SharedParams,
    hybrid_choose_args,
    initial_params,
    plan_domains,
    shared_choose_args,
)

W = 65536


def model(hosts: list[list[tuple[str, int]]]) -> CrushMap:
    """Real hosts under root 'default' plus the ~hdd / ~ssd shadow trees Ceph would make."""
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


def test_shared_root_reuses_normal_shadow_ids_and_weights():
    crush = model(PAPER)
    topo = analyse(crush, Placement(), 3)
    args = _args_by_bucket(shared_choose_args(crush, topo, initial_params(topo)))
    root = args[-1]
    shadow_root = crush.bucket_named("default~hdd")
    assert root.ids == tuple(i.id for i in shadow_root.items)
    for position in root.weight_set[:-1]:  # no urgent-only host: every position hashes as hdd
        assert position == tuple(i.weight for i in shadow_root.items)


def test_first_position_excludes_urgent_devices():
    crush = model(PAPER)
    topo = analyse(crush, Placement(), 3)
    args = _args_by_bucket(shared_choose_args(crush, topo, initial_params(topo)))
    host = args[-2]
    assert host.weight_set[0] == (W, 0)  # hdd keeps its weight, ssd none: normal inclusion
    hdd, ssd = host.weight_set[1]
    assert hdd == W and ssd == pytest.approx(3 * W, rel=0.01)  # 0.75 of each later leaf draw


def test_disjoint_with_much_ssd_uses_a_tail_position():
    crush = model(DISJOINT_BIG)
    topo = analyse(crush, Placement(), 3)
    params = initial_params(topo)
    assert params.tail == 1  # 1.5 urgent replicas/PG: one tail position + 0.5 from the middle
    plans, strain = plan_domains(topo, params)
    assert strain < 0.9
    ssd_host = next(d for d in topo.domains if d.is_urgent_only)
    hdd_host = next(d for d in topo.domains if d.urgent_weight == 0)
    assert plans[ssd_host.id].above[0] == 0 and plans[ssd_host.id].above[1] > 0
    assert plans[hdd_host.id].above[2] == 0  # the tail draws urgent only
    assert plans[hdd_host.id].normal_on == (True, True, False)


def test_urgent_only_hosts_enter_only_at_the_last_middle_position():
    crush = model([[("hdd", W)] * 2 for _ in range(6)] + [[("ssd", W)] * 2 for _ in range(2)])
    topo = analyse(crush, Placement(), 4)
    params = initial_params(topo)
    plans, _ = plan_domains(topo, params)
    ssd_host = next(d for d in topo.domains if d.is_urgent_only)
    last_middle = 3 - params.tail
    drawn_at = [p for p, w in enumerate(plans[ssd_host.id].above) if w]
    assert drawn_at and set(drawn_at) <= set(range(last_middle, 4))


def test_hybrid_positions():
    crush = model(PAPER)
    topo = analyse(crush, Placement(), 3)
    args = _args_by_bucket(hybrid_choose_args(crush, topo))
    assert args[-1].ids == ()
    assert args[-2].weight_set == ((0, W), (W, 0), (W, 0))  # primary ssd, the rest hdd


def test_shared_params_middle_share_scales_urgent_weight():
    crush = model(PAPER)
    topo = analyse(crush, Placement(), 3)
    low = _args_by_bucket(shared_choose_args(crush, topo, SharedParams(0, 0.5)))
    high = _args_by_bucket(shared_choose_args(crush, topo, SharedParams(0, 1.5)))
    assert low[-2].weight_set[1][1] < high[-2].weight_set[1][1]


@pytest.mark.parametrize(
    ("hosts", "placement", "size", "needle"),
    [
        (PAPER, Placement(), 5, "fewer than --size 5"),
        (PAPER, Placement(urgent_class="nvme"), 3, "no 'nvme' devices"),
        (PAPER, Placement(failure_domain="rack"), 3, "not a bucket type"),
        (PAPER, Placement(root="nope"), 3, "root 'nope'"),
    ],
)
def test_refusals_name_the_fix(hosts, placement, size, needle):
    with pytest.raises(CrushError) as err:
        analyse(model(hosts), placement, size)
    assert needle in str(err.value)
    assert "\n" not in str(err.value)


def test_rule_steps():
    p = Placement()
    assert rule_steps("sla_isolated_normal", p)[0] == "take default class hdd"
    assert rule_steps("sla_shared", p) == rule_steps("sla_hybrid", p)
    assert naive_two_emit_steps(p).count("emit") == 2
