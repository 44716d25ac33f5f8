"""Per-pool ``choose_args`` that turn one plain chooseleaf rule into sla_shared or sla_hybrid.

sla_shared (normal pools), for a rule ``take <root>; chooseleaf firstn 0 type <fd>``:

* Above the failure domains, every bucket's ``ids`` are the normal-class
  shadow ids and its weights the normal-class weights, so straw2 hashes and
  weighs exactly as ``take <root> class <normal>`` does: whenever the draw
  lands on a normal device, it is the device the isolated rule picks.  That
  is why switching isolated <-> shared only moves replicas that become urgent.
* Replica positions have three roles (weight sets are per position):
  - position 0 ("first"): urgent devices weigh 0, so every PG keeps a normal
    replica (normal inclusion);
  - "middle" positions 1..p*: inside a failure domain urgent devices get a
    tuned weight, so some leaf draws land on urgent devices of mixed domains
    without changing which domain was drawn; urgent-only domains take part only
    at the last middle position p*, because an urgent replica drawn earlier
    from a domain the isolated rule never draws shifts the later picks;
  - "tail" positions after p*: urgent devices only, weighted by their own
    weight; used when the target share needs more than the middle positions
    can give.  Nothing normal follows them, so they shift nothing.

sla_hybrid (urgent pools short of urgent devices): position 0 urgent devices
only, later positions normal devices only; a single chooseleaf keeps every
replica in a distinct failure domain, even on hosts that hold both classes.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

from .crushmap import Bucket, ChooseArg, CrushMap
from .fixedpoint import ONE, quantize
from .topology import FailureDomain, Topology

# A leaf draw cannot be made urgent with certainty by weights alone; past this
# probability the weight needed explodes and we use a tail position instead.
MAX_LEAF_SHARE = 0.9


@dataclass(frozen=True)
class SharedParams:
    """The knobs of the sla_shared weight sets (set by the calibration loop)."""

    tail: int  # number of urgent-only positions at the end
    middle_share: float  # urgent replicas per PG wanted from the middle positions
    corrections: Mapping[int, float] = field(default_factory=dict)  # failure domain id -> factor

    def correction(self, domain_id: int) -> float:
        return self.corrections.get(domain_id, 1.0)


@dataclass(frozen=True)
class DomainPlan:
    """Per position: the failure domain's weight in the draw above it, and the
    factor applied to its urgent devices' weights inside it."""

    above: tuple[int, ...]
    urgent_factor: tuple[float, ...]
    normal_on: tuple[bool, ...]


def last_middle_position(size: int, tail: int) -> int:
    return size - 1 - tail


def plan_domains(topo: Topology, params: SharedParams) -> tuple[dict[int, DomainPlan], float]:
    """The per-domain plan and its worst strain (>= MAX_LEAF_SHARE means infeasible)."""
    size, tail = topo.size, params.tail
    last_middle = last_middle_position(size, tail)
    middle_positions = last_middle  # positions 1..last_middle
    normal_total = topo.normal_weight
    urgent_total = topo.urgent_weight
    wanted = {
        d.id: params.middle_share * params.correction(d.id) * d.urgent_weight / urgent_total
        for d in topo.domains
    }
    urgent_only_share = sum(wanted[d.id] for d in topo.domains if d.is_urgent_only)
    strain = urgent_only_share
    if params.middle_share > 1e-9 and middle_positions == 0:
        strain = math.inf
    q = min(urgent_only_share, MAX_LEAF_SHARE)
    plans: dict[int, DomainPlan] = {}
    for d in topo.domains:
        above: list[int] = []
        factor: list[float] = []
        normal_on: list[bool] = []
        for p in range(size):
            if p == 0:
                above.append(d.normal_weight)
                factor.append(0.0)
                normal_on.append(True)
            elif p <= last_middle:
                normal_on.append(True)
                if d.is_urgent_only:
                    # P(draw d) = b / (H + B): solve for b given the wanted share.
                    weight = wanted[d.id] * normal_total / (1 - q) if p == last_middle else 0.0
                    above.append(quantize(weight / ONE))
                    factor.append(1.0)
                elif d.urgent_weight == 0:
                    above.append(d.normal_weight)
                    factor.append(0.0)
                else:
                    above.append(d.normal_weight)
                    drawn = d.normal_weight / normal_total * ((1 - q) if p == last_middle else 1)
                    leaf_share = wanted[d.id] / middle_positions / drawn
                    strain = max(strain, leaf_share)
                    leaf_share = min(leaf_share, MAX_LEAF_SHARE)
                    # P(urgent leaf) = f*S / (N + f*S)  =>  f = g/(1-g) * N/S
                    factor.append(
                        leaf_share / (1 - leaf_share) * d.normal_weight / d.urgent_weight
                    )
            else:
                above.append(quantize(params.correction(d.id) * d.urgent_weight / ONE))
                factor.append(1.0)
                normal_on.append(False)
        plans[d.id] = DomainPlan(tuple(above), tuple(factor), tuple(normal_on))
    return plans, strain


def initial_params(topo: Topology) -> SharedParams:
    """The fewest tail positions whose plan is feasible."""
    expected = topo.target_urgent_share() * topo.size
    best: tuple[float, SharedParams] | None = None
    for tail in range(topo.size):
        if tail > expected + 1e-9:
            break
        if tail and tail > topo.urgent_domains:
            break
        params = SharedParams(tail, max(0.0, expected - tail))
        _, strain = plan_domains(topo, params)
        if strain < MAX_LEAF_SHARE:
            return params
        if best is None or strain < best[0]:
            best = (strain, params)
    return best[1] if best else SharedParams(0, expected)


def _normal_id(crush: CrushMap, item_id: int, normal_class: str) -> int:
    if item_id >= 0:
        return item_id
    shadow = crush.shadow_of(crush.buckets[item_id], normal_class)
    return shadow.id if shadow else item_id


def _domains_below(crush: CrushMap, topo: Topology) -> dict[int, list[FailureDomain]]:
    """Bucket id -> the failure domains at or below it (for buckets under the root)."""
    domains = {d.id: d for d in topo.domains}
    below: dict[int, list[FailureDomain]] = {}

    def visit(bucket: Bucket) -> list[FailureDomain]:
        if bucket.id in below:
            return below[bucket.id]
        found = [domains[bucket.id]] if bucket.id in domains else []
        if not found:
            for item in bucket.items:
                if item.id < 0:
                    found += visit(crush.buckets[item.id])
        below[bucket.id] = found
        return found

    visit(topo.root)
    return below


def _choose_args(
    crush: CrushMap,
    topo: Topology,
    above_weight: Mapping[int, tuple[int, ...]],
    device_weight: Mapping[int, tuple[int, ...]],
    with_ids: bool,
) -> tuple[ChooseArg, ...]:
    """Weight sets for every real bucket under the root.

    above_weight: failure domain id -> its weight per position;
    device_weight: device id -> its weight per position (inside its domain).
    """
    below = _domains_below(crush, topo)
    size = topo.size
    normal = topo.placement.normal_class

    def inside_weight(item_id: int, p: int) -> int:
        if item_id >= 0:
            return device_weight.get(item_id, (0,) * size)[p]
        return sum(inside_weight(i.id, p) for i in crush.buckets[item_id].items)

    in_domain = {b.id for d in topo.domains for b in crush.buckets_under(d.id)}
    args: list[ChooseArg] = []
    for bucket in crush.buckets_under(topo.root.id):
        below_domain = bucket.id in in_domain
        positions: list[tuple[int, ...]] = []
        for p in range(size):
            row: list[int] = []
            for item in bucket.items:
                if below_domain:
                    row.append(inside_weight(item.id, p))
                elif item.id >= 0:
                    row.append(0)  # a device above the failure domains is never chosen
                else:
                    row.append(
                        sum(above_weight[d.id][p] for d in below[item.id])
                    )
            positions.append(tuple(row))
        ids = tuple(_normal_id(crush, i.id, normal) for i in bucket.items) if with_ids else ()
        if ids and all(i == item.id for i, item in zip(ids, bucket.items, strict=True)):
            ids = ()
        args.append(ChooseArg(bucket.id, tuple(positions), ids))
    return tuple(args)


def shared_choose_args(
    crush: CrushMap, topo: Topology, params: SharedParams
) -> tuple[ChooseArg, ...]:
    plans, _ = plan_domains(topo, params)
    normal, urgent = topo.placement.normal_class, topo.placement.urgent_class
    device_weight: dict[int, tuple[int, ...]] = {}
    for d in topo.domains:
        plan = plans[d.id]
        for device, weight in crush.device_weights_under(d.id).items():
            cls = crush.devices.get(device)
            row: list[int] = []
            for p in range(topo.size):
                if cls == normal:
                    row.append(weight if plan.normal_on[p] else 0)
                elif cls == urgent:
                    f = plan.urgent_factor[p]
                    row.append(weight if f == 1.0 else quantize(f * weight / ONE) if f > 0 else 0)
                else:
                    row.append(0)  # a third class stays out of the normal pools
            device_weight[device] = tuple(row)
    above = {d.id: plans[d.id].above for d in topo.domains}
    return _choose_args(crush, topo, above, device_weight, with_ids=True)


def hybrid_choose_args(crush: CrushMap, topo: Topology) -> tuple[ChooseArg, ...]:
    normal, urgent = topo.placement.normal_class, topo.placement.urgent_class
    size = topo.size
    above = {
        d.id: (d.urgent_weight,) + (d.normal_weight,) * (size - 1) for d in topo.domains
    }
    device_weight: dict[int, tuple[int, ...]] = {}
    for d in topo.domains:
        for device, weight in crush.device_weights_under(d.id).items():
            cls = crush.devices.get(device)
            first = weight if cls == urgent else 0
            rest = weight if cls == normal else 0
            device_weight[device] = (first,) + (rest,) * (size - 1)
    return _choose_args(crush, topo, above, device_weight, with_ids=False)
