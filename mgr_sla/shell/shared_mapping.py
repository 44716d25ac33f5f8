"""Where sharing would put an isolated pool's PGs, when CRUSH alone places
them (a copy pool: sla_copy_N at N + 1): the rule mapped on the pool's real
PGs by crushtool and osdmaptool (crush_rules.rule_on_pools), seconds on a
big map, so in a background worker. The PG-slot projection counts these
exact OSDs once they are there, and a weight-proportional estimate with a
margin until then.
"""
from __future__ import annotations

from collections.abc import Hashable, Iterable

from ..crush_rules import Tools, rule_on_pools
from ..worker import KeyedWorker
from .mgr_port import MgrPort
from .rules_verifier import MonCommands

# (pool id, rule, size) -> per OSD, the pool's PGs it would hold
Wanted = tuple[tuple[int, str, int], ...]
PgsPerOsd = dict[int, dict[int, int]]


class SharedMappings:
    def __init__(self, mgr: MgrPort) -> None:
        self._cli = MonCommands(mgr)
        self._log = mgr.log
        self._worker: KeyedWorker[PgsPerOsd] = KeyedWorker(self._map, "sla-mapping")
        self._seen: Hashable = None  # the key of the result last handed out

    def pgs_per_osd(self, key: Hashable, wanted: Wanted) -> PgsPerOsd:
        """pool id -> {osd: PGs} for the pools mapped as of `key` (the crush
        version, the pools and the OSDs' weights); {} until the worker is done."""
        if not wanted:
            return {}
        done, result = self._worker.result((key, wanted), wanted)
        if not done or result is None:
            return {}
        self._seen = (key, wanted)
        return result

    def news(self) -> bool:
        """A result the last call did not hand out is there (the cost model
        then refreshes at once instead of at its next slow read)."""
        done = self._worker.done_key()
        return done is not None and done != self._seen

    def _map(self, wanted: Wanted) -> PgsPerOsd:
        """Runs in the worker's thread: all pools from one snapshot of the
        maps; if that fails, each alone, and a pool that cannot be mapped is
        left to the estimate (and logged)."""
        try:
            return {p: _per_osd(m.values())
                    for p, m in rule_on_pools(self._cli, Tools(), wanted).items()}
        except Exception:  # one pool's failure must not cost the others
            pass
        out: PgsPerOsd = {}
        for entry in wanted:
            try:
                mapping = rule_on_pools(self._cli, Tools(), [entry])[entry[0]]
            except Exception as e:  # the estimate stands in
                self._log.info("sla: pool %s not mapped on %s at size %s: %s", *entry, e)
                continue
            out[entry[0]] = _per_osd(mapping.values())
        return out

    def wait(self, timeout: float) -> None:
        self._worker.wait(timeout)


def _per_osd(up_sets: Iterable[tuple[int, ...]]) -> dict[int, int]:
    counts: dict[int, int] = {}
    for osds in up_sets:
        for osd in set(osds):
            counts[osd] = counts.get(osd, 0) + 1
    return counts
