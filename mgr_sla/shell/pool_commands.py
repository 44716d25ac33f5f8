"""The commands that manage pools and rules: `sla pool set|rm`, `sla release`,
`sla plan`, `sla rules apply`. Each refusal names what to do with this
module's commands or Ceph's, and changes nothing.
"""
from __future__ import annotations

import errno
import json
import time
from collections.abc import Collection
from dataclasses import replace
from typing import Any, Callable

from mgr_module import HandleCommandResult

from ..core.by_hand import PoolSizes, accepted, judge, release_role
from ..core.cluster import ClusterView, PoolInfo, ec_profile, pg_bytes_by_seed, pool_refusal
from ..core.decision import Mode
from ..core.ec_profile import EcScope, ec_misfit, ec_rule_misfit
from ..core.isolation_load import IsolationLoad, release_refusals
from ..core.models.registry import (
    MODELS,
    auto_role,
    model_of,
    role_needs,
    strategies_for,
    target,
)
from ..core.settings import Settings
from ..core.state import (
    RULE_ISOLATED_NORMAL,
    ModuleState,
    PoolRole,
    Role,
    SizeRecord,
    Strategy,
    UrgentPlacement,
)
from ..core.strategy_choice import StrategyChoice
from ..core.upmap.pg_ids import parse_pgid
from ..crush_rules.rules import copy_rule_name
from ..placement.base import Released, set_pool
from ..placement.placer import Placer
from .commands_io import OutputFormat, refuse, reply
from .map_reader import MapBehind, MapReader
from .mgr_port import MgrPort
from .rules_verifier import RulesBusy, RulesVerifier, compat_refusal, module_words, rules_needed
from .state_store import StateStore


class PoolCommands:
    def __init__(self, mgr: MgrPort, store: StateStore, maps: MapReader, placer: Placer,
                 rules: RulesVerifier, settings: Callable[[], Settings],
                 release_balancer: Callable[[], str | None],
                 first_strategy: Callable[[PoolInfo, str | None], StrategyChoice],
                 isolation: Callable[[], IsolationLoad | None] = lambda: None) -> None:
        self._mon = mgr.mon
        # what isolating the pools does to the normal OSDs, as the last refresh saw it
        self._isolation = isolation
        self._release_balancer = release_balancer
        self._store = store
        self._maps = maps
        self._placer = placer
        self._rules = rules
        self._settings = settings
        self._get = mgr.get
        self._first_strategy = first_strategy

    # ---- pool set --------------------------------------------------------------
    def pool_set(self, pool: str, role: Role, placement: UrgentPlacement | None,
                 strategy: Strategy | None, fmt: OutputFormat, auto: bool = False
                 ) -> HandleCommandResult:
        """`auto`: no --strategy under default_strategy 'auto': the first
        strategy is the admission's choice for the pool (what `plan` then
        shows), and the module picks again at each switch to shared."""
        view = self._view_now(f"pool '{pool}' not set")
        if not isinstance(view, ClusterView):
            return view
        info = view.pool_by_name(pool)
        if info is None:
            return refuse(errno.ENOENT, f"pool '{pool}' does not exist ('ceph osd pool ls')")
        kinds = strategies_for(info)
        if len(kinds) == 1 and role is Role.NORMAL:  # its kind allows one strategy
            strategy, auto = strategy or kinds[0], False
        problem = self._set_refusal(info, role, placement, strategy)
        if problem:
            return refuse(errno.EINVAL, problem)
        if auto and strategy is None:
            rule_now = view.rule_name(info.rule_id)
            strategy = Strategy(self._first_strategy(
                info, None if rule_now.startswith("sla_") else rule_now).strategy)
        with self._store.lock:
            state = self._store.state()
            current = state.roles.get(info.pool_id)
            if current is not None and (current.role is not role or (
                    role is Role.NORMAL and not auto
                    and strategy not in (None, current.strategy))):
                how = f" ({current.strategy.value})" if current.role is Role.NORMAL else ""
                return refuse(errno.EINVAL, f"pool '{pool}' is already {current.role.value}"
                              f"{how}: 'ceph sla pool rm {pool}' first")
            new, record, problem = self._sizes_for(info, view, state, current, self._new_role(
                info, view, role, placement, strategy, current, auto))
            if problem:
                return refuse(errno.EINVAL, problem)
            options = self._options_for(info, view, state, new)
        if options is not None:
            failed = self._install_for(info, view, options, new)
            if failed is not None:
                return failed
        self._remanage(info.pool_id, new, record)
        data = {"pool": pool, "pool_id": info.pool_id, "role": role.value,
                "placement": new.placement.value, "strategy": new.strategy.value,
                "auto": new.auto}
        auto_note = ", chosen again at each switch to shared" if new.auto else ""
        how = f" ({new.strategy.value}{auto_note})" if role is Role.NORMAL else ""
        return reply(fmt, data, f"pool '{pool}' is {role.value}{how}: it moves onto "
                                f"{target(new, Mode.ISOLATED).rule} at the next tick\n")

    @staticmethod
    def _sizes_for(info: PoolInfo, view: ClusterView, state: ModuleState,
                   current: PoolRole | None, new: PoolRole
                   ) -> tuple[PoolRole, SizeRecord | None, str | None]:
        """The role and size record `pool set` leaves, or why not: a new pool
        is taken as it is; one set again keeps its record, but a size or
        min_size an operator set becomes its base (core/by_hand.py)."""
        if current is None:
            return new, accepted(new, info.size, info.min_size), None
        again = judge(PoolSizes(info.name, info.size, info.min_size), new,
                      state.sizes.get(info.pool_id), view.rules, time.time(), asked=True)
        if again.change is not None and again.change.refusal is not None:
            return new, None, again.change.line()
        return again.role or new, again.record, None

    def _options_for(self, info: PoolInfo, view: ClusterView, state: ModuleState,
                     new: PoolRole) -> Any:
        """What to install for the pool's new role (None: it has all it needs)."""
        needed = rules_needed(replace(state, roles={**state.roles, info.pool_id: new}))
        missing = [r for r in needed if r not in view.rules]
        need = role_needs(new)
        weight_set = need.weight_set and info.pool_id not in view.choose_args_pools
        if not missing and not weight_set:
            return None
        return self._rules.options(
            self._settings(), state, view, (info.pool_id,) if need.weight_set else (),
            (need.copy_size,) if need.copy_size else ())

    def _view_now(self, what: str) -> ClusterView | HandleCommandResult:
        """The maps at the mon's epoch of now (MapReader.view_at_mon): what a
        command records of a pool, or puts back, is the pool as it is, not as
        the mgr's copy of the map had it an epoch ago; else a refusal."""
        try:
            return self._maps.view_at_mon(self._mon)
        except MapBehind as e:
            return refuse(errno.EAGAIN, f"{what}: {e}; nothing changed: try again")

    def _set_refusal(self, info: PoolInfo, role: Role, placement: UrgentPlacement | None,
                     strategy: Strategy | None) -> str | None:
        if placement is not None and role is not Role.URGENT:
            return "--placement applies to urgent pools only"
        if strategy is not None and role is not Role.NORMAL:
            return "--strategy applies to normal pools only"
        refusal = MODELS[strategy].refusal(info) if strategy is not None else None
        if info.erasure and role is Role.NORMAL:
            return refusal or self._ec_misfit(info) or self._compat_refusal()
        refusal = refusal or pool_refusal(info, self._get("osd_map_crush"),
                                          self._settings().failure_domain)
        return refusal or self._compat_refusal()

    def _ec_misfit(self, info: PoolInfo) -> str | None:
        settings = self._settings()
        regions = self._maps.current(0.0, settings.region_spec()).regions
        scope = EcScope(settings.failure_domain, settings.normal_class, settings.urgent_class,
                        regions.domains_of(settings.normal_class),
                        regions.domains_of(settings.urgent_class))
        return ec_misfit(info, ec_profile(self._get("osd_map"), info.ec_profile), scope) \
            or ec_rule_misfit(info, self._get("osd_map_crush"), scope)

    def _compat_refusal(self) -> str | None:
        """The client floor as the mon has it: the mgr's copy of the map may not
        have the command the operator just ran yet (the very fix the refusal names)."""
        if compat_refusal(self._get("osd_map")) is None:
            return None
        rc, out, _ = self._mon({"prefix": "osd dump", "format": "json"})
        return compat_refusal(json.loads(out) if rc == 0 else self._get("osd_map"))

    @staticmethod
    def _new_role(info: PoolInfo, view: ClusterView, role: Role,
                  placement: UrgentPlacement | None, strategy: Strategy | None,
                  current: PoolRole | None, auto: bool) -> PoolRole:
        if current is not None:
            return replace(current, placement=placement or current.placement)
        rule_now = view.rule_name(info.rule_id)
        original = None if rule_now.startswith("sla_") else rule_now
        if role is Role.NORMAL and auto:
            return auto_role(info, original, strategy or Strategy.DEFAULT)
        if role is Role.NORMAL:
            return MODELS[strategy or Strategy.DEFAULT].new_role(info, original)
        return PoolRole(role, placement or UrgentPlacement.ISOLATED, original)

    def _install_for(self, info: PoolInfo, view: ClusterView, options: Any, new: PoolRole
                     ) -> HandleCommandResult | None:
        """sla_shared needs the pool's own weight set, a copy pool its
        sla_copy_N rule. Adding a weight set must not remap the pool, so a
        move pool first moves onto sla_isolated_normal (which the weight sets
        do not touch); the tick takes it on from there. An EC pool stays on
        its own rule, which its weight set does not move (proved at install)."""
        try:
            if role_needs(new).weight_set \
                    and target(new, Mode.ISOLATED).rule == RULE_ISOLATED_NORMAL \
                    and view.rule_name(info.rule_id) != RULE_ISOLATED_NORMAL:
                gate = set_pool(self._mon, info.name, "crush_rule",
                                RULE_ISOLATED_NORMAL)
                if gate is not None:
                    raise RuntimeError(gate.detail)
            self._rules.install(options)
        except RulesBusy as e:
            return refuse(errno.EBUSY, str(e))
        except Exception as e:  # CrushError or a failed mon command: say which
            return refuse(errno.EIO, f"could not add pool '{info.name}' to the sla rules: "
                          f"{module_words(str(e))}")
        return None

    # ---- pool rm / release -----------------------------------------------------
    def pool_rm(self, pool: str, fmt: OutputFormat) -> HandleCommandResult:
        with self._store.act_lock:  # a tick must not act on the pools meanwhile
            view = self._view_now(f"pool '{pool}' still managed")
            if not isinstance(view, ClusterView):
                return view
            info = view.pool_by_name(pool)
            if info is None:
                return refuse(errno.ENOENT, f"pool '{pool}' does not exist")
            over = release_refusals(self._isolation(), [info.pool_id])
            if over:
                return refuse(errno.EBUSY, f"pool '{pool}' is still managed: {over[info.pool_id]}")
            with self._store.lock:
                # unmanaged first: the next tick must not move the pool back
                # onto an sla rule, even if this command fails half way
                role = self._store.state().roles.pop(info.pool_id, None)
                if role is None:
                    return refuse(errno.ENOENT, f"pool '{pool}' is not managed by sla")
                record = self._store.state().sizes.pop(info.pool_id, None)
                self._store.mark_dirty()
            self._store.write_back()  # on record before the release's commands
            released = self._release_one(info.pool_id, role, view, record)
            if released.failed:
                self._remanage(info.pool_id, role, record)
                return refuse(errno.EIO, f"pool '{pool}' is still managed: {released.failed}"
                              f"; fix that, then 'ceph sla pool rm {pool}' again")
            return reply(fmt, {"pool": pool, "removed": True, "steps": released.done},
                         f"pool '{pool}' is not managed: " + "; ".join(released.done) + "\n")

    def release(self, fmt: OutputFormat) -> HandleCommandResult:
        with self._store.act_lock:
            view = self._view_now("nothing released")
            if not isinstance(view, ClusterView):
                return view
            with self._store.lock:
                managed = list(self._store.state().roles)
            over = release_refusals(self._isolation(), managed)
            if over:
                return refuse(errno.EBUSY, "nothing released: " + "; ".join(
                    f"pool {view.pools[p].name if p in view.pools else p}: {why}"
                    for p, why in sorted(over.items())))
            with self._store.lock:  # unmanaged first, as in `pool rm`
                state = self._store.state()
                roles, records = dict(state.roles), dict(state.sizes)
                state.roles.clear()
                state.sizes.clear()
                self._store.mark_dirty()
            self._store.write_back()
            report: dict[str, Any] = {}
            errors = []
            for pool_id, role in sorted(roles.items()):
                info = view.pools.get(pool_id)
                if info is None:
                    continue
                released = self._release_one(pool_id, role, view, records.get(pool_id))
                report[info.name] = released.done
                if released.failed:
                    errors.append(f"{info.name}: {released.failed}")
                    self._remanage(pool_id, role, records.get(pool_id))  # to retry
            if errors:
                return refuse(errno.EIO, "not released: " + "; ".join(errors)
                              + "; fix that, then 'ceph sla release' again")
            balancer = self._release_balancer()
            if balancer:
                report["balancer"] = [balancer]
            rules = self._remove_unused_rules()
            if rules:
                report["crush rules"] = rules
            text = "".join(f"{name}: {'; '.join(steps)}\n" for name, steps in report.items())
            return reply(fmt, {"released": report}, text or "no managed pools\n")

    def _remove_unused_rules(self) -> list[str]:
        """The sla CRUSH rules no pool uses any more: released, the cluster has
        the rules it had before sla ('ceph sla rules apply' brings them back)."""
        view = self._maps.fresh_view()
        used = {p.rule_id for p in view.pools.values()}
        done = []
        for name, rule_id in sorted(view.rules.items()):
            if name.startswith("sla_") and rule_id not in used:
                rc, _, err = self._mon({"prefix": "osd crush rule rm", "name": name})
                done.append(f"{name} removed" if rc == 0 else f"{name} kept: {err.strip()}")
        return done

    def _release_one(self, pool_id: int, role: PoolRole, view: ClusterView,
                     record: SizeRecord | None = None) -> Released:
        """Undo what sla did: a size or min_size an operator set stays theirs."""
        urgent = view.osds_of_class(self._settings().urgent_class)
        info = view.pools[pool_id]
        kept = release_role(role, PoolSizes(info.name, info.size, info.min_size), record)
        released = self._placer.release(pool_id, kept, view, self._get("osd_map"), urgent)
        if kept == role:
            return released
        return Released([*released.done, f"size {info.size}, min_size {info.min_size} left "
                         "as set by hand"], released.failed)

    def _remanage(self, pool_id: int, role: PoolRole, record: SizeRecord | None) -> None:
        with self._store.lock:
            state = self._store.state()
            state.roles[pool_id] = role
            if record is None:
                state.sizes.pop(pool_id, None)
            else:
                state.sizes[pool_id] = record
            self._store.mark_dirty()
        self._store.write_back()  # the command answers once its change is in the store
        # the tick's maps may predate the pool (its notify not delivered yet):
        # read again, or the tick would forget the role of a pool it cannot see
        self._maps.mark_dirty()

    # ---- plan / rules apply ----------------------------------------------------
    def switch_moves(self, to: Mode, kept: Collection[int]) -> list[dict[str, Any]]:
        """Per normal pool: PGs, replicas and bytes the next switch moves;
        `kept`: the pools the admission keeps isolated, which a switch to
        shared leaves where they are (a switch to isolated still takes back
        whatever of them is out)."""
        maps = self._maps.current(0.0, self._settings().region_spec())
        with self._store.lock:
            state = self._store.state()
            normal = {p: r for p, r in state.roles.items() if r.role is Role.NORMAL}
        stats = self._get("pg_dump").get("pg_stats", [])
        out = []
        for pool in self._placer.pools_up(state.roles, maps):
            if pool.pool_id not in normal:
                continue
            pg_bytes = pg_bytes_by_seed(stats, pool.pool_id)
            per_copy = pool.info.pieces_per_object
            moves = {} if to is Mode.SHARED and pool.pool_id in kept else \
                model_of(pool.role).switch_moves(pool, maps, to)
            out.append({"pool": pool.info.name, "pool_id": pool.pool_id,
                        "strategy": pool.role.strategy.value, "pgs": len(pool.up),
                        "pgs_moving": len(moves), "replicas": sum(moves.values()),
                        "bytes": sum(n * pg_bytes.get(parse_pgid(pg)[1], 0) // per_copy
                                     for pg, n in moves.items())})
        return out

    def rules_apply(self, fmt: OutputFormat) -> HandleCommandResult:
        refusal = self._compat_refusal()
        if refusal:
            return refuse(errno.EPERM, refusal)
        with self._store.lock:
            state = self._store.state()
            options = self._rules.options(self._settings(), state, self._maps.fresh_view())
        try:
            result = self._rules.install(options)
        except RulesBusy as e:
            return refuse(errno.EBUSY, str(e))
        except Exception as e:  # CrushError or a failed mon command: say which
            return refuse(errno.EINVAL, f"rules not installed: {module_words(str(e))}")
        return reply(fmt, result.to_dict(),
                     ("installed" if result.changed else "unchanged") + ": sla CRUSH rules "
                     f"({', '.join(sorted(result.rule_ids))}), weight sets for the move pools "
                     f"{list(options.pool_ids)}, copy rules "
                     f"{[copy_rule_name(n) for n in options.copy_sizes]}\n")
