"""Data/metadata separation on a real cluster (the paper's Fig. 12 and 13).

    python3 -m bench.data_metadata [--out docs/benchmarks/data-metadata.json]
                                   [--hdd-iops 150] [--ssd-iops 500] [--secs 45] [--quick]
                                   [--layouts hdd ssd hdd+ssd ssd+ssd]

Four OSD layouts, each on all 8 BlueStore OSDs of a mini cluster, with the SLA
benchmark's device emulation (bench/emulation.py: a blkio IOPS cap per OSD
process and device):

- hdd, ssd:          one device per OSD (block file and its RocksDB together),
                     capped at the class's IOPS; a cluster without DB devices
- hdd+ssd, ssd+ssd:  user data on the block file capped at hdd or ssd IOPS,
                     RocksDB and its WAL on a separate block.db loop device
                     (deploy/minicluster.sh --db-class ssd) capped at ssd IOPS

Per layout, a fresh replicated pool (size 3, replicated_rule) and two
workloads with fio's rados engine (one job, 16 writes in flight): `4m`, whole
4 MB objects (the paper's object size), 256 of them written round robin; `4k`,
4 KiB objects, a new object per write (metadata heavy). Reported per layout
and workload: ops/s, MB/s, p50 and p99 latency, CPU busy and each device's I/O
rate against its cap. The DB fraction f is the RocksDB SST bytes (`bluefs
stats`, REAL) added per BlueStore `bluestore_stored` byte added by a run, both
read from the OSDs' admin sockets after a RocksDB compaction (which flushes the
memtables and releases the WAL: what stays is the metadata); BlueFS
`db_used_bytes` is reported beside it, but it moves in 1 MiB allocation units
and with BlueFS's own journal, which at this scale swamps the metadata of a
run. Performance per cost at HDD:SSD price-per-GB ratios 1:2, 1:5 and 1:10
uses the capacity each layout needs per GB of data: hdd 1, ssd r, hdd+ssd
1 + f r, ssd+ssd r (1 + f); the same with f = 4% and 6% (rule-of-thumb DB
sizes) is reported too. An uncapped run of both workloads on the plain
cluster shows what the CPU allows.

The layouts, workloads, cost model and report are in
bench/data_metadata_report.py; what is read from the OSDs and fio in
bench/data_metadata_osd.py.
"""
from __future__ import annotations

if __name__ == "__main__" and not __package__:
    import _script  # noqa: F401  (bench/_script.py: runs this as python3 -m bench.<name>)

import argparse
import contextlib
import json
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench import provenance
from bench.common import (
    OSD_CONF,
    RESULTS,
    busy_percent,
    cpu_times,
    fio_json,
    machine,
    missing_tools,
    progress,
    throttled_cluster,
    workdir,
    write_json,
)
from bench.data_metadata_osd import (
    asok_command,
    bluefs_real,
    db_fraction,
    fio_writes,
    osd_space,
    sst_fraction,
)
from bench.data_metadata_report import CONFIGS, COST_MODEL, WORKLOADS, Workload, summarize, table
from bench.emulation import BlkioThrottle, DeviceSpeeds, EmulationError, device_number
from harness.cephcluster import Cluster

UNCAPPED = "uncapped"  # reference: the plain cluster without caps (what the CPU allows)
# Each OSD's sparse block file. BlueStore never punches holes in a file, so the
# file grows with every byte ever written until it reaches this size (then the
# allocator reuses freed space): 8 of them bound the benchmark's disk use. The
# uncapped 4 MB run alone writes about 35 GB (three replicas).
BLOCK_BYTES = 4 << 30
OSDS = 8


@dataclass(frozen=True)
class Plan:
    secs: int  # measured seconds per layout and workload
    ramp_secs: int  # written first and not measured (fio --ramp_time)
    pg_num: int = 64
    uncapped: bool = True


FULL = Plan(secs=45, ramp_secs=8)
QUICK = Plan(secs=10, ramp_secs=3, uncapped=False)


# -- the cluster ----------------------------------------------------------------

class Bench:
    def __init__(self, cluster: Cluster, throttle: BlkioThrottle, speeds: DeviceSpeeds,
                 plan: Plan, workdir: Path) -> None:
        self.cluster, self.throttle, self.speeds = cluster, throttle, speeds
        self.plan, self.workdir = plan, workdir
        self.pids = {int(n[4:]): pid for n, pid in cluster.pids().items()
                     if n.startswith("osd.")}
        self.db = {osd: device_number(Path(dev)) for osd, dev in cluster.db_devices().items()}
        if self.db and set(self.db) != set(self.pids):
            raise RuntimeError(f"DB devices for OSDs {sorted(self.db)}, OSDs {sorted(self.pids)}")
        self.caps: tuple[int, int | None] = (0, None)

    def layout(self) -> dict[str, Any]:
        """What BlueStore made of the devices (from `ceph osd metadata`)."""
        meta = self.cluster.json("osd", "metadata")
        keys = ("bluestore_bdev_rotational", "bluefs_dedicated_db", "bluefs_db_rotational",
                "bluefs_db_dev_node", "bluestore_min_alloc_size", "osd_objectstore")
        return {str(m["id"]): {k: m.get(k) for k in keys if k in m} for m in meta}

    def emulate(self, block_iops: int, db_iops: int | None) -> None:
        """Cap every OSD: block file's disk at block_iops, its DB device at db_iops."""
        for osd, pid in self.pids.items():
            devices = {self.db[osd]: db_iops or 0} if osd in self.db else None
            self.throttle.limit(f"osd.{osd}", pid, block_iops, devices)
        self.caps = (block_iops, db_iops if self.db else None)

    def io_counts(self) -> dict[str, dict[int, int]]:
        out = {"block": {o: self.throttle.serviced(f"osd.{o}") for o in self.pids}}
        if self.db:
            out["db"] = {o: self.throttle.serviced(f"osd.{o}", self.db[o]) for o in self.pids}
        return out

    def asok(self, osd: int, prefix: str, timeout: float = 30, text: bool = False) -> Any:
        return asok_command(self.cluster.path / "run" / f"ceph-osd.{osd}.asok", prefix,
                            timeout, text)

    def space(self) -> dict[str, Any]:
        """Space counters once every OSD has compacted its RocksDB: the memtables are
        flushed into SST files and the WAL files are released, so BlueFS holds
        the metadata that stays, not what the last seconds left in the WAL."""
        for o in self.pids:
            self.asok(o, "compact", timeout=600)
        return osd_space({o: self.asok(o, "perf dump") for o in self.pids},
                         {o: bluefs_real(self.asok(o, "bluefs stats", text=True))
                          for o in self.pids})

    def fresh_pool(self, name: str) -> None:
        self.cluster.create_pool(name, self.plan.pg_num, size=3)
        self.cluster.wait_clean(300)

    def fio(self, pool: str, wl: Workload) -> dict[str, Any]:
        p = subprocess.run(
            ["fio", "--output-format=json", "--ioengine=rados", f"--conf={self.cluster.conf}",
             "--clientname=admin", f"--pool={pool}", "--touch_objects=0",
             # --size spread over --nrfiles objects (--filesize alone: fio writes nothing)
             f"--name={wl.name}", "--rw=write", f"--bs={wl.block}",
             f"--size={wl.block * wl.objects}", f"--nrfiles={wl.objects}",
             f"--iodepth={wl.iodepth}",
             f"--filename_format={wl.name}.$filenum", "--time_based",
             f"--runtime={self.plan.secs}", f"--ramp_time={self.plan.ramp_secs}",
             "--lat_percentiles=1", "--percentile_list=50:99"],
            capture_output=True, text=True, timeout=self.plan.secs + self.plan.ramp_secs + 600)
        if p.returncode != 0:
            raise RuntimeError(f"fio failed ({p.returncode}): {p.stderr.strip()[:400]}")
        return fio_json(p.stdout)

    def measure(self, config: str, pool: str, wl: Workload) -> dict[str, Any]:
        space0 = self.space()
        io0, cpu0, t0 = self.io_counts(), cpu_times(), time.monotonic()
        report = self.fio(pool, wl)
        secs = time.monotonic() - t0
        io1, cpu = self.io_counts(), busy_percent(cpu0, cpu_times())
        space1 = self.space()
        w = fio_writes(report)
        row: dict[str, Any] = {
            "config": config, "workload": wl.name, "object_bytes": wl.block,
            "ops_per_sec": round(w["ops_per_sec"], 1), "mb_per_sec": round(w["mb_per_sec"], 2),
            "p50_ms": round(w["p50_ms"], 2), "p99_ms": round(w["p99_ms"], 2),
            "mean_ms": round(w["mean_ms"], 2), "ops": w["ops"], "cpu_busy_percent": cpu,
            "block_cap_iops": self.caps[0] or None, "db_cap_iops": self.caps[1] or None,
            "sst_fraction": sst_fraction(space0, space1),
            "db_used_fraction": db_fraction(space0, space1),
            "db_used_fraction_total": round(
                (space1["db_used_bytes"] + space1["slow_used_bytes"])
                / max(space1["stored_bytes"], 1), 4),
            "space_after": space1}
        # device I/O per OSD over the whole fio run (its ramp included: same for all)
        for kind in ("block", "db"):
            if kind in io1:
                rates = [(io1[kind][o] - io0[kind][o]) / secs for o in self.pids]
                row[f"{kind}_iops_per_osd"] = round(sum(rates) / len(rates), 1)
                row[f"{kind}_iops_per_osd_max"] = round(max(rates), 1)
            else:
                row[f"{kind}_iops_per_osd"] = None
        print(json.dumps({k: v for k, v in row.items() if k != "space_after"}), flush=True)
        return row

    def config_runs(self, config: str, block_iops: int, db_iops: int | None
                    ) -> list[dict[str, Any]]:
        self.emulate(block_iops, db_iops)
        pool = "dm-" + config.replace("+", "-")
        self.fresh_pool(pool)
        runs = []
        for wl in WORKLOADS:
            runs.append(self.measure(config, pool, wl))
            time.sleep(3)  # let deferred writes and the last acks drain
        return runs


@contextlib.contextmanager
def bench_cluster(tmp: Path, kind: str, speeds: DeviceSpeeds, plan: Plan) -> Iterator[Bench]:
    """8 BlueStore OSDs, with (kind 'db') or without separate DB devices; daemons,
    loop devices, cgroups and block files gone when the block ends, however it ends."""
    need = OSDS * BLOCK_BYTES + (2 << 30)
    free = shutil.disk_usage(tmp).free
    if free < need:
        raise EmulationError(f"{tmp} has {free / 2**30:.1f} GiB free; the cluster's block files "
                             f"may take {need / 2**30:.0f} GiB (TMPDIR elsewhere?)")
    conf = OSD_CONF + f"bluestore block size = {BLOCK_BYTES}\n"
    with throttled_cluster(tmp, kind, conf, "ssd" if kind == "db" else None) as (cluster,
                                                                                   throttle):
        bench = Bench(cluster, throttle, speeds, plan, tmp)
        if kind == "db" and not bench.db:
            raise RuntimeError("the cluster has no DB devices recorded")
        yield bench


def measure(plan: Plan, speeds: DeviceSpeeds, progress: Callable[[str], None],
            wanted: Sequence[str] = tuple(CONFIGS)
            ) -> tuple[list[dict[str, Any]], dict[str, Any], str]:
    """(the rows of every wanted layout and workload, BlueStore's layouts, the Ceph
    release): a plain cluster for hdd and ssd (and the uncapped reference), then
    one with DB devices for hdd+ssd and ssd+ssd; a cluster no wanted layout needs
    is not started. Performance per cost needs all four layouts."""
    rows: list[dict[str, Any]] = []
    layouts: dict[str, Any] = {}
    release = provenance.UNKNOWN
    with workdir("data-metadata-") as tmp:
        for kind, all_configs in (("plain", ("hdd", "ssd")), ("db", ("hdd+ssd", "ssd+ssd"))):
            configs = [c for c in all_configs if c in wanted]
            if not configs:
                continue
            progress(f"cluster '{kind}' up")
            with bench_cluster(tmp, kind, speeds, plan) as bench:
                release = provenance.ceph_release(bench.cluster.tool("ceph", "--version"))
                layouts[kind] = bench.layout()
                for config in configs:
                    block, db = CONFIGS[config]
                    progress(f"layout {config}")
                    rows += bench.config_runs(config, speeds.iops(block),
                                              speeds.iops(db) if db else None)
                if kind == "plain" and plan.uncapped:
                    progress("uncapped reference")
                    rows += bench.config_runs(UNCAPPED, 0, None)
            progress(f"cluster '{kind}' down")
    order = {c: i for i, c in enumerate([*CONFIGS, UNCAPPED])}
    rows.sort(key=lambda r: (r["workload"] != "4m", order[r["config"]]))
    return rows, layouts, release


def run(plan: Plan, speeds: DeviceSpeeds, progress: Callable[[str], None],
        wanted: Sequence[str] = tuple(CONFIGS)) -> dict[str, Any]:
    started = time.monotonic()
    rows, layouts, release = measure(plan, speeds, progress, wanted)
    return {
        "configs": rows, **summarize(rows), "cost_model": COST_MODEL,
        "emulation": {
            "mechanism": "cgroup v1 blkio.throttle.{read,write}_iops_device per OSD process: "
                         "the disk holding its BlueStore block file, and its block.db loop "
                         "device (over tmpfs) where it has one",
            "hdd_device_iops": speeds.hdd_iops, "ssd_device_iops": speeds.ssd_iops,
            "bluestore_layout": layouts},
        "plan": {"secs": plan.secs, "ramp_secs": plan.ramp_secs, "pg_num": plan.pg_num,
                 "osds": OSDS, "block_file_bytes": BLOCK_BYTES, "layouts": list(wanted),
                 "pool": "replicated, size 3, replicated_rule (4 hosts)",
                 "client": "fio rados engine, one job, rw=write, a whole object per write",
                 "workloads": [{"name": w.name, "object_bytes": w.block, "objects": w.objects,
                                "iodepth": w.iodepth} for w in WORKLOADS]},
        "machine": machine(),
        "elapsed_secs": round(time.monotonic() - started, 1),
        "ceph_release": release,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=RESULTS / "data-metadata.json")
    ap.add_argument("--hdd-iops", type=int, default=DeviceSpeeds.hdd_iops)
    ap.add_argument("--ssd-iops", type=int, default=DeviceSpeeds.ssd_iops)
    ap.add_argument("--secs", type=int, default=None,
                    help=f"measured seconds per layout and workload (default {FULL.secs})")
    ap.add_argument("--quick", action="store_true", help="smoke run: 10 s runs, no reference")
    ap.add_argument("--layouts", nargs="+", choices=tuple(CONFIGS), default=list(CONFIGS),
                    help="measure only these (performance per cost needs all four)")
    args = ap.parse_args(argv)
    for tool in missing_tools(("fio", "rados", "ceph", "losetup")):
        print(f"data-metadata: {tool} not found: run deploy/install-deps.sh", file=sys.stderr)
        return 2
    if min(args.hdd_iops, args.ssd_iops) < 1:
        print("data-metadata: --hdd-iops and --ssd-iops must be >= 1", file=sys.stderr)
        return 2
    plan = QUICK if args.quick else FULL
    if args.secs:
        plan = Plan(args.secs, plan.ramp_secs, plan.pg_num, plan.uncapped)
    try:
        results = run(plan, DeviceSpeeds(args.hdd_iops, args.ssd_iops), progress("data-metadata"),
                      args.layouts)
    except EmulationError as exc:
        print(f"data-metadata: {exc}", file=sys.stderr)
        return 2
    results["provenance"] = provenance.provenance(
        "bench.data_metadata", sys.argv[1:] if argv is None else argv,
        results.pop("ceph_release"), "n/a")
    write_json(args.out, results)
    print(table(results), end="")
    print(f"data-metadata: results in {args.out} after {results['elapsed_secs']:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
