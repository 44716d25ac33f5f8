"""The commands that manage pools and rules: `sla pool set|rm`, `sla release`,
`sla plan`, `sla rules apply`, and the rules' verification (crush_rules in a
background thread: crushtool and osdmaptool never run under the module lock).
"""
import errno
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import Any, Optional

from mgr_module import HandleCommandResult

from . import compat
from .cluster import ClusterView, cluster_view, pg_bytes_by_seed, pool_refusal
from .crush_bridge import load_crush_rules
from .decision import Mode
from .shell_common import (
    RELEASE_PARALLEL,
    RULE_ISOLATED_NORMAL,
    RULE_SHARED,
    OutputFormat,
    RulesBusy,
    ShellBase,
    _err,
    _other,
    _out,
    drifted,
)
from .state import ModuleState, PoolRole, Role, UrgentPlacement
from .upmaps import current_items, parse_pgid, switch_moves


class PoolCommandsMixin(ShellBase):
    def _unverified_reason(self, view: ClusterView, state: ModuleState) -> Optional[str]:
        """Why the installed rules cannot be trusted for shared mode, if so.

        Verified on the real PG mappings (crush_rules, osdmaptool) once per
        CRUSH version and set of normal pools, not every tick."""
        normal = self._normal_pools(state)
        if not normal:
            return None  # no normal pool: shared mode moves nothing, nothing to verify
        lacking = [p for p in normal if p not in view.choose_args_pools]
        if lacking:
            return (f"pools {lacking} have no sla choose_args: run 'ceph sla rules apply'")
        key = (view.crush_version, tuple(normal))
        done, reason = self._verifier.result(key, self._generate_options(state, view))
        if not done:
            return f"rules being verified (crush version {view.crush_version})"
        return reason

    def _verify_rules(self, options: Any) -> Optional[str]:
        """Runs in the verifier's thread: crushtool and osdmaptool on the live
        maps, without the module lock. Weight sets that drifted (a reweight or
        a new OSD writes its weight into every weight set) are regenerated,
        verified and installed (compare-and-swap), then checked again."""
        try:
            crush = load_crush_rules()
            report = crush.verify_live(self._cli(crush), crush.Tools(), options)
            drift = drifted(report.failures)
            if drift:
                self.log.warning("sla: weight sets drifted (%s); repairing", drift[0])
                result = crush.install(self._cli(crush), crush.Tools(), options, repair=True)
                self._repairs.append(f"{time.strftime('%Y-%m-%d %H:%M:%S')}: {drift[0]}")
                del self._repairs[:-5]
                self.log.info("sla: weight sets repaired; PGs remapped back: %s",
                              dict(result.upgraded_pools))
                report = crush.verify_live(self._cli(crush), crush.Tools(), options)
        except Exception as e:  # any failure to verify is a reason not to share
            return f"rules could not be verified: {e}"
        return None if report.ok else "rules fail verification: " + "; ".join(report.failures)

    def _cli(self, crush: Any) -> "MonCommands":
        """crush_rules' view of the cluster, through the module's own librados
        handle: no ceph.conf and no `ceph` CLI inside the mgr (Rook hands the
        mon addresses to daemons on the command line). The mgr's caps
        ('allow profile mgr') include osd rw, which setcrushmap needs."""
        return MonCommands(self, crush.CrushError)

    def _generate_options(self, state: ModuleState, view: ClusterView,
                          extra_normal: tuple[int, ...] = ()) -> Any:
        crush = load_crush_rules()
        normal = tuple(sorted({*self._normal_pools(state), *extra_normal}))
        hybrid = tuple(sorted(p for p, r in state.roles.items()
                              if r.role is Role.URGENT and r.placement is UrgentPlacement.HYBRID))
        sizes = [view.pools[p].size for p in normal if p in view.pools]
        return crush.GenerateOptions(
            normal_class=self._settings.normal_class,
            urgent_class=self._settings.urgent_class,
            failure_domain=self._settings.failure_domain,
            size=max(sizes, default=3),
            pool_ids=normal,
            urgent_pool_ids=hybrid,
            release=compat.crush_release(self),
        )

    @compat.write_command("sla pool set")
    def cmd_pool_set(self, pool: str, role: Role,
                     placement: Optional[UrgentPlacement] = None,
                     format: OutputFormat = OutputFormat.PLAIN) -> HandleCommandResult:
        """Manage a pool as urgent or normal (urgent placement: isolated|hybrid)"""
        view = self._view()
        info = view.pool_by_name(pool)
        if info is None:
            return _err(errno.ENOENT, f"pool '{pool}' does not exist")
        if placement is not None and role is not Role.URGENT:
            return _err(errno.EINVAL, "placement applies to urgent pools only")
        crush_dump = self.get("osd_map_crush")
        refusal = pool_refusal(info, crush_dump, self._settings.failure_domain)
        if refusal:
            return _err(errno.EINVAL, refusal)
        rule_now = view.rule_name(info.rule_id)
        with self._lock:
            state = self._require_state()
            current = state.roles.get(info.pool_id)
            original = current.original_rule if current is not None else (
                None if rule_now.startswith("sla_") else rule_now)
            new = PoolRole(role, placement or UrgentPlacement.ISOLATED, original)
            if current is not None and current.role is not role:
                return _err(errno.EINVAL, f"pool '{pool}' is already {current.role.value}: "
                            f"'ceph sla pool rm {pool}' first")
            needed = self._rules_needed(replace(state, roles={**state.roles,
                                                               info.pool_id: new}))
            missing = [r for r in needed if r not in view.rules]
            if missing:
                return _err(errno.ENOENT, f"CRUSH rules {', '.join(missing)} are missing: "
                            "run 'ceph sla rules apply' first")
            needs_args = role is Role.NORMAL and info.pool_id not in view.choose_args_pools
            options = self._generate_options(state, view, (info.pool_id,)) if needs_args \
                else None
        if options is not None:
            # sla_shared needs this pool's own choose_args. Adding them must
            # not remap the pool, so it first moves onto sla_isolated_normal
            # (which the choose_args do not touch); the loop takes it on to
            # sla_shared if that is the mode.
            try:
                if view.rule_name(info.rule_id) != RULE_ISOLATED_NORMAL:
                    rc, _, err = compat.mon_command(self, {
                        "prefix": "osd pool set", "pool": pool, "var": "crush_rule",
                        "val": RULE_ISOLATED_NORMAL})
                    if rc != 0:
                        raise RuntimeError(err.strip())
                self._install_rules(options)
            except RulesBusy as e:
                return _err(errno.EBUSY, str(e))
            except Exception as e:  # CrushError or a failed mon command: say which
                return _err(errno.EIO, f"could not add pool '{pool}' to the sla rules: {e}")
        with self._lock:
            state = self._require_state()
            state.roles[info.pool_id] = new
            self._save(state)
        return _out(format, {"pool": pool, "pool_id": info.pool_id, "role": role.value,
                             "placement": new.placement.value},
                    f"pool '{pool}' is {role.value}\n")

    @compat.write_command("sla pool rm")
    def cmd_pool_rm(self, pool: str, format: OutputFormat = OutputFormat.PLAIN
                    ) -> HandleCommandResult:
        """Stop managing a pool: sla upmap entries and weight set removed, original rule back"""
        with self._act_lock:  # a tick must not act on the pools meanwhile
            view = self._view()
            info = view.pool_by_name(pool)
            if info is None:
                return _err(errno.ENOENT, f"pool '{pool}' does not exist")
            with self._lock:
                # Unmanaged first: the next tick must not move the pool back
                # onto an sla rule, even if this command fails half way.
                state = self._require_state()
                role = state.roles.pop(info.pool_id, None)
                if role is None:
                    return _err(errno.ENOENT, f"pool '{pool}' is not managed by sla")
                self._save(state)
            done, failed = self._release_pool(info.pool_id, info.name, role, view)
            if failed:
                with self._lock:
                    state.roles[info.pool_id] = role
                    self._save(state)
                return _err(errno.EIO, f"pool '{pool}' is still managed: {failed}")
            return _out(format, {"pool": pool, "removed": True, "steps": done},
                        f"pool '{pool}' is not managed: " + "; ".join(done) + "\n")

    @compat.write_command("sla release")
    def cmd_release(self, format: OutputFormat = OutputFormat.PLAIN) -> HandleCommandResult:
        """Release every managed pool: original rules back, sla upmaps and weight sets gone"""
        with self._act_lock:  # a tick must not act on the pools meanwhile
            view = self._view()
            with self._lock:  # unmanaged first, as in `pool rm`
                state = self._require_state()
                roles = dict(state.roles)
                state.roles.clear()
                self._save(state)
            report: dict[str, Any] = {}
            errors = []
            for pool_id, role in sorted(roles.items()):
                info = view.pools.get(pool_id)
                if info is None:
                    continue
                done, failed = self._release_pool(pool_id, info.name, role, view)
                report[info.name] = done
                if failed:
                    errors.append(f"{info.name}: {failed}")
                    with self._lock:  # still managed: the operator can retry
                        state.roles[pool_id] = role
                        self._save(state)
            if errors:
                return _err(errno.EIO, "not released: " + "; ".join(errors))
            text = "".join(f"{name}: {'; '.join(steps)}\n" for name, steps in report.items())
            return _out(format, {"released": report}, text or "no managed pools\n")

    def _release_pool(self, pool_id: int, name: str, role: PoolRole, view: ClusterView
                      ) -> tuple[list[str], Optional[str]]:
        """Undo what sla did to one pool, in an order that never leaves it on
        urgent OSDs: its upmap entries, its rule, its weight set."""
        done: list[str] = []
        osd_map = self.get("osd_map")
        urgent = view.osds_of_class(self._settings.urgent_class)
        entries = current_items(osd_map).get(pool_id, {})
        ours = sorted(pg for pg, pairs in entries.items() if any(t in urgent for _, t in pairs))
        # each command waits for a mon commit; sent together, the mon commits
        # them in a few rounds (one at a time: a second per PG, minutes a pool)
        with ThreadPoolExecutor(RELEASE_PARALLEL) as pool:
            results = list(pool.map(lambda pg: compat.mon_command(
                self, {"prefix": "osd rm-pg-upmap-items", "pgid": pg}), ours))
        failed = [(pg, err) for pg, (rc, _, err) in zip(ours, results) if rc != 0]
        if failed:
            return done, "; ".join(f"osd rm-pg-upmap-items {pg}: {err.strip()}"
                                   for pg, err in failed[:5])
        if ours:
            done.append(f"{len(ours)} upmap entries removed")
        rule_now = view.rule_name(view.pools[pool_id].rule_id)
        if role.original_rule and rule_now.startswith("sla_"):
            if role.original_rule not in view.rules:
                return done, (f"its original rule {role.original_rule} no longer exists: "
                              f"'ceph osd pool set {name} crush_rule <rule>' first")
            rc, _, err = compat.mon_command(self, {"prefix": "osd pool set", "pool": name,
                                                   "var": "crush_rule",
                                                   "val": role.original_rule})
            if rc != 0:
                return done, f"osd pool set crush_rule {role.original_rule}: {err.strip()}"
            done.append(f"crush_rule {rule_now} -> {role.original_rule}")
        elif rule_now.startswith("sla_"):
            done.append(f"crush_rule left on {rule_now} (no original rule recorded)")
        if pool_id in view.choose_args_pools:
            rc, _, err = compat.mon_command(self, {"prefix": "osd crush weight-set rm",
                                                   "pool": name})
            if rc != 0:
                return done, f"osd crush weight-set rm {name}: {err.strip()}"
            done.append("weight set removed")
        return done, None

    @compat.read_command("sla plan")
    def cmd_plan(self, format: OutputFormat = OutputFormat.PLAIN) -> HandleCommandResult:
        """What the next switch would move: PGs, replicas and bytes per normal pool"""
        osd_map, crush = self.get("osd_map"), self.get("osd_map_crush")
        view = cluster_view(osd_map, crush)
        with self._lock:
            state = self._require_state()
            target = _other(state.decision.mode)
            normal = self._normal_pools(state)
        rule = RULE_SHARED if target is Mode.SHARED else RULE_ISOLATED_NORMAL
        regions = self._regions(osd_map, crush)
        items = current_items(osd_map)
        osdmap = self.get_osdmap()
        stats = self.get("pg_dump").get("pg_stats", [])
        plans: list[dict[str, Any]] = []
        for pool_id in normal:
            moves = switch_moves(osdmap.map_pool_pgs_up(pool_id), items.get(pool_id, {}),
                                 regions, view.pools[pool_id].size, target.value)
            pg_bytes = pg_bytes_by_seed(stats, pool_id)
            plans.append({
                "pool": view.pools[pool_id].name, "pool_id": pool_id,
                "pgs": len(osdmap.map_pool_pgs_up(pool_id)), "pgs_moving": len(moves),
                "replicas": sum(moves.values()),
                "bytes": sum(n * pg_bytes.get(parse_pgid(pg)[1], 0) for pg, n in moves.items())})
        data = {"to_mode": target.value, "rule": rule, "pools": plans,
                "pgs": sum(p["pgs_moving"] for p in plans),
                "replicas": sum(p["replicas"] for p in plans),
                "bytes": sum(p["bytes"] for p in plans)}
        text = f"next switch: -> {target.value} ({rule})\n" + "".join(
            f"  {p['pool']}: {p['pgs_moving']} of {p['pgs']} PGs, {p['replicas']} replicas, "
            f"{p['bytes']} bytes\n" for p in plans)
        return _out(format, data, text)

    @compat.write_command("sla rules apply")
    def cmd_rules_apply(self, format: OutputFormat = OutputFormat.PLAIN) -> HandleCommandResult:
        """Generate, verify and install the sla CRUSH rules from the live map"""
        with self._lock:
            state = self._require_state()
            options = self._generate_options(state, self._view())
            normal = self._normal_pools(state)
        try:
            result = self._install_rules(options)
        except RulesBusy as e:
            return _err(errno.EBUSY, str(e))
        except Exception as e:  # CrushError or a failed mon command: say which
            return _err(errno.EINVAL, f"rules not installed: {e}")
        data = result.to_dict()
        return _out(format, data, ("installed" if result.changed else "unchanged") +
                    f": sla CRUSH rules, shared weight sets for normal pools {normal}\n")

    def _install_rules(self, options: Any) -> Any:
        """crush_rules.install (getcrushmap, crushtool, osdmaptool, setcrushmap):
        seconds of work, run without the module lock, one at a time."""
        with self._lock:
            if self._installing:
                raise RulesBusy("another 'ceph sla rules apply' or 'pool set' is installing "
                                "the rules; try again when it ends")
            self._installing = True
        try:
            crush = load_crush_rules()
            result = crush.install(self._cli(crush), crush.Tools(), options)
        finally:
            with self._lock:
                self._installing = False
        self._verifier.forget()
        return result


class MonCommands:
    """The two calls crush_rules.install / verify_live make of a cluster
    (`CephCli.get_osdmap`, `CephCli.set_crushmap`), as mon commands."""

    def __init__(self, module: Any, error: type) -> None:
        self._module = module
        self._error = error

    def _call(self, cmd: dict[str, Any], inbuf: bytes = b"") -> bytes:
        rc, out, err = compat.mon_command_bytes(self._module, cmd, inbuf)
        if rc != 0:
            raise self._error(f"{cmd['prefix']} failed ({rc}): {err.strip()}")
        return out

    def get_osdmap(self) -> bytes:
        """The current osdmap; it carries the crush map and its crush_version."""
        return self._call({"prefix": "osd getmap"})

    def set_crushmap(self, binary: bytes, prior_version: int) -> None:
        """Compare-and-swap: the monitor refuses (EPERM) if the crush version moved on."""
        self._call({"prefix": "osd setcrushmap", "prior_version": prior_version}, binary)
