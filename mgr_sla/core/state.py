"""What the module persists in the mon-backed store: the mode, the managed
pools' roles, the switch history. Pure: JSON in, JSON out; the module owns
the store calls.

Persisting the mode (not only the roles) is what lets a new active mgr after
`ceph mgr fail` carry on in the same mode without an extra switch.
"""
from __future__ import annotations

import enum
import json
from collections.abc import Container
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from .decision import DecisionState, Mode

RULE_ISOLATED_NORMAL = "sla_isolated_normal"
RULE_SHARED = "sla_shared"
RULE_ISOLATED_URGENT = "sla_isolated_urgent"
RULE_HYBRID = "sla_hybrid"

HISTORY_LEN = 50
STATE_KEY = "state"
STATE_VERSION = 4  # 1: no "version" key, no original rules; 2: no strategies; 3: no
# pools sent back, no pacing record. "sizes" is optional in 4: a module that
# predates it drops it, and one that reads none starts the records afresh


class Role(str, enum.Enum):
    URGENT = "urgent"
    NORMAL = "normal"


class UrgentPlacement(str, enum.Enum):
    """Where an urgent pool's replicas go: all on the urgent class, or the
    primary there and the rest on the normal class (short of SSD)."""

    ISOLATED = "isolated"
    HYBRID = "hybrid"


class Strategy(str, enum.Enum):
    """How a normal pool uses the urgent region in shared mode.

    move: the module's pg_upmap_items move a weight-proportional share of the
    replicas onto urgent OSDs (no extra space; isolation moves them back).
    copy: the pool's size grows by one and the extra copy lands on an urgent
    OSD (sla_copy_N); isolation drops it at peering, nothing is copied back.
    ec: an erasure-coded pool's rule swaps to sla_ec_<its own rule> and the
    module's pg_upmap_items move up to m shards of each PG onto urgent OSDs,
    in place (isolation moves them back)."""

    MOVE = "move"
    COPY = "copy"
    EC = "ec"
    # an alias, not a third strategy: pools recorded before strategies
    # existed, and `pool set` when default_strategy names none
    DEFAULT = "move"


@dataclass(frozen=True)
class PoolRole:
    role: Role
    placement: UrgentPlacement = UrgentPlacement.ISOLATED
    # the rule the pool had before sla managed it: `pool rm` and `release`
    # put it back (None: managed by a version that did not record it)
    original_rule: str | None = None
    strategy: Strategy = Strategy.DEFAULT
    # copy pools: the size and min_size the pool had when sla took it; isolated
    # mode keeps them, shared mode adds one copy, `pool rm` restores them
    base_size: int | None = None
    base_min_size: int | None = None
    # normal pools set without --strategy under default_strategy 'auto': the
    # module picks the strategy at each switch to shared (core/strategy_choice.py)
    auto: bool = False


@dataclass(frozen=True)
class PoolTarget:
    """What a managed pool is in one mode: its rule, and its size (None: sla
    leaves the size alone). Each strategy says it for its pools
    (placement/); the tick only compares it with the pool as it is."""

    rule: str
    size: int | None = None
    min_size: int | None = None  # None: sla leaves the min_size alone


@dataclass(frozen=True)
class SizeRecord:
    """What the module last commanded or accepted of a pool's size and
    min_size, for the pools whose size it keeps (copy): an operator's change
    is told from the module's own by it (core/by_hand.py)."""

    size: int
    min_size: int
    # the pool's size and min_size when the module's last commands went out,
    # until the map shows them done: until then the map may show either, and
    # the mon's own min_size reset after the size change
    before: tuple[int, int] | None = None
    # when the base size and min_size were last taken from an operator's change
    size_by_hand_at: float | None = None
    min_size_by_hand_at: float | None = None
    # an operator's change the module did not take, and why: it leaves the
    # pool's size and min_size alone and keeps it isolated until it is resolved
    refused: str | None = None

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        out["before"] = list(self.before) if self.before else None
        return out

    @staticmethod
    def from_json(raw: dict[str, Any]) -> SizeRecord:
        def at(key: str) -> float | None:
            return float(raw[key]) if raw.get(key) is not None else None
        before = raw.get("before")
        return SizeRecord(int(raw["size"]), int(raw["min_size"]),
                          (int(before[0]), int(before[1])) if before else None,
                          at("size_by_hand_at"), at("min_size_by_hand_at"),
                          str(raw["refused"]) if raw.get("refused") else None)


@dataclass
class SwitchRecord:
    time: float
    from_mode: str
    to_mode: str
    reason: str
    epoch: int | None = None
    pgs_moved: int | None = None
    replicas_moved: int | None = None
    time_to_isolation_secs: float | None = None
    dry_run: bool = False
    # switches to isolated: the bytes the move pools had on urgent OSDs (the
    # drain rate the cost model learns is these over the time to isolation)
    bytes_to_isolate: float | None = None
    # switches to shared: the bytes its pools placed on urgent OSDs in that
    # shared period, and those pools, each counted once (core/wear.py)
    bytes_to_urgent: float | None = None
    pools_to_urgent: list[int] | None = None

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["from"] = out.pop("from_mode")
        out["to"] = out.pop("to_mode")
        return out


@dataclass(frozen=True)
class StepRecord:
    """The last step of a paced switch to shared: when it went out, the OSD
    map epoch the mon had then, and its pools (the next step waits for their
    PGs' stats reported after that epoch)."""

    at: float
    epoch: int
    pools: tuple[int, ...]


@dataclass
class ModuleState:
    decision: DecisionState
    pinned: Mode | None = None
    roles: dict[int, PoolRole] = field(default_factory=dict)
    history: list[SwitchRecord] = field(default_factory=list)
    switches_total: int = 0
    blocked_total: dict[str, int] = field(default_factory=dict)
    # normal pools sent back for what their sharing caused (core/sharing_check.py),
    # and why: kept isolated until the mode or its pin changes
    sent_back: dict[int, str] = field(default_factory=dict)
    last_step: StepRecord | None = None
    # the copy pools' sizes as the module last set or accepted them
    sizes: dict[int, SizeRecord] = field(default_factory=dict)

    @staticmethod
    def initial(now: float) -> ModuleState:
        # Isolated is the safe start: it never lets normal data near urgent OSDs.
        return ModuleState(DecisionState(Mode.ISOLATED, now))

    def record_switch(self, record: SwitchRecord) -> None:
        self.history.append(record)
        del self.history[:-HISTORY_LEN]
        if not record.dry_run:
            self.switches_total += 1

    def pools(self, role: Role | None = None, strategy: Strategy | None = None) -> list[int]:
        """The managed pools' ids, in order, of a role and strategy if given."""
        return sorted(p for p, r in self.roles.items()
                      if (role is None or r.role is role)
                      and (strategy is None or r.strategy is strategy))

    def forget_pools(self, exist: Container[int]) -> list[int]:
        """Drop what is kept about pools that no longer exist (their roles,
        send-backs and place in the last step); the roles dropped."""
        gone = [p for p in self.roles if p not in exist]
        for pool_id in gone:
            del self.roles[pool_id]
        for pool_id in [p for p in self.sent_back if p not in exist]:
            del self.sent_back[pool_id]
        for pool_id in [p for p in self.sizes if p not in exist]:
            del self.sizes[pool_id]
        step = self.last_step
        if step is not None and any(p not in exist for p in step.pools):
            pools = tuple(p for p in step.pools if p in exist)
            self.last_step = StepRecord(step.at, step.epoch, pools) if pools else None
        return gone

    def snapshot(self) -> ModuleState:
        """A copy to read outside the status lock: its own containers (the
        records in them are shared, and read only)."""
        return replace(self, roles=dict(self.roles), history=list(self.history),
                       sent_back=dict(self.sent_back), blocked_total=dict(self.blocked_total),
                       sizes=dict(self.sizes))

    def last_switch(self) -> SwitchRecord | None:
        real = [r for r in self.history if not r.dry_run]
        return real[-1] if real else None

    def to_json(self) -> str:
        return json.dumps({
            "version": STATE_VERSION,
            "mode": self.decision.mode.value,
            "mode_since": self.decision.mode_since,
            "quiet_since": self.decision.quiet_since,
            # a failover keeps the sustain timer of an urgent run already under way
            "high_since": self.decision.high_since,
            "pinned": self.pinned.value if self.pinned else None,
            "roles": {str(pid): _role_json(r) for pid, r in sorted(self.roles.items())},
            "history": [asdict(r) for r in self.history],
            "switches_total": self.switches_total,
            "blocked_total": self.blocked_total,
            "sent_back": {str(p): why for p, why in sorted(self.sent_back.items())},
            "last_step": None if self.last_step is None else {
                "at": self.last_step.at, "epoch": self.last_step.epoch,
                "pools": list(self.last_step.pools)},
            "sizes": {str(p): r.to_json() for p, r in sorted(self.sizes.items())},
        }, sort_keys=True)

    @staticmethod
    def from_json(text: str | None, now: float) -> ModuleState:
        """Restore; a missing record starts fresh (isolated). An unreadable
        one raises StateError: the caller keeps a copy and says so."""
        if not text:
            return ModuleState.initial(now)
        try:
            raw = json.loads(text)
            version = int(raw.get("version", 1))
            if version > STATE_VERSION:
                raise StateError(f"state version {version} is newer than this module's "
                                 f"{STATE_VERSION}")
            decision = DecisionState(Mode(raw["mode"]), float(raw["mode_since"]),
                                     raw.get("quiet_since"), raw.get("high_since"))
            roles = {int(pid): _role_from(r) for pid, r in raw.get("roles", {}).items()}
            return ModuleState(
                decision=decision,
                pinned=Mode(raw["pinned"]) if raw.get("pinned") else None,
                roles=roles,
                history=[SwitchRecord(**r) for r in raw.get("history", [])],
                switches_total=int(raw.get("switches_total", 0)),
                blocked_total={str(k): int(v) for k, v in raw.get("blocked_total", {}).items()},
                sent_back={int(p): str(why) for p, why in (raw.get("sent_back") or {}).items()},
                last_step=_step_from(raw.get("last_step")),
                sizes={int(p): SizeRecord.from_json(r)
                       for p, r in (raw.get("sizes") or {}).items()},
            )
        except (KeyError, TypeError, ValueError, AttributeError) as e:
            raise StateError(f"unreadable state record: {e}") from e


def _step_from(raw: dict[str, Any] | None) -> StepRecord | None:
    if not raw:
        return None
    return StepRecord(float(raw["at"]), int(raw["epoch"]), tuple(int(p) for p in raw["pools"]))


def _role_json(r: PoolRole) -> dict[str, Any]:
    return {"role": r.role.value, "placement": r.placement.value,
            "original_rule": r.original_rule, "strategy": r.strategy.value,
            "base_size": r.base_size, "base_min_size": r.base_min_size, "auto": r.auto}


def _role_from(raw: dict[str, Any]) -> PoolRole:
    def size(key: str) -> int | None:
        return int(raw[key]) if raw.get(key) is not None else None
    return PoolRole(Role(raw["role"]), UrgentPlacement(raw.get("placement", "isolated")),
                    raw.get("original_rule"), Strategy(raw.get("strategy", Strategy.DEFAULT.value)),
                    size("base_size"), size("base_min_size"), bool(raw.get("auto", False)))


class StateError(ValueError):
    """The stored state cannot be read; the message says why."""
