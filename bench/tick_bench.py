"""What the sla module costs the mgr per tick at scale.

Drives the module's real tick, status command and metrics scrape code
(mgr_sla.module.Module, behind harness/fake_mgr.py's stand-in for ceph-mgr)
with mgr data of the real dumps' shape (`osd_map`, `osd_map_crush`,
`pg_status`, `pg_stats`, the OSD perf query's counters), scaled to N OSDs,
P pools and G PGs, and writes JSON:

  python3 -m bench.tick_bench --osds 10000 --pools 1000 --pgs 100000 --out F

and prints each figure against its target (TARGETS). Needs prometheus_client
(the scrape is timed through it, as the module's metrics endpoint serves it).

The cluster: hosts of 8 hdd + 2 ssd OSDs; pool 1 is a managed normal pool
and pool 2 a managed urgent pool, with G/8 and G/32 PGs; the other PGs spread
over the other pools. What the fake's get() returns is built once per epoch,
so the figures are the module's own Python work (the mgr's C++ -> Python
conversion of each get() is not in them: that is why the module does the
expensive gets only on a new epoch, counted in expensive_gets_per_quiet_tick).
"""
from __future__ import annotations

if __name__ == "__main__" and not __package__:
    import _script  # noqa: F401  (bench/_script.py: runs this as python3 -m bench.<name>)

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

from bench import provenance
from bench.common import write_json
from harness.fake_mgr import (
    apply_upmap_command,
    install_fake_mgr_module,
    make_module,
    upmapped,
)

EXPENSIVE = ("osd_map", "osd_map_crush", "pg_dump")
HDD_PER_HOST, SSD_PER_HOST = 8, 2
# The scale targets: (figure, at most). status_ms_p50 is a target of the
# `sla status` command, not of the tick.
TARGETS = {"quiet_tick_ms_p99": 10, "pg_scan_ms_p50": 500, "scrape_ms_p50": 50,
           "status_ms_p50": 100, "expensive_gets_per_quiet_tick": 0}
# The module's options here: no dwell, and pool 1 shared however long isolating
# it again would take (the switch-cost gate is policy; what is measured is the
# tick with the pool shared and its upmap entries in place).
MODULE_OPTIONS = {"min_dwell_secs": 0, "sustain_secs": 0, "max_isolation_secs": 86400}
# An `osd bench` reply's IOPS per device class ('ceph sla advise --calibrate').
BENCH_IOPS = {"hdd": 300.0, "ssd": 3000.0}


class ScaledCluster:
    """The mgr's data for a cluster of the given size, in the dumps' shape."""

    def __init__(self, osds: int, pools: int, pgs: int, seed: int = 7) -> None:
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
        if self._dumps_epoch != self.epoch:
            self._dumps = self._build()
            self._dumps_epoch = self.epoch
            # In ceph-mgr these dumps live in C++ until get() converts them,
            # outside the module's interpreter and its garbage collector;
            # frozen here so the collector does not walk them either.
            gc.freeze()
        return self._dumps[what]

    def _build(self) -> dict[str, Any]:
        stats = []
        for pgid in self.raw:
            up = self.up_set(pgid)
            stats.append({"pgid": pgid, "state": "active+clean", "up": up, "acting": up,
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
            "osd_stats": {"osd_stats": [{"osd": o, "kb": 4000 * gib, "kb_used": 400 * gib}
                                        for o in range(self.osd_count)]},
            "df": {"pools": [{"id": p, "stats": {"rd": 0, "wr": self.ops[p],
                                                 "bytes_used": n << 22}}
                             for p, n in self.pg_num.items()]},
            "pg_summary": {"by_pool": {}},
        }

    def _osd_map(self) -> dict[str, Any]:
        return {
            "epoch": self.epoch, "crush_version": self.epoch, "flags": "sortbitwise",
            "nearfull_ratio": 0.85, "require_min_compat_client": "luminous",
            "pools": [{"pool": p, "pool_name": self._name(p), "type": 1, "size": 3,
                       "min_size": 2, "crush_rule": self.pool_rule[p], "pg_num": n}
                      for p, n in self.pg_num.items()],
            "osds": [{"osd": o, "up": 1, "in": 1, "weight": 1.0}
                     for o in range(self.osd_count)],
            "pg_upmap_items": [
                {"pgid": pg, "mappings": [{"from": a, "to": b} for a, b in pairs]}
                for pg, pairs in sorted(self.upmaps.items())],
        }

    def _crush_dump(self) -> dict[str, Any]:
        per_host = HDD_PER_HOST + SSD_PER_HOST
        buckets = [{"id": -1, "name": "default", "type_id": 10, "type_name": "root",
                    "items": [{"id": -2 - h, "weight": per_host << 16}
                              for h in range(self.hosts)]}]
        buckets += [{"id": -2 - h, "name": f"host{h}", "type_id": 1, "type_name": "host",
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
            "rules": [{"rule_id": i, "rule_name": n, "steps": steps}
                      for n, i in self.rules.items()],
            "choose_args": {"1": [], "2": []},
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

    # -- mon and OSD commands and the perf query ----------------------------------
    def mon_command(self, cmd: dict[str, Any]) -> tuple[int, bytes, str]:
        self.commands.append(cmd)
        prefix = cmd["prefix"]
        if prefix == "osd pool set" and cmd["var"] == "crush_rule":
            pool = next(p for p, n in self.pg_num.items() if self._name(p) == cmd["pool"])
            self.pool_rule[pool] = self.rules[cmd["val"]]
            if cmd["val"] == "sla_isolated_normal":
                for pg in [pg for pg in self.upmaps if pg.startswith(f"{pool}.")]:
                    del self.upmaps[pg]
        elif prefix in ("config set", "config rm") and cmd.get("name") == "mgr/balancer/pool_ids":
            self.balancer["pool_ids"] = cmd.get("value", "")
            return 0, b"", ""  # the config map, not the OSD map
        elif apply_upmap_command(self.upmaps, cmd):
            pass
        elif prefix == "osd stat":
            return 0, json.dumps({"epoch": self.epoch + 1}).encode(), ""
        else:
            return -22, b"", f"unsupported mon command {prefix}"
        self.epoch += 1
        self.on_change()
        return 0, b"", ""

    def send_command(self, result: Any, svc_type: str, svc_id: str, command: str,
                     tag: str) -> None:
        """An OSD command (the mgr's send_command): `osd bench` answers with its
        device class's IOPS, as 'ceph sla advise --calibrate' asks it."""
        cmd = json.loads(command)
        if svc_type != "osd" or cmd.get("prefix") != "bench":
            result.result = (-22, "", f"unsupported {svc_type} command {cmd.get('prefix')}")
            return
        iops = BENCH_IOPS[self.cls[int(svc_id)]]
        result.result = (0, json.dumps({"bytes_written": cmd["count"], "blocksize": cmd["size"],
                                        "elapsed_sec": cmd["count"] / cmd["size"] / iops,
                                        "iops": iops}), "")

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


def managed_module(cluster: ScaledCluster) -> Any:
    """The real Module on the fake mgr, pool 2 urgent and pool 1 normal (moved by
    pg_upmap_items: the 'upmap' design)."""
    from mgr_sla.core.state import Role, Strategy

    m = make_module(cluster, {}, dict(MODULE_OPTIONS))  # type: ignore[arg-type]
    m.get_osdmap = cluster.osdmap
    m._rules.replace_check(lambda options: None)  # crushtool on a fake map: not what is measured
    assert m.cmd_pool_set("fast", role=Role.URGENT).retval == 0
    done = m.cmd_pool_set("bulk", role=Role.NORMAL, strategy=Strategy.MOVE)
    assert done.retval == 0, done
    return m


def place(m: Any) -> tuple[float, list[dict[str, Any]]]:
    """Tick until the module shares and pool 1's upmap entries are all in place:
    (the first tick's ms, the pools' status then)."""
    first_tick = None
    for _ in range(1000):  # UPMAP_BATCH entries a tick: 7,500 entries take 30 ticks
        ms = timed(m.tick)
        m._rules.wait(10)
        m._placement.upmap.sender.wait(60)  # the batch goes out on its own thread
        first_tick = first_tick or ms
        status = m._status_snapshot()
        bulk = next(p for p in status["pools"] if p["pool_id"] == 1)
        if status["mode"] == "shared" and (bulk["upmaps"] or {}).get("pending") == 0:
            m.tick()  # the epoch of the last placement commands: not a quiet tick
            gc.collect()
            return first_tick, status["pools"]
    raise SystemExit(f"the module did not place pool 1 in 1000 ticks: {status}")


def quiet_ticks(m: Any, cluster: ScaledCluster, ticks: int) -> tuple[list[float], dict[str, int]]:
    """Ticks with no new epoch: their ms and the mgr gets they made."""
    before = dict(cluster.gets)
    quiet = [timed(m.tick) for _ in range(ticks)]
    return quiet, {k: n - before.get(k, 0) for k, n in cluster.gets.items()
                   if n != before.get(k, 0)}


def epoch_ticks(m: Any, cluster: ScaledCluster, ticks: int) -> list[float]:
    """Ticks each after a new osdmap epoch (the mgr's notify first)."""
    out = []
    for _ in range(ticks):
        cluster.epoch += 1
        m.notify("osd_map", "")
        out.append(timed(m.tick))
    return out


def pg_scans(m: Any, times: int) -> list[float]:
    """The PG scan of a switch to isolated being watched (the normal pool's PG
    stats: which PGs still move, which still act on urgent OSDs)."""
    from mgr_sla.core.state import SwitchRecord

    view = m._maps.last().view
    urgent_osds = view.osds_of_class(m._settings.urgent_class)
    tracker = m._tracker
    scans = []
    for _ in range(times):
        # PGs moved already counted: the scan, not the mapping comparison
        tracker.start(SwitchRecord(time.time(), "shared", "isolated", "bench", epoch=0,
                                   pgs_moved=0), {})
        scans.append(timed(lambda: tracker.track(view.epoch, [1], urgent_osds, dict, False,
                                                 time.time())))
        assert tracker.isolating, "the scan found pool 1 off the urgent OSDs already"
    return scans


def scrapes(m: Any, times: int) -> list[float]:
    """The metrics endpoint's work: the families from a status snapshot, exposed."""
    from prometheus_client.exposition import generate_latest
    from prometheus_client.registry import CollectorRegistry

    from mgr_sla.shell.metrics import collect_families

    def scrape() -> None:
        snapshot = m._status_snapshot()

        class _C:
            def collect(self) -> Any:
                return collect_families(snapshot)
        registry = CollectorRegistry()
        registry.register(_C())
        generate_latest(registry)
    return [timed(scrape) for _ in range(times)]


def run(osds: int, pools: int, pgs: int, n_quiet: int, n_epoch: int) -> dict[str, Any]:
    install_fake_mgr_module()
    from mgr_sla.shell.commands_io import OutputFormat

    built = time.perf_counter()
    cluster = ScaledCluster(osds, pools, pgs)
    cluster.get("osd_map")  # build the dumps once, outside the timings
    setup_secs = time.perf_counter() - built
    m = managed_module(cluster)
    first_tick, placed = place(m)  # warm up: the switch to shared, pool 1 placed
    quiet, quiet_gets = quiet_ticks(m, cluster, n_quiet)
    expensive = sum(quiet_gets.get(k, 0) for k in EXPENSIVE)
    epoch = epoch_ticks(m, cluster, n_epoch)
    scans = pg_scans(m, max(5, n_epoch))
    scraped = scrapes(m, 20)
    statuses = [timed(lambda: m.cmd_status(format=OutputFormat.JSON)) for _ in range(20)]
    return {
        "osds": cluster.osd_count, "pools": len(cluster.pg_num), "pgs": len(cluster.raw),
        "managed": {"normal_pool_pgs": cluster.pg_num[1], "urgent_pool_pgs": cluster.pg_num[2]},
        "quiet_tick_ms_p50": round(statistics.median(quiet), 3),
        "quiet_tick_ms_p99": round(percentile(quiet, 99), 3),
        "epoch_tick_ms_p50": round(statistics.median(epoch), 2),
        "first_tick_ms": round(first_tick, 1),
        "pg_scan_ms_p50": round(statistics.median(scans), 2),
        "scrape_ms_p50": round(statistics.median(scraped), 2),
        "status_ms_p50": round(statistics.median(statuses), 2),
        "expensive_gets_per_quiet_tick": round(expensive / max(1, n_quiet), 4),
        "gets_in_quiet_ticks": quiet_gets,
        "rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "upmap_entries": len(cluster.upmaps),
        "normal_pool_urgent_share": next(p for p in placed if p["pool_id"] == 1)["upmaps"][
            "urgent_replica_share"],
        "ticks": {"quiet": n_quiet, "epoch": n_epoch}, "module_options": MODULE_OPTIONS,
        "setup_secs": round(setup_secs, 1),
        "python": sys.version.split()[0],
    }


def verdicts(result: dict[str, Any]) -> list[str]:
    """Each target's line: figure, limit, met or MISSED."""
    return [f"{key}: {result[key]:g} (target <= {limit:g}): "
            + ("met" if result[key] <= limit else "MISSED")
            for key, limit in TARGETS.items()]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--osds", type=int, default=10000)
    parser.add_argument("--pools", type=int, default=1000)
    parser.add_argument("--pgs", type=int, default=100000)
    parser.add_argument("--quiet-ticks", type=int, default=300)
    parser.add_argument("--epoch-ticks", type=int, default=10)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    for name in ("osds", "pools", "pgs", "quiet_ticks", "epoch_ticks"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be >= 1")
    try:
        import prometheus_client  # noqa: F401
    except ImportError:
        print("tick-bench: prometheus_client is missing (pip install prometheus-client): "
              "the scrape is timed through it", file=sys.stderr)
        return 2
    result = run(args.osds, args.pools, args.pgs, args.quiet_ticks, args.epoch_ticks)
    result["provenance"] = provenance.provenance(
        "bench.tick_bench", sys.argv[1:] if argv is None else argv, provenance.NO_CEPH,
        provenance.CURRENT_DESIGN)
    write_json(args.out, result)
    print(json.dumps(result, sort_keys=True))
    print("\n".join(verdicts(result)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
