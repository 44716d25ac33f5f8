"""The sla CRUSH rules seen from the module: generate, verify on the real PG
mappings, install, and repair drifted weight sets, all through crush_rules
(crushtool and osdmaptool run in a background thread, never under the
module's locks). The gates ask `unverified_reason` every tick; verification
runs once per CRUSH version and set of normal pools.
"""
from __future__ import annotations

import threading
import time
from typing import Any, Callable

from ..core.cluster import ClusterView
from ..core.models import registry
from ..core.settings import Settings
from ..core.state import (
    RULE_ISOLATED_NORMAL,
    RULE_ISOLATED_URGENT,
    RULE_SHARED,
    ModuleState,
    Role,
)
from ..crush_rules import CrushError, GenerateOptions, InstallResult, Tools, install, verify_live
from ..crush_rules.ec_generate import EcPool
from ..worker import KeyedWorker
from .mgr_port import MgrPort

REQUIRED_RULES = (RULE_ISOLATED_NORMAL, RULE_SHARED, RULE_ISOLATED_URGENT)


class RulesBusy(RuntimeError):
    """An install of the rules is already running."""


def drifted(failures: Any) -> list[str]:
    """The verification failures that mean our flat weight sets drifted from
    the tree (R4: a pool no longer maps like sla_isolated_normal; R5: a switch
    would move replicas; R6: a set with positions, from an older version)."""
    return [f for f in failures if str(f).split(" ", 1)[0] in ("R4", "R5", "R6")]


def ec_pools(state: ModuleState, view: ClusterView, adding: tuple[int, ...] = ()
             ) -> tuple[EcPool, ...]:
    """The erasure-coded normal pools managed (and one `pool set` adds, on
    its own rule now), each with its own rule and its shards per PG: those
    whose strategy's rules are generated from their own rule."""
    own = {p: r.original_rule for p, r in state.roles.items()
           if r.role is Role.NORMAL and registry.MODELS[r.strategy].rules_from_own_rule
           and r.original_rule}
    for p in adding:
        if p in view.pools and view.pools[p].erasure:
            own.setdefault(p, view.rule_name(view.pools[p].rule_id))
    return tuple(EcPool(p, rule, view.pools[p].size) for p, rule in sorted(own.items())
                 if p in view.pools)


def rules_needed(state: ModuleState) -> list[str]:
    """The rules the managed pools' roles and strategies need."""
    return registry.rules_needed(state.roles.values(), REQUIRED_RULES)


class MonCommands:
    """The two calls crush_rules.install / verify_live make of a cluster
    (`CephCli.get_osdmap`, `CephCli.set_crushmap`), as mon commands through
    the module's own librados handle: no ceph.conf and no `ceph` CLI inside
    the mgr (Rook hands the mon addresses to daemons on the command line).
    The mgr's caps ('allow profile mgr') include osd rw, which setcrushmap needs."""

    def __init__(self, mgr: MgrPort) -> None:
        self._mgr = mgr

    def _call(self, cmd: dict[str, Any], inbuf: bytes = b"") -> bytes:
        rc, out, err = self._mgr.mon_bytes(cmd, inbuf)
        if rc != 0:
            raise CrushError(f"{cmd['prefix']} failed ({rc}): {err.strip()}")
        return out

    def get_osdmap(self) -> bytes:
        """The current osdmap; it carries the crush map and its crush_version."""
        return self._call({"prefix": "osd getmap"})

    def set_crushmap(self, binary: bytes, prior_version: int) -> None:
        """Compare-and-swap: the monitor refuses (EPERM) if the crush version moved on."""
        self._call({"prefix": "osd setcrushmap", "prior_version": prior_version}, binary)


class RulesVerifier:
    def __init__(self, mgr: MgrPort) -> None:
        self._cli = MonCommands(mgr)
        self._log = mgr.log
        self._release = mgr.crush_release
        self._lock = threading.Lock()
        self._installing = False
        self._repairs: list[str] = []
        self._worker: KeyedWorker[str | None] = KeyedWorker(self.verify, "sla-verify")

    @property
    def repairs(self) -> list[str]:
        """The last weight-set repairs, for status."""
        return list(self._repairs)

    def options(self, settings: Settings, state: ModuleState, view: ClusterView,
                extra_normal: tuple[int, ...] = (), extra_copy: tuple[int, ...] = ()
                ) -> GenerateOptions:
        """What to generate for the managed pools (and one being added):
        the weight sets and copy rules their strategies need."""
        needs = registry.needs(state.roles)
        ec = ec_pools(state, view, extra_normal)
        normal = tuple(sorted(({p for p, n in needs.items() if n.weight_set} | set(extra_normal))
                              - {pool.pool_id for pool in ec}))
        hybrid = tuple(p for p, n in needs.items() if n.hybrid_weight_set)
        # a copy rule per size in use: `pool set` installs the one it needs,
        # and a region too small for one size must not fail the others
        copy_sizes = set(extra_copy) | {n.copy_size for n in needs.values() if n.copy_size}
        sizes = [view.pools[p].size for p in normal if p in view.pools]
        return GenerateOptions(
            normal_class=settings.normal_class, urgent_class=settings.urgent_class,
            failure_domain=settings.failure_domain, size=max(sizes, default=3),
            pool_ids=normal, urgent_pool_ids=hybrid, release=self._release(),
            copy_sizes=tuple(sorted(copy_sizes)), ec_pools=ec)

    def unverified_reason(self, view: ClusterView, move_pools: list[int],
                          options: GenerateOptions) -> str | None:
        """Why the installed rules cannot be trusted for shared mode, if so."""
        lacking = [p for p in move_pools if p not in view.choose_args_pools]
        if lacking:
            return (f"pools {lacking} have no sla weight set: run 'ceph sla rules apply'")
        key = (view.crush_version, options.pool_ids, options.copy_sizes, options.ec_pools)
        done, reason = self._worker.result(key, options)
        if not done:
            return f"rules being verified (crush version {view.crush_version})"
        return reason

    def verify(self, options: GenerateOptions) -> str | None:
        """Runs in the worker's thread. Weight sets that drifted (a reweight
        or a new OSD writes its weight into every weight set) are regenerated,
        verified and installed (compare-and-swap), then checked again."""
        try:
            report = verify_live(self._cli, Tools(), options)
            drift = drifted(report.failures)
            if drift:
                self._log.warning("sla: weight sets drifted (%s); repairing", drift[0])
                result = install(self._cli, Tools(), options, repair=True)
                self._repairs.append(f"{time.strftime('%Y-%m-%d %H:%M:%S')}: {drift[0]}")
                del self._repairs[:-5]
                self._log.info("sla: weight sets repaired; PGs remapped back: %s",
                               dict(result.upgraded_pools))
                report = verify_live(self._cli, Tools(), options)
        except Exception as e:  # any failure to verify is a reason not to share
            return f"rules could not be verified: {e}"
        return None if report.ok else "rules fail verification: " + "; ".join(report.failures)

    def install(self, options: GenerateOptions) -> InstallResult:
        """getcrushmap, crushtool, osdmaptool, setcrushmap: seconds of work,
        one at a time, without the module's locks."""
        with self._lock:
            if self._installing:
                raise RulesBusy("another 'ceph sla rules apply' or 'pool set' is installing "
                                "the rules; try again when it ends")
            self._installing = True
        try:
            result = install(self._cli, Tools(), options)
        finally:
            with self._lock:
                self._installing = False
        self._worker.forget()
        return result

    def wait(self, timeout: float) -> None:
        """Tests: let a verification in flight finish."""
        self._worker.wait(timeout)

    def replace_check(self, check: Callable[[GenerateOptions], str | None]) -> None:
        """Tests without crushtool: verify with `check` instead."""
        self._worker = KeyedWorker(check, "sla-verify")


# crush_rules speaks to sla-crush's users; inside the module the same
# problems are fixed with the module's options and commands.
_CLI_WORDS = (
    ("pass --normal-class", "set the normal_class option ('ceph config set mgr "
                            "mgr/sla/normal_class CLASS')"),
    ("pass --urgent-class", "set the urgent_class option ('ceph config set mgr "
                            "mgr/sla/urgent_class CLASS')"),
    ("pass --failure-domain", "set the failure_domain option ('ceph config set mgr "
                              "mgr/sla/failure_domain TYPE')"),
    ("pass --root", "give the cluster a CRUSH root named 'default' (the sla rules take it)"),
    ("give it with --pool-id", "manage it with 'ceph sla pool set POOL normal'"),
    ("(give --pool-id)", "(manage a normal pool with 'ceph sla pool set POOL normal')"),
    ("--normal-class", "normal_class"),
    ("--urgent-class", "urgent_class"),
    ("--failure-domain", "failure_domain"),
    ("--size", "pool size"),
)


def module_words(message: str) -> str:
    """A crush_rules error as the module's user can act on it."""
    for cli, module in _CLI_WORDS:
        message = message.replace(cli, module)
    return message


def compat_refusal(osd_map: dict[str, Any]) -> str | None:
    """pg_upmap_items and device-class rules need luminous clients: the mon
    refuses upmap entries (EPERM) below that."""
    floor = str(osd_map.get("require_min_compat_client") or "luminous")
    order = ("argonaut", "bobtail", "cuttlefish", "dumpling", "emperor", "firefly", "giant",
             "hammer", "infernalis", "jewel")
    if floor in order:
        return (f"require_min_compat_client is {floor}: the sla rules (device classes) and "
                "pg_upmap_items need luminous. Check 'ceph features' shows no client older "
                "than luminous, then 'ceph osd set-require-min-compat-client luminous'")
    return None
