"""The SLA rules: names and steps.

sla_shared and sla_hybrid have the same steps (one chooseleaf from the real
root, so a PG never gets one OSD twice nor two replicas in one failure
domain).  Normal pools get a flat (one-position) weight set for sla_shared,
urgent pools with hybrid placement the same set for sla_hybrid (see
weightsets.py): with it both map exactly like sla_isolated_normal, and the
root take lets the monitors accept the module's upmaps to urgent OSDs.  A
pool without choose_args that uses either rule gets plain Map_all.

sla_copy_N (one per base size N, see copy_rule_steps) is the "copy" strategy:
at pool size N it maps like sla_isolated_normal, at size N+1 one urgent OSD
leads the same N normal OSDs, so isolation is one ``osd pool set POOL size``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from .errors import CrushError

ISOLATED_NORMAL = "sla_isolated_normal"
ISOLATED_URGENT = "sla_isolated_urgent"
SHARED = "sla_shared"
HYBRID = "sla_hybrid"
FAST = "sla_fast"

RULE_NAMES = (ISOLATED_NORMAL, ISOLATED_URGENT, SHARED, HYBRID, FAST)
# The copy rules: COPY_PREFIX + the pool's base size N (normal-class copies).
COPY_PREFIX = "sla_copy_"
# N + 1 replicas must fit the rules' max_size 10 (Pacific syntax) and the size limit.
MIN_COPY_SIZE, MAX_COPY_SIZE = 1, 9
_COPY_NAME = re.compile(r"^sla_copy_([1-9])$")
# Text syntax per release: Pacific needs min_size/max_size; Quincy and later
# (through Tentacle and Umbrella, which take Squid's syntax) do not.
RELEASES = ("pacific", "quincy", "reef", "squid", "tentacle", "umbrella")


@dataclass(frozen=True)
class RuleScope:
    """Where the rules draw from."""

    root: str = "default"
    failure_domain: str = "host"
    normal_class: str = "hdd"
    urgent_class: str = "ssd"


# The defaults every entry point shares: sla-crush's flags, GenerateOptions
# and the mgr module's options (mgr_sla/core/settings.py).
DEFAULT_SCOPE = RuleScope()
DEFAULT_SIZE = 3
DEFAULT_RELEASE = "pacific"  # the oldest release we support; its text syntax


def check_copy_size(size: int) -> int:
    """The size, or CrushError when no copy rule can be made for it."""
    if isinstance(size, bool) or not isinstance(size, int):
        raise CrushError(f"copy size {size!r} is not an integer; use {MIN_COPY_SIZE} to "
                         f"{MAX_COPY_SIZE}")
    if not MIN_COPY_SIZE <= size <= MAX_COPY_SIZE:
        raise CrushError(
            f"copy size {size} is out of range; use {MIN_COPY_SIZE} to {MAX_COPY_SIZE} "
            f"(the pool's base size N: shared mode runs at N + 1 replicas, at most 10)"
        )
    return size


def copy_rule_name(size: int) -> str:
    """``sla_copy_3`` for base size 3; CrushError for sizes outside 1..9."""
    return f"{COPY_PREFIX}{check_copy_size(size)}"


def copy_rule_size(name: str) -> int | None:
    """3 for ``sla_copy_3``; None for any other name (sizes 1..9 only, no leading zeros)."""
    match = _COPY_NAME.match(name)
    return int(match.group(1)) if match else None


def copy_sizes(sizes: Iterable[int]) -> tuple[int, ...]:
    """The copy sizes checked, without repeats, ascending."""
    return tuple(sorted({check_copy_size(s) for s in sizes}))


def copy_rule_steps(size: int, scope: RuleScope) -> list[str]:
    """The copy rule for base size N: an urgent copy only when the pool has N + 1 replicas.

    ``firstn -N`` asks for (pool size - N) items, none at size N (CRUSH skips a
    step whose count is <= 0), so the rule then maps like sla_isolated_normal;
    at size N + 1 one urgent OSD comes first (the primary), followed by the
    same N normal OSDs.  The two takes do not see each other: the urgent copy
    may share a failure domain with a normal one.
    """
    n = check_copy_size(size)
    fd = scope.failure_domain
    return [
        f"take {scope.root} class {scope.urgent_class}",
        f"chooseleaf firstn -{n} type {fd}",
        "emit",
        f"take {scope.root} class {scope.normal_class}",
        f"chooseleaf firstn {n} type {fd}",
        "emit",
    ]


def rule_steps(name: str, scope: RuleScope) -> list[str]:
    fd = scope.failure_domain
    copy = copy_rule_size(name)
    if copy is not None:
        return copy_rule_steps(copy, scope)
    if name == ISOLATED_NORMAL:
        take = f"take {scope.root} class {scope.normal_class}"
    elif name in (ISOLATED_URGENT, FAST):
        take = f"take {scope.root} class {scope.urgent_class}"
    elif name in (SHARED, HYBRID):
        take = f"take {scope.root}"
    else:
        raise ValueError(f"unknown rule {name}")
    return [take, f"chooseleaf firstn 0 type {fd}", "emit"]


def naive_two_emit_steps(scope: RuleScope) -> list[str]:
    """The tempting hybrid rule that is unsafe when a host holds both classes.

    Kept only so tests and the benchmark can show the verifier catches it.
    """
    fd = scope.failure_domain
    return [
        f"take {scope.root} class {scope.urgent_class}",
        f"chooseleaf firstn 1 type {fd}",
        "emit",
        f"take {scope.root} class {scope.normal_class}",
        f"chooseleaf firstn -1 type {fd}",
        "emit",
    ]


def sizes_in_text(release: str) -> bool:
    """Pacific's grammar requires min_size/max_size; Quincy removed them."""
    return release == "pacific"
