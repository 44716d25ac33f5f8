"""Placement on the real PG mappings, for every managed pool: each pool's
strategy converges it (rule, size, entries), and on every new OSD map epoch
the real up sets are checked (an OSD or a failure domain twice, a normal PG
without a normal replica). A reweight, a new OSD, the balancer's entries,
the mon cancelling ours: each comes with a new epoch, so that is when to
look again.
"""
from __future__ import annotations

import json
from collections.abc import Collection, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable

from ..core.cluster import ClusterView
from ..core.gates import Gate
from ..core.health import HealthChecks
from ..core.maps import MapSnapshot
from ..core.models.base import PoolUp
from ..core.models.registry import others_weight_set
from ..core.state import PoolRole, Strategy
from ..core.switch_cost import UPMAP_PARALLEL
from ..core.tick import PoolChange
from ..core.upmap.regions import MappingFaults
from ..worker import BatchSender
from .base import EntryPlan, MonCall, PlacementStrategy, Released, merge_failed, remove_weight_set
from .registry import STRATEGIES, kind_of

APPLY_PARALLEL = 16  # pools changed at once in one tick
# pg_upmap_items commands planned per epoch, all sent at once (UPMAP_PARALLEL):
# the mon folds concurrent commands into one proposal.
UPMAP_BATCH = 256
# how long a change that isolates waits for an upmap batch already with the
# mon (a commit or two) before it goes anyway
SENDS_WAIT_SECS = 10.0


class Placer:
    def __init__(self, mon: MonCall, up_sets: Callable[[int], Mapping[str, Sequence[int]]],
                 log: Any,
                 health: HealthChecks, failure_domain: Callable[[], str],
                 outages: Callable[[], int] | None = None) -> None:
        self._mon = mon
        self._up_sets = up_sets
        self._log = log
        self._health = health
        self._failure_domain = failure_domain
        # one sender carries every pool's pg_upmap_items, whatever its
        # strategy; it stops a batch planned before the monitors went silent
        # (`outages`)
        self.sender = BatchSender(mon, UPMAP_PARALLEL, "sla-upmaps", outages)
        self._strategies: dict[Strategy, PlacementStrategy] = {
            kind: make(mon, log) for kind, make in STRATEGIES.items()}
        self._key: tuple[int, int, str] | None = None
        # pool -> (what its judgement depends on, its up sets, its entries, faults, entries)
        self._judgements: dict[int, tuple[Any, ...]] = {}
        self._status: dict[int, dict[str, Any]] = {}
        self.pending = 0
        self.pgs_without_normal: int | None = None

    def strategy(self, role: PoolRole) -> PlacementStrategy:
        return self._strategies[kind_of(role)]

    def status(self, pool_id: int) -> dict[str, Any] | None:
        return self._status.get(pool_id)

    # ---- converging pools ----------------------------------------------------
    def apply(self, changes: tuple[PoolChange, ...]) -> tuple[list[Gate], list[PoolChange]]:
        """Each pool's change by its strategy, all pools at once: the mon
        folds concurrent commands into one proposal, so isolating ten pools
        costs about the commit of one (one after the other: a commit each).
        A pool the mon refuses does not stop the others. Returns the failures
        and the changes the mon took whole. Once a command gets no answer in
        time, every later one fails at once until the next tick has seen a
        probe answer (shell/mon_deadline.py): a pool's remaining steps are
        dropped, not sent after the outage; one already handed to librados
        may still be applied when quorum returns."""
        if not changes:
            return [], []
        with ThreadPoolExecutor(min(APPLY_PARALLEL, len(changes))) as workers:
            results = list(workers.map(lambda c: self.strategy(c.role).apply(c), changes))
        failed: list[Gate] = []
        applied: list[PoolChange] = []
        for change, gate in zip(changes, results):
            if gate is not None:
                self._log.error("sla: %s", gate.detail)
                failed.append(gate)
            else:
                applied.append(change)
                self._log.info("sla: pool %s: rule %s -> %s, size %s -> %s", change.pool,
                               change.from_rule, change.to_rule, change.from_size,
                               change.to_size or change.from_size)
        return merge_failed(failed), applied

    def current_epoch(self) -> int | None:
        """The OSD map epoch as the mon has it now (after our commands)."""
        rc, out, _ = self._mon({"prefix": "osd stat", "format": "json"})
        return int(json.loads(out).get("epoch", 0)) if rc == 0 else None

    # ---- every new epoch -----------------------------------------------------
    def pools_up(self, roles: Mapping[int, PoolRole], maps: MapSnapshot) -> list[PoolUp]:
        view = maps.view
        return [PoolUp(pool_id, role, view.pools[pool_id],
                       view.rule_name(view.pools[pool_id].rule_id),
                       self._up_sets(pool_id), maps.upmap_items.get(pool_id, {}))
                for pool_id, role in sorted(roles.items()) if pool_id in view.pools]

    def check(self, roles: Mapping[int, PoolRole], maps: MapSnapshot, may_act: bool, hold: bool,
              frozen: Collection[int] = ()) -> list[dict[str, Any]]:
        """On a new epoch (or while entries are pending): check every managed
        pool's real up sets and return the pg_upmap_items commands that bring
        each pool's entries to what its rule wants (sent by `send`). `frozen`:
        pools the tick holds on their shared placement (a normal OSD's PG
        limit): as with `hold`, their entries only protect or keep data where
        it is (repairs, a split's children), nothing moves on or off urgent OSDs."""
        # the regions' fingerprint: an option they carry (share_past_min_size,
        # the classes) changes the plans without a new epoch
        key = (maps.view.epoch, maps.regions.fingerprint,
               json.dumps(sorted((p, r.strategy.value, may_act, p in frozen)
                                 for p, r in roles.items())))
        if key == self._key and not self.pending:
            return []
        self._key = key
        faults: list[str] = []
        no_normal: list[str] = []
        batch: list[dict[str, Any]] = []
        status: dict[int, dict[str, Any]] = {}
        pending = 0
        domain = self._failure_domain()
        # plans hold PGs back from OSDs that are down: part of what they depend on
        down = frozenset(o for o, p in maps.regions.osds.items() if not p.up)
        for pool in self.pools_up(roles, maps):
            strategy = self.strategy(pool.role)
            found, entries = self._judged(strategy, pool, maps,
                                          (may_act, hold or pool.pool_id in frozen, down))
            faults += [f"pg {pg}: one OSD twice in the up set" for pg in found.osd_twice]
            faults += [f"pg {pg}: two replicas in one {domain}" for pg in found.domain_twice]
            no_normal += list(found.no_normal)
            batch += entries.commands
            # a pool held where it is waits only for what it sends (repairs, a
            # split's children): the placement it holds back must not keep a
            # switch's placement open
            pending += len(entries.commands) if pool.pool_id in frozen else entries.pending
            if entries.status is not None:
                status[pool.pool_id] = entries.status
        # whole, at once: status reads them without the tick's locks
        self._status, self.pending = status, pending
        self._health.update("SLA_PLACEMENT_FAULT", faults,
                            f"{len(faults)} PGs of sla pools break a placement rule")
        self.pgs_without_normal = len(no_normal)
        self._health.update(
            "SLA_NORMAL_INCLUSION",
            [f"pg {pg}: up set has no normal-class OSD (a pg_upmap entry from outside sla? "
             "exclude normal pools from the balancer)" for pg in no_normal],
            f"{len(no_normal)} PGs of normal pools have no replica on the normal class")
        return batch

    def _judged(self, strategy: PlacementStrategy, pool: PoolUp, maps: MapSnapshot,
                how: tuple[bool, bool, frozenset[int]]) -> tuple[MappingFaults, EntryPlan]:
        """The pool's faults and entries (how: may act, hold, the OSDs down);
        the last ones again when nothing they depend on changed (an epoch
        that moved none of its PGs: most of them, at 12,500 PGs a pool a
        tenth of a second each)."""
        may_act, hold, _ = how
        key = (strategy.kind, pool.role, pool.info, pool.rule, maps.regions.fingerprint, how)
        last = self._judgements.get(pool.pool_id)
        if last is not None and last[0] == key and last[1] == pool.up \
                and last[2] == pool.items:
            return last[3], last[4]
        found = strategy.faults(pool, maps)
        entries = strategy.entries(pool, maps, may_act, hold)
        self._judgements[pool.pool_id] = (key, pool.up, pool.items, found, entries)
        return found, entries

    def send(self, batch: list[dict[str, Any]], placed_at: Callable[[int], None],
             dirty: Callable[[], None]) -> None:
        """The batch goes out on the upmap sender's thread; when it is in,
        the switch's placement counts from the epoch the mon has then."""
        def done(sent: list[dict[str, Any]], results: list[Any]) -> None:
            dirty()
            failed = [(c, err) for c, (rc, _, err) in zip(sent, results) if rc != 0]
            for cmd, err in failed[:5]:
                self._log.warning("sla: %s %s failed: %s", cmd["prefix"], cmd["pgid"],
                                  err.strip())
            self._log.info("sla: upmap entries: %d set, %d removed, %d failed",
                           sum(1 for c in sent if c["prefix"] == "osd pg-upmap-items"),
                           sum(1 for c in sent if c["prefix"] == "osd rm-pg-upmap-items"),
                           len(failed))
            try:
                epoch = self.current_epoch()
            except Exception as e:  # shutting down: the next mgr tracks from its start
                self._log.debug("sla: osd stat after an upmap batch failed: %s", e)
                return
            if epoch is not None:
                placed_at(epoch)
        # none while one is in flight: the next epoch replans from what the mon has then
        self.sender.start(batch[:UPMAP_BATCH], done)

    def cancel_sends(self) -> None:
        """A switch cancels the rest of a batch that placed the other mode."""
        self.sender.cancel()

    def finish_sends(self) -> None:
        """Before a change that isolates: wait (at most SENDS_WAIT_SECS) for a
        batch already with the mon. The rule change must come after the
        entries sent for shared: sent with them, the mon maps those entries
        onto the isolated pool for an epoch and cancels them in the next, and
        each of their PGs peers twice."""
        self.sender.wait(SENDS_WAIT_SECS)
        if self.sender.busy():
            self._log.warning("sla: an upmap batch is still with the monitors after %.0f s; "
                              "isolating anyway", SENDS_WAIT_SECS)

    def release(self, pool_id: int, role: PoolRole, view: ClusterView,
                osd_map: dict[str, Any], urgent_osds: frozenset[int]) -> Released:
        released = self.strategy(role).release(pool_id, role, view, osd_map, urgent_osds)
        if released.failed or not others_weight_set(role):
            return released
        # an auto pool: `pool set` gave it the weight set of another of its strategies too
        weight_set = remove_weight_set(self._mon, pool_id, view)
        return Released(released.done + weight_set.done, weight_set.failed)
