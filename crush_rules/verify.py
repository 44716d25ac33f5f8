"""The requirement checks, on PG mappings held in memory (no tools run here).

crushtool counts ``[4,12,4]`` as a complete mapping and never looks at
failure domains, so every property the SLA relies on is checked here, PG by
PG, on mappings of a real pool's PG ids.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from . import rules as R
from .reports import CopyReport, PairReport, RuleReport
from .stats import P_FAIL, FitResult, proportional_fit

Mappings = Mapping[int, Sequence[int]]  # PG seed -> OSDs, primary first

REQUIREMENTS = {
    "R1": "no PG maps one OSD twice or puts two replicas in one failure domain "
          "(every rule; normal rules also map every PG to --size OSDs)",
    "R2": "isolated rules map only to their device class",
    "R3": "sla_shared keeps a normal-class replica in 100% of PGs",
    "R4": "sla_shared and sla_hybrid, with the pool's weight set, map every PG exactly like "
          "sla_isolated_normal (same OSDs, same order)",
    "R5": "switching a pool sla_isolated_normal <-> sla_shared moves 0 replicas",
    "R6": "the weight sets of the pools verified have one position (flat)",
    "R7": "the isolated rules put first replicas on their class's failure domains in proportion "
          "to the class weight (chi-square test, fails only at p < 1e-6; offline maps only)",
    "R8": "each copy rule sla_copy_N maps every PG at N replicas exactly like "
          "sla_isolated_normal, and at N + 1 replicas to one urgent-class OSD first followed "
          "by those same N normal-class OSDs in N failure domains, no OSD twice (the urgent "
          "copy may share a failure domain with a normal one: reported, not failed)",
}


@dataclass(frozen=True)
class Layout:
    """What the checks need to know about the devices."""

    device_class: Mapping[int, str | None]
    domain_of_device: Mapping[int, int]
    normal_class: str
    urgent_class: str
    size: int
    target_urgent_share: float = 0.0


def _ratio(numerator: float, denominator: float) -> float:
    return numerator / denominator if denominator else 0.0


def differing_pgs(mappings: Mappings, reference: Mappings) -> int:
    """PGs whose ordered OSD list differs from the reference's (PGs of either side)."""
    return sum(
        1 for pg in set(mappings) | set(reference)
        if tuple(mappings.get(pg, ())) != tuple(reference.get(pg, ()))
    )


def _allowed_classes(name: str, layout: Layout) -> set[str] | None:
    """The device classes an isolated rule may map to (R2); None for the other rules."""
    if name == R.ISOLATED_NORMAL:
        return {layout.normal_class}
    if name in (R.ISOLATED_URGENT, R.FAST):
        return {layout.urgent_class}
    return None


def check_rule(
    name: str,
    mappings: Mappings,
    layout: Layout,
    pool_id: int | None,
    *,
    isolated: Mappings | None = None,
) -> RuleReport:
    """Count the defects of one rule's mappings.

    isolated: sla_isolated_normal's mappings of the same PGs; given for
    sla_shared and sla_hybrid, which must map identically (R4).
    """
    short = duplicate = fd_violations = off_class = with_normal = urgent = primaries = 0
    replicas = 0
    normal, urgent_class = layout.normal_class, layout.urgent_class
    allowed = _allowed_classes(name, layout)
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
        if normal in classes:
            with_normal += 1
        urgent += sum(1 for c in classes if c == urgent_class)
        if classes and classes[0] == urgent_class:
            primaries += 1
    pgs = len(mappings)
    return RuleReport(
        rule=name,
        pool_id=pool_id,
        pgs=pgs,
        short_pgs=short,
        duplicate_osd_pgs=duplicate,
        failure_domain_violations=fd_violations,
        isolation_violations=off_class if allowed is not None else None,
        inclusion=round(_ratio(with_normal, pgs), 4),
        urgent_share=round(_ratio(urgent, replicas), 4),
        primary_urgent=round(_ratio(primaries, pgs), 4),
        pgs_differing_from_isolated=(
            differing_pgs(mappings, isolated) if isolated is not None else None
        ),
    )


def primary_fit(
    mappings: Mappings, domain_of_device: Mapping[int, int], weights: Mapping[int, int],
    names: Mapping[int, str],
) -> FitResult:
    """R7: do first replicas fall on failure domains in proportion to their class weight?

    A straw2 draw picks each item with probability weight / total, at every
    level, and the first replica (r = 0) is never retried for a collision, so
    per failure domain the first replicas follow the class weights exactly in
    expectation; the test says whether the observed counts are consistent with
    that given the sample size.
    """
    counts: dict[str, int] = {}
    for osds in mappings.values():
        if osds:
            domain = domain_of_device.get(osds[0])
            key = names.get(domain, str(domain)) if domain is not None else f"osd.{osds[0]}"
            counts[key] = counts.get(key, 0) + 1
    return proportional_fit(counts, {names.get(d, str(d)): float(w) for d, w in weights.items()})


def fit_failure(name: str, fit: FitResult) -> str | None:
    if fit.ok:
        return None
    return (
        f"R7 {name}: first replicas do not follow the class weights of the failure domains "
        f"(chi-square {fit.statistic:.1f} on {fit.categories - 1} degrees of freedom, "
        f"p = {fit.p_value:.1e} < {P_FAIL:g}, {fit.samples} PGs; {fit.worst} got "
        f"{fit.worst_observed}, expected {fit.worst_expected:.1f})"
    )


def movement(isolated: Mappings, shared: Mappings, layout: Layout) -> PairReport:
    """Replicas a pool moves when switched isolated <-> shared, vs those that must move.

    PGs are compared as sets: a replica that only changes position does not move.
    An urgent replica under shared would have to move (the isolated rule has
    none); with the flat weight sets there are none, so nothing may move (R5).
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
    """(failures, warnings) for requirements R1-R5 (R6 is checked on the weight sets)."""
    failures: list[str] = []
    warnings: list[str] = []
    for name, r in reports.items():
        fail, warn = _rule_failures(name, r, hybrid_registered)
        failures += fail
        warnings += warn
    shared = reports.get(R.SHARED)
    if shared is not None and shared.inclusion < 1.0:
        failures.append(
            f"R3 {R.SHARED}: only {shared.inclusion:.2%} of PGs keep a normal-class replica"
        )
    if pair is not None and pair.replicas_moved:
        failures.append(
            f"R5 {R.ISOLATED_NORMAL}<->{R.SHARED}: a switch moves {pair.replicas_moved} "
            "replicas; it must move none"
        )
    hybrid = reports.get(R.HYBRID)
    if hybrid is not None and not hybrid_registered:
        warnings.append(
            f"{R.HYBRID} has no choose_args (give --urgent-pool-id): pools switched to it "
            "map like Map_all"
        )
    return failures, warnings


def _rule_failures(
    name: str, r: RuleReport, hybrid_registered: bool
) -> tuple[list[str], list[str]]:
    """(failures, warnings) of one rule's report: R1, R2 and R4."""
    failures: list[str] = []
    warnings: list[str] = []
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
    differing = r.pgs_differing_from_isolated
    if differing and (name != R.HYBRID or hybrid_registered):
        failures.append(
            f"R4 {label}: {differing}/{r.pgs} PGs map differently from "
            f"{R.ISOLATED_NORMAL} (the pool's flat weight set is missing or not ours)"
        )
    return failures, warnings


def _copy_pg_counts(
    size: int, osds: tuple[int, ...], ref: tuple[int, ...], layout: Layout
) -> tuple[int, int, int, int, int, int, int, int, int, int]:
    """What one PG adds to each count of check_copy, from its OSDs at N + 1 and
    sla_isolated_normal's at N (ref): short, duplicate, urgent not first, urgent
    count, normal off class, normal failure domain, normal differing, shared
    failure domain, replicas added, replicas moved."""
    normal, urgent_class = layout.normal_class, layout.urgent_class
    classes = [layout.device_class.get(o) for o in osds]
    domains = [layout.domain_of_device.get(o, -o - 10_000_000) for o in osds]
    new = set(osds) - set(ref)
    return (
        1 if len(osds) < size + 1 else 0,
        1 if len(set(osds)) != len(osds) else 0,
        1 if not classes or classes[0] != urgent_class else 0,
        1 if sum(1 for c in classes if c == urgent_class) != 1 else 0,
        1 if any(c != normal for c in classes[1:]) else 0,
        1 if len(set(domains[1:])) != len(domains[1:]) else 0,
        1 if osds[1:] != ref else 0,
        1 if osds and domains[0] in domains[1:] else 0,
        1 if new and osds and osds[0] in new else 0,
        len(new - {osds[0]}) if osds else 0,
    )


def check_copy(
    size: int,
    at_size: Mappings,
    at_size_plus_one: Mappings,
    isolated: Mappings,
    layout: Layout,
    pool_id: int | None,
    pool_size: int | None = None,
) -> CopyReport:
    """Count the defects of a copy rule's mappings at N and N + 1 replicas (R8).

    isolated: sla_isolated_normal's mappings of the same PGs at N replicas.
    """
    pgs = sorted(set(at_size) | set(at_size_plus_one) | set(isolated))
    totals = [0] * 10
    for pg in pgs:
        counts = _copy_pg_counts(size, tuple(at_size_plus_one.get(pg, ())),
                                 tuple(isolated.get(pg, ())), layout)
        totals = [total + c for total, c in zip(totals, counts)]
    short, duplicate, not_first, count, off, fd, differing_n, shared_fd, added, moved = totals
    return CopyReport(
        rule=R.copy_rule_name(size),
        size=size,
        pool_id=pool_id,
        pgs=len(pgs),
        pgs_differing_from_isolated=differing_pgs(at_size, isolated),
        short_pgs=short,
        duplicate_osd_pgs=duplicate,
        urgent_not_first_pgs=not_first,
        urgent_count_pgs=count,
        normal_off_class_pgs=off,
        normal_failure_domain_pgs=fd,
        normal_differing_pgs=differing_n,
        shared_failure_domain_pgs=shared_fd,
        shared_failure_domain_fraction=round(_ratio(shared_fd, len(pgs)), 4),
        replicas_added=added,
        replicas_moved=moved,
        pool_size=pool_size,
    )


def copy_failures(report: CopyReport, urgent_class: str, normal_class: str,
                  fd_type: str) -> tuple[list[str], list[str]]:
    """(R8 failures, warnings) of one copy rule's report."""
    r, n = report, report.size
    label = f"{r.rule} (pool {r.pool_id})" if r.pool_id is not None else r.rule
    bad = [
        (r.pgs_differing_from_isolated,
         f"at size {n} map differently from {R.ISOLATED_NORMAL} (putting a pool on the rule "
         "would move data)"),
        (r.short_pgs, f"at size {n + 1} have fewer than {n + 1} OSDs"),
        (r.duplicate_osd_pgs, f"at size {n + 1} map one OSD twice"),
        (r.urgent_not_first_pgs,
         f"at size {n + 1} do not start with an {urgent_class} OSD (the extra copy must be "
         "the primary)"),
        (r.urgent_count_pgs, f"at size {n + 1} do not have exactly one {urgent_class} OSD"),
        (r.normal_off_class_pgs,
         f"at size {n + 1} have an OSD after the first that is not {normal_class}"),
        (r.normal_failure_domain_pgs,
         f"at size {n + 1} put two of the {n} {normal_class} copies in one {fd_type}"),
        (r.normal_differing_pgs,
         f"at size {n + 1} do not keep the {R.ISOLATED_NORMAL} OSDs of size {n} (same OSDs, "
         "same order) after the first: a switch would move more than the extra copy"),
    ]
    failures = [f"R8 {label}: {count}/{r.pgs} PGs {what}" for count, what in bad if count]
    warnings: list[str] = []
    if r.shared_failure_domain_pgs:
        warnings.append(
            f"{label}: at size {n + 1} the {urgent_class} copy shares a {fd_type} with one of "
            f"the {normal_class} copies in {r.shared_failure_domain_pgs}/{r.pgs} PGs "
            f"({r.shared_failure_domain_fraction:.1%}); allowed: the {n} {normal_class} "
            f"copies keep {n} distinct {fd_type}s"
        )
    return failures, warnings
