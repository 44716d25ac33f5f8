"""The five SLA rules: names and steps.

sla_shared and sla_hybrid have the same steps (one chooseleaf from the real
root, so a PG never gets one OSD twice nor two replicas in one failure
domain).  Normal pools get a flat (one-position) weight set for sla_shared,
urgent pools with hybrid placement the same set for sla_hybrid (see
weightsets.py): with it both map exactly like sla_isolated_normal, and the
root take lets the monitors accept the module's upmaps to urgent OSDs.  A
pool without choose_args that uses either rule gets plain Map_all.
"""

from __future__ import annotations

from dataclasses import dataclass

ISOLATED_NORMAL = "sla_isolated_normal"
ISOLATED_URGENT = "sla_isolated_urgent"
SHARED = "sla_shared"
HYBRID = "sla_hybrid"
FAST = "sla_fast"

RULE_NAMES = (ISOLATED_NORMAL, ISOLATED_URGENT, SHARED, HYBRID, FAST)
# Text syntax per release: Pacific needs min_size/max_size; Quincy and later
# (through Tentacle and Umbrella, which take Squid's syntax) do not.
RELEASES = ("pacific", "quincy", "reef", "squid", "tentacle", "umbrella")


@dataclass(frozen=True)
class Placement:
    """Where the rules draw from."""

    root: str = "default"
    failure_domain: str = "host"
    normal_class: str = "hdd"
    urgent_class: str = "ssd"


# The defaults every entry point shares: sla-crush's flags, GenerateOptions
# and the mgr module's options (mgr_sla/settings.py).
DEFAULT_PLACEMENT = Placement()
DEFAULT_SIZE = 3
DEFAULT_RELEASE = "pacific"  # the oldest release we support; its text syntax


def rule_steps(name: str, placement: Placement) -> list[str]:
    fd = placement.failure_domain
    if name == ISOLATED_NORMAL:
        take = f"take {placement.root} class {placement.normal_class}"
    elif name in (ISOLATED_URGENT, FAST):
        take = f"take {placement.root} class {placement.urgent_class}"
    elif name in (SHARED, HYBRID):
        take = f"take {placement.root}"
    else:
        raise ValueError(f"unknown rule {name}")
    return [take, f"chooseleaf firstn 0 type {fd}", "emit"]


def naive_two_emit_steps(placement: Placement) -> list[str]:
    """The tempting hybrid rule that is unsafe when a host holds both classes.

    Kept only so tests and the benchmark can show the verifier catches it.
    """
    fd = placement.failure_domain
    return [
        f"take {placement.root} class {placement.urgent_class}",
        f"chooseleaf firstn 1 type {fd}",
        "emit",
        f"take {placement.root} class {placement.normal_class}",
        f"chooseleaf firstn -1 type {fd}",
        "emit",
    ]


def sizes_in_text(release: str) -> bool:
    """Pacific's grammar requires min_size/max_size; Quincy removed them."""
    return release == "pacific"
