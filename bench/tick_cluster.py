"""The mgr's data for bench/tick_bench.py: a cluster of a given size in the
shape of the real dumps (`osd_map`, `osd_map_crush`, `pg_status`, `pg_stats`,
the OSD perf query's counters), with the mon and OSD commands the module sends.

Hosts of 8 hdd + 2 ssd OSDs; pool 1 is a managed normal pool and pool 2 a
managed urgent pool, with G/8 and G/32 PGs; the other PGs spread over the
other pools. What get() returns is built once per epoch.
"""
from __future__ import annotations

import gc
import json
import random
import re
from typing import Any

from harness.fake_mgr import apply_upmap_command, upmapped

HDD_PER_HOST, SSD_PER_HOST = 8, 2
# An `osd bench` reply's IOPS per device class ('ceph sla advise --calibrate').
BENCH_IOPS = {"hdd": 300.0, "ssd": 3000.0}


# What every OSD of the scaled cluster runs with (Pacific's defaults).
PG_LIMIT_DEFAULTS = {"mon_max_pg_per_osd": 250, "osd_max_pg_per_osd_hard_ratio": 3.0}


class ScaledCluster:
    """The mgr's data for a cluster of the given size, in the dumps' shape."""

    def __init__(self, osds: int, pools: int, pgs: int, seed: int = 7, ec: bool = False
                 ) -> None:
        """ec: pool 1 erasure-coded (k=2 m=1 on its own rule, hdd, one shard per host)."""
        per_host = HDD_PER_HOST + SSD_PER_HOST
        self.hosts = max(3, osds // per_host)
        self.osd_count = self.hosts * per_host
        self.epoch = 100
        self.gets: dict[str, int] = {}
        self.commands: list[dict[str, Any]] = []
        self.upmaps: dict[str, list[tuple[int, int]]] = {}
        self.perf_queries: set[int] = set()
        self.weight_sets: set[int] = {1, 2}  # pools with a weight set installed
        self.perf_regex = re.compile("^(.*)$")  # the last query's pool_id regex
        self.rules = {"replicated_rule": 0, "sla_isolated_normal": 1,
                      "sla_isolated_urgent": 2, "sla_shared": 3, "sla_hybrid": 4}
        # the balancer module's options, as `ceph config` holds them (make_module
        # serves them to the module's balancer guard)
        self.balancer: dict[str, Any] = {"mode": "upmap", "active": True, "pool_ids": ""}
        normal_pgs, urgent_pgs = max(8, pgs // 8), max(8, pgs // 32)
        rest = max(0, pgs - normal_pgs - urgent_pgs)
        others = max(1, pools - 2)
        self.pg_num = {1: normal_pgs, 2: urgent_pgs}
        for p in range(3, pools + 1):
            self.pg_num[p] = max(1, rest // others)
        self.pool_rule = {p: 0 for p in self.pg_num}
        self.pool_rule[1], self.pool_rule[2] = 1, 2
        self.ec = ec
        if ec:  # the rule its profile made, and the one `sla rules apply` adds for it
            self.rules.update(ecpool=5, sla_ec_ecpool=6)
            self.pool_rule[1] = 5
        self.host_of = {o: o // per_host for o in range(self.osd_count)}
        self.cls = {o: "hdd" if o % per_host < HDD_PER_HOST else "ssd"
                    for o in range(self.osd_count)}
        self.raw = self._crush(random.Random(seed))
        self.ops = {p: 0 for p in self.pg_num}
        self.seen = dict(self.ops)
        self._dumps: dict[str, Any] = {}
        self._dumps_epoch = -1

    def _crush(self, rng: random.Random) -> dict[str, list[int]]:
        """Each PG's 'CRUSH' mapping: OSDs of its pool's class on 3 distinct hosts."""
        per_host = HDD_PER_HOST + SSD_PER_HOST
        hdd_by_host = [[h * per_host + i for i in range(HDD_PER_HOST)]
                       for h in range(self.hosts)]
        ssd_by_host = [[h * per_host + HDD_PER_HOST + i for i in range(SSD_PER_HOST)]
                       for h in range(self.hosts)]
        raw: dict[str, list[int]] = {}
        for pool, count in self.pg_num.items():
            by_host = ssd_by_host if pool == 2 else hdd_by_host
            for seed_ in range(count):
                hosts = rng.sample(range(self.hosts), 3)
                raw[f"{pool}.{seed_:x}"] = [rng.choice(by_host[h]) for h in hosts]
        return raw

    # -- the mgr's getters ------------------------------------------------------
    def get(self, what: str) -> Any:
        self.gets[what] = self.gets.get(what, 0) + 1
        self.build()
        return self._dumps[what]

    def build(self) -> None:
        """The dumps of this epoch, built once (the benchmark builds them
        before it times a tick: in ceph-mgr they are the mgr's own work)."""
        if self._dumps_epoch != self.epoch:
            self._dumps = self._build()
            self._dumps_epoch = self.epoch
            # In ceph-mgr these dumps live in C++ until get() converts them,
            # outside the module's interpreter and its garbage collector;
            # frozen here so the collector does not walk them either.
            gc.freeze()

    def _build(self) -> dict[str, Any]:
        stats = []
        held: dict[int, int] = {}  # each OSD's PGs, as its reports give them
        self._up: dict[int, dict[str, list[int]]] = {}
        for pgid in self.raw:
            up = self.up_set(pgid)
            self._up.setdefault(int(pgid.split(".")[0]), {})[pgid] = up
            for osd in up:
                held[osd] = held.get(osd, 0) + 1
            stats.append({"pgid": pgid, "state": "active+clean", "up": up, "acting": up,
                          "reported_epoch": self.epoch,
                          "stat_sum": {"num_bytes": 4 << 20, "num_objects": 1}})
        gib = 1 << 20
        return {
            "osd_map": self._osd_map(),
            "osd_map_crush": self._crush_dump(),
            "pg_status": {"pgs_by_state": [{"state_name": "active+clean",
                                            "count": len(self.raw)}],
                          "num_pgs": len(self.raw), "misplaced_ratio": 0.0},
            "pg_stats": {"pg_stats": stats},
            "pg_dump": {"pg_stats": stats, "pool_stats": []},
            "pool_stats": {"pool_stats": []},
            "osd_pool_stats": {"pool_stats": []},
            "health": {"json": json.dumps({"status": "HEALTH_OK", "checks": {}})},
            "osd_stats": {"osd_stats": [{"osd": o, "kb": 4000 * gib, "kb_used": 400 * gib,
                                         "num_pgs": held.get(o, 0)}
                                        for o in range(self.osd_count)]},
            "df": {"pools": [{"id": p, "stats": {"rd": 0, "wr": self.ops[p],
                                                 "bytes_used": n << 22}}
                             for p, n in self.pg_num.items()]},
            "pg_summary": {"by_pool": {}, "by_osd": {str(o): {"active+clean": n}
                                                      for o, n in held.items()}},
        }

    def _osd_map(self) -> dict[str, Any]:
        return {
            "epoch": self.epoch, "crush_version": self.epoch, "flags": "sortbitwise",
            "nearfull_ratio": 0.85, "require_min_compat_client": "luminous",
            "pools": [{"pool": p, "pool_name": self._name(p), "type": 1, "size": 3,
                       "min_size": 2, "crush_rule": self.pool_rule[p], "pg_num": n,
                       **({"type": 3, "erasure_code_profile": "ec21"}
                          if self.ec and p == 1 else {})}
                      for p, n in self.pg_num.items()],
            "erasure_code_profiles": {"ec21": {
                "k": "2", "m": "1", "plugin": "jerasure", "crush-device-class": "hdd",
                "crush-failure-domain": "host"}},
            "osds": [{"osd": o, "up": 1, "in": 1, "weight": 1.0}
                     for o in range(self.osd_count)],
            "pg_upmap_items": [
                {"pgid": pg, "mappings": [{"from": a, "to": b} for a, b in pairs]}
                for pg, pairs in sorted(self.upmaps.items())],
        }

    def _crush_dump(self) -> dict[str, Any]:
        per_host = HDD_PER_HOST + SSD_PER_HOST
        buckets = [{"id": -1, "name": "default", "type_id": 10, "type_name": "root",
                    "alg": "straw2",
                    "items": [{"id": -2 - h, "weight": per_host << 16}
                              for h in range(self.hosts)]}]
        buckets += [{"id": -2 - h, "name": f"host{h}", "type_id": 1, "type_name": "host",
                     "alg": "straw2",
                     "items": [{"id": h * per_host + i, "weight": 1 << 16}
                               for i in range(per_host)]} for h in range(self.hosts)]
        steps = [{"op": "take", "item": -1, "item_name": "default"},
                 {"op": "chooseleaf_firstn", "num": 0, "type": "host"}, {"op": "emit"}]
        return {
            "types": [{"type_id": 0, "name": "osd"}, {"type_id": 1, "name": "host"},
                      {"type_id": 10, "name": "root"}],
            "devices": [{"id": o, "name": f"osd.{o}", "class": self.cls[o]}
                        for o in range(self.osd_count)],
            "buckets": buckets,
            "rules": [{"rule_id": i, "rule_name": n, "type": 1, "steps": steps}
                      for n, i in self.rules.items() if "ec" not in n] + [
                {"rule_id": i, "rule_name": n, "type": 3, "steps": [
                    {"op": "take", "item": -1, "item_name": "default"} if n.startswith("sla_")
                    else {"op": "take", "item": -1 - 2 * self.hosts, "item_name": "default~hdd"},
                    {"op": "chooseleaf_indep", "num": 0, "type": "host"}, {"op": "emit"}]}
                for n, i in self.rules.items() if "ec" in n],
            # the managed pools' weight sets, as `sla rules apply` would leave them
            "choose_args": {str(p): [] for p in sorted(self.weight_sets)},
        }

    def up_set(self, pgid: str) -> list[int]:
        return upmapped(self.raw[pgid], self.upmaps.get(pgid, []))

    def osdmap(self) -> Any:
        cluster = self

        class _OsdMap:
            def map_pool_pgs_up(self, pool_id: int) -> dict[str, list[int]]:
                # CRUSH runs in C++ in ceph-mgr: worked out with the epoch's
                # dumps; the conversion to Python objects is timed
                cluster.build()
                return {pgid: list(up) for pgid, up in cluster._up.get(pool_id, {}).items()}

            def get_epoch(self) -> int:
                return cluster.epoch
        return _OsdMap()

    # -- mon and OSD commands and the perf query ----------------------------------
    def mon_command(self, cmd: dict[str, Any]) -> tuple[int, bytes, str]:
        self.commands.append(cmd)
        prefix = cmd["prefix"]
        if prefix == "osd pool set" and cmd["var"] == "crush_rule":
            pool = next(p for p, n in self.pg_num.items() if self._name(p) == cmd["pool"])
            self.pool_rule[pool] = self.rules[cmd["val"]]
            if cmd["val"] in ("sla_isolated_normal", "ecpool"):  # entries off the take go
                for pg in [pg for pg in self.upmaps if pg.startswith(f"{pool}.")]:
                    del self.upmaps[pg]
        elif prefix in ("config set", "config rm") and cmd.get("name") == "mgr/balancer/pool_ids":
            self.balancer["pool_ids"] = cmd.get("value", "")
            return 0, b"", ""  # the config map, not the OSD map
        elif apply_upmap_command(self.upmaps, cmd):
            pass
        elif prefix == "osd stat":
            return 0, json.dumps({"epoch": self.epoch}).encode(), ""
        else:
            return -22, b"", f"unsupported mon command {prefix}"
        self.epoch += 1
        self.on_change()
        return 0, b"", ""

    def send_command(self, result: Any, svc_type: str, svc_id: str, command: str,
                     tag: str) -> None:
        """An OSD command (the mgr's send_command): `osd bench` answers with its
        device class's IOPS, as 'ceph sla advise --calibrate' asks it; `config
        get` of the PG limit with Pacific's defaults."""
        cmd = json.loads(command)
        if svc_type == "osd" and cmd.get("prefix") == "config get":
            value = PG_LIMIT_DEFAULTS.get(cmd.get("var", ""))
            result.complete(0 if value is not None else -2,
                            json.dumps({cmd.get("var"): str(value)}), "")
            return
        if svc_type != "osd" or cmd.get("prefix") != "bench":
            result.complete(-22, "", f"unsupported {svc_type} command {cmd.get('prefix')}")
            return
        iops = BENCH_IOPS[self.cls[int(svc_id)]]
        result.complete(0, json.dumps({"bytes_written": cmd["count"], "blocksize": cmd["size"],
                                       "elapsed_sec": cmd["count"] / cmd["size"] / iops,
                                       "iops": iops}), "")

    def _name(self, pool: int) -> str:
        return {1: "bulk", 2: "fast"}.get(pool, f"pool{pool}")

    def on_change(self) -> None:
        """Replaced by make_module: the mgr's notify('osd_map')."""

    def add_perf_query(self, query: dict[str, Any]) -> int:
        """Its pool_id regex is honoured, as the OSDs do."""
        query_id = max(self.perf_queries, default=0) + 1
        self.perf_queries.add(query_id)
        self.perf_regex = re.compile(str(query["key_descriptor"][0]["regex"]))
        return query_id

    def perf_counters(self, query_id: int) -> dict[str, Any]:
        """Every pool but the urgent one is busy (the urgent pool stays quiet,
        so the mode does not change under the benchmark); an entry per pool the
        query's regex names, each read."""
        for pool in self.ops:
            if pool != 2:
                self.ops[pool] += 50
        out = []
        for pool, ops in self.ops.items():
            if not self.perf_regex.match(str(pool)):
                continue  # the OSDs report the query's pools only
            delta, self.seen[pool] = ops - self.seen[pool], ops
            if delta:  # a pool with no op in the period has no entry
                out.append({"k": [[str(pool)]], "c": [[delta, 0], [0, 0], [delta * 10**6, delta],
                                                  [0, 0]]})
        return {"counters": out}

