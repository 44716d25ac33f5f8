"""The cluster's configuration as the module reads it, and health warnings
about what it cannot fix itself: weight sets that put the mons at risk, a
stats period too long for the reaction target."""
from __future__ import annotations

from ..core.health import HealthChecks
from ..core.maps import MapSnapshot
from ..core.settings import Settings
from .mgr_port import MgrPort

# Urgent load must be seen and acted on within this (the OSDs report every
# mgr_stats_period, 5 s by default).
REACTION_TARGET_SECS = 8.0


def warn_positional(health: HealthChecks, maps: MapSnapshot) -> None:
    """sla installs flat weight sets only; anyone else's positional ones
    put every monitor at risk when a host or root is added."""
    keys = ", ".join("compat" if k < 0 else f"pool {k}"
                     for k in maps.view.positional_choose_args)
    health.update(
        "SLA_POSITIONAL_WEIGHT_SET",
        ["remove them before adding hosts or roots: 'ceph osd crush weight-set rm <pool>' "
         "(or rm-compat); see the sla docs, known-issues.md"] if keys else [],
        f"positional CRUSH weight sets installed ({keys}): adding a host or a root can "
        "abort every ceph-mon")


def max_misplaced(settings: Settings, mgr: MgrPort) -> float:
    """Our option, or the balancer's target_max_misplaced_ratio (-1, default)."""
    if settings.max_misplaced_ratio >= 0:
        return settings.max_misplaced_ratio
    try:
        return float(mgr.get_ceph_option("target_max_misplaced_ratio"))
    except Exception:  # an option this release does not have: Ceph's default
        return 0.05


def stats_period(mgr: MgrPort) -> float | None:
    """mgr_stats_period: how often the OSDs report, so how late urgent load
    can be seen (Ceph may raise it, up to 60 s, when the mgr is busy)."""
    try:
        return float(mgr.get_ceph_option("mgr_stats_period"))
    except Exception:  # not readable on this release
        return None


def warn_stats_period(health: HealthChecks, mgr: MgrPort) -> None:
    period = stats_period(mgr)
    slow = period is not None and period > REACTION_TARGET_SECS
    health.update(
        "SLA_STATS_PERIOD",
        [f"mgr_stats_period is {period:g} s: the OSDs report urgent ops that late, so "
         f"isolation can start up to {period:g} s after urgent load (target "
         f"{REACTION_TARGET_SECS:g} s). 'ceph config set mgr mgr_stats_period 5' (the "
         "default), and check the mgr is not overloaded ('ceph mgr dump')"] if slow else [],
        "mgr_stats_period makes the sla reaction target unreachable")
