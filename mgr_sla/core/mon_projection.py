"""The mon's own PG projection on a size change, run before the module asks
for one. Pure.

`osd pool set size` is refused (ERANGE) when the mon's projection of PGs per
OSD passes mon_max_pg_per_osd. Up to Pacific it counts every pool's
pg_num_target x size over all in OSDs; from 17.2.6 and Reef, the pools on
the changed pool's rule over the in OSDs under that rule's takes. Each is
an average (the PG slots projection counts each urgent OSD), but a refusal
part-way through a switch would leave some pools shared and others not, so
a pool the mon would refuse stays isolated, and says why.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace

# releases whose mon counts cluster-wide; Quincy changed within its series
# (17.2.6), so both counts apply to it
CLUSTER_WIDE = frozenset({"luminous", "mimic", "nautilus", "octopus", "pacific"})
PER_RULE_FROM_START = frozenset({"reef", "squid", "tentacle", "umbrella"})


@dataclass(frozen=True)
class PoolPgs:
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
                  in_osds: int, osds_under: Callable[[int], int], release: str
                  ) -> dict[int, str]:
    """pool id -> the mon's refusal, for each raise it would refuse, taken in
    order as the module sends them (a raise the mon accepts counts for the
    next ones; a refused one, or one not sent, does not)."""
    cluster_wide, per_rule = counts_for(release)
    now: dict[int, PoolPgs] = {p.pool_id: p for p in pools}
    refused: dict[int, str] = {}
    for step in raises:
        current = now.get(step.pool_id)
        if current is None:
            continue
        trial = {**now, step.pool_id: replace(current, size=step.size, rule_id=step.rule_id)}
        why = None
        if cluster_wide:
            why = _over(trial.values(), limit, in_osds, "in OSDs")
        if why is None and per_rule:
            why = _over([p for p in trial.values() if p.rule_id == step.rule_id], limit,
                        osds_under(step.rule_id), "in OSDs under its rule's takes")
        if why is None:
            now = trial if step.sent else now
        else:
            refused[step.pool_id] = (f"the mon would refuse 'osd pool set {step.name} size "
                                     f"{step.size}' (ERANGE): {why}")
    return refused


def _over(pools: Iterable[PoolPgs], limit: int, osds: int, what: str) -> str | None:
    total = sum(p.pg_num * p.size for p in pools)
    most = limit * max(osds, 3)  # the mon assumes 3 OSDs at least
    if total <= most:
        return None
    return (f"{total} PG replicas projected, over mon_max_pg_per_osd {limit} x "
            f"{max(osds, 3)} {what} = {most}")
