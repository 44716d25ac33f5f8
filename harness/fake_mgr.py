"""A small fake of ceph-mgr for unit tests of the `Module` shell.

As Ceph's own mgr unit tests do (src/pybind/mgr/tests), a stand-in
`mgr_module` is put into sys.modules before `mgr_sla.module` is imported;
`FakeCluster` serves the dicts the mgr would (osd_map, osd_map_crush, df,
pg_status, pg_dump) and applies the mon commands the module sends. It is a
fake for unit tests only: the integration tests run the real module in a real
ceph-mgr.
"""
from __future__ import annotations

import json
import logging
import re
import sys
import types
from collections.abc import Callable
from typing import Any, NamedTuple


class HandleCommandResult(NamedTuple):
    retval: int = 0
    stdout: str = ""
    stderr: str = ""


class Option(dict[str, Any]):
    def __init__(self, name: str, default: Any = None, type: str = "str", desc: str = "",
                 min: Any = None, max: Any = None, runtime: bool = False) -> None:
        super().__init__(name=name, default=default, type=type)


def _command(prefix: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    def wrap(f: Callable[..., Any]) -> Callable[..., Any]:
        f.prefix = prefix  # type: ignore[attr-defined]
        return f
    return wrap


class CommandResult:
    """mgr_module.CommandResult: filled by send_command, read by wait()."""

    def __init__(self, tag: str = "") -> None:
        self.result: tuple[int, str, str] = (-110, "", "no reply")

    def complete(self, r: int, outb: str, outs: str) -> None:
        self.result = (r, outb, outs)

    def wait(self) -> tuple[int, str, str]:
        return self.result


class _MgrModule:
    class ClusterLogPrio:
        INFO = 1
        WARN = 2

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.log = logging.getLogger("sla-test")

    def shutdown(self) -> None:
        pass


def install_fake_mgr_module() -> None:
    if "mgr_module" in sys.modules and getattr(sys.modules["mgr_module"], "FAKE", False):
        return
    mod = types.ModuleType("mgr_module")
    for name, value in {"FAKE": True, "MgrModule": _MgrModule,
                        "HandleCommandResult": HandleCommandResult, "Option": Option,
                        "CommandResult": CommandResult,
                        "CLIReadCommand": _command, "CLIWriteCommand": _command}.items():
        setattr(mod, name, value)
    sys.modules["mgr_module"] = mod


def upmapped(raw: list[int], pairs: list[tuple[int, int]]) -> list[int]:
    """The up set the mon gives a PG: each (from, to) applied where from is in
    the CRUSH mapping and to is not (OSDMap::_apply_upmap)."""
    up = list(raw)
    for frm, to in pairs:
        if frm in up and to not in up:
            up[up.index(frm)] = to
    return up


def apply_upmap_command(upmaps: dict[str, list[tuple[int, int]]], cmd: dict[str, Any]) -> bool:
    """Apply `osd pg-upmap-items` / `osd rm-pg-upmap-items` as the mon does
    (the PG's entry replaced whole, or removed); False for other commands."""
    if cmd["prefix"] == "osd pg-upmap-items":
        ids = cmd["id"]
        upmaps[cmd["pgid"]] = list(zip(ids[::2], ids[1::2]))
    elif cmd["prefix"] == "osd rm-pg-upmap-items":
        upmaps.pop(cmd["pgid"], None)
    else:
        return False
    return True


class FakeOsdMap:
    def __init__(self, cluster: FakeCluster) -> None:
        self.cluster = cluster

    def map_pool_pgs_up(self, pool_id: int) -> dict[str, list[int]]:
        if pool_id not in self.cluster.pools:  # as ceph_module's C++ answers
            raise SystemError("<method '_map_pool_pgs_up' of 'ceph_module.BasePyOSDMap' "
                              "objects> returned NULL without setting an exception")
        return {pg: self.cluster.up_set(pg) for pg in self.cluster.raw if
                pg.startswith(f"{pool_id}.")}


class FakeRados:
    def __init__(self, cluster: FakeCluster) -> None:
        self.cluster = cluster

    def mon_command(self, cmd: str, inbuf: bytes, timeout: int = 0) -> tuple[int, bytes, str]:
        return self.cluster.mon_command(json.loads(cmd))


class FakeCluster:
    """Four hosts, each one hdd (osd 2h) and one ssd (osd 2h+1); PGs mapped
    by a fixed 'CRUSH' that picks hdd OSDs of distinct hosts."""

    def __init__(self) -> None:
        self.epoch = 10
        self.rules = {"replicated_rule": 0, "sla_isolated_normal": 1,
                      "sla_isolated_urgent": 2, "sla_shared": 3, "sla_hybrid": 4,
                      "sla_copy_3": 5}
        self.pools: dict[int, dict[str, Any]] = {}
        self.raw: dict[str, list[int]] = {}
        self.upmaps: dict[str, list[tuple[int, int]]] = {}
        self.ops: dict[int, int] = {}
        self.reads: dict[int, int] = {}  # of those ops, reads (the perf query's only)
        self.reads_seen: dict[int, int] = {}
        self.latency_ms: dict[int, float] = {}  # per pool, each op's latency (1 ms unset)
        self.commands: list[dict[str, Any]] = []
        self.pg_states = [{"state_name": "active+clean", "count": 0}]
        self.weight_sets: set[int] = set()
        self.osd_used_gib = 10
        self.osd_pgs: dict[int, int] = {}  # osd_stats num_pgs (unset: 0)
        self.pool_sums: list[dict[str, Any]] = []  # pg_dump pool_stats entries
        self.ceph_checks: dict[str, Any] = {}  # Ceph's own health checks
        # PGs whose stats still show these OSDs (a primary that never reported
        # since the map changed): pg_dump's `up` for them
        self.stale_up: dict[str, list[int]] = {}
        # what each OSD answers to `config get` (unset: Pacific's defaults)
        self.osd_config: dict[int, dict[str, float]] = {}
        self.perf_queries: set[int] = set()
        self.perf_regex: dict[int, str] = {}  # query id -> its pool_id regex
        self.perf_seen: dict[int, int] = {}
        self.pool_bytes = 0
        # osd -> perf counter path -> the mgr's samples ([t, sum_ns, count] for an average)
        self.counters: dict[int, dict[str, list[list[float]]]] = {}
        # (pool, var) -> the error the mon gives to `osd pool set` of it
        self.refuse: dict[tuple[str, str], str] = {}
        # osd_pool_default_min_size: what `osd pool set size` resets min_size to
        # (0: size - size // 2, as the mon does by default)
        self.default_min_size = 0
        # the mgr's copy of the OSD map, held at an older epoch (None: current);
        # `held_reads` reads of it later it catches up (None: never)
        self.mgr_map: dict[str, Any] | None = None
        self.held_reads: int | None = None
        # the balancer module's options as `ceph config` holds them: none set,
        # so they read as None and the mgr map declares the defaults
        self.balancer: dict[str, Any] = {}
        self.min_compat_client = "luminous"
        # the mon's floor when the mgr's copy of the map lags it (None: the same)
        self.mon_min_compat_client: str | None = None
        # rules that take the hdd class only: the mon cancels entries to ssd under them
        self.hdd_takes = {"sla_isolated_normal"}
        # the osd_map's erasure-code profiles (every value a string, as dumped)
        self.ec_profiles: dict[str, dict[str, str]] = {
            "ec21": {"k": "2", "m": "1", "plugin": "jerasure",
                     "crush-failure-domain": "host", "crush-device-class": "hdd"}}

    def add_pool(self, pool_id: int, name: str, rule: str, pgs: int = 16,
                 erasure: bool = False, ec_profile: str = "ec21") -> None:
        self.pools[pool_id] = {"pool": pool_id, "pool_name": name, "type": 3 if erasure else 1,
                               "crush_rule": self.rules[rule], "size": 3, "min_size": 2,
                               "pg_num": pgs}
        if erasure:
            profile = self.ec_profiles[ec_profile]
            self.pools[pool_id].update(erasure_code_profile=ec_profile,
                                       size=int(profile["k"]) + int(profile["m"]))
        self.weight_sets.add(pool_id)
        for seed in range(pgs):
            hosts = [(seed + i) % 4 for i in range(3)]
            if pool_id in self.urgent_pools():
                self.raw[f"{pool_id}.{seed:x}"] = [2 * h + 1 for h in hosts]
            else:
                self.raw[f"{pool_id}.{seed:x}"] = [2 * h for h in hosts]
        self.pg_states = [{"state_name": "active+clean", "count": len(self.raw)}]
        self.ops[pool_id] = 0
        self.epoch += 1

    def remove_pool(self, pool_id: int) -> None:
        del self.pools[pool_id]
        for pg in [pg for pg in self.raw if pg.startswith(f"{pool_id}.")]:
            del self.raw[pg]
            self.upmaps.pop(pg, None)
        self.ops.pop(pool_id, None)
        self.epoch += 1
        self.on_change()  # the mgr's notify of the new map

    def on_change(self) -> None:
        """Set by make_module: the mgr's notify('osd_map') on a new epoch."""

    def add_perf_query(self, query: dict[str, Any]) -> int:
        """A query whose pool_id regex the counters then honour, as the OSDs do."""
        query_id = max(self.perf_queries, default=0) + 1
        self.perf_queries.add(query_id)
        self.perf_regex[query_id] = str(query["key_descriptor"][0]["regex"])
        return query_id

    def perf_counters(self, query_id: int) -> dict[str, Any] | None:
        """Ops per pool since the previous read, 1 ms each unless `latency_ms`
        says (`reads` of them reads)."""
        if query_id not in self.perf_queries:
            return None
        out = []
        wanted = re.compile(self.perf_regex.get(query_id, "^(.*)$"))
        for pool, ops in self.ops.items():
            if not wanted.match(str(pool)):
                continue
            delta = ops - self.perf_seen.get(pool, 0)
            self.perf_seen[pool] = ops
            reads = min(delta, self.reads.get(pool, 0) - self.reads_seen.get(pool, 0))
            self.reads_seen[pool] = self.reads.get(pool, 0)
            writes = delta - reads
            ns = int(self.latency_ms.get(pool, 1.0) * 1_000_000)
            if delta:
                out.append({"k": [[str(pool)]],
                            "c": [[writes, 0], [reads, 0], [writes * ns, writes],
                                  [reads * ns, reads]]})
        return {"counters": out}

    def urgent_pools(self) -> set[int]:
        return {p for p, info in self.pools.items()
                if info["crush_rule"] == self.rules["sla_isolated_urgent"]}

    def up_set(self, pgid: str) -> list[int]:
        """sla_copy_3 at size 4: one ssd OSD (of a fourth host) in front."""
        pool = self.pools[int(pgid.split(".")[0])]
        raw = self.raw[pgid]
        if pool["crush_rule"] == self.rules["sla_copy_3"] and pool["size"] == 4:
            host = ({0, 1, 2, 3} - {o // 2 for o in raw}).pop()
            raw = [2 * host + 1] + raw
        return upmapped(raw, self.upmaps.get(pgid, []))

    def rule_of(self, pool_id: int) -> str:
        rid = self.pools[pool_id]["crush_rule"]
        return next(n for n, i in self.rules.items() if i == rid)

    def _rule_dump(self, name: str, rule_id: int) -> dict[str, Any]:
        """A rule as `osd crush dump` has it: an erasure rule of the hdd class
        (what an EC profile makes) for those in `hdd_takes` but ours, else a
        replicated rule from the root."""
        if name in self.hdd_takes and not name.startswith("sla_"):
            return {"rule_id": rule_id, "rule_name": name, "type": 3, "steps": [
                {"op": "take", "item": -3, "item_name": "default~hdd"},
                {"op": "chooseleaf_indep", "num": 0, "type": "host"}, {"op": "emit"}]}
        return {"rule_id": rule_id, "rule_name": name, "type": 1, "steps": [
            {"op": "take", "item": -1, "item_name": "default"},
            {"op": "chooseleaf_firstn", "num": 0, "type": "host"}, {"op": "emit"}]}

    def hold_mgr_map(self, reads: int | None = None) -> None:
        """The mgr's copy of the OSD map stays as it is now, while the mon's
        moves on, for `reads` reads of it (None: until released)."""
        self.mgr_map = json.loads(json.dumps(self.osd_map()))
        self.held_reads = reads

    def osd_map(self) -> dict[str, Any]:
        """The OSD map as the mon has it now."""
        return {
            "epoch": self.epoch, "crush_version": 3,
            "require_min_compat_client": self.min_compat_client,
            "pools": list(self.pools.values()),
            "erasure_code_profiles": self.ec_profiles,
            "osds": [{"osd": o, "up": 1, "in": 1, "weight": 1.0} for o in range(8)],
            "pg_upmap_items": [
                {"pgid": pg, "mappings": [{"from": a, "to": b} for a, b in pairs]}
                for pg, pairs in sorted(self.upmaps.items())],
        }

    # -- what the mgr serves ------------------------------------------------
    def get(self, what: str) -> Any:
        if what == "osd_map" and self.mgr_map is not None:
            held = self.mgr_map
            if self.held_reads is not None:
                self.held_reads -= 1
                if self.held_reads <= 0:
                    self.mgr_map = None
            return held
        if what == "osd_map":
            return self.osd_map()
        if what == "mgr_map":
            # as `ceph mgr dump` declares the balancer's options (strings)
            return {"available_modules": [{"name": "balancer", "module_options": {
                "active": {"name": "active", "type": "bool", "default_value": "True"},
                "mode": {"name": "mode", "type": "str", "default_value": "upmap"},
                "pool_ids": {"name": "pool_ids", "type": "str", "default_value": ""}}}]}
        if what == "osd_map_crush":
            return {
                "types": [{"type_id": 0, "name": "osd"}, {"type_id": 1, "name": "host"},
                          {"type_id": 10, "name": "root"}],
                "devices": [{"id": o, "name": f"osd.{o}", "class": "ssd" if o % 2 else "hdd"}
                            for o in range(8)],
                "rules": [self._rule_dump(n, i) for n, i in self.rules.items()],
                "buckets": [{"id": -1, "name": "default", "type_name": "root", "alg": "straw2",
                             "items": [{"id": -2 - h, "weight": 0x20000} for h in range(4)]}]
                + [{"id": -2 - h, "name": f"h{h}", "type_name": "host", "alg": "straw2",
                    "items": [{"id": 2 * h, "weight": 0x10000},
                              {"id": 2 * h + 1, "weight": 0x10000}]} for h in range(4)],
                "choose_args": {str(p): [] for p in sorted(self.weight_sets)},
            }
        if what == "df":
            return {"pools": [{"id": p, "stats": {"rd": 0, "wr": n, "bytes_used": self.pool_bytes}}
                              for p, n in self.ops.items()]}
        if what == "osd_stats":
            gib = 1 << 20  # in KiB
            return {"osd_stats": [{"osd": o, "kb": 100 * gib, "kb_used": self.osd_used_gib * gib,
                                   "num_pgs": self.osd_pgs.get(o, 0)} for o in range(8)]}
        if what == "pg_summary":
            by_pool: dict[str, dict[str, int]] = {}
            for pg in self.raw:
                states = by_pool.setdefault(pg.split(".")[0], {})
                name = str(self.pg_states[0]["state_name"])
                states[name] = states.get(name, 0) + 1
            return {"by_pool": by_pool}
        if what == "pg_status":
            return {"pgs_by_state": self.pg_states, "misplaced_ratio": 0.0}
        if what == "pool_stats":  # pg_dump's per-pool sums
            return {"pool_stats": self.pool_sums}
        if what == "osd_pool_stats":  # `ceph osd pool stats`: rates
            return {"pool_stats": []}
        if what == "health":  # the cluster's own checks, as the mgr serves them
            return {"json": json.dumps({"status": "HEALTH_OK", "checks": self.ceph_checks})}
        if what == "pg_stats":
            return {"pg_stats": self.get("pg_dump")["pg_stats"]}
        if what == "pg_dump":
            state = str(self.pg_states[0]["state_name"])  # every PG alike, as pg_summary
            return {"pg_stats": [{"pgid": pg, "state": state,
                                  "up": self.stale_up.get(pg) or self.up_set(pg),
                                  "acting": self.up_set(pg), "stat_sum": {"num_bytes": 4096},
                                  "reported_epoch": self.epoch}
                                 for pg in sorted(self.raw)],
                    "pool_stats": []}
        raise KeyError(what)

    def send_command(self, result: Any, svc_type: str, svc_id: str, command: str,
                     tag: str) -> None:
        """`osd bench`: hdd OSDs (even ids) 300 IOPS, ssd OSDs 3000; `config
        get` of the PG limit: `osd_config`, else Pacific's defaults."""
        cmd = json.loads(command)
        assert svc_type == "osd" and cmd["prefix"] in ("bench", "config get"), (svc_type, cmd)
        if cmd["prefix"] == "config get":
            value = self.osd_config.get(int(svc_id), {}).get(
                cmd["var"], {"mon_max_pg_per_osd": 250,
                             "osd_max_pg_per_osd_hard_ratio": 3.0}.get(cmd["var"]))
            result.complete(0, json.dumps({cmd["var"]: str(value)}), "")
            return
        iops = 300.0 if int(svc_id) % 2 == 0 else 3000.0
        result.complete(0, json.dumps({"bytes_written": cmd["count"], "blocksize": cmd["size"],
                                       "elapsed_sec": cmd["count"] / cmd["size"] / iops,
                                       "iops": iops}), "")

    def mon_command(self, cmd: dict[str, Any]) -> tuple[int, bytes, str]:
        self.commands.append(cmd)
        self.on_change()
        prefix = cmd["prefix"]
        if prefix == "osd pool set" and (cmd["pool"], cmd["var"]) in self.refuse:
            return -34, b"", self.refuse[(cmd["pool"], cmd["var"])]
        if prefix == "osd pool set" and cmd["var"] == "crush_rule":
            pool = next((p for p in self.pools.values() if p["pool_name"] == cmd["pool"]), None)
            if pool is None:
                return -2, b"", f"unrecognized pool '{cmd['pool']}'"
            if cmd["val"] not in self.rules:
                return -2, b"", f"crush rule {cmd['val']} does not exist"
            pool["crush_rule"] = self.rules[cmd["val"]]
            if cmd["val"] in self.hdd_takes:  # the mon cancels entries to ssd
                for pg in [pg for pg in self.upmaps if pg.startswith(f"{pool['pool']}.")]:
                    del self.upmaps[pg]
        elif prefix == "osd pool set" and cmd["var"] in ("size", "min_size"):
            pool = next(p for p in self.pools.values() if p["pool_name"] == cmd["pool"])
            if "nosizechange" in str(pool.get("flags_names", "")).split(","):
                return -1, b"", ("Error EPERM: pool size change is disabled; you must unset "
                                 "nosizechange flag for the pool first")
            pool[cmd["var"]] = int(cmd["val"])
            if cmd["var"] == "size":  # as the mon does: min_size to the default for the size
                size = int(cmd["val"])
                pool["min_size"] = min(size, self.default_min_size or size - size // 2)
        elif prefix in ("config set", "config rm") and cmd["name"] == "mgr/balancer/pool_ids":
            if prefix == "config set":
                self.balancer["pool_ids"] = cmd.get("value", "")
            else:
                self.balancer.pop("pool_ids", None)
            return 0, b"", ""  # the config map, not the OSD map
        elif prefix == "osd pool get":
            pool = next(p for p in self.pools.values() if p["pool_name"] == cmd["pool"])
            return 0, json.dumps({cmd["var"]: pool[cmd["var"]]}).encode(), ""
        elif apply_upmap_command(self.upmaps, cmd):
            pass
        elif prefix == "osd crush weight-set rm":
            pool = next(p for p in self.pools.values() if p["pool_name"] == cmd["pool"])
            self.weight_sets.discard(pool["pool"])
        elif prefix == "osd crush rule rm":
            self.rules.pop(cmd["name"], None)
        elif prefix == "osd stat":
            return 0, json.dumps({"epoch": self.epoch}).encode(), ""  # reads, changes nothing
        elif prefix == "osd dump":
            dump = dict(self.osd_map(), require_min_compat_client=(
                self.mon_min_compat_client or self.min_compat_client))
            return 0, json.dumps(dump).encode(), ""
        else:
            return -22, b"", f"unknown command {prefix}"
        self.epoch += 1
        return 0, b"", ""


class ModuleOptions(dict):
    """The module's options; a change calls config_notify, as ceph-mgr does
    when the config map changes."""

    def __init__(self, module: Any, values: dict[str, Any]) -> None:
        super().__init__(values)
        self._module = module

    def __setitem__(self, name: str, value: Any) -> None:
        super().__setitem__(name, value)
        self._module.config_notify()

    def update(self, *args: Any, **kwargs: Any) -> None:
        super().update(*args, **kwargs)
        self._module.config_notify()


def make_module(cluster: FakeCluster, store: dict[str, str] | None = None,
                options: dict[str, Any] | None = None) -> Any:
    """A `Module` wired to the fake cluster (imports mgr_sla.module lazily)."""
    install_fake_mgr_module()
    from mgr_sla.module import Module

    m: Any = Module.__new__(Module)
    Module.__init__(m)
    store = {} if store is None else store
    opts = ModuleOptions(m, {o["name"]: o["default"] for o in Module.MODULE_OPTIONS})
    m.get_module_option = opts.get
    m.set_module_option = opts.__setitem__
    opts.update({"metrics_port": 0})
    m.get_ceph_option = {"target_max_misplaced_ratio": 0.05}.get
    opts.update(options or {})
    m.get = cluster.get
    m.get_osdmap = lambda: FakeOsdMap(cluster)
    m.get_store = store.get
    m.set_store = store.__setitem__
    m.health = {}
    m.set_health_checks = lambda checks: setattr(m, "health", checks)
    m.remote = lambda *a, **k: None
    m.cluster_log = lambda *a, **k: None
    m.rados = FakeRados(cluster)
    cluster.on_change = lambda: m.notify("osd_map", "")  # type: ignore[method-assign]
    m.add_osd_perf_query = cluster.add_perf_query
    m.get_osd_perf_counters = cluster.perf_counters
    m.get_counter = lambda svc_type, svc_name, path: {
        path: cluster.counters.get(int(svc_name), {}).get(path, [])} if svc_type == "osd" else {}
    m.remove_osd_perf_query = cluster.perf_queries.discard
    # a cluster without `osd bench` or a balancer (bench/tick_bench.py's) has neither
    m.send_command = getattr(cluster, "send_command", None)
    balancer = getattr(cluster, "balancer", {})
    m.get_module_option_ex = lambda module, key, default=None: (
        balancer.get(key, default) if module == "balancer" else default)  # None when unset
    m.options = opts
    return m
