"""Test-side handle on a mini cluster started by deploy/minicluster.sh.

Every wait has a deadline and fails with what it saw; nothing sleeps and hopes.
"""
from __future__ import annotations

import json
import os
import subprocess
import time
import urllib.request
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, TypeVar

from harness import ceph_commands, settle

ROOT = Path(__file__).resolve().parents[1]
MINICLUSTER = ROOT / "deploy" / "minicluster.sh"

T = TypeVar("T")


class CephError(RuntimeError):
    def __init__(self, args: list[str], rc: int, out: str, err: str) -> None:
        super().__init__(f"ceph {' '.join(args)} -> rc {rc}: {err.strip() or out.strip()}")
        self.rc, self.out, self.err = rc, out, err


def wait_for(what: str, probe: Callable[[], T | None], timeout: float,
             interval: float = 0.5) -> T:
    """Call `probe` until it returns something truthy; fail with the last value seen."""
    deadline = time.monotonic() + timeout
    seen: Any = None
    while True:
        try:
            seen = probe()
        except Exception as e:  # a probe that raises is "not yet", but reported
            seen = e
        else:
            if seen:
                return seen
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}; "
                                 f"last seen: {seen!r}"[:2000])
        time.sleep(interval)


class Cluster:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.conf = str(path / "ceph.conf")
        env_file = path / "cluster.env"
        env = dict(line.split("=", 1) for line in env_file.read_text().split()) \
            if env_file.exists() else {}
        self.release = env.get("SLA_RELEASE", "pacific")
        # Reef and Tentacle clusters run from a Debian root: so do their clients
        # (Tentacle's keys are not readable by Pacific's CLI).
        self.prefix = ["chroot", env["SLA_CHROOT"]] if env.get("SLA_CHROOT") else []

    @classmethod
    def up(cls, path: Path, osds: int = 8, objectstore: str = "memstore",
           release: str | None = None, packaged_modules: bool = False,
           extra_conf: Path | None = None, db_class: str | None = None) -> Cluster:
        """db_class: a separate BlueStore block.db per OSD on a loop device
        emulating that class (minicluster.sh --db-class; needs bluestore)."""
        release = release or os.environ.get("SLA_RELEASE", "pacific")
        try:
            subprocess.run([str(MINICLUSTER), "up", str(path), "--osds", str(osds),
                            "--objectstore", objectstore, "--release", release,
                            *(["--packaged-modules"] if packaged_modules else []),
                            *(["--extra-conf", str(extra_conf)] if extra_conf else []),
                            *(["--db-class", db_class] if db_class else [])],
                           check=True, timeout=900)  # a release root's first build included
        except (subprocess.CalledProcessError, subprocess.TimeoutExpired, KeyboardInterrupt):
            # `up` stops what it started when it fails, unless the script itself
            # breaks half way or the run is stopped (Ctrl-C, SIGTERM as an
            # interrupt): stop whatever it recorded, by PID
            if (path / "pids").exists():
                subprocess.run([str(MINICLUSTER), "down", str(path)], timeout=120,
                               check=False)
            raise
        return cls(path)

    def db_devices(self) -> dict[int, str]:
        """OSD id -> its block.db loop device (/dev/loopN), as `up --db-class` recorded."""
        record = self.path / "dbdevs"
        out: dict[int, str] = {}
        if record.exists():
            for line in record.read_text().splitlines():
                f = line.split()
                if len(f) == 4 and f[0] == "loop" and f[3].startswith("osd."):
                    out[int(f[3][4:])] = f[1]
        return out

    def tool(self, *argv: str) -> list[str]:
        """argv of a Ceph client tool of this cluster's release."""
        return [*self.prefix, *argv]

    def down(self) -> None:
        ceph_commands.close_channel(self.conf)
        subprocess.run([str(MINICLUSTER), "down", str(self.path)], check=True, timeout=120)

    def stop_daemon(self, name: str) -> None:
        """Stop one daemon (osd.N) by its recorded PID, waiting until it is gone."""
        subprocess.run([str(MINICLUSTER), "stop", str(self.path), name], check=True, timeout=90)

    def start_osd(self, osd: int) -> None:
        """Start a stopped OSD again on its own store (BlueStore survives it)."""
        subprocess.run([str(MINICLUSTER), "start", str(self.path), f"osd.{osd}"], check=True,
                       timeout=90)

    def pids(self) -> dict[str, int]:
        out = {}
        for line in (self.path / "pids").read_text().splitlines():
            name, pid = line.split()
            out[name] = int(pid)
        return out

    def ceph_raw(self, *args: str, inbuf: str | None = None, timeout: float = 60,
                 extra: tuple[str, ...] = (),
                 cli: bool = False) -> subprocess.CompletedProcess[str]:
        """`ceph ARGS`: over the cluster's command channel (the CLI's output at a
        fraction of its CPU), or the CLI itself when asked or when the channel
        does not take the call."""
        split = None if (cli or extra or inbuf is not None) else ceph_commands.split_format(args)
        if split:
            done = ceph_commands.channel_for(self.prefix, self.conf).run(*split, timeout=timeout)
            if done is not None:
                return done
        return subprocess.run(self.tool("ceph", "-c", self.conf, *extra, *args), input=inbuf,
                              capture_output=True, text=True, timeout=timeout)

    def ceph(self, *args: str, timeout: float = 60) -> str:
        p = self.ceph_raw(*args, timeout=timeout)
        if p.returncode != 0:
            raise CephError(list(args), p.returncode, p.stdout, p.stderr)
        return p.stdout

    def json(self, *args: str, timeout: float = 60) -> Any:
        return json.loads(self.ceph(*args, "-f", "json", timeout=timeout))

    def ports(self) -> dict[str, int]:
        """The ports minicluster.sh chose for this cluster (ports.env)."""
        pairs = (line.split("=") for line in (self.path / "ports.env").read_text().split())
        return {k: int(v) for k, v in pairs}

    def sla_status(self) -> dict[str, Any]:
        return self.json("sla", "status")

    def pool_rule(self, pool: str) -> str:
        return self.json("osd", "pool", "get", pool, "crush_rule")["crush_rule"]

    def pg_stats(self) -> list[dict[str, Any]]:
        """Every PG's own stats (`pg ls`: a list, or under pg_stats by release)."""
        listed = self.json("pg", "ls")
        return list(listed.get("pg_stats", []) if isinstance(listed, dict) else listed)

    def wait_settled(self, timeout: float = 300) -> None:
        """Every PG active+clean on the mon's map of now (harness.settle says
        why a PG's own stats are not enough, nor its reported epoch)."""
        mapfile = self.path / "settle.osdmap"

        def settled() -> bool:
            self.ceph("osd", "getmap", "-o", str(mapfile))
            dump = subprocess.run(self.tool("osdmaptool", str(mapfile),
                                            "--test-map-pgs-dump-all"),
                                  capture_output=True, text=True, check=True, timeout=60).stdout
            osds = self.json("osd", "dump")["osds"]
            pgs = self.pg_stats()
            why = settle.unsettled(pgs, settle.parse_mapping(dump),
                                   {int(o["osd"]): int(o["up_from"]) for o in osds})
            if why:
                raise AssertionError(f"{len(why)} PGs not settled: "
                                     f"{dict(sorted(why.items())[:8])}")
            return True
        wait_for("every PG active+clean on the map of now", settled, timeout)

    def wait_no_strays(self, osds: Iterable[int], timeout: float = 300) -> None:
        """Each OSD of `osds` holds no PG the map does not give it, by its own
        report (`pg dump osds`: strays included). A copy left from before (a
        stray, deleted a transaction at a time once its PG is clean) is brought
        up to date from the PG's log when the PG maps back there: by recovery,
        which osd_max_backfills does not hold, where a new copy backfills."""
        wanted = set(osds)

        def none() -> bool:
            pgs = self.pg_stats()
            mapped = dict.fromkeys(wanted, 0)
            for pg in pgs:
                for osd in set(pg["up"]) | set(pg["acting"]):
                    if osd in mapped:
                        mapped[osd] += 1
            dumped = self.json("pg", "dump", "osds")
            stats = dumped if isinstance(dumped, list) else dumped.get(
                "osd_stats", dumped.get("pg_map", {}).get("osd_stats"))
            held = {int(o["osd"]): int(o["num_pgs"]) for o in stats if int(o["osd"]) in wanted}
            if set(held) != wanted:
                raise AssertionError(f"no report of osd {sorted(wanted - set(held))}")
            extra = {o: held[o] - mapped[o] for o in sorted(wanted) if held.get(o, 0) > mapped[o]}
            if extra:
                raise AssertionError(f"PGs held beyond the map, per OSD: {extra}")
            return True
        wait_for(f"no stray PGs on osd {sorted(wanted)}", none, timeout)

    def wait_clean(self, timeout: float = 180) -> None:
        def clean() -> bool | str:
            s = self.json("pg", "stat")
            states = {d["name"]: d["num"] for d in s.get("pg_summary", s).get(
                "num_pg_by_state", [])}
            total = s.get("pg_summary", s).get("num_pgs", 0)
            if states.get("active+clean", 0) != total:
                # raised, so a timeout reports the states last seen
                raise AssertionError(f"{total} PGs: {states}")
            return True
        wait_for("all PGs active+clean", clean, timeout)

    def enable_sla(self) -> None:
        """Enable the module and wait until it answers (the mgr loads it async;
        Pacific's respawns to load it). Each try is short: a call sent while the mgr
        restarts can hang on its old session, and a loaded machine may take minutes."""
        self.ceph("mgr", "module", "enable", "sla")
        wait_for("`ceph sla status` to answer", lambda: self.ceph_raw(
            "sla", "status", timeout=15).returncode == 0, 240)

    def create_pool(self, name: str, pg_num: int = 32, size: int = 3) -> int:
        self.ceph("osd", "pool", "create", name, str(pg_num), str(pg_num))
        self.ceph("osd", "pool", "set", name, "size", str(size), "--yes-i-really-mean-it")
        self.ceph("osd", "pool", "application", "enable", name, "rados")
        return next(int(p["pool_id"]) for p in self.json("osd", "pool", "ls", "detail")
                    if p["pool_name"] == name)


class PacedWriter:
    """A client writing 4 KiB objects at `ops` per second, `reads` of them
    reads (harness/paced_writer.py), stopped by its PID. Enough to cross the
    tests' thresholds at a tenth of the CPU `rados bench` spends."""

    SCRIPT = Path(__file__).resolve().with_name("paced_writer.py")

    def __init__(self, cluster: Cluster, pool: str, secs: int = 120, ops: int = 200,
                 reads: float = 0.0) -> None:
        self.cluster, self.pool = cluster, pool
        self.proc = subprocess.Popen(
            cluster.tool("/usr/bin/python3", str(self.SCRIPT), cluster.conf, pool, str(ops),
                         str(secs), str(reads)),
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.started = time.monotonic()

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)


class RadosBench:
    """`rados bench` as a client at full speed, stopped by its PID."""

    def __init__(self, cluster: Cluster, pool: str, secs: int = 120) -> None:
        self.cluster, self.pool = cluster, pool
        self.run_name = f"b{time.monotonic_ns()}"
        self.proc = subprocess.Popen(
            cluster.tool("rados", "-c", cluster.conf, "-p", pool, "bench", str(secs), "write",
                         "-b", "4096", "-t", "8", "--no-cleanup", "--run-name",
                         self.run_name),
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.started = time.monotonic()

    def cleanup(self) -> None:
        """Delete what this bench wrote (memstore OSDs keep it in RAM)."""
        subprocess.run(self.cluster.tool("rados", "-c", self.cluster.conf, "-p", self.pool,
                                         "cleanup", "--run-name", self.run_name),
                       capture_output=True, timeout=300, check=False)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()  # rados bench ignores SIGINT while writing
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)


def mode(cluster: Cluster) -> str:
    return cluster.sla_status()["mode"]


def wait_mode(cluster: Cluster, want: str, timeout: float) -> dict:
    return wait_for(f"mode {want}", lambda: (s := cluster.sla_status())["mode"] == want and s,
                    timeout, interval=0.25)


def placed(cluster: Cluster, pool: str = "normal") -> dict:
    """Status once `pool` shares and the module's upmap entries are all in
    place; until then it raises with what holds it (wait_for reports that)."""
    status = cluster.sla_status()
    entry = next(p for p in status["pools"] if p["name"] == pool)
    up = entry.get("upmaps") or {}
    ok = (status["mode"] == "shared" and entry["rule"] == "sla_shared"
          and up.get("placement") == "shared" and up.get("pending") == 0
          and (up.get("urgent_replica_share") or 0) > 0)
    if not ok:
        raise AssertionError(
            f"mode {status['mode']} (pinned {status.get('pinned')}), gates "
            f"{[g.get('name') for g in status.get('gates') or []]}, holds "
            f"{[g.get('name') for g in status.get('holds') or []]}, {pool}: rule "
            f"{entry['rule']}, upmaps {up}, kept {entry.get('kept_isolated')!r}")
    return status


def scrape(port: int) -> str | None:
    """The sla module's /metrics text, or None while nothing answers."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=3) as r:
            return str(r.read().decode())
    except OSError:
        return None
