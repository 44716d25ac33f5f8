"""bench/upmap_scale.py's rig: one ceph-mon, as deploy/minicluster.sh starts its
mon, in a directory of its own, and mon commands sent to it over librados, up
to a given number in flight.
"""
from __future__ import annotations

import json
import os
import random
import signal
import socket
import subprocess
import sys
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from harness.cephcluster import wait_for

SIZE = 3  # the pool's replicas, and the mon's default pool size
CMD_TIMEOUT = 900  # seconds a single mon command may take


def import_rados() -> Any:
    """python3-rados lives in Debian's dist-packages, which a pyenv or venv
    python does not search: add it when the interpreter's ABI matches."""
    try:
        import rados
    except ImportError:
        dist = "/usr/lib/python3/dist-packages"
        if dist not in sys.path:
            sys.path.append(dist)
        try:
            import rados
        except ImportError as e:
            raise SystemExit(f"upmap-scale: cannot import rados ({e}): install python3-rados "
                             "(ceph-common) or run with /usr/bin/python3") from e
    return rados


def cpu_secs(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def dir_bytes(path: Path) -> int:
    total = 0
    for p in path.rglob("*"):
        try:
            if p.is_file():
                total += p.stat().st_size
        except OSError:
            pass
    return total


def free_port_pair() -> int:
    rng = random.SystemRandom()
    for _ in range(200):
        base = rng.randrange(20000, 60000, 2)
        ok = True
        for port in (base, base + 1):
            s = socket.socket()
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                ok = False
            finally:
                s.close()
        if ok:
            return base
    raise RuntimeError("no free port pair on 127.0.0.1")


class MonRig:
    """One ceph-mon, as deploy/minicluster.sh starts its mon (same keyrings,
    monmap and msgr2 addresses), without mgr or OSD daemons."""

    def __init__(self, workdir: Path, max_pg_per_osd: int, max_pool_pg_num: int) -> None:
        self.dir = workdir
        self.conf = str(workdir / "ceph.conf")
        self.keyring = str(workdir / "keyring")
        self.max_pg_per_osd = max_pg_per_osd
        self.max_pool_pg_num = max_pool_pg_num
        self.proc: subprocess.Popen[bytes] | None = None
        self.pid = 0
        self.client: Any = None
        self.port = 0

    def _run(self, *argv: str) -> None:
        with open(self.dir / "log" / "setup.log", "ab") as log:
            p = subprocess.run(argv, stdout=log, stderr=subprocess.STDOUT, timeout=120)
        if p.returncode != 0:
            raise RuntimeError(f"{' '.join(argv)} failed (rc {p.returncode}); "
                               f"see {self.dir}/log/setup.log")

    def conf_text(self, fsid: str, port: int) -> str:
        """The rig's ceph.conf: the mon on 127.0.0.1 at port (msgr2) and port + 1."""
        d = self.dir
        return f"""[global]
fsid = {fsid}
mon host = [v2:127.0.0.1:{port},v1:127.0.0.1:{port + 1}]
public addr = 127.0.0.1
ms bind ipv6 = false
auth cluster required = cephx
auth service required = cephx
auth client required = cephx
auth allow insecure global id reclaim = false
run dir = {d}/run
log file = {d}/log/$name.log
log to stderr = false
err to stderr = true
crash dir = {d}/crash
mon data = {d}/mon/$cluster-$id
mon allow pool delete = true
mon data avail warn = 1
mon data avail crit = 0
mon warn on pool no redundancy = false
mon max pg per osd = {self.max_pg_per_osd}
mon max pool pg num = {self.max_pool_pg_num}
# the pool is created at its full pg_num (no mgr here to split it up later)
mon osd max initial pgs = {self.max_pool_pg_num}
# the OSDs never boot: keep them in (the default marks down OSDs out after 600 s)
mon osd down out interval = 0
osd pool default size = {SIZE}
osd pool default min size = {SIZE - 1}
osd pool default pg autoscale mode = off
osd crush chooseleaf type = 1

[client]
keyring = {d}/keyring

[mon]
keyring = $mon_data/keyring
"""

    def up(self, rados: Any) -> None:
        d = self.dir
        for sub in ("run", "log", "crash", "mon"):
            (d / sub).mkdir(parents=True, exist_ok=True)
        fsid = str(uuid.uuid4())
        self.port = port = free_port_pair()
        (d / "ceph.conf").write_text(self.conf_text(fsid, port))
        self._run("ceph-authtool", "--create-keyring", f"{d}/mon.keyring", "--gen-key",
                  "-n", "mon.", "--cap", "mon", "allow *")
        self._run("ceph-authtool", "--create-keyring", self.keyring, "--gen-key",
                  "-n", "client.admin", "--cap", "mon", "allow *", "--cap", "osd", "allow *",
                  "--cap", "mds", "allow *", "--cap", "mgr", "allow *")
        self._run("ceph-authtool", f"{d}/mon.keyring", "--import-keyring", self.keyring)
        self._run("monmaptool", "--create", "--fsid", fsid, "--addv", "a",
                  f"[v2:127.0.0.1:{port},v1:127.0.0.1:{port + 1}]", f"{d}/monmap")
        self._run("ceph-mon", "-c", self.conf, "--mkfs", "-i", "a", "--monmap",
                  f"{d}/monmap", "--keyring", f"{d}/mon.keyring")
        with open(d / "log" / "mon.a.stdout", "ab") as out:
            self.proc = subprocess.Popen(["ceph-mon", "-f", "-c", self.conf, "-i", "a"],
                                         stdin=subprocess.DEVNULL, stdout=out,
                                         stderr=subprocess.STDOUT, start_new_session=True)
        self.pid = self.proc.pid

        def connected() -> bool:
            if self.proc is not None and self.proc.poll() is not None:
                raise RuntimeError(f"ceph-mon exited (rc {self.proc.returncode}); "
                                   f"see {d}/log/mon.a.log")
            client = rados.Rados(conffile=self.conf, conf={"keyring": self.keyring})
            try:
                client.connect(timeout=5)
            except Exception:
                client.shutdown()
                raise
            self.client = client
            return True

        wait_for("the mon to answer", connected, 60)

    def down(self) -> None:
        if self.client is not None:
            try:
                self.client.shutdown()
            except Exception:
                pass
            self.client = None
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(30)
        self.proc = None

    # --- commands

    def cmd(self, prefix: str, **args: Any) -> tuple[int, bytes, str]:
        rc, out, err = self.client.mon_command(json.dumps({"prefix": prefix, **args}), b"",
                                               timeout=CMD_TIMEOUT)
        return int(rc), bytes(out), str(err)

    def check(self, prefix: str, **args: Any) -> bytes:
        rc, out, err = self.cmd(prefix, **args)
        if rc != 0:
            raise RuntimeError(f"{prefix} {args} -> rc {rc}: {err.strip()}")
        return out

    def json(self, prefix: str, **args: Any) -> Any:
        return json.loads(self.check(prefix, format="json", **args))

    def epoch(self) -> int:
        return int(self.json("osd stat")["epoch"])

    def osdmap(self) -> bytes:
        return self.check("osd getmap")

    def upmap_count(self, epoch: int | None = None) -> int:
        extra = {"epoch": epoch} if epoch is not None else {}
        return len(self.json("osd dump", **extra).get("pg_upmap_items", []))

    def cpu(self) -> float:
        return cpu_secs(self.pid)

    def store_bytes(self) -> int:
        return dir_bytes(self.dir / "mon")


def parallel(rig: MonRig, cmds: list[dict[str, Any]], width: int) -> list[tuple[int, str]]:
    """Send `cmds` with up to `width` in flight, no barrier (results in order)."""
    payloads = [json.dumps(c) for c in cmds]

    def one(p: str) -> tuple[int, str]:
        rc, _, err = rig.client.mon_command(p, b"", timeout=CMD_TIMEOUT)
        return int(rc), str(err)

    if not payloads:
        return []
    with ThreadPoolExecutor(max(1, min(width, len(payloads)))) as pool:
        return list(pool.map(one, payloads))
