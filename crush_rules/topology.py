"""What the SLA rules can do on a given CRUSH tree, and why not when they cannot."""

from __future__ import annotations

from dataclasses import dataclass

from .crushmap import Bucket, CrushMap
from .errors import CrushError
from .rules import Placement

MAX_SIZE = 10


@dataclass(frozen=True)
class FailureDomain:
    id: int
    name: str
    normal_weight: int  # 16.16 sums of the class's device weights below it
    urgent_weight: int

    @property
    def is_mixed(self) -> bool:
        return self.normal_weight > 0 and self.urgent_weight > 0

    @property
    def is_urgent_only(self) -> bool:
        return self.normal_weight == 0 and self.urgent_weight > 0


@dataclass(frozen=True)
class Topology:
    placement: Placement
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

    @property
    def has_mixed_domains(self) -> bool:
        return any(d.is_mixed for d in self.domains)

    def target_urgent_share(self) -> float:
        """Weight-proportional urgent share of replicas under sla_shared.

        Capped at (size-1)/size because every PG keeps a normal replica, and
        at (urgent failure domains)/size because two replicas never share one.
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


def analyse(crush: CrushMap, placement: Placement, size: int) -> Topology:
    """The failure domains under the root, or a CrushError naming the smallest fix."""
    if not 1 <= size <= MAX_SIZE:
        raise CrushError(f"--size {size} is out of range; use 1 to {MAX_SIZE}")
    root = crush.bucket_named(placement.root)
    if root is None or root.is_shadow:
        roots = sorted(
            b.name for b in crush.buckets.values()
            if not b.is_shadow and not any(i.id == b.id for o in crush.buckets.values()
                                           for i in o.items)
        )
        raise CrushError(
            f"root '{placement.root}' not in the map; pass --root ({', '.join(roots)})"
        )
    fd = placement.failure_domain
    if fd not in crush.types.values() or fd == crush.types.get(0):
        types = ", ".join(t for i, t in sorted(crush.types.items()) if i > 0)
        raise CrushError(
            f"failure-domain type '{fd}' is not a bucket type of this map; "
            f"pass --failure-domain with one of: {types}"
        )
    under_root = set(crush.devices_under(root.id))
    classes = {c for d, c in crush.devices.items() if c and d in under_root}
    for role, name in (("normal", placement.normal_class), ("urgent", placement.urgent_class)):
        if name not in classes:
            known = ", ".join(sorted(classes)) or "none"
            raise CrushError(
                f"no '{name}' devices under root {root.name} (classes there: {known}); "
                f"pass --{role}-class or set the class: "
                f"ceph osd crush set-device-class {name} osd.N"
            )
    if placement.normal_class == placement.urgent_class:
        raise CrushError("--normal-class and --urgent-class must differ")
    for name in (placement.normal_class, placement.urgent_class):
        if crush.shadow_of(root, name) is None:
            raise CrushError(
                f"the map has no shadow tree {root.name}~{name}; "
                f"rebuild it with crushtool --rebuild-class-roots"
            )
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
                crush.class_weight(bucket.id, placement.normal_class),
                crush.class_weight(bucket.id, placement.urgent_class),
            )
        )
        for device in crush.devices_under(bucket.id):
            domain_of_device[device] = bucket.id
    normal_domains = sum(1 for d in domains if d.normal_weight > 0)
    if normal_domains < size:
        raise CrushError(
            f"only {normal_domains} {fd} buckets under {root.name} hold "
            f"{placement.normal_class} devices, fewer than --size {size}; lower --size to "
            f"{normal_domains} or add {placement.normal_class} OSDs to "
            f"{size - normal_domains} more {fd}s"
        )
    return Topology(placement, size, root, tuple(domains), domain_of_device)
