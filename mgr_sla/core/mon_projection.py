"""The mon's own PG projection on a size change, run before the module asks
for one. Pure.

`osd pool set size` is refused (ERANGE) when the mon's projection of PGs per
OSD passes mon_max_pg_per_osd. Up to Pacific it counts every pool's
pg_num_target x size over all in OSDs; from 17.2.6 and Reef, the pools on
the changed pool's rule over the in OSDs under that rule's takes. Each is
an average (the PG slots projection counts each urgent OSD), but a refusal
part-way through a switch would leave some pools shared and others not, so
a pool the mon would refuse stays isolated, and says why.

Up to Pacific (and Quincy) the mon runs the same count on a size *decrease*
(measured: `osd pool set P size 2` refused with ERANGE once OSDs were marked
out); Tentacle counts increases only. There a copy pool's way back, the size
it isolates with, could be refused after a failure domain's OSDs are marked
out: the raise is admitted only when it fits with the largest failure domain
out (`domain_osds`), so the module never shares a copy it could not drop.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import NamedTuple

# releases whose mon counts cluster-wide; Quincy changed within its series
# (17.2.6), so both counts apply to it
CLUSTER_WIDE = frozenset({"luminous", "mimic", "nautilus", "octopus", "pacific"})
PER_RULE_FROM_START = frozenset({"reef", "squid", "tentacle", "umbrella"})


class PoolPgs(NamedTuple):
    pool_id: int
    pg_num: int  # pg_num_target: what the mon counts
    size: int
    rule_id: int


@dataclass(frozen=True)
class SizeRaise:
    """One pool going to a larger size, on the rule it is set to first."""

    pool_id: int
    name: str
    size: int
    rule_id: int
    sent: bool = True  # False: checked, but kept isolated anyway (it adds nothing)


def counts_for(release: str) -> tuple[bool, bool]:
    """(cluster-wide, per-rule): which of the mon's counts the release runs."""
    name = release.lower()
    if name in CLUSTER_WIDE:
        return True, False
    if name in PER_RULE_FROM_START:
        return False, True
    return True, True  # Quincy, or a release not known here: both must pass


def size_refusals(pools: Sequence[PoolPgs], raises: Sequence[SizeRaise], limit: int,
                  in_osds: int, osds_under: Callable[[int], int], release: str,
                  domain_osds: int = 0) -> dict[int, str]:
    """pool id -> the mon's refusal, for each raise it would refuse (or whose
    way back it could refuse with `domain_osds` in OSDs out, on the releases
    that count decreases too), taken in order as the module sends them (a
    raise the mon accepts counts for the next ones; a refused one, or one not
    sent, does not)."""
    cluster_wide, per_rule = counts_for(release)
    now: dict[int, PoolPgs] = {p.pool_id: p for p in pools}
    refused: dict[int, str] = {}
    for step in raises:
        current = now.get(step.pool_id)
        if current is None:
            continue
        trial = {**now, step.pool_id: current._replace(size=step.size, rule_id=step.rule_id)}
        why = None
        if cluster_wide:
            why = _over(trial.values(), limit, in_osds, "in OSDs")
        if why is None and per_rule:
            why = _over([p for p in trial.values() if p.rule_id == step.rule_id], limit,
                        osds_under(step.rule_id), "in OSDs under its rule's takes")
        back = None
        if why is None and cluster_wide and domain_osds > 0:
            back = _over(trial.values(), limit, in_osds - domain_osds,
                         "in OSDs left with the largest failure domain out")
        if why is None and back is None:
            now = trial if step.sent else now
        elif why is not None:
            refused[step.pool_id] = (f"the mon would refuse 'osd pool set {step.name} size "
                                     f"{step.size}' (ERANGE): {why}")
        else:
            refused[step.pool_id] = (
                f"the mon could refuse its way back, 'osd pool set {step.name} size "
                f"{step.size - 1}' (this release counts a size decrease too, ERANGE): {back}")
    return refused


def _over(pools: Iterable[PoolPgs], limit: int, osds: int, what: str) -> str | None:
    total = sum(p.pg_num * p.size for p in pools)
    most = limit * max(osds, 3)  # the mon assumes 3 OSDs at least
    if total <= most:
        return None
    return (f"{total} PG replicas projected, over mon_max_pg_per_osd {limit} x "
            f"{max(osds, 3)} {what} = {most}")
