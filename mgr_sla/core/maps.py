"""The OSD and CRUSH maps as the module last converted them (shell/map_reader.py
converts them once per epoch), and which device classes make the regions."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .cluster import ClusterView
from .upmap.regions import Pairs, Regions, regions_from_maps


@dataclass(frozen=True)
class MapSnapshot:
    """What the module needs of the OSD and CRUSH maps, as last converted.

    Only the derived views are kept, not the dumps: everything the module
    holds is walked by the garbage collector of its interpreter."""

    at: float
    view: ClusterView
    regions: Regions
    upmap_items: dict[int, dict[str, Pairs]]
    flags: tuple[str, ...]
    nearfull_ratio: float
    backfillfull_ratio: float
    spec: RegionSpec


@dataclass(frozen=True)
class RegionSpec:
    """Which classes make the regions, and what replicas never share."""

    failure_domain: str
    normal_class: str
    urgent_class: str
    past_min_size: bool = False  # Regions.past_min_size

    def regions(self, osd_map: dict[str, Any], crush: dict[str, Any]) -> Regions:
        return regions_from_maps(osd_map, crush, self.failure_domain, self.normal_class,
                                 self.urgent_class, self.past_min_size)
