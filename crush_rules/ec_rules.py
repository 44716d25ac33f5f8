"""The shared rule of an erasure-coded normal pool, and the checks on its shards.

An EC pool's own rule, as ``ceph osd erasure-code-profile set ...
crush-device-class=hdd crush-failure-domain=host`` makes it, is::

    step set_chooseleaf_tries 5
    step set_choose_tries 100
    step take default class hdd
    step chooseleaf indep 0 type host
    step emit

Its shared rule (``sla_ec_<own rule>``) is the same steps with the take of the
whole root. With the pool's flat weight set (weightsets.flat_choose_args: the
normal class's shadow ids and weights, urgent devices at 0) straw2 hashes and
weighs as the class take does, so every PG maps shard by shard as under the
pool's own rule (``indep`` keeps each shard's position), and nothing moves when
the pool changes rule. What changes is what the monitors accept: a
pg_upmap_items target must lie under the rule's take (OSDMap::check_pg_upmaps),
so under the whole root a shard may be moved to an urgent OSD, in place.

The pool's own rule is read, never changed: the shared rule copies its tries
and its failure domain. Shapes whose copy would not map alike, or whose shards
the checks below could not judge, are refused with the reason.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from .crushmap import CrushMap, Rule, Step
from .crushtext import Block, render_rule
from .errors import CrushError
from .rules import RuleScope

EC_PREFIX = "sla_ec_"
RULE_TYPE_ERASURE = 3  # crush_rule type of an erasure-coded pool's rule
# a hole in an indep mapping: no OSD for this shard (CRUSH_ITEM_NONE)
ITEM_NONE = 0x7FFFFFFF
# the tunable steps a rule may carry: copied as they are (they shape the draws)
_TUNABLE_STEPS = {
    "set_choose_tries", "set_chooseleaf_tries", "set_choose_local_tries",
    "set_choose_local_fallback_tries", "set_chooseleaf_vary_r", "set_chooseleaf_stable",
}
_CHOOSE_STEPS = {"choose_indep": "choose", "chooseleaf_indep": "chooseleaf"}


@dataclass(frozen=True)
class EcSharedRule:
    """The shared rule made from an EC pool's own rule."""

    source: str  # the pool's own rule
    name: str  # sla_ec_<source>
    failure_domain: str
    steps: tuple[str, ...]  # crushtool text, without "step "
    min_size: int
    max_size: int


def ec_rule_name(source: str) -> str:
    return f"{EC_PREFIX}{source}"


def _text_step(step: Step) -> str:
    if step.op in _TUNABLE_STEPS:
        return f"{step.op} {step.num}"
    return f"{_CHOOSE_STEPS[step.op]} indep {step.num} type {step.type}"


def ec_shared_rule(rule: Rule, crush: CrushMap, scope: RuleScope) -> EcSharedRule:
    """The shared rule for an EC pool whose own rule is `rule`; CrushError naming what
    in `rule` cannot be shared.

    Accepted: tunable steps, one take of ``<scope.root> class <scope.normal_class>``,
    one ``choose``/``chooseleaf indep`` step by the scope's failure domain, one
    emit at the end (what Ceph's erasure-code profiles make).
    """
    _check_take(rule, scope)
    steps, chooses = _shared_steps(rule, scope)
    where = f"rule {rule.name}"
    if len(chooses) != 1:
        raise CrushError(f"{where} has {len(chooses)} choose steps; the EC strategy shares "
                         "rules of one choose or chooseleaf indep step")
    fd = chooses[0].type or ""
    if fd != scope.failure_domain:
        raise CrushError(f"{where} separates shards by {fd}, the sla rules by "
                         f"{scope.failure_domain}; the failure domains must be the same")
    if fd not in crush.types.values():
        raise CrushError(f"{where} chooses type {fd}, which the map does not define")
    return EcSharedRule(rule.name, ec_rule_name(rule.name), fd, (*steps, "emit"),
                        rule.min_size, rule.max_size)


def _check_take(rule: Rule, scope: RuleScope) -> None:
    """An erasure rule of its own, with one take of the normal class and one emit."""
    where = f"rule {rule.name}"
    if rule.name.startswith(EC_PREFIX):
        raise CrushError(f"{where} is an sla rule itself; give the pool's own rule")
    if rule.type != RULE_TYPE_ERASURE:
        raise CrushError(f"{where} is not an erasure rule (type {rule.type}); the EC strategy "
                         "shares erasure-coded pools only")
    ops = [s.op for s in rule.steps if s.op != "noop"]
    if ops.count("take") != 1 or ops[-1:] != ["emit"] or ops.count("emit") != 1:
        raise CrushError(f"{where} has {ops.count('take')} takes and {ops.count('emit')} emits; "
                         "the EC strategy shares a rule of one take and one emit")
    take = next(s for s in rule.steps if s.op == "take")
    root, _, cls = (take.item_name or "").partition("~")
    if root != scope.root or cls != scope.normal_class:
        got = f"{root} class {cls}" if cls else root
        raise CrushError(f"{where} takes {got}, not {scope.root} class {scope.normal_class}: "
                         "an EC pool on the normal region takes the normal class under the "
                         "root the sla rules use")


def _shared_steps(rule: Rule, scope: RuleScope) -> tuple[list[str], list[Step]]:
    """The rule's steps with the whole root's take, without its emit; its choose steps."""
    where = f"rule {rule.name}"
    ops = [s.op for s in rule.steps if s.op != "noop"]
    steps: list[str] = []
    chooses: list[Step] = []
    for step in rule.steps:
        if step.op in ("noop", "emit"):
            continue
        if step.op == "take":
            steps.append(f"take {scope.root}")
        elif step.op in _TUNABLE_STEPS:
            if ops.index(step.op) > ops.index("take"):
                raise CrushError(f"{where} sets {step.op} after its take; the EC strategy "
                                 "shares rules whose tunable steps come first")
            steps.append(_text_step(step))
        elif step.op in _CHOOSE_STEPS:
            chooses.append(step)
            steps.append(_text_step(step))
        else:
            raise CrushError(f"{where} has a '{step.op}' step; the EC strategy shares rules of "
                             "one choose or chooseleaf indep step (msr and firstn rules are "
                             "not supported)")
    return steps, chooses


# -- the shards of one PG ---------------------------------------------------------


@dataclass(frozen=True)
class EcLayout:
    """What the shard checks need to know of the cluster."""

    k: int
    m: int
    device_class: Mapping[int, str | None]  # OSD id -> class
    domain_of: Mapping[int, int]  # OSD id -> failure-domain bucket id
    normal_class: str = "hdd"
    urgent_class: str = "ssd"


def ec_shard_faults(own: Sequence[int], shared: Sequence[int], layout: EcLayout) -> list[str]:
    """What is wrong with a PG's shared shards (`shared`, by shard) against its mapping
    under its own rule (`own`): empty when safe.

    Safe: the same number of shards; each shard where its own rule put it or on an
    urgent OSD in its place (a shard never changes position, never moves between
    normal OSDs here); at most m shards on urgent OSDs, so k stay on the normal
    region and the PG can be read with every urgent OSD gone; no OSD twice, no two
    shards in one failure domain.
    """
    faults: list[str] = []
    k, m = layout.k, layout.m
    if len(shared) != len(own) or len(own) != k + m:
        return [f"{len(shared)} shards against {len(own)} under the pool's own rule "
                f"(k+m = {k + m})"]
    placed = [o for o in shared if o != ITEM_NONE]
    for pos, (was, now) in enumerate(zip(own, shared)):
        if now != was and layout.device_class.get(now) != layout.urgent_class:
            faults.append(f"shard {pos} moved from osd.{was} to osd.{now}, which is not "
                          f"{layout.urgent_class}")
    on_urgent = sum(1 for o in placed if layout.device_class.get(o) == layout.urgent_class)
    if on_urgent > m:
        faults.append(f"{on_urgent} shards on {layout.urgent_class} OSDs, more than m = {m}: "
                      f"fewer than k = {k} left on {layout.normal_class}")
    if len(set(placed)) != len(placed):
        twice = sorted({o for o in placed if placed.count(o) > 1})
        faults.append(f"osd.{twice[0]} holds two shards")
    domains = [layout.domain_of.get(o) for o in placed]
    if len(set(domains)) != len(domains):
        faults.append("two shards in one failure domain")
    return faults


def ec_profile_fit(k: int, m: int, normal_domains: int, urgent_domains: int,
                   failure_domain: str = "host", normal_class: str = "hdd",
                   urgent_class: str = "ssd") -> str | None:
    """Why an EC pool of profile k+m cannot be shared on this cluster, or None.

    Its own rule needs k+m failure domains holding the normal class (every shard
    has its own); sharing needs at least one holding the urgent class (a shard
    moves to an urgent OSD in its own failure domain or in one the PG does not use).
    """
    if k < 1 or m < 1:
        return f"profile k={k} m={m}: the EC strategy needs k >= 1 and m >= 1"
    if normal_domains < k + m:
        return (f"profile k={k} m={m} puts {k + m} shards in {k + m} {failure_domain}s; "
                f"only {normal_domains} hold {normal_class}")
    if urgent_domains < 1:
        return f"no {failure_domain} holds {urgent_class}: no shard can be moved"
    return None


def urgent_shards_cap(k: int, m: int, urgent_domains: int) -> int:
    """The most shards of one PG sharing puts on urgent OSDs: m (k stay on the normal
    region), and no more than the failure domains holding urgent OSDs."""
    return max(0, min(m, urgent_domains))


def render_ec_rule(rule: EcSharedRule, rule_id: int, *, with_sizes: bool) -> Block:
    """The shared rule's crushtool text block (an erasure rule, the own rule's sizes)."""
    return render_rule(rule.name, rule_id, rule.steps, with_sizes=with_sizes,
                       min_size=rule.min_size, max_size=rule.max_size, rule_type="erasure")
