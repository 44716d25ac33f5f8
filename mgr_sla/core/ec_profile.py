"""Whether the cluster could share an erasure-coded pool by moving shards (its
profile as core/cluster.py reads it from the osd_map). Pure.

Sharing an EC pool moves up to m of each PG's k+m shards onto urgent OSDs in
place (crush_rules/ec_rules.py, core/upmap/ec_plan.py): the k left on the
normal region must read every object with all urgent OSDs gone. That holds
for MDS codes only, where any k shards decode (jerasure, isa, clay); lrc adds
local parity shards (more than k+m per PG) and shec decodes from some k-sets
only, so both are refused by name.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..crush_rules.crushmap import crushmap_from_dump
from ..crush_rules.ec_rules import ec_profile_fit, ec_shared_rule
from ..crush_rules.errors import CrushError
from ..crush_rules.rules import RuleScope
from .cluster import EcProfile, PoolInfo

MDS_PLUGINS = ("jerasure", "isa", "clay")


@dataclass(frozen=True)
class EcScope:
    """What the module's regions say of the cluster, for an EC pool's fit."""

    failure_domain: str
    normal_class: str
    urgent_class: str
    normal_domains: int  # failure domains holding normal-class OSDs that are in
    urgent_domains: int


def ec_misfit(info: PoolInfo, profile: EcProfile | None, scope: EcScope) -> str | None:
    """Why sharing the EC pool by moving shards cannot work on this cluster, or
    None when its profile fits (k+m failure domains hold the normal class, one
    at least the urgent class; an MDS code; the regions' failure domain and
    normal class)."""
    if profile is None:
        return (f"pool '{info.name}' is erasure-coded, and its profile '{info.ec_profile}' "
                "is not in the osd_map")
    where = (f"pool '{info.name}' (erasure-coded, profile {profile.name}: k={profile.k} "
             f"m={profile.m}, {profile.plugin})")
    if profile.plugin not in MDS_PLUGINS:
        return (f"{where}: plugin {profile.plugin} does not read every object from any k "
                f"shards; the shards moved need {', '.join(MDS_PLUGINS)}")
    if profile.failure_domain != scope.failure_domain:
        return (f"{where}: its shards are placed by {profile.failure_domain}; the regions use "
                f"{scope.failure_domain} (mgr/sla/failure_domain)")
    if profile.device_class not in ("", scope.normal_class):
        return (f"{where}: its shards are on class {profile.device_class}; the normal region "
                f"is {scope.normal_class}")
    fit = ec_profile_fit(profile.k, profile.m, scope.normal_domains, scope.urgent_domains,
                         scope.failure_domain, scope.normal_class, scope.urgent_class)
    return f"{where}: {fit}" if fit else None


def ec_rule_misfit(info: PoolInfo, crush: Mapping[str, Any], scope: EcScope) -> str | None:
    """Why the EC pool's own rule (in the mgr's crush dump) cannot be copied into
    its shared rule, or None: the generator's own check, before anything is
    installed (e.g. Ceph's default profile takes the whole root, every class)."""
    rules = RuleScope(failure_domain=scope.failure_domain, normal_class=scope.normal_class,
                      urgent_class=scope.urgent_class)
    try:
        model = crushmap_from_dump(crush)
        rule = model.rules.get(info.rule_id)
        if rule is None:
            return (f"pool '{info.name}' is erasure-coded, and its rule {info.rule_id} is "
                    "not in the crush map")
        ec_shared_rule(rule, model, rules)
    except CrushError as e:
        return f"pool '{info.name}' is erasure-coded, and its own {e}"
    return None
