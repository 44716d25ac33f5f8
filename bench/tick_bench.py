"""What the sla module costs the mgr per tick at scale (issue 17).

Drives the module's real tick, status command and metrics scrape code
(mgr_sla.module.Module, behind harness/fake_mgr.py's stand-in for ceph-mgr)
with mgr data of the real dumps' shape (`osd_map`, `osd_map_crush`,
`pg_status`, `pg_stats`, the OSD perf query's counters), scaled to N OSDs,
P pools and G PGs, and writes JSON:

  python3 bench/tick_bench.py --osds 10000 --pools 1000 --pgs 100000 --out F

The cluster: hosts of 8 hdd + 2 ssd OSDs; pool 1 is a managed normal pool
and pool 2 a managed urgent pool, with G/8 and G/32 PGs; the other PGs spread
over the other pools. What the fake's get() returns is built once per epoch,
so the figures are the module's own Python work (the mgr's C++ -> Python
conversion of each get() is not in them: that is why the module does the
expensive gets only on a new epoch, counted in expensive_gets_per_quiet_tick).
"""
from __future__ import annotations

import argparse
import gc
import json
import random
import resource
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from harness.fake_mgr import (  # noqa: E402
    apply_upmap_command,
    install_fake_mgr_module,
    make_module,
    upmapped,
)

EXPENSIVE = ("osd_map", "osd_map_crush", "pg_dump")
HDD_PER_HOST, SSD_PER_HOST = 8, 2


class ScaledCluster:
    """The mgr's data for a cluster of the given size, in the dumps' shape."""

    def __init__(self, osds: int, pools: int, pgs: int, seed: int = 7) -> None:
        rng = random.Random(seed)
        per_host = HDD_PER_HOST + SSD_PER_HOST
        self.hosts = max(3, osds // per_host)
        self.osd_count = self.hosts * per_host
        self.epoch = 100
        self.gets: dict[str, int] = {}
        self.commands: list[dict[str, Any]] = []
        self.upmaps: dict[str, list[tuple[int, int]]] = {}
        self.perf_queries: set[int] = set()
        self.rules = {"replicated_rule": 0, "sla_isolated_normal": 1,
                      "sla_isolated_urgent": 2, "sla_shared": 3, "sla_hybrid": 4}
        normal_pgs, urgent_pgs = max(8, pgs // 8), max(8, pgs // 32)
        rest = max(0, pgs - normal_pgs - urgent_pgs)
        others = max(1, pools - 2)
        self.pg_num = {1: normal_pgs, 2: urgent_pgs}
        for p in range(3, pools + 1):
            self.pg_num[p] = max(1, rest // others)
        self.pool_rule = {p: 0 for p in self.pg_num}
        self.pool_rule[1], self.pool_rule[2] = 1, 2
        self.host_of = {o: o // per_host for o in range(self.osd_count)}
        self.cls = {o: "hdd" if o % per_host < HDD_PER_HOST else "ssd"
                    for o in range(self.osd_count)}
        hdd_by_host = [[h * per_host + i for i in range(HDD_PER_HOST)]
                       for h in range(self.hosts)]
        ssd_by_host = [[h * per_host + HDD_PER_HOST + i for i in range(SSD_PER_HOST)]
                       for h in range(self.hosts)]
        self.raw: dict[str, list[int]] = {}
        for pool, count in self.pg_num.items():
            by_host = ssd_by_host if pool == 2 else hdd_by_host
            for seed_ in range(count):
                hosts = rng.sample(range(self.hosts), 3)
                self.raw[f"{pool}.{seed_:x}"] = [rng.choice(by_host[h]) for h in hosts]
        self.ops = {p: 0 for p in self.pg_num}
        self.seen = dict(self.ops)
        self._dumps: dict[str, Any] = {}
        self._dumps_epoch = -1

    # -- the mgr's getters ------------------------------------------------------
    def get(self, what: str) -> Any:
        self.gets[what] = self.gets.get(what, 0) + 1
        if self._dumps_epoch != self.epoch:
            self._dumps = self._build()
            self._dumps_epoch = self.epoch
            # In ceph-mgr these dumps live in C++ until get() converts them,
            # outside the module's interpreter and its garbage collector;
            # frozen here so the collector does not walk them either.
            gc.freeze()
        return self._dumps[what]

    def _build(self) -> dict[str, Any]:
        pools = [{"pool": p, "pool_name": self._name(p), "type": 1, "size": 3,
                  "crush_rule": self.pool_rule[p], "pg_num": n}
                 for p, n in self.pg_num.items()]
        per_host = HDD_PER_HOST + SSD_PER_HOST
        buckets = [{"id": -1, "name": "default", "type_id": 10, "type_name": "root",
                    "items": [{"id": -2 - h, "weight": per_host << 16}
                              for h in range(self.hosts)]}]
        buckets += [{"id": -2 - h, "name": f"host{h}", "type_id": 1, "type_name": "host",
                     "items": [{"id": h * per_host + i, "weight": 1 << 16}
                               for i in range(per_host)]} for h in range(self.hosts)]
        steps = [{"op": "take", "item": -1, "item_name": "default"},
                 {"op": "chooseleaf_firstn", "num": 0, "type": "host"}, {"op": "emit"}]
        stats = []
        for pgid in self.raw:
            up = self.up_set(pgid)
            stats.append({"pgid": pgid, "state": "active+clean", "up": up, "acting": up,
                          "stat_sum": {"num_bytes": 4 << 20, "num_objects": 1}})
        gib = 1 << 20
        return {
            "osd_map": {
                "epoch": self.epoch, "crush_version": self.epoch, "flags": "sortbitwise",
                "nearfull_ratio": 0.85, "pools": pools,
                "osds": [{"osd": o, "up": 1, "in": 1, "weight": 1.0}
                         for o in range(self.osd_count)],
                "pg_upmap_items": [
                    {"pgid": pg, "mappings": [{"from": a, "to": b} for a, b in pairs]}
                    for pg, pairs in sorted(self.upmaps.items())],
            },
            "osd_map_crush": {
                "types": [{"type_id": 0, "name": "osd"}, {"type_id": 1, "name": "host"},
                          {"type_id": 10, "name": "root"}],
                "devices": [{"id": o, "name": f"osd.{o}", "class": self.cls[o]}
                            for o in range(self.osd_count)],
                "buckets": buckets,
                "rules": [{"rule_id": i, "rule_name": n, "steps": steps}
                          for n, i in self.rules.items()],
                "choose_args": {"1": [], "2": []},
            },
            "pg_status": {"pgs_by_state": [{"state_name": "active+clean",
                                            "count": len(self.raw)}],
                          "num_pgs": len(self.raw), "misplaced_ratio": 0.0},
            "pg_stats": {"pg_stats": stats},
            "pg_dump": {"pg_stats": stats, "pool_stats": []},
            "pool_stats": {"pool_stats": []},
            "osd_stats": {"osd_stats": [{"osd": o, "kb": 4000 * gib, "kb_used": 400 * gib}
                                        for o in range(self.osd_count)]},
            "df": {"pools": [{"id": p, "stats": {"rd": 0, "wr": self.ops[p],
                                                 "bytes_used": n << 22}}
                             for p, n in self.pg_num.items()]},
            "pg_summary": {"by_pool": {}},
        }

    def up_set(self, pgid: str) -> list[int]:
        return upmapped(self.raw[pgid], self.upmaps.get(pgid, []))

    def osdmap(self) -> Any:
        cluster = self

        class _OsdMap:
            def map_pool_pgs_up(self, pool_id: int) -> dict[str, list[int]]:
                return {f"{pool_id}.{s:x}": cluster.up_set(f"{pool_id}.{s:x}")
                        for s in range(cluster.pg_num[pool_id])}

            def get_epoch(self) -> int:
                return cluster.epoch
        return _OsdMap()

    # -- mon commands and the perf query -----------------------------------------
    def mon_command(self, cmd: dict[str, Any]) -> tuple[int, bytes, str]:
        self.commands.append(cmd)
        prefix = cmd["prefix"]
        if prefix == "osd pool set":
            pool = next(p for p, n in self.pg_num.items() if self._name(p) == cmd["pool"])
            self.pool_rule[pool] = self.rules[cmd["val"]]
            if cmd["val"] == "sla_isolated_normal":
                for pg in [pg for pg in self.upmaps if pg.startswith(f"{pool}.")]:
                    del self.upmaps[pg]
        elif apply_upmap_command(self.upmaps, cmd):
            pass
        elif prefix == "osd stat":
            return 0, json.dumps({"epoch": self.epoch + 1}).encode(), ""
        self.epoch += 1
        self.on_change()
        return 0, b"", ""

    def _name(self, pool: int) -> str:
        return {1: "bulk", 2: "fast"}.get(pool, f"pool{pool}")

    def on_change(self) -> None:
        """Replaced by make_module: the mgr's notify('osd_map')."""

    def add_perf_query(self, query: dict[str, Any]) -> int:
        self.perf_queries.add(1)
        return 1

    def perf_counters(self, query_id: int) -> dict[str, Any]:
        """Every pool but the urgent one is busy: an entry per pool each read,
        the heavy case for the module's parsing (the urgent pool stays quiet,
        so the mode does not change under the benchmark)."""
        for pool in self.ops:
            if pool != 2:
                self.ops[pool] += 50
        out = []
        for pool, ops in self.ops.items():
            delta, self.seen[pool] = ops - self.seen[pool], ops
            if delta:  # a pool with no op in the period has no entry
                out.append({"k": [[str(pool)]], "c": [[delta, 0], [0, 0], [delta * 10**6, delta],
                                                  [0, 0]]})
        return {"counters": out}


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q / 100 * (len(ordered) - 1))))]


def timed(fn: Any) -> float:
    started = time.perf_counter()
    fn()
    return (time.perf_counter() - started) * 1000


def run(osds: int, pools: int, pgs: int, quiet_ticks: int, epoch_ticks: int) -> dict[str, Any]:
    install_fake_mgr_module()
    from mgr_sla.commands_io import OutputFormat
    from mgr_sla.metrics import PROMETHEUS_CLIENT_AVAILABLE, collect_families
    from mgr_sla.state import Role, Strategy, SwitchRecord

    built = time.perf_counter()
    cluster = ScaledCluster(osds, pools, pgs)
    cluster.get("osd_map")  # build the dumps once, outside the timings
    setup_secs = time.perf_counter() - built
    store: dict[str, str] = {}
    # max_isolation_secs: the fake pools hold more data than the default drain
    # rate isolates in a minute, and the placement is what is measured here
    m = make_module(cluster, store, {"min_dwell_secs": 0, "sustain_secs": 0,  # type: ignore[arg-type]
                                     "max_isolation_secs": 10**9})
    m.get_osdmap = cluster.osdmap
    m._rules.replace_check(lambda options: None)  # crushtool on a fake map: not measured
    assert m.cmd_pool_set("fast", role=Role.URGENT).retval == 0
    assert m.cmd_pool_set("bulk", role=Role.NORMAL, strategy=Strategy.MOVE).retval == 0
    # warm up: the switch to shared and the upmap placement of pool 1
    first_epoch_tick = None
    for _ in range(1000):  # UPMAP_BATCH entries a tick: 7,500 entries take 30 ticks
        ms = timed(m.tick)
        m._rules.wait(10)
        m._placement.upmap.sender.wait(60)  # the batch goes out on its own thread
        first_epoch_tick = first_epoch_tick or ms
        status = m._status_snapshot()
        bulk = next(p for p in status["pools"] if p["pool_id"] == 1)
        if status["mode"] == "shared" and (bulk["upmaps"] or {}).get("pending") == 0:
            break
    else:
        raise SystemExit(f"the module did not place pool 1 in 1000 ticks: {status}")
    placed = status["pools"]
    m.tick()  # the epoch of the last placement commands: not a quiet tick
    gc.collect()

    quiet: list[float] = []
    before = dict(cluster.gets)
    for _ in range(quiet_ticks):
        quiet.append(timed(m.tick))
    quiet_gets = {k: n - before.get(k, 0) for k, n in cluster.gets.items()
                  if n != before.get(k, 0)}
    expensive = sum(quiet_gets.get(k, 0) for k in EXPENSIVE)

    epoch: list[float] = []
    for _ in range(epoch_ticks):
        cluster.epoch += 1
        m.notify("osd_map", "")
        epoch.append(timed(m.tick))

    # the PG scan of a switch being watched (pg_stats of the managed pools)
    state = m._store.state()
    tracker = m._tracker
    normal = sorted(p for p, r in state.roles.items() if r.role is Role.NORMAL)
    urgent: frozenset[int] = frozenset()
    scans = []
    for _ in range(max(5, epoch_ticks)):
        record = SwitchRecord(time.time(), "shared", "isolated", "bench", epoch=0, pgs_moved=0)
        tracker.start(record, {})
        scans.append(timed(lambda: tracker.track(cluster.epoch, normal, urgent, dict, False,
                                                 time.time())))

    def scrape() -> None:
        snapshot = m._status_snapshot()
        if PROMETHEUS_CLIENT_AVAILABLE:
            from prometheus_client.exposition import generate_latest
            from prometheus_client.registry import CollectorRegistry

            class _C:
                def collect(self) -> Any:
                    return collect_families(snapshot)
            registry = CollectorRegistry()
            registry.register(_C())
            generate_latest(registry)
        else:
            collect_families(snapshot)

    scrapes = [timed(scrape) for _ in range(20)]
    statuses = [timed(lambda: m.cmd_status(format=OutputFormat.JSON)) for _ in range(20)]
    return {
        "osds": cluster.osd_count, "pools": len(cluster.pg_num), "pgs": len(cluster.raw),
        "managed": {"normal_pool_pgs": cluster.pg_num[1], "urgent_pool_pgs": cluster.pg_num[2]},
        "quiet_tick_ms_p50": round(statistics.median(quiet), 3),
        "quiet_tick_ms_p99": round(percentile(quiet, 99), 3),
        "epoch_tick_ms_p50": round(statistics.median(epoch), 2),
        "first_tick_ms": round(first_epoch_tick or 0.0, 1),
        "pg_scan_ms_p50": round(statistics.median(scans), 2),
        "scrape_ms_p50": round(statistics.median(scrapes), 2),
        "status_ms_p50": round(statistics.median(statuses), 2),
        "expensive_gets_per_quiet_tick": round(expensive / max(1, quiet_ticks), 4),
        "gets_in_quiet_ticks": quiet_gets,
        "rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "upmap_entries": len(cluster.upmaps),
        "normal_pool_urgent_share": next(p for p in placed if p["pool_id"] == 1)["upmaps"][
            "urgent_replica_share"],
        "ticks": {"quiet": quiet_ticks, "epoch": epoch_ticks},
        "setup_secs": round(setup_secs, 1),
        "python": sys.version.split()[0],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--osds", type=int, default=10000)
    parser.add_argument("--pools", type=int, default=1000)
    parser.add_argument("--pgs", type=int, default=100000)
    parser.add_argument("--quiet-ticks", type=int, default=300)
    parser.add_argument("--epoch-ticks", type=int, default=10)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    for name in ("osds", "pools", "pgs"):
        if getattr(args, name) < 1:
            parser.error(f"--{name} must be >= 1")
    result = run(args.osds, args.pools, args.pgs, args.quiet_ticks, args.epoch_ticks)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2, sort_keys=True) + "\n")
    print(json.dumps(result, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
