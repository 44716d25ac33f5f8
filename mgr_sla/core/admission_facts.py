"""The plain facts the admission (admission.py) decides on, as the shell
reads them once per refresh (shell/facts.py)."""
from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import Enum

from .cluster import PoolInfo
from .decision import Mode
from .device_prior import Calibration, DeviceLatency
from .gain import MeasuredGain
from .maps import MapSnapshot
from .models.registry import isolated_size, target
from .mon_projection import PoolPgs
from .pg_slots import UrgentOsd
from .settings import Settings
from .state import PoolRole, SwitchRecord
from .switch_cost import Capacity, PoolCostInputs

# where a projection of a pool's PGs on the urgent OSDs comes from, and how a
# reason says it
BASES = {"placed": "its up sets", "crush": "CRUSH's mapping",
         "planned": "the module's planned entries",
         "estimate": "an estimate by weight until its mapping is known"}


class Placement(str, Enum):
    """Where a normal pool is, as the OSD map shows it."""

    ISOLATED = "isolated"  # its isolated rule and size, no entry of ours on an urgent OSD
    SHARED = "shared"  # its shared rule and size
    MOVING = "moving"  # in between: a switch under way, or a pool just managed


@dataclass(frozen=True)
class Projection:
    """Where sharing puts a pool's PGs: per urgent OSD, the pool's PGs with a
    replica there, and what that was read from."""

    pgs: Mapping[int, int]
    basis: str  # one of BASES: what it was read from


@dataclass(frozen=True)
class NormalPool:
    """One managed normal pool, as the shell read it."""

    pool_id: int
    name: str
    role: PoolRole
    info: PoolInfo  # its OSD map entry now
    placement: Placement
    stored_bytes: float  # one copy of its data
    read_fraction: float | None = None  # None: no client op measured yet
    # strategy -> where sharing by it puts the pool's PGs (a pool on its
    # shared placement: its real up sets, under the strategy it has)
    projections: Mapping[str, Projection] = field(default_factory=dict)
    # per urgent OSD, the pool's PGs there now by its up sets (off its isolated placement)
    live: Mapping[int, int] = field(default_factory=dict)
    measured: Mapping[str, MeasuredGain] = field(default_factory=dict)
    has_weight_set: bool = False
    urgent_share: float = 0.0  # the move strategy's share of its replicas on urgent OSDs

    @property
    def isolated_info(self) -> PoolInfo:
        """Its map entry at its isolated size (a pool shared by copy is one larger)."""
        return replace(self.info, size=isolated_size(self.role, self.info.size))

    def cost_inputs(self) -> PoolCostInputs:
        info = self.isolated_info
        return PoolCostInputs(self.pool_id, self.name, self.role.strategy, info.size,
                              self.stored_bytes, info.pg_num, self.urgent_share,
                              self.read_fraction, self.placement is not Placement.ISOLATED,
                              info.ec_k)


@dataclass(frozen=True)
class MonFacts:
    """What the mon's own PG projection on a size raise counts."""

    limit: int | None  # mon_max_pg_per_osd (the mgr's value: the mon's own is not readable)
    release: str
    pools: tuple[PoolPgs, ...] = ()
    in_osds: int = 0
    osds_under: Mapping[int, int] = field(default_factory=dict)  # rule id -> in OSDs under it
    rule_ids: Mapping[str, int] = field(default_factory=dict)
    domain_osds: int = 0  # in OSDs of the largest failure domain


@dataclass(frozen=True)
class AdmissionFacts:
    now: float
    settings: Settings
    mode: Mode
    pinned: Mode | None
    pools: tuple[NormalPool, ...]
    urgent: Mapping[int, UrgentOsd]  # the urgent OSDs that are in
    capacity: Capacity
    rules: frozenset[str]  # the CRUSH rules installed
    mon: MonFacts
    history: tuple[SwitchRecord, ...] = ()
    # pools the module sent back in this shared period, and why (sharing_check)
    sent_back: Mapping[int, str] = field(default_factory=dict)
    withheld: str | None = None  # Ceph reports PGs withheld (PENDING_CREATING_PGS)
    devices: DeviceLatency = field(default_factory=dict)  # each region's op latencies
    normal_osds: int = 0  # the normal OSDs that are in
    calibration: Calibration | None = None  # calibrated, per region


def placement_of(role: PoolRole, info: PoolInfo, rule: str, maps: MapSnapshot) -> Placement:
    """Where a normal pool is, by the map: its isolated placement (rule, size
    and no entry of ours on an urgent OSD), its shared one, or in between."""
    urgent = maps.regions.members(maps.regions.urgent_class)
    on_urgent = any(to in urgent for pairs in maps.upmap_items.get(info.pool_id, {}).values()
                    for _, to in pairs)
    isolated, shared = target(role, Mode.ISOLATED), target(role, Mode.SHARED)
    if rule == isolated.rule and isolated.size in (None, info.size) and not on_urgent:
        return Placement.ISOLATED
    if rule == shared.rule and shared.size in (None, info.size):
        return Placement.SHARED
    return Placement.MOVING


def per_osd(up_sets: Iterable[Sequence[int]], osds: frozenset[int] | set[int]) -> dict[int, int]:
    """Per OSD of `osds`, the PGs with a replica on it (an up set holds an OSD
    once: one twice is a placement fault, counted once)."""
    counts = Counter(o for up in up_sets for o in up if o in osds)
    return dict(counts)


def largest_domain(maps: MapSnapshot) -> int:
    """The in OSDs of the largest failure domain (every class)."""
    per = Counter(p.domain for p in maps.regions.osds.values() if p.present)
    return max(per.values(), default=0)
