"""What the sla module costs the mgr per tick at scale.

Drives the module's real tick, status command and metrics scrape code
(mgr_sla.module.Module, behind harness/fake_mgr.py's stand-in for ceph-mgr)
with mgr data of the real dumps' shape (`osd_map`, `osd_map_crush`,
`pg_status`, `pg_stats`, the OSD perf query's counters), scaled to N OSDs,
P pools and G PGs, and writes JSON:

  python3 -m bench.tick_bench --osds 10000 --pools 1000 --pgs 100000 --out F

and prints each figure against its target (TARGETS). The scrape is timed
through the module's own copy of prometheus_client, as its endpoint serves it.

The cluster (bench/tick_cluster.py): hosts of 8 hdd + 2 ssd OSDs; pool 1 is a
managed normal pool and pool 2 a managed urgent pool, with G/8 and G/32 PGs;
the other PGs spread over the other pools. What the fake's get() returns is
built once per epoch, so the figures are the module's own Python work (the
mgr's C++ -> Python conversion of each get() is not in them: that is why the
module does the expensive gets only on a new epoch, counted in
expensive_gets_per_quiet_tick).
"""
from __future__ import annotations

if __name__ == "__main__" and not __package__:
    import _script  # noqa: F401  (bench/_script.py: runs this as python3 -m bench.<name>)

import argparse
import gc
import json
import resource
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from bench import provenance
from bench.common import write_json
from bench.tick_cluster import ScaledCluster
from harness.fake_mgr import install_fake_mgr_module, make_module

EXPENSIVE = ("osd_map", "osd_map_crush", "pg_dump")
# The scale targets: (figure, at most). status_ms_p50 is a target of the
# `sla status` command, not of the tick.
TARGETS = {"quiet_tick_ms_p99": 5, "epoch_tick_ms_p50": 250, "admission_ms_p50": 1000,
           "admission_many_ms_p50": 1000,
           "pg_scan_ms_p50": 500, "scrape_ms_p50": 50, "status_ms_p50": 100,
           "expensive_gets_per_quiet_tick": 0}
# The module's options here: no dwell, and pool 1 shared however long isolating
# it again would take (the switch-cost gate is policy; what is measured is the
# tick with the pool shared and its upmap entries in place).
MODULE_OPTIONS = {"min_dwell_secs": 0, "sustain_secs": 0, "max_isolation_secs": 86400}


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q / 100 * (len(ordered) - 1))))]


def timed(fn: Any) -> float:
    started = time.perf_counter()
    fn()
    return (time.perf_counter() - started) * 1000


def managed_module(cluster: ScaledCluster) -> Any:
    """The real Module on the fake mgr, pool 2 urgent and pool 1 normal (moved by
    pg_upmap_items: the 'upmap' design; its shards by the ec strategy when
    erasure-coded)."""
    from mgr_sla.core.state import Role, Strategy

    m = make_module(cluster, {}, dict(MODULE_OPTIONS))  # type: ignore[arg-type]
    m.get_osdmap = cluster.osdmap
    m._rules.replace_check(lambda options: None)  # crushtool on a fake map: not what is measured
    assert m.cmd_pool_set("fast", role=Role.URGENT).retval == 0
    done = m.cmd_pool_set("bulk", role=Role.NORMAL,
                          strategy=Strategy.EC if cluster.ec else Strategy.MOVE)
    assert done.retval == 0, done
    return m


def place(m: Any) -> tuple[float, list[dict[str, Any]]]:
    """Tick until the module shares and pool 1's upmap entries are all in place:
    (the first tick's ms, the pools' status then)."""
    first_tick = None
    for _ in range(1000):  # UPMAP_BATCH entries a tick: 7,500 entries take 30 ticks
        ms = timed(m.tick)
        m._rules.wait(10)
        m._admission.facts.limits.wait(10)
        m._placer.sender.wait(60)  # the batch goes out on its own thread
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
        cluster.build()  # the mgr's dumps of the new epoch (C++ in ceph-mgr): not timed
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


def manage_more(m: Any, cluster: ScaledCluster, pools: int) -> int:
    """`pools` more normal pools managed (move), with the module off: its
    admission then weighs them all, while no tick acts on them."""
    from mgr_sla.core.state import Role, Strategy

    assert m.cmd_off().retval == 0
    names = [p for p in sorted(cluster.pg_num) if p > 2][:pools]
    cluster.weight_sets |= set(names)  # installed (crushtool on a fake map is not measured)
    cluster.epoch += 1
    cluster.build()
    m.notify("osd_map", "")
    for pool in names:
        done = m.cmd_pool_set(cluster._name(pool), role=Role.NORMAL, strategy=Strategy.MOVE)
        assert done.retval == 0, done
    m.tick()  # a tick reads the roles: the next admission counts them
    return len(names) + 1


def admissions(m: Any, times: int) -> list[float]:
    """One admission refresh: the facts read from the mgr's data and `admit`
    run on them (what a new OSD map epoch costs the admission)."""
    maps, settings = m._maps.last(), m._settings
    with m._store.lock:
        seen = m._store.state().snapshot()
    return [timed(lambda: m._admission.refresh(time.time(), seen, maps, settings, force=True))
            for _ in range(times)]


def scrapes(m: Any, times: int) -> list[float]:
    """The metrics endpoint's work: the families from a status snapshot, exposed."""
    from mgr_sla._vendor.prometheus_client.exposition import generate_latest
    from mgr_sla._vendor.prometheus_client.registry import CollectorRegistry
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


def run(osds: int, pools: int, pgs: int, n_quiet: int, n_epoch: int, more_pools: int = 0,
        ec: bool = False) -> dict[str, Any]:
    install_fake_mgr_module()
    from mgr_sla.shell.commands_io import OutputFormat

    built = time.perf_counter()
    cluster = ScaledCluster(osds, pools, pgs, ec=ec)
    cluster.get("osd_map")  # build the dumps once, outside the timings
    setup_secs = time.perf_counter() - built
    m = managed_module(cluster)
    first_tick, placed = place(m)  # warm up: the switch to shared, pool 1 placed
    quiet, quiet_gets = quiet_ticks(m, cluster, n_quiet)
    expensive = sum(quiet_gets.get(k, 0) for k in EXPENSIVE)
    epoch = epoch_ticks(m, cluster, n_epoch)
    scans = pg_scans(m, max(5, n_epoch))
    admitted = admissions(m, max(5, n_epoch))
    scraped = scrapes(m, 20)
    statuses = [timed(lambda: m.cmd_status(format=OutputFormat.JSON)) for _ in range(20)]
    normal_pools = manage_more(m, cluster, more_pools)
    many = admissions(m, max(3, n_epoch // 2))
    return {
        "osds": cluster.osd_count, "pools": len(cluster.pg_num), "pgs": len(cluster.raw),
        "managed": {"normal_pool_pgs": cluster.pg_num[1], "urgent_pool_pgs": cluster.pg_num[2],
                    "normal_pool": "erasure-coded 2+1, ec" if ec else "replicated 3, move"},
        "quiet_tick_ms_p50": round(statistics.median(quiet), 3),
        "quiet_tick_ms_p99": round(percentile(quiet, 99), 3),
        "epoch_tick_ms_p50": round(statistics.median(epoch), 2),
        "first_tick_ms": round(first_tick, 1),
        "pg_scan_ms_p50": round(statistics.median(scans), 2),
        "admission_ms_p50": round(statistics.median(admitted), 2),
        "admission_ms_max": round(max(admitted), 2),
        # the same with more normal pools managed (isolated: each one's projection planned)
        "admission_many_ms_p50": round(statistics.median(many), 2),
        "admission_many_normal_pools": normal_pools,
        "scrape_ms_p50": round(statistics.median(scraped), 2),
        "status_ms_p50": round(statistics.median(statuses), 2),
        "expensive_gets_per_quiet_tick": round(expensive / max(1, n_quiet), 4),
        "gets_in_quiet_ticks": quiet_gets,
        "rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "upmap_entries": len(cluster.upmaps),
        "normal_pool_urgent_share": urgent_share(next(p for p in placed if p["pool_id"] == 1)),
        "ticks": {"quiet": n_quiet, "epoch": n_epoch}, "module_options": MODULE_OPTIONS,
        "setup_secs": round(setup_secs, 1),
        "python": sys.version.split()[0],
    }


def urgent_share(pool: dict[str, Any]) -> float:
    """The share of the pool's copies (replicas, or shards) on urgent OSDs."""
    upmaps = pool["upmaps"]
    return float(upmaps.get("urgent_replica_share", upmaps.get("urgent_shard_share", 0.0)))


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
    parser.add_argument("--more-normal-pools", type=int, default=100,
                        help="then manage this many more normal pools and time the admission")
    parser.add_argument("--ec", action="store_true",
                        help="the managed normal pool erasure-coded (k=2 m=1), ec strategy")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    for name in ("osds", "pools", "pgs", "quiet_ticks", "epoch_ticks"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be >= 1")
    result = run(args.osds, args.pools, args.pgs, args.quiet_ticks, args.epoch_ticks,
                 args.more_normal_pools, args.ec)
    result["provenance"] = provenance.provenance(
        "bench.tick_bench", sys.argv[1:] if argv is None else argv, provenance.NO_CEPH,
        provenance.DESIGN_OF_STRATEGY["ec"] if args.ec else provenance.CURRENT_DESIGN)
    write_json(args.out, result)
    print(json.dumps(result, sort_keys=True))
    print("\n".join(verdicts(result)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
