"""One step of the bounded sla_shared calibration loop (pure: measure elsewhere).

The weight formulas in weightsets.py assume draws without collisions; the real
draw retries when it hits a failure domain already used, which moves load
around.  We measure the urgent replicas each failure domain gets, then nudge
the overall urgent amount and each domain's factor toward its
weight-proportional target.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from .topology import Topology
from .weightsets import SharedParams

SHARE_TOLERANCE = 0.03  # overall urgent share within 3% of target
DOMAIN_TOLERANCE = 0.10  # per-domain load within 10% where the sample is big enough
MIN_EXPECTED = 200  # replicas a domain must expect before its own factor is tuned


@dataclass(frozen=True)
class Measurement:
    pgs: int
    urgent_by_domain: Mapping[int, int]  # failure domain id -> urgent replicas

    @property
    def urgent_per_pg(self) -> float:
        return sum(self.urgent_by_domain.values()) / self.pgs if self.pgs else 0.0


def next_params(
    topo: Topology, params: SharedParams, measured: Measurement
) -> tuple[SharedParams, bool]:
    """(adjusted params, converged?)."""
    wanted = topo.target_urgent_share() * topo.size
    got = measured.urgent_per_pg
    share_ok = abs(got - wanted) <= SHARE_TOLERANCE * wanted
    urgent_total = topo.urgent_weight
    corrections = dict(params.corrections)
    domains_ok = True
    for d in topo.domains:
        if d.urgent_weight == 0:
            continue
        expected = wanted * d.urgent_weight / urgent_total * measured.pgs
        if expected < MIN_EXPECTED:
            continue
        seen = measured.urgent_by_domain.get(d.id, 0)
        if abs(seen - expected) > DOMAIN_TOLERANCE * expected:
            domains_ok = False
        step = (expected / seen) ** 0.8 if seen else 2.0
        corrections[d.id] = params.correction(d.id) * min(2.0, max(0.5, step))
    # Keep the factors' weighted mean at 1 so middle_share keeps its meaning.
    mean = sum(corrections.get(d.id, 1.0) * d.urgent_weight for d in topo.domains) / urgent_total
    corrections = {k: v / mean for k, v in corrections.items()}
    middle = params.middle_share
    from_middle = got - params.tail
    if middle > 0 and from_middle > 0.01:
        middle *= (wanted - params.tail) / from_middle
    elif wanted - params.tail > 0:
        middle = max(middle * 2.0, wanted - params.tail)
    middle = max(0.0, middle)
    return SharedParams(params.tail, middle, corrections), share_ok and domains_ok
