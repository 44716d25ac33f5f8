"""What the cluster benchmarks share: a mini cluster's lifetime (started by
deploy/minicluster.sh through harness/cephcluster.py, always stopped),
emulated device speeds' cgroups around it, the machine's CPU counters and the
output of fio and `rados bench`; and how every script writes its results.

Anything that starts a cluster here should run under the machine's cluster
lock (`flock /tmp/sla-cluster.lock ...`) where other clusters may start.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from bench import provenance as prov
from bench.emulation import BlkioThrottle, DeviceSpeeds, EmulationError
from harness.cephcluster import Cluster

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "docs" / "benchmarks"
# Reads must reach the throttled device, not BlueStore's buffer cache.
OSD_CONF = "bluestore default buffered read = false\n"


# -- results --------------------------------------------------------------------

def write_json(path: Path, data: Any, sort_keys: bool = True) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2, sort_keys=sort_keys) + "\n")


def progress(who: str) -> Callable[[str], None]:
    """A printer of 'who: [  12 s] what', seconds since it was made."""
    t0 = time.monotonic()
    return lambda what: print(f"{who}: [{time.monotonic() - t0:6.0f} s] {what}", flush=True)


def missing_tools(names: Iterable[str]) -> list[str]:
    return [n for n in names if shutil.which(n) is None]


def emulated_main(argv: list[str] | None, *, who: str, doc: str | None, out: str,
                  tools: Iterable[str], strategy: str, smoke_help: str,
                  run: Callable[..., dict[str, Any]],
                  sizes: tuple[Any, Any], table: Callable[[dict[str, Any]], str],
                  module_options: bool = False) -> int:
    """The command line of a benchmark on emulated device speeds: --smoke picks
    the first of `sizes`, the results get their provenance and a table. With
    `module_options`, --module-option KEY=VALUE (repeated) reaches `run` as
    its `options`: a module option set for the whole run."""
    args_in = list(sys.argv[1:] if argv is None else argv)
    ap = argparse.ArgumentParser(description=(doc or "").split("\n\n")[0])
    ap.add_argument("--smoke", action="store_true", help=smoke_help)
    ap.add_argument("--out", type=Path, default=RESULTS / out)
    ap.add_argument("--hdd-iops", type=int, default=DeviceSpeeds.hdd_iops)
    ap.add_argument("--ssd-iops", type=int, default=DeviceSpeeds.ssd_iops)
    if module_options:
        ap.add_argument("--module-option", action="append", default=[], type=_option,
                        metavar="KEY=VALUE", help="a mgr/sla option for the whole run")
    args = ap.parse_args(args_in)
    extra = {"options": dict(args.module_option)} if module_options else {}
    missing = missing_tools(tools)
    if missing:
        print(f"{who}: {', '.join(missing)} not found: run deploy/install-deps.sh",
              file=sys.stderr)
        return 2
    block = prov.provenance(f"bench.{who.replace('-', '_')}", args_in, prov.ceph_release(),
                            strategy)
    try:
        results = run(sizes[0] if args.smoke else sizes[1],
                      DeviceSpeeds(args.hdd_iops, args.ssd_iops), progress(who), **extra)
    except EmulationError as exc:
        print(f"{who}: {exc}", file=sys.stderr)
        return 2
    # the release of the cluster the figures came from (a release root's), where
    # the run says which
    block["ceph_release"] = results.pop("ceph_release", block["ceph_release"])
    recorded = {"module_options": extra["options"]} if module_options else {}
    results = {"provenance": block, **recorded, **results}
    write_json(args.out, results)
    print(table(results))
    print(f"{who}: results in {args.out} after {results['elapsed_secs']:.0f} s")
    return 0


def _option(text: str) -> tuple[str, str]:
    """KEY=VALUE, KEY a module option's name (no mgr/sla/ prefix)."""
    key, sep, value = text.partition("=")
    if not sep or not key or not key.replace("_", "").isalnum():
        raise argparse.ArgumentTypeError(f"{text!r}: want KEY=VALUE, e.g. share_past_min_size=true")
    return key, value


def machine() -> dict[str, Any]:
    """The machine and tool versions beside the figures (provenance has the rest)."""
    ceph = subprocess.run(["ceph", "--version"], capture_output=True, text=True).stdout.strip()
    fio = subprocess.run(["fio", "--version"], capture_output=True, text=True).stdout.strip()
    return {"cpus": os.cpu_count(), "memory_gb": round(
        os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1),
        "kernel": platform.release(), "ceph": ceph, "fio": fio}


# -- CPU ------------------------------------------------------------------------

def cpu_times() -> tuple[int, int]:
    """(total, idle + iowait) jiffies of the machine."""
    fields = [int(x) for x in Path("/proc/stat").read_text().split("\n")[0].split()[1:]]
    return sum(fields), fields[3] + fields[4]


def busy_percent(before: tuple[int, int], after: tuple[int, int]) -> float:
    total, idle = after[0] - before[0], after[1] - before[1]
    return round(100.0 * (1 - idle / max(total, 1)), 1)


def process_cpu_secs(pid: int) -> float:
    """utime + stime of a process so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


# -- client tools' output -----------------------------------------------------------

def fio_json(stdout: str) -> dict[str, Any]:
    """fio's JSON report; fio may print notices before it."""
    start = stdout.find("{")
    if start < 0:
        raise RuntimeError(f"fio printed no report: {stdout.strip()[:300]!r}")
    return json.loads(stdout[start:])


def rados_bench_ops(summary: str, made: str = "writes") -> float:
    """Ops per second from `rados bench`'s closing summary (its JSON is not valid):
    `made` is "writes" (write) or "reads" (seq, rand)."""
    fields = dict(line.split(":", 1) for line in summary.splitlines() if ":" in line)
    try:
        return float(fields[f"Total {made} made"]) / float(fields["Total time run"])
    except (KeyError, ValueError, ZeroDivisionError):
        raise RuntimeError(f"no rados bench summary in: {summary.strip()[-300:]!r}") from None


def rados_bench(cluster: Cluster, pool: str, secs: float, mode: str = "write",
                *extra: str) -> float:
    """`rados bench` on `pool` for `secs`: its ops/s (mode write, seq or rand)."""
    p = subprocess.run(cluster.tool("rados", "-c", cluster.conf, "-p", pool, "bench",
                                    str(int(secs)), mode, *extra),
                       capture_output=True, text=True, timeout=secs + 300)
    if p.returncode != 0:
        raise RuntimeError(f"rados bench {mode} failed: {p.stderr.strip()[:400]}")
    return rados_bench_ops(p.stdout, "writes" if mode == "write" else "reads")


# -- clusters -------------------------------------------------------------------

@contextlib.contextmanager
def workdir(prefix: str) -> Iterator[Path]:
    """A temp directory (under TMPDIR), removed when the block ends."""
    tmp = Path(tempfile.mkdtemp(prefix=prefix))
    try:
        yield tmp
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


@contextlib.contextmanager
def terminated_as_interrupt() -> Iterator[None]:
    """SIGTERM (a test run stopped, `timeout`) raises KeyboardInterrupt in the
    main thread while the block runs, so the `finally` blocks that stop
    daemons run; Python's default for SIGTERM ends the process without them."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt(f"signal {signum}")
    before = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, before)


@contextlib.contextmanager
def mini_cluster(path: Path, **up: Any) -> Iterator[Cluster]:
    """A mini cluster in `path` (Cluster.up's keywords), stopped by its PIDs when
    the block ends, however it ends (SIGTERM included)."""
    with terminated_as_interrupt():
        cluster = Cluster.up(path, **up)
        try:
            yield cluster
        finally:
            if (path / "pids").exists():
                cluster.down()


@contextlib.contextmanager
def cluster_for(conf: str | None, prefix: str) -> Iterator[Cluster]:
    """The running mini cluster of `conf` (left running), or one of our own in a
    temp dir named `prefix`... (stopped and removed at the end)."""
    if conf:
        yield Cluster(Path(conf).resolve().parent)
        return
    with workdir(prefix) as tmp, mini_cluster(tmp / "c") as cluster:
        yield cluster


@contextlib.contextmanager
def throttled_cluster(work: Path, name: str, osd_conf: str = OSD_CONF,
                      db_class: str | None = None) -> Iterator[tuple[Cluster, BlkioThrottle]]:
    """8 BlueStore OSDs in work/name with a blkio cgroup per OSD for emulated
    device speeds (bench/emulation.py; the caller sets the caps). The daemons go
    first, then their cgroups, then the cluster's files, however the block ends.
    EmulationError before anything starts if the machine has no blkio throttle."""
    throttle = BlkioThrottle(f"{work.name}-{name}", work)
    conf = work / f"{name}.conf"
    conf.write_text(osd_conf)
    try:
        with mini_cluster(work / name, objectstore="bluestore", extra_conf=conf,
                          db_class=db_class) as cluster:
            yield cluster, throttle
    finally:
        busy = throttle.remove()
        if busy:
            print(f"bench: cgroups still in use: {busy}", file=sys.stderr)
        shutil.rmtree(work / name, ignore_errors=True)


def default_cache_dir() -> Path:
    """Where the policy simulation keeps its CRUSH mappings between runs."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "ceph-sla" / "policy-sim"
