"""An operator's size or min_size on a managed pool: taken as the pool's
base, or refused, never undone in silence. Pure: the pool as the map shows
it, its role and what the module last set (state.SizeRecord) in, a
`Judgement` out.

Only the copy strategy keeps a pool's size (N isolated, N + 1 shared on
sla_copy_N) and min_size (the base's, at both sizes); the move and ec
strategies and urgent pools leave both alone, so nothing here concerns them.

The record tells the module's own commands from an operator's: what the
module last set or accepted and, until the map shows its commands done, what
the pool had before them. Until then the map may show the pool as before, or
at the new size with the mon's own min_size (`osd pool set size` resets it:
size - size // 2 with osd_pool_default_min_size 0), and a failover may come
between the size and the min_size commands; none of that is an operator's
(the record is saved before the commands go out). Anything else is:

- a min_size at the size the module set: the pool's base min_size, if it is
  at most the base size (it holds at N and at N + 1 alike);
- a size while the module keeps the pool isolated at its base: the new base
  (with the min_size the mon gave it), if the copy strategy can toggle it
  (2 to MAX_BASE_SIZE) and the sla_copy_N rule it then needs is installed;
- a size while the pool is shared (N + 1, one copy on the urgent OSDs), or
  while the module's own size change is under way: refused. Whether N or
  N + 1 copies are meant cannot be told, and a wrong guess drops a normal
  copy when the pool next isolates.

A refused pool keeps the operator's size and min_size and stays isolated
(core/tick.py: `hands_off`) until the operator sets the module's values back,
or runs `ceph sla pool set` again, which takes the pool's values as its base.
"""
from __future__ import annotations

from collections.abc import Container, Mapping
from dataclasses import dataclass, replace
from typing import Any

from .decision import Mode
from .models.copy import MAX_BASE_SIZE
from .models.registry import role_needs, target, targets
from .state import PoolRole, SizeRecord
from .tick import PoolChange

HEALTH_CODE = "SLA_POOL_CHANGED_BY_HAND"


@dataclass(frozen=True)
class PoolSizes:
    """A managed pool's size and min_size as the OSD map shows them."""

    name: str
    size: int
    min_size: int


@dataclass(frozen=True)
class HandChange:
    """An operator's size or min_size: taken as the pool's base, or refused."""

    pool: str
    what: str  # "size" or "min_size"
    value: int
    expected: int  # what the module last set
    refusal: str | None = None  # why not taken, and what to do (None: taken)

    def line(self) -> str:
        """What the log and the health check say of it."""
        head = (f"pool {self.pool}: {self.what} {self.value} set by hand (the module had "
                f"set {self.expected})")
        if self.refusal is None:
            return f"{head}: taken as its base {self.what}"
        return (f"{head}, not taken: {self.refusal}; until then the module leaves its size "
                "and min_size alone and keeps it isolated")


@dataclass(frozen=True)
class Judgement:
    record: SizeRecord | None  # what to keep of the pool's sizes (None: nothing)
    change: HandChange | None = None  # an operator's change, taken or refused
    role: PoolRole | None = None  # the role with the operator's base (None: as it was)


def keeps_size(role: PoolRole) -> bool:
    """Whether the pool's strategy sets its size (the copy strategy)."""
    return target(role, Mode.ISOLATED).size is not None


def accepted(role: PoolRole, size: int, min_size: int) -> SizeRecord | None:
    """The record of a pool `pool set` takes as it is (None: its size is not kept)."""
    return SizeRecord(size, min_size) if keeps_size(role) else None


def held(sizes: Mapping[int, SizeRecord]) -> dict[int, str]:
    """The pools an operator's change not taken holds, and why: the admission
    keeps them isolated for it, as the pools sent back for a fault."""
    return {p: r.refused for p, r in sizes.items() if r.refused}


def hands_off(sizes: Mapping[int, SizeRecord]) -> frozenset[int]:
    """The pools whose size and min_size an operator's refused change holds."""
    return frozenset(held(sizes))


def judge(pool: PoolSizes, role: PoolRole, record: SizeRecord | None, rules: Container[str],
          now: float, asked: bool = False) -> Judgement:
    """The pool's sizes judged against what the module last set. `asked`:
    `ceph sla pool set` run again on it: the operator's values are the base
    in either mode, and the command installs the rules they need."""
    if not keeps_size(role):
        return Judgement(None)
    if record is None:  # recorded by a module that kept no record: taken if as wanted
        wanted = {t.size for t in targets(role).values()}
        mine = pool.size in wanted and role.base_min_size in (None, pool.min_size)
        return Judgement(SizeRecord(pool.size, pool.min_size) if mine else None)
    record = replace(record, refused=None)  # judged afresh: resolved once the cause goes
    sizes = (pool.size, pool.min_size)
    if sizes == (record.size, record.min_size):
        return Judgement(replace(record, before=None))
    if record.before is not None and (pool.size == record.size or sizes == record.before):
        return Judgement(record)  # the module's commands, not all in the map yet
    if pool.size == record.size:
        return _min_size_by_hand(pool, role, record, record.min_size, now)
    if record.before is not None and pool.size == record.before[0]:
        # the module's size change not taken (yet): its min_size was the one before
        return _min_size_by_hand(pool, role, record, record.before[1], now)
    return _size_by_hand(pool, role, record, rules, now, asked)


def _min_size_by_hand(pool: PoolSizes, role: PoolRole, record: SizeRecord, expected: int,
                      now: float) -> Judgement:
    if role.base_min_size is None:  # the module leaves this pool's min_size alone
        return Judgement(record if record.before else replace(record, min_size=pool.min_size))
    change = HandChange(pool.name, "min_size", pool.min_size, expected)
    base = role.base_size or 0
    if not 1 <= pool.min_size <= base:
        change = replace(change, refusal=(
            f"a min_size of 1 to the size {base} the pool has while isolated is what the "
            f"module keeps; 'ceph osd pool set {pool.name} min_size {expected}' gives it "
            "back to the module"))
        return Judgement(replace(record, refused=change.line()), change)
    before = (record.before[0], pool.min_size) if record.before else None
    return Judgement(replace(record, min_size=pool.min_size, before=before,
                             min_size_by_hand_at=now),
                     change, replace(role, base_min_size=pool.min_size))


def _size_by_hand(pool: PoolSizes, role: PoolRole, record: SizeRecord, rules: Container[str],
                  now: float, asked: bool) -> Judgement:
    change = HandChange(pool.name, "size", pool.size, record.size)
    base = role.base_size or 0
    adopted = replace(role, base_size=pool.size, base_min_size=pool.min_size or None)
    give_back = f"'ceph osd pool set {pool.name} size {record.size}' gives it back to the module"
    take = (f"'ceph sla pool set {pool.name} normal --strategy copy' again takes size "
            f"{pool.size} as its base")
    missing = [r for r in role_needs(adopted).rules if r not in rules]
    why = None
    if not asked and (record.before is not None or record.size != base):
        under = (f"shared ({base} copies and one on the urgent OSDs)" if record.size == base + 1
                 else "changing its size")
        why = (f"the module had the pool {under}: it cannot tell which size is meant; "
               f"{give_back}, or {take}")
    elif not 2 <= pool.size <= MAX_BASE_SIZE or not 1 <= pool.min_size <= pool.size:
        why = (f"the copy strategy keeps sizes 2 to {MAX_BASE_SIZE} (size 1 could never be "
               f"set back), with a min_size of 1 to the size; {give_back}, or 'ceph sla pool "
               f"rm {pool.name}' leaves the pool to you")
    elif missing and not asked:
        why = (f"size {pool.size} needs the CRUSH rule {missing[0]}, not installed; {take} "
               f"(it installs the rule), or {give_back}")
    if why is not None:
        change = replace(change, refusal=why)
        return Judgement(replace(record, refused=change.line()), change)
    min_at = now if pool.min_size != role.base_min_size else record.min_size_by_hand_at
    return Judgement(SizeRecord(pool.size, pool.min_size, None, now, min_at), change, adopted)


def release_role(role: PoolRole, pool: PoolSizes, record: SizeRecord | None) -> PoolRole:
    """The role `pool rm` and `release` put the pool back by: a size or
    min_size an operator set stays theirs, taken or refused alike."""
    change = judge(pool, role, record, (), 0.0).change
    if change is None:
        return role
    if change.what == "size":
        return replace(role, base_size=pool.size, base_min_size=pool.min_size or None)
    # one above the base size cannot outlive the size going back: the mon's then
    fits = 1 <= pool.min_size <= (role.base_size or 0)
    return replace(role, base_min_size=pool.min_size if fits else None)


def intended(change: PoolChange, record: SizeRecord | None) -> SizeRecord | None:
    """The record to save before the tick's size or min_size commands go out
    (None: the change sets neither). After a size change the module sets the
    base min_size back (the mon resets it), so that is the min_size meant."""
    if not (change.size_changes or change.min_size_changes):
        return None
    if change.to_size is not None and change.size_changes:
        size, min_size = change.to_size, change.role.base_min_size or change.from_min_size
    else:
        size, min_size = change.from_size, change.to_min_size or change.from_min_size
    return replace(record or SizeRecord(size, min_size), size=size, min_size=min_size,
                   before=(change.from_size, change.from_min_size), refused=None)


def by_hand_view(role: PoolRole, record: SizeRecord | None) -> dict[str, Any] | None:
    """What `ceph sla status` shows of an operator's hand on the pool's sizes:
    a base taken from it (the value, and when), or a change not taken."""
    if record is None:
        return None
    out: dict[str, Any] = {}
    if record.size_by_hand_at is not None and role.base_size is not None:
        out["base_size"] = {"value": role.base_size, "set_at": record.size_by_hand_at}
    if record.min_size_by_hand_at is not None and role.base_min_size is not None:
        out["base_min_size"] = {"value": role.base_min_size, "set_at": record.min_size_by_hand_at}
    if record.refused:
        out["refused"] = record.refused
    return out or None
