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
"""
from __future__ import annotations

if __name__ == "__main__" and not __package__:
    import _script  # noqa: F401  (bench/_script.py: runs this as python3 -m bench.<name>)

import argparse
import contextlib
import json
import re
import shutil
import socket
import struct
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
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
from bench.emulation import BlkioThrottle, DeviceSpeeds, EmulationError, device_number
from harness.cephcluster import Cluster

# layout -> (class of the block device, class of the separate DB device or None)
CONFIGS: dict[str, tuple[str, str | None]] = {
    "hdd": ("hdd", None), "ssd": ("ssd", None),
    "hdd+ssd": ("hdd", "ssd"), "ssd+ssd": ("ssd", "ssd")}
UNCAPPED = "uncapped"  # reference: the plain cluster without caps (what the CPU allows)
COST_RATIOS = ("1:2", "1:5", "1:10")  # HDD:SSD price per GB, as the paper writes them
DEFAULT_DB_FRACTION = 0.04  # Ceph's advice: block.db at least 4% of block
# block.db sized as Ceph's docs advise at least (4% of block) and as the paper measured (6%)
SENSITIVITY_FRACTIONS = (0.04, 0.06)
MB = 1_000_000


@dataclass(frozen=True)
class Workload:
    name: str
    block: int  # bytes per write = the object's size
    objects: int  # distinct objects, written round robin (wrapping if the run outlasts them)
    iodepth: int = 16


WORKLOADS = (Workload("4m", 4 << 20, 256), Workload("4k", 4096, 150_000))
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


# -- pure helpers (unit-tested) ------------------------------------------------

def cost_ratio(label: str) -> float:
    """SSD price per GB in HDD units from 'HDD:SSD', e.g. '1:5' -> 5.0."""
    try:
        hdd, ssd = (float(x) for x in label.split(":"))
    except ValueError:
        raise ValueError(f"cost ratio must look like 1:5, not {label!r}") from None
    if hdd <= 0 or ssd <= 0:
        raise ValueError(f"cost ratio parts must be positive: {label!r}")
    return ssd / hdd


def capacity_cost(config: str, ssd_per_hdd: float, db_fraction: float) -> float:
    """Price of the devices that hold 1 GB of data, an HDD GB costing 1.

    A separate DB needs `db_fraction` GB per GB of data on its own device."""
    r, f = ssd_per_hdd, db_fraction
    costs = {"hdd": 1.0, "ssd": r, "hdd+ssd": 1.0 + f * r, "ssd+ssd": r * (1.0 + f)}
    if config not in costs:
        raise ValueError(f"unknown layout {config!r}")
    return costs[config]


def perf_per_cost(perf: Mapping[str, float], db_fraction: float,
                  ratios: Sequence[str] = COST_RATIOS) -> dict[str, dict[str, float]]:
    """{ratio: {layout: performance / capacity cost}} for the layouts in `perf`."""
    return {label: {c: round(p / capacity_cost(c, cost_ratio(label), db_fraction), 2)
                    for c, p in perf.items()}
            for label in ratios}


def best_per_ratio(table: Mapping[str, Mapping[str, float]]) -> dict[str, str]:
    return {label: max(row, key=lambda c: row[c]) for label, row in table.items()}


def speedups(perf: Mapping[str, float], base: str = "hdd") -> dict[str, float]:
    return {c: round(p / perf[base], 2) for c, p in perf.items()} if perf.get(base) else {}


_UNITS = {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40}
_SIZE = re.compile(r"(\d+(?:\.\d+)?) (B|KiB|MiB|GiB|TiB)\b")


def bluefs_real(text: str) -> dict[str, int]:
    """Bytes in use per BlueFS file kind (LOG: BlueFS's journal, WAL: RocksDB's logs,
    DB: its SST files, SLOW) from the REAL column of `bluefs stats`'s usage matrix.

    The other columns are space allocated per device, in 1 MiB units on a DB device.
    {} when there is no matrix (BlueFS on the one shared device)."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith("DEV/LEV")), None)
    if start is None or "REAL" not in lines[start].split():
        return {}
    col = lines[start].split().index("REAL") - 1  # sizes start after the row's label
    out: dict[str, int] = {}
    for line in lines[start + 1:]:
        fields = line.split()
        if not fields or fields[0] not in ("LOG", "WAL", "DB", "SLOW"):
            break  # TOTAL, then the MAXIMUMS table
        sizes = _SIZE.findall(line)
        if len(sizes) > col:
            out[fields[0]] = round(float(sizes[col][0]) * _UNITS[sizes[col][1]])
    return out


def osd_space(dumps: Mapping[int, Mapping[str, Any]],
              bluefs: Mapping[int, Mapping[str, int]] | None = None) -> dict[str, Any]:
    """Summed BlueFS/BlueStore space counters of `perf dump`s (by OSD id), and the
    SST bytes of bluefs_real()s (None unless every OSD has them)."""
    out: dict[str, Any] = {"db_used_bytes": 0, "slow_used_bytes": 0, "wal_used_bytes": 0,
                           "stored_bytes": 0, "allocated_bytes": 0}
    for dump in dumps.values():
        fs, bs = dump.get("bluefs", {}), dump.get("bluestore", {})
        out["db_used_bytes"] += int(fs.get("db_used_bytes", 0))
        out["slow_used_bytes"] += int(fs.get("slow_used_bytes", 0))
        out["wal_used_bytes"] += int(fs.get("wal_used_bytes", 0))
        out["stored_bytes"] += int(bs.get("bluestore_stored", 0))
        out["allocated_bytes"] += int(bs.get("bluestore_allocated", 0))
    real = [bluefs.get(o, {}) for o in dumps] if bluefs is not None else []
    out["sst_bytes"] = sum(r["DB"] for r in real) if real and all("DB" in r for r in real) \
        else None
    return out


def db_fraction(before: Mapping[str, Any], after: Mapping[str, Any]) -> float | None:
    """BlueFS DB bytes in use (db_used_bytes) per BlueStore stored byte added between
    two osd_space()s. Spillover (BlueFS data on the slow device) counts as DB.
    None if nothing was stored."""
    stored = after["stored_bytes"] - before["stored_bytes"]
    db = (after["db_used_bytes"] + after["slow_used_bytes"]
          - before["db_used_bytes"] - before["slow_used_bytes"])
    return round(db / stored, 4) if stored > 0 else None


def sst_fraction(before: Mapping[str, Any], after: Mapping[str, Any]) -> float | None:
    """RocksDB SST bytes per BlueStore stored byte added between two osd_space()s."""
    stored = after["stored_bytes"] - before["stored_bytes"]
    if stored <= 0 or before.get("sst_bytes") is None or after.get("sst_bytes") is None:
        return None
    return round((after["sst_bytes"] - before["sst_bytes"]) / stored, 5)


def fio_writes(report: Mapping[str, Any]) -> dict[str, float]:
    """Writes/s, MB/s and latency (submit to completion: p50, p99, mean in ms) of a
    one-job fio JSON report run with --lat_percentiles=1; the ramp time is excluded."""
    jobs = report["jobs"]
    if len(jobs) != 1:
        raise ValueError(f"expected one fio job, got {len(jobs)}")
    job, w = jobs[0], jobs[0]["write"]
    if not w["total_ios"]:
        raise RuntimeError(f"fio completed no writes (job {job.get('jobname')}, "
                           f"error {job.get('error')})")
    secs = max(job["job_runtime"] / 1000.0, 1e-3)
    pct = w["lat_ns"]["percentile"]
    return {"ops_per_sec": w["total_ios"] / secs, "mb_per_sec": w["io_bytes"] / secs / MB,
            "p50_ms": pct["50.000000"] / 1e6, "p99_ms": pct["99.000000"] / 1e6,
            "mean_ms": w["lat_ns"]["mean"] / 1e6, "ops": w["total_ios"], "secs": secs}


def asok_reply(data: bytes, text: bool = False) -> Any:
    """An admin socket's reply: a 4-byte big-endian length, then that much JSON
    (or, with text, whatever the command printed)."""
    if len(data) < 4:
        raise RuntimeError("no reply from the admin socket")
    (length,) = struct.unpack(">I", data[:4])
    body = data[4:4 + length]
    if len(body) < length:
        raise RuntimeError(f"admin socket reply cut short: {len(body)} of {length} bytes")
    return body.decode(errors="replace") if text else json.loads(body)


def device_use(row: Mapping[str, Any], kind: str) -> str:
    """'rate (cap)' of one device kind ('block', 'db') in a result row; '-' if none."""
    if row.get(f"{kind}_iops_per_osd") is None:
        return "-"
    return f"{row[f'{kind}_iops_per_osd']:.0f} ({row.get(f'{kind}_cap_iops') or 'none'})"


def table(results: Mapping[str, Any]) -> str:
    """The results as Markdown (docs/benchmarks.md)."""
    rows = results["configs"]
    lines = ["| layout | workload | ops/s | MB/s | p50 ms | p99 ms | vs hdd | CPU busy % "
             "| block dev IO/s (cap) | DB dev IO/s (cap) |", "|---" * 10 + "|"]
    for r in rows:
        lines.append(
            f"| {r['config']} | {r['workload']} | {r['ops_per_sec']:.1f} | {r['mb_per_sec']:.1f} "
            f"| {r['p50_ms']:.1f} | {r['p99_ms']:.1f} | {r.get('speedup_over_hdd', '-')} "
            f"| {r.get('cpu_busy_percent', '-')} | {device_use(r, 'block')} "
            f"| {device_use(r, 'db')} |")
    fractions = results.get("db_fraction") or {}
    if fractions:
        lines += ["", "DB fraction f (SST bytes per stored byte): " + ", ".join(
            f"{w.name} {fractions[w.name]['value']:.3%}"
            + ("" if fractions[w.name].get("measured") else " (default)")
            for w in WORKLOADS if w.name in fractions)]
    for key, what in (("perf_per_cost", "MB/s per cost unit, 4 MB writes"),
                      ("perf_per_cost_4k", "ops/s per cost unit, 4 KiB writes")):
        ppc = results.get(key)
        if not ppc:
            continue
        layouts = [c for c in CONFIGS if c in next(iter(ppc.values()))]
        lines += ["", f"| SSD:HDD price ({what}) | " + " | ".join(layouts) + " | best |",
                  "|---" * (len(layouts) + 2) + "|"]
        for label, row in sorted(ppc.items(), key=lambda kv: cost_ratio(kv[0])):
            hdd, ssd = label.split(":")
            best = max(row, key=lambda c: row[c])
            lines.append(f"| {ssd}:{hdd} | " + " | ".join(
                f"**{row[c]}**" if c == best else str(row[c]) for c in layouts)
                + f" | {best} |")
    return "\n".join(lines) + "\n"


# -- the cluster ----------------------------------------------------------------

def asok_command(path: Path, prefix: str, timeout: float = 30, text: bool = False) -> Any:
    """A daemon's admin socket command (what `ceph daemon` does, without a CLI start);
    text: the reply as it is (commands such as `bluefs stats` print no JSON)."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(timeout)
        s.connect(str(path))
        s.sendall(json.dumps({"prefix": prefix, "format": "json"}).encode() + b"\0")
        data = b""
        while True:
            chunk = s.recv(1 << 16)
            if not chunk:
                break
            data += chunk
            if len(data) >= 4 and len(data) >= 4 + struct.unpack(">I", data[:4])[0]:
                break
    return asok_reply(data, text)


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


def summarize(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Speedups over hdd, the DB fraction used for the cost, performance per cost."""
    out: dict[str, Any] = {}
    fractions: dict[str, Any] = {}
    for wl in WORKLOADS:
        by = {r["config"]: r for r in rows if r["workload"] == wl.name}
        for c, s in speedups({c: r["ops_per_sec"] for c, r in by.items()}).items():
            by[c]["speedup_over_hdd"] = s
        dbs = [c for c in ("hdd+ssd", "ssd+ssd") if c in by]
        # a compaction may free more than a run added: no measure, not a negative size
        measured = {c: by[c]["sst_fraction"] for c in dbs
                    if by[c].get("sst_fraction") is not None and by[c]["sst_fraction"] >= 0}
        f = (round(sum(measured.values()) / len(measured), 5) if measured
             else DEFAULT_DB_FRACTION)
        fractions[wl.name] = {
            "value": f, "measured": measured,
            "db_used_fraction": {c: by[c].get("db_used_fraction") for c in dbs},
            "source": ("mean over the layouts with a DB device of the RocksDB SST bytes "
                       "(REAL column of `bluefs stats`) added per BlueStore stored byte added "
                       "by the run, all OSDs, each read after a RocksDB compaction of every "
                       "OSD; db_used_fraction: the same with BlueFS db_used_bytes, which "
                       "counts space in 1 MiB allocation units plus BlueFS's own journal"
                       if measured else f"not measured: default {DEFAULT_DB_FRACTION}")}
        metric = "mb_per_sec" if wl.name == "4m" else "ops_per_sec"
        key = "perf_per_cost" if wl.name == "4m" else f"perf_per_cost_{wl.name}"
        if set(CONFIGS) <= set(by):
            perf = {c: by[c][metric] for c in CONFIGS}
            out[key] = perf_per_cost(perf, f)
            out[f"best_{key}"] = best_per_ratio(out[key])
            out[f"speedup_over_hdd_{wl.name}"] = {c: by[c]["speedup_over_hdd"] for c in CONFIGS}
            # the same with DB devices sized by rule of thumb, not by what this run stored
            out[f"{key}_if_db_fraction"] = {
                str(alt): perf_per_cost(perf, alt) for alt in SENSITIVITY_FRACTIONS}
    out["db_fraction"] = fractions
    return out


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


COST_MODEL = {
    "ratios": "HDD:SSD price per GB (the paper's 1:2, 1:5, 1:10); an HDD GB costs 1",
    "capacity_cost_per_data_gb": {"hdd": "1", "ssd": "r", "hdd+ssd": "1 + f*r",
                                  "ssd+ssd": "r*(1+f)"},
    "perf_per_cost": "4 MB workload: MB/s divided by the capacity cost",
    "perf_per_cost_4k": "4 KiB workload: ops/s divided by the capacity cost",
    "f": "db_fraction.<workload>.value"}


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
