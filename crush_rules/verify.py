"""The requirement checks, on PG mappings held in memory (no tools run here).

crushtool counts ``[4,12,4]`` as a complete mapping and never looks at
failure domains, so every property the SLA relies on is checked here, PG by
PG, on mappings of a real pool's PG ids.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from . import rules as R

MIN_SHARE_RATIO = 0.8
MAX_SHARE_RATIO = 1.3
MIN_MOVEMENT_EFFICIENCY = 0.95

Mappings = Mapping[int, Sequence[int]]  # PG seed -> OSDs, primary first


@dataclass(frozen=True)
class Layout:
    """What the checks need to know about the devices."""

    device_class: Mapping[int, str | None]
    domain_of_device: Mapping[int, int]
    normal_class: str
    urgent_class: str
    size: int
    target_urgent_share: float
    device_weight: Mapping[int, int] = field(default_factory=dict)


@dataclass(frozen=True)
class RuleReport:
    rule: str
    pool_id: int | None
    pgs: int
    short_pgs: int
    duplicate_osd_pgs: int
    failure_domain_violations: int
    isolation_violations: int | None
    inclusion: float
    urgent_share: float
    urgent_share_ratio: float | None
    primary_urgent: float
    urgent_load_cv: float | None
    urgent_load_noise_cv: float | None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class PairReport:
    replicas_moved: int
    replicas_must_move: int
    movement_efficiency: float

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class VerifyReport:
    rules: Mapping[str, RuleReport]
    pair: PairReport | None
    target_urgent_share: float
    failures: tuple[str, ...]
    warnings: tuple[str, ...] = ()
    extra: Mapping[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.failures

    def to_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "failures": list(self.failures),
            "warnings": list(self.warnings),
            "target_urgent_share": round(self.target_urgent_share, 4),
            "rules": {name: report.to_dict() for name, report in self.rules.items()},
            "isolated_normal_to_shared": self.pair.to_dict() if self.pair else None,
            **dict(self.extra),
        }


def _ratio(numerator: float, denominator: float) -> float:
    return numerator / denominator if denominator else 0.0


def _urgent_load_cv(mappings: Mappings, layout: Layout) -> tuple[float | None, float | None]:
    """(cv, noise_cv) of replicas per unit weight over urgent OSDs.

    cv is the coefficient of variation of each urgent OSD's replicas divided
    by its weight; noise_cv is what Poisson sampling alone would give with
    this many PGs.  Load proportional to weight shows as cv close to noise_cv.
    """
    urgent = [d for d, c in layout.device_class.items()
              if c == layout.urgent_class and layout.device_weight.get(d, 0) > 0]
    if len(urgent) < 2:
        return None, None
    count = dict.fromkeys(urgent, 0)
    for osds in mappings.values():
        for osd in osds:
            if osd in count:
                count[osd] += 1
    total_weight = sum(layout.device_weight[d] for d in urgent)
    total = sum(count.values())
    if not total:
        return None, None
    ratios = [count[d] / (total * layout.device_weight[d] / total_weight) for d in urgent]
    expected = [total * layout.device_weight[d] / total_weight for d in urgent]
    noise = statistics.fmean(1 / e ** 0.5 for e in expected)
    return round(statistics.pstdev(ratios), 4), round(noise, 4)


def check_rule(
    name: str, mappings: Mappings, layout: Layout, pool_id: int | None, *, hybrid: bool = False
) -> RuleReport:
    """Count the defects of one rule's mappings.

    hybrid=True: the pool has sla_hybrid weight sets, so an isolation
    violation is a PG whose primary is not urgent or whose others are not normal.
    """
    short = duplicate = fd_violations = off_class = with_normal = urgent = primaries = 0
    replicas = 0
    normal, urgent_class = layout.normal_class, layout.urgent_class
    allowed: set[str] | None = None
    if name == R.ISOLATED_NORMAL:
        allowed = {normal}
    elif name in (R.ISOLATED_URGENT, R.FAST):
        allowed = {urgent_class}
    for osds in mappings.values():
        replicas += len(osds)
        if len(osds) < layout.size:
            short += 1
        if len(set(osds)) != len(osds):
            duplicate += 1
        domains = [layout.domain_of_device.get(o, -o - 10_000_000) for o in osds]
        if len(set(domains)) != len(domains):
            fd_violations += 1
        classes = [layout.device_class.get(o) for o in osds]
        if allowed is not None and any(c not in allowed for c in classes):
            off_class += 1
        if hybrid and classes and (
            classes[0] != urgent_class or any(c != normal for c in classes[1:])
        ):
            off_class += 1
        if normal in classes:
            with_normal += 1
        urgent += sum(1 for c in classes if c == urgent_class)
        if classes and classes[0] == urgent_class:
            primaries += 1
    pgs = len(mappings)
    share = _ratio(urgent, replicas)
    cv, noise = _urgent_load_cv(mappings, layout) if name == R.SHARED else (None, None)
    return RuleReport(
        rule=name,
        pool_id=pool_id,
        pgs=pgs,
        short_pgs=short,
        duplicate_osd_pgs=duplicate,
        failure_domain_violations=fd_violations,
        isolation_violations=off_class if allowed is not None or hybrid else None,
        inclusion=round(_ratio(with_normal, pgs), 4),
        urgent_share=round(share, 4),
        urgent_share_ratio=(
            round(share / layout.target_urgent_share, 4)
            if name == R.SHARED and layout.target_urgent_share else None
        ),
        primary_urgent=round(_ratio(primaries, pgs), 4),
        urgent_load_cv=cv,
        urgent_load_noise_cv=noise,
    )


def movement(isolated: Mappings, shared: Mappings, layout: Layout) -> PairReport:
    """Replicas a pool moves when switched isolated <-> shared, vs those that must move.

    PGs are compared as sets: a replica that only changes position does not move.
    Every urgent replica under shared must move (the isolated rule has none).
    """
    moved = must = 0
    for pg, before in isolated.items():
        after = shared.get(pg, ())
        moved += len(set(after) - set(before))
        must += sum(1 for o in after if layout.device_class.get(o) == layout.urgent_class)
    efficiency = _ratio(must, moved) if moved else 1.0
    return PairReport(moved, must, round(efficiency, 4))


def requirement_failures(
    reports: Mapping[str, RuleReport],
    pair: PairReport | None,
    hybrid_registered: bool,
) -> tuple[list[str], list[str]]:
    """(failures, warnings) for requirements 1-5."""
    failures: list[str] = []
    warnings: list[str] = []
    for name, r in reports.items():
        label = f"{name} (pool {r.pool_id})" if r.pool_id is not None else name
        if r.duplicate_osd_pgs:
            failures.append(f"R1 {label}: {r.duplicate_osd_pgs}/{r.pgs} PGs map one OSD twice")
        if r.failure_domain_violations:
            failures.append(
                f"R1 {label}: {r.failure_domain_violations}/{r.pgs} PGs put two replicas "
                "in one failure domain"
            )
        if r.short_pgs:
            message = f"{label}: {r.short_pgs}/{r.pgs} PGs have fewer replicas than the size"
            if name in (R.ISOLATED_NORMAL, R.SHARED):
                failures.append("R1 " + message)
            else:
                warnings.append(message)
        if r.isolation_violations:
            failures.append(
                f"R2 {label}: {r.isolation_violations}/{r.pgs} PGs put a replica on a device "
                "class the rule excludes"
            )
    shared = reports.get(R.SHARED)
    if shared is not None:
        if shared.inclusion < 1.0:
            failures.append(
                f"R3 {R.SHARED}: only {shared.inclusion:.2%} of PGs keep a normal-class replica"
            )
        ratio = shared.urgent_share_ratio
        if ratio is None or not MIN_SHARE_RATIO <= ratio <= MAX_SHARE_RATIO:
            failures.append(
                f"R4 {R.SHARED}: urgent share {shared.urgent_share} is {ratio} of the "
                f"weight-proportional target (allowed {MIN_SHARE_RATIO}-{MAX_SHARE_RATIO})"
            )
    if pair is not None and pair.movement_efficiency < MIN_MOVEMENT_EFFICIENCY:
        failures.append(
            f"R5 {R.ISOLATED_NORMAL}<->{R.SHARED}: movement efficiency "
            f"{pair.movement_efficiency} < {MIN_MOVEMENT_EFFICIENCY} "
            f"({pair.replicas_moved} moved, {pair.replicas_must_move} must move)"
        )
    hybrid = reports.get(R.HYBRID)
    if hybrid is not None and hybrid_registered and hybrid.primary_urgent < 1.0:
        failures.append(
            f"{R.HYBRID}: only {hybrid.primary_urgent:.2%} of PGs have an urgent primary"
        )
    if hybrid is not None and not hybrid_registered:
        warnings.append(
            f"{R.HYBRID} has no choose_args (give --urgent-pool-id): pools switched to it "
            "map like Map_all"
        )
    return failures, warnings
