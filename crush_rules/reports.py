"""What verification found: per rule (R1-R5, R7), per copy rule (R8), the
isolated <-> shared pair, and the whole report with its failures and warnings.

Plain frozen dataclasses with ``to_dict()``; the checks that fill them are in
verify.py, the runs that map the rules in verify_run.py.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass(frozen=True)
class RuleReport:
    rule: str
    pool_id: int | None
    pgs: int
    short_pgs: int
    duplicate_osd_pgs: int
    failure_domain_violations: int
    isolation_violations: int | None
    inclusion: float
    urgent_share: float
    primary_urgent: float
    # PGs whose OSDs (or their order) differ from sla_isolated_normal's on the same
    # pool; set for sla_shared and sla_hybrid (R4), else None.
    pgs_differing_from_isolated: int | None = None
    # R7: p-value of "first replicas per failure domain follow the class weights"
    # (isolated rules, offline verification); None when not tested.
    proportional_p: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class PairReport:
    replicas_moved: int
    replicas_must_move: int
    movement_efficiency: float

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class CopyReport:
    """R8 for one copy rule, on the PGs of one pool (mapped at N and at N + 1 replicas)."""

    rule: str
    size: int  # N: normal-class copies; shared mode runs the pool at N + 1
    pool_id: int | None
    pgs: int
    # at N replicas
    pgs_differing_from_isolated: int  # vs sla_isolated_normal at N (same OSDs, same order)
    # at N + 1 replicas
    short_pgs: int  # fewer than N + 1 OSDs
    duplicate_osd_pgs: int
    urgent_not_first_pgs: int  # the first OSD is not of the urgent class
    urgent_count_pgs: int  # not exactly one urgent-class OSD
    normal_off_class_pgs: int  # an OSD after the first is not of the normal class
    normal_failure_domain_pgs: int  # two of the N normal copies in one failure domain
    normal_differing_pgs: int  # the N after the first differ from sla_isolated_normal at N
    # the urgent copy in a failure domain that also holds a normal copy (allowed)
    shared_failure_domain_pgs: int
    shared_failure_domain_fraction: float
    # replicas a switch N -> N + 1 adds (one per PG when the rule is right) and
    # the other replicas it changes (0 when right)
    replicas_added: int
    replicas_moved: int
    pool_size: int | None = None  # the size of the pool mapped (None: synthetic pool)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class VerifyReport:
    rules: Mapping[str, RuleReport]
    pair: PairReport | None
    # The weight-proportional urgent share of replicas (capped): what shared mode could
    # put on the urgent class; reached by the module's upmaps, not by CRUSH.
    target_urgent_share: float
    failures: tuple[str, ...]
    warnings: tuple[str, ...] = ()
    extra: Mapping[str, Any] = field(default_factory=dict)
    copy_rules: Mapping[str, CopyReport] = field(default_factory=dict)  # R8, by rule name

    @property
    def ok(self) -> bool:
        return not self.failures

    def to_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "failures": list(self.failures),
            "warnings": list(self.warnings),
            "target_urgent_share": round(self.target_urgent_share, 4),
            "rules": {name: report.to_dict() for name, report in self.rules.items()},
            "isolated_normal_to_shared": self.pair.to_dict() if self.pair else None,
            "copy_rules": {name: report.to_dict() for name, report in self.copy_rules.items()},
            **dict(self.extra),
        }
