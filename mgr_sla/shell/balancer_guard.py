"""Keeps the balancer off the pools sla places (neighbours.py decides, this
class reads the balancer's settings and acts).

The balancer, on by default in upmap mode, works on every pool while its
`mgr/balancer/pool_ids` is empty, aiming at CRUSH weights over both classes;
the module's own entries are then replaced and put back, for ever. So the
managed pools leave its list: an empty list becomes the explicit list of the
other pools, kept current as pools come and go. The operator's own value is
kept in the module's store and `ceph sla release` puts it back.
"""
from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from ..core.cluster import ClusterView
from ..core.health import HealthChecks
from ..core.neighbours import (
    BALANCER_DEFAULTS,
    balancer_exclusion,
    balancer_release,
    balancer_view,
    module_option_default,
)
from ..core.state import PoolRole, Role, UrgentPlacement
from .mgr_port import MgrPort

STORE_KEY = "balancer"
POOL_IDS = "mgr/balancer/pool_ids"


class BalancerGuard:
    def __init__(self, mgr: MgrPort, health: HealthChecks) -> None:
        self._get_option = lambda key: mgr.module_option("balancer", key)
        self._mgr_map = lambda: mgr.get("mgr_map")
        # the defaults the running mgr declares: fixed for this process's life
        self._defaults: dict[str, Any] = {}
        self._store_get = mgr.get_store
        self._store_set = mgr.set_store
        self._mon = mgr.mon
        self._log = mgr.log
        self._health = health
        self._epoch = -1

    def _option(self, key: str) -> Any:
        """The balancer's option as in force: its value if set, else the
        default the running mgr declares for it, else the balancer's own
        (an unset option reads as None on recent releases: not "off")."""
        value = self._get_option(key)
        if value is not None:
            return value
        if key not in self._defaults:
            declared = module_option_default(self._mgr_map(), "balancer", key)
            self._defaults[key] = BALANCER_DEFAULTS[key] if declared is None else declared
        return self._defaults[key]

    def _saved(self) -> tuple[str | None, str | None]:
        try:
            saved = json.loads(self._store_get(STORE_KEY) or "{}")
        except ValueError:
            saved = {}
        return saved.get("intent"), saved.get("written")

    def _set_pool_ids(self, value: str) -> bool:
        cmd = ({"prefix": "config rm", "who": "mgr", "name": POOL_IDS} if value == "" else
               {"prefix": "config set", "who": "mgr", "name": POOL_IDS, "value": value})
        rc, _, err = self._mon(cmd)
        if rc != 0:
            self._log.warning("sla: %s %s failed: %s", cmd["prefix"], POOL_IDS, err.strip())
        return rc == 0

    def guard_roles(self, roles: Mapping[int, PoolRole], view: ClusterView) -> None:
        """The pools sla places (normal, hybrid urgent) out of the balancer's reach."""
        if view.epoch == self._epoch:
            return  # the pool list is looked at once per epoch
        placed = [p for p, r in roles.items()
                  if r.role is Role.NORMAL or r.placement is UrgentPlacement.HYBRID]
        self.guard(view.epoch, view.pools, placed, {p: i.name for p, i in view.pools.items()})

    def guard(self, epoch: int, pools: Iterable[int], managed: Iterable[int],
              names: dict[int, str]) -> None:
        """On a new epoch: the managed pools out of the balancer's list."""
        if epoch == self._epoch:
            return
        self._epoch = epoch
        view = balancer_view({"mode": self._option("mode"), "active": self._option("active")},
                             self._option("pool_ids"))
        intent, written = self._saved()
        action = balancer_exclusion(view, pools, managed, intent, written, names)
        if action.write is not None and self._set_pool_ids(action.write):
            self._log.info("sla: balancer pool_ids %r -> %r (the pools sla manages left out)",
                           view.pool_ids, action.write)
        if (action.intent, action.written) != (intent, written):
            self._store_set(STORE_KEY, json.dumps({"intent": action.intent,
                                                   "written": action.written}))
        self._health.update("SLA_BALANCER_CONFLICT", [action.warning] if action.warning else [],
                            f"the balancer works on {len(action.reaches)} pools managed by sla")

    def release(self) -> str | None:
        """The operator's pool_ids back (`ceph sla release`); what was done."""
        intent, written = self._saved()
        value = balancer_release(str(self._option("pool_ids") or ""), intent, written)
        self._store_set(STORE_KEY, None)
        self._epoch = -1
        if value is None or not self._set_pool_ids(value):
            return None
        return f"balancer pool_ids back to {value or 'every pool (default)'}"
