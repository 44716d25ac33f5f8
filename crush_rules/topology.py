"""What the SLA rules can do on a given CRUSH tree, and why not when they cannot."""

from __future__ import annotations

from dataclasses import dataclass

from .crushmap import Bucket, CrushMap
from .errors import CrushError
from .rules import RuleScope

MAX_SIZE = 10


@dataclass(frozen=True)
class FailureDomain:
    id: int
    name: str
    normal_weight: int  # 16.16 sums of the class's device weights below it
    urgent_weight: int


@dataclass(frozen=True)
class Topology:
    scope: RuleScope
    size: int
    root: Bucket
    domains: tuple[FailureDomain, ...]
    domain_of_device: dict[int, int]  # device id -> failure-domain bucket id

    @property
    def normal_weight(self) -> int:
        return sum(d.normal_weight for d in self.domains)

    @property
    def urgent_weight(self) -> int:
        return sum(d.urgent_weight for d in self.domains)

    @property
    def urgent_domains(self) -> int:
        return sum(1 for d in self.domains if d.urgent_weight > 0)

    def target_urgent_share(self) -> float:
        """Weight-proportional urgent share of replicas in shared mode.

        Informational: CRUSH puts no replica there (the flat weight sets map
        like the isolated rule); the module's upmaps may.  Capped at
        (size-1)/size because every PG keeps a normal replica, and at
        (urgent failure domains)/size because two replicas never share one.
        """
        total = self.normal_weight + self.urgent_weight
        share = self.urgent_weight / total
        cap = min(self.size - 1, self.urgent_domains) / self.size
        return min(share, cap)


def _domains_below(crush: CrushMap, bucket: Bucket, fd_type: str) -> list[Bucket]:
    if bucket.type_name == fd_type:
        return [bucket]
    found: list[Bucket] = []
    for item in bucket.items:
        if item.id < 0:
            found += _domains_below(crush, crush.buckets[item.id], fd_type)
    return found


# Stretch clusters place a fixed number of replicas per site; these are the
# bucket types such a rule splits on (docs/crush-rules.md, "Bad input").
STRETCH_TYPES = ("datacenter", "zone", "region", "room")
SET_STRAW2 = "ceph osd crush set-all-straw-buckets-to-straw2"


def real_roots(crush: CrushMap) -> list[Bucket]:
    """Non-shadow buckets that are no other non-shadow bucket's item, by name."""
    children = {i.id for b in crush.buckets.values() if not b.is_shadow for i in b.items}
    return sorted((b for b in crush.buckets.values() if not b.is_shadow and b.id not in children),
                  key=lambda b: b.name)


def _real_bucket(crush: CrushMap, bucket_id: int) -> Bucket | None:
    bucket = crush.buckets.get(bucket_id)
    if bucket is not None and bucket.is_shadow:
        return crush.bucket_named(bucket.name.split("~", 1)[0])
    return bucket


def stretch_rule(crush: CrushMap) -> str | None:
    """Why a rule of the map is a stretch rule (several replicas per site), else None."""
    for rule in sorted(crush.rules.values(), key=lambda r: r.id):
        taken = {b.id for b in (_real_bucket(crush, i) for i in rule.taken_items()) if b}
        if len(taken) >= 2:
            names = sorted(crush.buckets[i].name for i in taken)
            return f"rule {rule.name} takes {len(taken)} separate subtrees ({', '.join(names)})"
        steps = list(rule.steps)
        for outer, inner in zip(steps, steps[1:]):
            if (outer.op == "choose_firstn" and outer.type in STRETCH_TYPES
                    and inner.op in ("chooseleaf_firstn", "choose_firstn")
                    and (inner.num or 0) >= 2):
                return f"rule {rule.name} places {inner.num} replicas in each {outer.type}"
        if "stretch" in rule.name.lower():
            return f"rule {rule.name} is named as a stretch rule"
    return None


def _check_algorithms(crush: CrushMap, root: Bucket) -> None:
    """Weight sets (choose_args) only act on straw2 buckets: refuse any other."""
    others = [b for b in crush.buckets_under(root.id) if b.alg != "straw2"]
    if not others:
        return
    algs = sorted({b.alg for b in others})
    example = ", ".join(f"{b.name} ({b.alg})" for b in others[:3])
    more = f" and {len(others) - 3} more" if len(others) > 3 else ""
    if algs == ["straw"]:
        fix = f"convert them with: {SET_STRAW2} (this remaps some data)"
    else:
        rebuild = "/".join(a for a in algs if a != "straw")
        fix = (f"convert straw buckets with: {SET_STRAW2}; rebuild {rebuild} "
               "buckets as straw2 (crushtool -d, set 'alg straw2', crushtool -c, "
               "ceph osd setcrushmap; this remaps data)")
    raise CrushError(
        f"{len(others)} buckets under root {root.name} are not straw2: {example}{more}; "
        f"weight sets (choose_args) do nothing on {'/'.join(algs)} buckets, so sla_shared cannot "
        f"map like sla_isolated_normal; {fix}"
    )


def _classes_by_root(crush: CrushMap) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for root in real_roots(crush):
        classes = (crush.devices.get(d) for d in crush.devices_under(root.id))
        out[root.name] = {c for c in classes if c}
    return out


def _check_classes(crush: CrushMap, root: Bucket, scope: RuleScope) -> None:
    if scope.normal_class == scope.urgent_class:
        raise CrushError("--normal-class and --urgent-class must differ")
    under_root = set(crush.devices_under(root.id))
    classes = {c for d, c in crush.devices.items() if c and d in under_root}
    wanted = (("normal", scope.normal_class), ("urgent", scope.urgent_class))
    missing = [(role, name) for role, name in wanted if name not in classes]
    if not missing:
        return
    known = ", ".join(sorted(classes)) or "none"
    by_root = _classes_by_root(crush)
    both = [r for r, cs in by_root.items()
            if scope.normal_class in cs and scope.urgent_class in cs]
    elsewhere = {name: sorted(r for r, cs in by_root.items() if name in cs and r != root.name)
                 for _, name in missing}
    if any(elsewhere.values()):
        name = next(n for n in elsewhere if elsewhere[n])
        roots = "; ".join(f"{r} ({', '.join(sorted(cs)) or 'no classes'})"
                          for r, cs in by_root.items())
        fix = (f"pass --root {both[0]}" if both else
               f"move the {name} hosts under root {root.name} "
               f"(ceph osd crush move <host> root={root.name})")
        raise CrushError(
            f"the classes are in separate roots: '{name}' devices are under root "
            f"{', '.join(elsewhere[name])}, not under root {root.name} (classes there: {known}); "
            f"one rule can only use one root; {fix}; --root values: {roots}"
        )
    role, name = missing[0]
    raise CrushError(
        f"no '{name}' devices under root {root.name} (classes there: {known}); "
        f"pass --{role}-class or set the class: ceph osd crush set-device-class {name} osd.N"
    )


def analyse(crush: CrushMap, scope: RuleScope, size: int) -> Topology:
    """The failure domains under the root, or a CrushError naming the smallest fix.

    Refused: sizes out of 2..MAX_SIZE, a missing root, stretch rules, buckets
    that are not straw2, classes missing or in separate roots, and fewer
    failure domains holding each class than the size.
    """
    _check_size(size)
    root = _root(crush, scope)
    stretch = stretch_rule(crush)
    if stretch is not None:
        raise CrushError(
            f"stretch maps are not supported: {stretch}; the sla rules take one root with one "
            "chooseleaf and device classes, which cannot keep replicas per site (and Ceph keeps "
            "device-class rules inactive after a site loss in stretch mode); use sla-crush only "
            "on clusters without stretch rules"
        )
    _check_algorithms(crush, root)
    fd = scope.failure_domain
    if fd not in crush.types.values() or fd == crush.types.get(0):
        types = ", ".join(t for i, t in sorted(crush.types.items()) if i > 0)
        raise CrushError(
            f"failure-domain type '{fd}' is not a bucket type of this map; "
            f"pass --failure-domain with one of: {types}"
        )
    _check_classes(crush, root, scope)
    for name in (scope.normal_class, scope.urgent_class):
        if crush.shadow_of(root, name) is None:
            raise CrushError(
                f"the map has no shadow tree {root.name}~{name}; "
                f"rebuild it with crushtool --rebuild-class-roots"
            )
    domains, domain_of_device = _failure_domains(crush, root, scope)
    _check_domain_counts(domains, root, scope, size)
    return Topology(scope, size, root, tuple(domains), domain_of_device)


def _check_size(size: int) -> None:
    if size == 1:
        raise CrushError(
            "--size 1 is refused: a size-1 pool has no redundancy, and shared mode keeps each "
            "PG's primary on the normal class, so a size-1 pool could never use the urgent "
            "class; use --size 2 or more"
        )
    if not 2 <= size <= MAX_SIZE:
        raise CrushError(f"--size {size} is out of range; use 2 to {MAX_SIZE}")


def _root(crush: CrushMap, scope: RuleScope) -> Bucket:
    """The scope's root bucket (a real one, not a shadow), else a CrushError."""
    root = crush.bucket_named(scope.root)
    if root is None or root.is_shadow:
        roots = ", ".join(r.name for r in real_roots(crush)) or "none"
        raise CrushError(
            f"root '{scope.root}' not in the map; pass --root with one of: {roots}"
        )
    return root


def _failure_domains(
    crush: CrushMap, root: Bucket, scope: RuleScope
) -> tuple[list[FailureDomain], dict[int, int]]:
    """(the failure-domain buckets under the root with their class weights, device -> domain)."""
    fd = scope.failure_domain
    buckets = _domains_below(crush, root, fd)
    if not buckets:
        raise CrushError(f"no '{fd}' buckets under root {root.name}; pass --failure-domain")
    domains: list[FailureDomain] = []
    domain_of_device: dict[int, int] = {}
    for bucket in buckets:
        domains.append(
            FailureDomain(
                bucket.id,
                bucket.name,
                crush.class_weight(bucket.id, scope.normal_class),
                crush.class_weight(bucket.id, scope.urgent_class),
            )
        )
        for device in crush.devices_under(bucket.id):
            domain_of_device[device] = bucket.id
    return domains, domain_of_device


def _check_domain_counts(
    domains: list[FailureDomain], root: Bucket, scope: RuleScope, size: int
) -> None:
    """Each class must be in at least ``size`` failure domains, or every PG is short."""
    fd = scope.failure_domain
    for role, name, rules in (
        ("normal", scope.normal_class, "sla_isolated_normal and sla_shared"),
        ("urgent", scope.urgent_class, "sla_isolated_urgent and sla_fast"),
    ):
        have = sum(1 for d in domains
                   if (d.normal_weight if role == "normal" else d.urgent_weight) > 0)
        if have < size:
            lower = (f"lower --size to {have}" if have >= 2 else
                     "no --size can be served")
            raise CrushError(
                f"only {have} {fd} buckets under {root.name} hold {name} devices, fewer than "
                f"--size {size}: {rules} would leave every PG short of replicas; {lower} or add "
                f"{name} OSDs to {size - have} more {fd}{'s' if size - have > 1 else ''}"
            )
