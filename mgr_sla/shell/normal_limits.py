"""The PG limit of the normal OSDs that isolation brings PGs back to, as each
OSD runs it (`config get` told to the OSD, as osd_limits.py reads the urgent
ones), in a background thread and never from the tick, but bounded: a
cluster has 1,000 normal OSDs and more, and asking each every 30 s as the
urgent ones are would be 67 commands a second for values that change only
when an operator changes them.

Only the OSDs isolation brings PGs back to are asked (the others' counts do
not change), at most ASK_MAX of them a round and a round at most every
ROUND_SECS: first those projected within NEAR of their hard limit (again
every round), then those never asked, then the others (every SLOW_SECS). So at most
2 x ASK_MAX commands every ROUND_SECS (4.3 a second) whatever the cluster's
size: with 1,000 normal OSDs all receiving PGs, each is first read within 16
rounds (8 minutes), then every 10 minutes (3.3 commands a second). Until its
own value is read an OSD counts with the config database's value for it,
else the mgr's (read again every round), and the basis says which.
"""
from __future__ import annotations

import math
import time
from collections.abc import Mapping, Set

from ..core.pg_slots import PgLimit
from .mgr_port import MgrPort
from .osd_limits import OsdLimits

ROUND_SECS = 30.0
SLOW_SECS = 600.0
ASK_MAX = 64  # OSDs a round: two commands each
NEAR = 0.8  # of its hard limit: an OSD projected there is asked again every round


class NormalLimits:
    def __init__(self, mgr: MgrPort) -> None:
        self._osds = OsdLimits(mgr)
        self._asked: dict[int, float] = {}  # osd -> when it was last asked (time.monotonic())
        self._round_at = -math.inf
        self._stand_ins: dict[int, PgLimit | None] = {}
        self._stand_ins_at = -math.inf

    def limits(self, projected: Mapping[int, int], up: Set[int]) -> dict[int, PgLimit | None]:
        """Each OSD of `projected` (normal OSD -> its PGs with the pools
        isolated): its own limit as last read, else its stand-in (None: none
        readable); the OSDs due are asked in the background."""
        now = time.monotonic()
        read = self._osds.known()
        if now - self._stand_ins_at >= ROUND_SECS:
            self._stand_ins, self._stand_ins_at = {}, now
        out: dict[int, PgLimit | None] = {}
        for osd in projected:
            if osd in read:
                out[osd] = read[osd][0]
                continue
            if osd not in self._stand_ins:
                self._stand_ins[osd] = self._osds.stand_in(osd)
            out[osd] = self._stand_ins[osd]
        if now - self._round_at >= ROUND_SECS:
            self._round(now, projected, up, out)
        return out

    def _round(self, now: float, projected: Mapping[int, int], up: Set[int],
               limits: Mapping[int, PgLimit | None]) -> None:
        """Ask at most ASK_MAX of the OSDs due: those near their limit, then
        those never asked, then the others, each the nearest first, then the
        one asked longest ago (a down OSD is not asked)."""
        def fullness(osd: int) -> float:
            limit = limits.get(osd)
            if limit is None:
                return 0.0
            return projected[osd] / limit.hard if limit.hard else math.inf
        self._asked = {o: t for o, t in self._asked.items() if o in projected}
        due = [o for o in projected if o in up and now - self._asked.get(o, -math.inf)
               >= (ROUND_SECS if fullness(o) >= NEAR else SLOW_SECS)]
        due.sort(key=lambda o: (fullness(o) < NEAR, o in self._asked, -fullness(o),
                                self._asked.get(o, -math.inf), o))
        due = due[:ASK_MAX]
        if due and self._osds.ask(due, "sla-normal-limits"):
            self._round_at = now
            for osd in due:
                self._asked[osd] = now

    @property
    def version(self) -> int:
        """Bumped when a value read changes (or an OSD does not answer)."""
        return self._osds.version

    def wait(self, timeout: float) -> None:
        """For tests and shutdown: wait for a running read to end."""
        self._osds.wait(timeout)

    def forget(self) -> None:
        """Ask every OSD again at the next round (tests; the values changed)."""
        self._osds.forget()
        self._asked, self._round_at, self._stand_ins_at = {}, -math.inf, -math.inf
