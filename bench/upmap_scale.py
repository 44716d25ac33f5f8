"""What a switch to shared costs the monitor at scale: the move strategy's
pg_upmap_items entries sent under several pacings to a real ceph-mon.

    python3 -m bench.upmap_scale [--pgs 100000] [--entries E] [--hosts 100]
        [--osds-per-host 10] [--pacings today,burst256,burst1024,balancer]
        [--today-sample K] [--out docs/benchmarks/upmap-scale.json]

Starts its own mon-only rig (one ceph-mon on a free 127.0.0.1 port pair,
msgr2 and cephx on, everything in a temporary directory that is removed at
the end; the mon is stopped by its PID). No OSD daemon runs: the OSD ids
exist, sit in a CRUSH tree (--hosts hosts under root default, each holding
--osds-per-host OSDs, the first half hdd and the second half ssd) and are
`in` but stay down, which is all `osd pg-upmap-items` needs (the mon checks
entries against the map alone). One replicated pool of --pgs PGs is created
on the hdd rule (`take default class hdd; chooseleaf firstn 0 type host`) and
set to the shared rule (`take default; chooseleaf firstn 0 type host`).

E entries (default 60% of the PGs) are planned from the mon's own OSDMap
(`osdmaptool --mark-up-in --test-map-pgs-dump`): one pair per PG, from an hdd
OSD of its up set to an ssd OSD of a host the PG does not use, so that the
mon's own check (`check_pg_upmaps`) keeps every entry. Each pacing starts from
the same map (pool on the shared rule, no entries) and sends them:

  today      rounds of 8 concurrent synchronous mon commands, each round waited
             for (the module's BatchSender; its 256-per-epoch batches are
             back to back here, with no tick between them)
  burstN     rounds of N commands all in flight at once, each round waited for
  balancer   every command submitted at once and all awaited, as Ceph's
             balancer does with MgrModule.send_command (emulated with one
             blocking librados call per thread, up to --max-threads at once)

Per pacing: wall time, OSDMap epochs used, full OSDMap bytes before and
after, the mon's CPU seconds (/proc utime+stime), the mon store's growth and
the entries present afterwards; then the way back, one `osd pool set POOL
crush_rule <hdd rule>`, with its epochs, time, CPU and whether the entries
were gone in that very epoch (`osd dump EPOCH`). The pool then goes back to
the shared rule for the next pacing.

--today-sample K (K > 0) measures the today pacing on its first K entries
(from an empty map) and on its last K entries (the map first filled to E - K
entries with the balancer pacing, not counted), and estimates the whole
switch by linear interpolation between the two ends: at 100,000 PGs the full
today pacing takes hours of the shared cluster lock.

Run it under the cluster lock:
    flock /tmp/sla-cluster.lock python3 -m bench.upmap_scale --pgs 100000
"""
from __future__ import annotations

if __name__ == "__main__" and not __package__:
    import _script  # noqa: F401  (bench/_script.py: runs this as python3 -m bench.<name>)

import argparse
import json
import math
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any

from bench import provenance as P
from harness.cephcluster import wait_for

ROOT = Path(__file__).resolve().parents[1]

DEFAULT_OUT = ROOT / "docs/benchmarks/upmap-scale.json"
POOL = "normal"
RULE_SHARED = "shared"  # take default; chooseleaf firstn 0 type host
RULE_ISOLATED = "isolated"  # take default class hdd; chooseleaf firstn 0 type host
SIZE = 3
TODAY_PARALLEL = 8  # mgr_sla/core/switch_cost.py UPMAP_PARALLEL
TODAY_BATCH = 256  # mgr_sla/placement/move_strategy.py UPMAP_BATCH
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


# ---------------------------------------------------------------- the rig

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

    def up(self, rados: Any) -> None:
        d = self.dir
        for sub in ("run", "log", "crash", "mon"):
            (d / sub).mkdir(parents=True, exist_ok=True)
        fsid = str(uuid.uuid4())
        self.port = port = free_port_pair()
        (d / "ceph.conf").write_text(f"""[global]
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
""")
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


# ---------------------------------------------------------------- building the map

@dataclass
class Topology:
    hosts: int
    per_host: int

    @property
    def osds(self) -> int:
        return self.hosts * self.per_host

    def host(self, osd: int) -> int:
        return osd // self.per_host

    def is_hdd(self, osd: int) -> bool:
        return osd % self.per_host < self.per_host // 2

    def ssds(self, host: int) -> list[int]:
        base = host * self.per_host
        return list(range(base + self.per_host // 2, base + self.per_host))


def build(rig: MonRig, topo: Topology, pgs: int) -> int:
    """OSD ids in a CRUSH tree, both rules, the pool on the shared rule; its id."""
    rig.check("osd set", key="noout")
    res = parallel(rig, [{"prefix": "osd create", "format": "json"}] * topo.osds, 64)
    bad = [e for rc, e in res if rc != 0]
    if bad:
        raise RuntimeError(f"osd create failed: {bad[:3]}")
    ids = sorted(int(o["osd"]) for o in rig.json("osd dump")["osds"])
    if ids != list(range(topo.osds)):
        raise RuntimeError(f"expected osd ids 0..{topo.osds - 1}, got {ids[:5]}...")
    res = parallel(rig, [{"prefix": "osd crush add", "id": o, "weight": 1.0,
                          "args": [f"host=host{topo.host(o)}", "root=default"]}
                         for o in ids], 64)
    bad = [e for rc, e in res if rc != 0]
    if bad:
        raise RuntimeError(f"osd crush add failed: {bad[:3]}")
    for cls in ("hdd", "ssd"):
        members = [f"osd.{o}" for o in ids if topo.is_hdd(o) == (cls == "hdd")]
        rig.check("osd crush set-device-class", **{"class": cls, "ids": members})
    rig.check("osd in", ids=[str(o) for o in ids])
    rig.check("osd crush rule create-replicated", name=RULE_SHARED, root="default",
              type="host")
    rig.check("osd crush rule create-replicated", name=RULE_ISOLATED, root="default",
              type="host", **{"class": "hdd"})
    rig.check("osd pool create", pool=POOL, pg_num=pgs, pgp_num=pgs, pool_type="replicated",
              rule=RULE_ISOLATED, size=SIZE, autoscale_mode="off")
    rig.check("osd pool set", pool=POOL, var="crush_rule", val=RULE_SHARED)
    pools = {p["pool_name"]: p for p in rig.json("osd dump")["pools"]}
    info = pools[POOL]
    if int(info["pg_num"]) != pgs or int(info.get("pg_num_pending", pgs)) != pgs:
        raise RuntimeError(f"pool {POOL} has pg_num {info['pg_num']}, wanted {pgs}")
    return int(info["pool"])


def up_sets(rig: MonRig, pool_id: int, workdir: Path) -> dict[str, list[int]]:
    """Each PG's up set on the mon's own map, with every OSD up and in."""
    path = workdir / "osdmap.plan"
    path.write_bytes(rig.osdmap())
    p = subprocess.run(["osdmaptool", str(path), "--mark-up-in", "--test-map-pgs-dump",
                        "--pool", str(pool_id)], capture_output=True, text=True, timeout=600)
    path.unlink()
    if p.returncode != 0:
        raise RuntimeError(f"osdmaptool failed: {p.stderr.strip()[:400]}")
    sets: dict[str, list[int]] = {}
    prefix = f"{pool_id}."
    for line in p.stdout.splitlines():
        parts = line.split("\t")
        if len(parts) >= 2 and parts[0].startswith(prefix):
            sets[parts[0]] = json.loads(parts[1])
    return sets


def plan(sets: dict[str, list[int]], topo: Topology, entries: int,
         seed: int) -> list[dict[str, Any]]:
    """One pair per PG, hdd -> ssd in a host the PG does not use."""
    rng = random.Random(seed)
    eligible = sorted((pg for pg, up in sets.items()
                       if len(up) == SIZE and any(topo.is_hdd(o) for o in up)),
                      key=lambda pg: int(pg.split(".")[1], 16))
    if entries > len(eligible):
        raise RuntimeError(f"only {len(eligible)} PGs have an hdd replica; "
                           f"cannot plan {entries} entries")
    chosen = sorted(rng.sample(eligible, entries), key=lambda pg: int(pg.split(".")[1], 16))
    cmds = []
    for pg in chosen:
        up = sets[pg]
        used = {topo.host(o) for o in up}
        src = rng.choice([o for o in up if topo.is_hdd(o)])
        free = [h for h in range(topo.hosts) if h not in used]
        dst = rng.choice(topo.ssds(rng.choice(free)))
        cmds.append({"prefix": "osd pg-upmap-items", "format": "json", "pgid": pg,
                     "id": [src, dst]})
    return cmds


# ---------------------------------------------------------------- pacings

@dataclass(frozen=True)
class Pacing:
    name: str
    width: int  # commands in flight at once (0: all of them)
    barrier: bool  # wait for a whole round before the next

    def describe(self) -> str:
        if self.name == "today":
            return (f"rounds of {self.width} concurrent synchronous commands, each waited for "
                    f"(BatchSender; {TODAY_BATCH}-entry batches back to back)")
        if self.barrier:
            return f"rounds of {self.width} commands all in flight, each round waited for"
        return "every command submitted at once, then all awaited (Ceph's balancer)"


def pacing(name: str) -> Pacing:
    if name == "today":
        return Pacing("today", TODAY_PARALLEL, True)
    if name == "balancer":
        return Pacing("balancer", 0, False)
    if name.startswith("burst") and name[5:].isdigit() and int(name[5:]) > 0:
        return Pacing(name, int(name[5:]), True)
    raise argparse.ArgumentTypeError(f"unknown pacing {name!r}: today, burstN, balancer")


def send(rig: MonRig, cmds: list[dict[str, Any]], how: Pacing,
         max_threads: int) -> list[tuple[int, str]]:
    if not how.barrier:
        return parallel(rig, cmds, min(max_threads, len(cmds)))
    results: list[tuple[int, str]] = []
    width = how.width
    payloads = [json.dumps(c) for c in cmds]

    def one(p: str) -> tuple[int, str]:
        rc, _, err = rig.client.mon_command(p, b"", timeout=CMD_TIMEOUT)
        return int(rc), str(err)

    with ThreadPoolExecutor(max(1, min(width, len(payloads), max_threads))) as pool:
        for i in range(0, len(payloads), width):
            results += list(pool.map(one, payloads[i:i + width]))
    return results


def measure(rig: MonRig, cmds: list[dict[str, Any]], how: Pacing,
            max_threads: int) -> dict[str, Any]:
    e0, bytes0, store0 = rig.epoch(), len(rig.osdmap()), rig.store_bytes()
    present0 = rig.upmap_count()
    cpu0, t0 = rig.cpu(), time.monotonic()
    results = send(rig, cmds, how, max_threads)
    wall, cpu1 = time.monotonic() - t0, rig.cpu()
    e1 = rig.epoch()
    failed = [(c["pgid"], rc, err.strip()) for c, (rc, err) in zip(cmds, results) if rc != 0]
    epochs = e1 - e0
    return {"entries_sent": len(cmds), "entries_before": present0,
            "commands_failed": len(failed), "failures": failed[:5],
            "wall_secs": round(wall, 2), "epochs": epochs,
            "secs_per_epoch": round(wall / epochs, 3) if epochs else None,
            "entries_per_epoch": round(len(cmds) / epochs, 1) if epochs else None,
            "mon_cpu_secs": round(cpu1 - cpu0, 2),
            "mon_cpu_secs_per_epoch": round((cpu1 - cpu0) / epochs, 4) if epochs else None,
            "osdmap_bytes_before": bytes0, "osdmap_bytes_after": len(rig.osdmap()),
            "mon_store_bytes_growth": rig.store_bytes() - store0,
            "entries_present_after": rig.upmap_count()}


def idle_epochs(rig: MonRig, k: int) -> dict[str, Any]:
    """The mon's cost of an epoch that changes no entry (`osd set/unset
    noscrub`, one at a time), with the entries present now: the part of an
    epoch's cost that does not depend on how many entries it carries."""
    present = rig.upmap_count()
    e0, cpu0, t0 = rig.epoch(), rig.cpu(), time.monotonic()
    for i in range(k):
        rig.check("osd unset" if i % 2 else "osd set", key="noscrub")
    wall, cpu1 = time.monotonic() - t0, rig.cpu()
    epochs = rig.epoch() - e0
    if epochs != k:
        raise RuntimeError(f"{k} flag changes made {epochs} epochs")
    return {"entries_present": present, "epochs": epochs,
            "secs_per_epoch": round(wall / epochs, 3),
            "mon_cpu_secs_per_epoch": round((cpu1 - cpu0) / epochs, 4)}


def way_back(rig: MonRig) -> dict[str, Any]:
    """The rule swap to isolation, then the shared rule again for the next run."""
    present = rig.upmap_count()
    bytes0 = len(rig.osdmap())
    e0, cpu0, t0 = rig.epoch(), rig.cpu(), time.monotonic()
    rig.check("osd pool set", pool=POOL, var="crush_rule", val=RULE_ISOLATED)
    wall, cpu1 = time.monotonic() - t0, rig.cpu()
    e1 = rig.epoch()
    first = e0 + 1
    in_first = rig.upmap_count(first)
    pools = {p["pool_name"]: p for p in rig.json("osd dump", epoch=first)["pools"]}
    rules = {r["rule_id"]: r["rule_name"] for r in rig.json("osd crush rule dump")}
    out = {"entries_before": present, "wall_secs": round(wall, 2), "epochs": e1 - e0,
           "mon_cpu_secs": round(cpu1 - cpu0, 2),
           "rule_in_first_epoch": rules.get(int(pools[POOL]["crush_rule"])),
           "entries_in_first_epoch": in_first, "entries_after": rig.upmap_count(),
           "osdmap_bytes_before": bytes0, "osdmap_bytes_after": len(rig.osdmap())}
    out["dropped_in_same_epoch"] = (out["rule_in_first_epoch"] == RULE_ISOLATED
                                    and in_first == 0)
    reset(rig)
    return out


def reset(rig: MonRig) -> None:
    """Pool on the shared rule, no entries: every pacing's starting map."""
    if rig.json("osd pool get", pool=POOL, var="crush_rule")["crush_rule"] != RULE_SHARED:
        rig.check("osd pool set", pool=POOL, var="crush_rule", val=RULE_SHARED)
    left = [i["pgid"] for i in rig.json("osd dump").get("pg_upmap_items", [])]
    res = parallel(rig, [{"prefix": "osd rm-pg-upmap-items", "format": "json", "pgid": pg}
                         for pg in left], 1024)
    bad = [e for rc, e in res if rc != 0]
    if bad or rig.upmap_count() != 0:
        raise RuntimeError(f"could not clear the upmap entries: {bad[:3]}")


def today_sampled(rig: MonRig, cmds: list[dict[str, Any]], k: int,
                  max_threads: int) -> dict[str, Any]:
    """The today pacing on its first and last k entries; the rest estimated."""
    how = pacing("today")
    low = measure(rig, cmds[:k], how, max_threads)
    fill = cmds[k:len(cmds) - k]
    t0 = time.monotonic()
    res = send(rig, fill, pacing("balancer"), max_threads)
    fill_secs = time.monotonic() - t0
    if any(rc != 0 for rc, _ in res):
        raise RuntimeError("filling the map between the sampled ends failed")
    high = measure(rig, cmds[len(cmds) - k:], how, max_threads)
    scale = len(cmds) / (2 * k)

    def est(key: str) -> float:
        return round((low[key] + high[key]) * scale, 1)

    return {"sampled": True, "sample_entries": k,
            "low_end": low, "high_end": high,
            "fill_entries": len(fill), "fill_secs": round(fill_secs, 1),
            "entries_sent": len(cmds),
            "commands_failed": low["commands_failed"] + high["commands_failed"],
            "wall_secs": est("wall_secs"), "epochs": int(est("epochs")),
            "mon_cpu_secs": est("mon_cpu_secs"),
            "secs_per_epoch": round(est("wall_secs") / est("epochs"), 3),
            "entries_per_epoch": round(len(cmds) / est("epochs"), 1),
            "mon_cpu_secs_per_epoch": round(est("mon_cpu_secs") / est("epochs"), 4),
            "mon_store_bytes_growth": int(est("mon_store_bytes_growth")),
            "osdmap_bytes_before": low["osdmap_bytes_before"],
            "osdmap_bytes_after": high["osdmap_bytes_after"],
            "entries_present_after": high["entries_present_after"],
            "estimate": "wall, epochs, CPU and store growth: the two measured ends "
                        "interpolated linearly over the whole switch"}


# ---------------------------------------------------------------- main

def table(rows: list[dict[str, Any]]) -> str:
    head = (f"{'pacing':<10} {'entries':>8} {'wall s':>9} {'epochs':>7} {'s/epoch':>8} "
            f"{'mon cpu s':>10} {'map KiB before>after':>21} {'present':>8} "
            f"{'back: epochs':>12} {'s':>6} {'same epoch':>10}")
    lines = [head, "-" * len(head)]
    for r in rows:
        back = r["way_back"]
        mark = "~" if r.get("sampled") else ""
        lines.append(
            f"{r['pacing']:<10} {r['entries_sent']:>8} {mark + str(r['wall_secs']):>9} "
            f"{mark + str(r['epochs']):>7} {str(r['secs_per_epoch']):>8} "
            f"{mark + str(r['mon_cpu_secs']):>10} "
            f"{r['osdmap_bytes_before'] // 1024:>10}>{r['osdmap_bytes_after'] // 1024:<10} "
            f"{r['entries_present_after']:>8} {back['epochs']:>12} {back['wall_secs']:>6} "
            f"{'yes' if back['dropped_in_same_epoch'] else 'no':>10}")
    if any(r.get("sampled") for r in rows):
        lines.append("~ estimated from the first and last sampled entries (--today-sample)")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--pgs", type=int, default=100000, help="PGs of the pool")
    ap.add_argument("--entries", type=int, default=None,
                    help="entries of the switch (default: 60%% of the PGs)")
    ap.add_argument("--hosts", type=int, default=100)
    ap.add_argument("--osds-per-host", type=int, default=10,
                    help="even: the first half hdd, the second half ssd")
    ap.add_argument("--pacings", default="today,burst256,burst1024,balancer",
                    help="comma-separated: today, burstN, balancer")
    ap.add_argument("--today-sample", type=int, default=0,
                    help="measure today's pacing on its first and last K entries only")
    ap.add_argument("--max-threads", type=int, default=4096,
                    help="blocking mon commands in flight at most (threads)")
    ap.add_argument("--idle-epochs", type=int, default=10,
                    help="epochs that change no entry, measured with none and with all "
                         "entries present (0: none)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = ap.parse_args(argv)
    if args.osds_per_host < 2 or args.osds_per_host % 2:
        ap.error("--osds-per-host must be even and >= 2")
    if args.hosts < SIZE + 1:
        ap.error(f"--hosts must be at least {SIZE + 1} (a target host the PG does not use)")
    pacings = [pacing(n) for n in args.pacings.split(",") if n]
    entries = args.entries if args.entries is not None else int(0.6 * args.pgs)
    if not 0 < entries <= args.pgs:
        ap.error("--entries must be in 1..--pgs")
    if args.today_sample and 2 * args.today_sample >= entries:
        ap.error("--today-sample K needs 2K < entries")
    rados = import_rados()
    topo = Topology(args.hosts, args.osds_per_host)
    threading.stack_size(512 * 1024)  # thousands of blocking command threads

    def stop(signum: int, frame: FrameType | None) -> None:
        raise SystemExit(f"upmap-scale: signal {signum}")

    signal.signal(signal.SIGTERM, stop)
    started = time.monotonic()
    workdir = Path(tempfile.mkdtemp(prefix="sla-upmap-scale."))
    per_osd = math.ceil(SIZE * args.pgs / (topo.osds // 2))  # PGs per hdd OSD
    rig = MonRig(workdir, max(250, 2 * per_osd), max(65536, args.pgs))
    rows: list[dict[str, Any]] = []
    idle: list[dict[str, Any]] = []
    try:
        rig.up(rados)
        t0 = time.monotonic()
        pool_id = build(rig, topo, args.pgs)
        build_secs = time.monotonic() - t0
        sets = up_sets(rig, pool_id, workdir)
        if len(sets) != args.pgs:
            raise RuntimeError(f"osdmaptool mapped {len(sets)} PGs, wanted {args.pgs}")
        cmds = plan(sets, topo, entries, args.seed)
        status = rig.json("osd stat")
        rig_info = {
            "mon_pid_cpu_at_start": round(rig.cpu(), 2), "build_secs": round(build_secs, 1),
            "hosts": topo.hosts, "osds": topo.osds, "osds_per_host": topo.per_host,
            "classes": "per host: first half hdd, second half ssd",
            "osds_up": int(status["num_up_osds"]), "osds_in": int(status["num_in_osds"]),
            "pool": {"pg_num": args.pgs, "size": SIZE, "rule_isolated": RULE_ISOLATED,
                     "rule_shared": RULE_SHARED},
            "mon_max_pg_per_osd": rig.max_pg_per_osd,
            "mon_max_pool_pg_num": rig.max_pool_pg_num,
            "paxos_propose_interval": rig.json("config get", who="mon.a",
                                               key="paxos_propose_interval"),
            "osdmap_bytes_no_entries": len(rig.osdmap()),
        }
        print(f"upmap-scale: {topo.osds} OSD ids on {topo.hosts} hosts (all down, in), pool of "
              f"{args.pgs} PGs built in {build_secs:.0f} s; {entries} entries planned",
              flush=True)
        if args.idle_epochs:
            idle.append(idle_epochs(rig, args.idle_epochs))
        for how in pacings:
            if rig.upmap_count() != 0:
                raise RuntimeError("entries left from the previous run")
            if how.name == "today" and args.today_sample:
                row = today_sampled(rig, cmds, args.today_sample, args.max_threads)
            else:
                row = measure(rig, cmds, how, args.max_threads)
            row = {"pacing": how.name, "how": how.describe(),
                   "in_flight": how.width or min(args.max_threads, len(cmds)),
                   "round_barrier": how.barrier, **row}
            if args.idle_epochs and len(idle) == 1:
                idle.append(idle_epochs(rig, args.idle_epochs))
            row["way_back"] = way_back(rig)
            rows.append(row)
            print(f"upmap-scale: {how.name}: {row['wall_secs']} s, {row['epochs']} epochs, "
                  f"mon {row['mon_cpu_secs']} CPU s, {row['entries_present_after']} entries; "
                  f"back: {row['way_back']['epochs']} epoch(s), "
                  f"{row['way_back']['wall_secs']} s", flush=True)
    finally:
        rig.down()
        shutil.rmtree(workdir, ignore_errors=True)
    accepted = all(r["commands_failed"] == 0 for r in rows)
    kept = all(r["entries_present_after"] == r["entries_sent"] for r in rows)
    prov = P.provenance("bench.upmap_scale", argv if argv is not None else sys.argv[1:],
                        P.ceph_release(), P.CURRENT_DESIGN)
    run = {
        "provenance": prov,
        "pgs": args.pgs, "entries": entries,
        "rig": rig_info,
        "down_osds": {
            "osds_up": rig_info["osds_up"],
            "entries_accepted": accepted, "entries_kept": kept,
            "finding": ("the mon accepts entries whose OSDs are all down (never booted) but "
                        "in, and keeps them through every later epoch's clean_pg_upmaps"
                        if accepted and kept else
                        "the mon refused or dropped entries on down OSDs: see pacings"),
        },
        "idle_epochs": idle,
        "pacings": rows,
        "total_secs": round(time.monotonic() - started, 1),
    }
    write(args.out, prov, run)
    print(table(rows))
    print(f"upmap-scale: {run['total_secs']} s in all; results in {args.out}")
    return 0


def write(out: Path, prov: dict[str, Any], run: dict[str, Any]) -> None:
    """One run per PG count: this run replaces the file's run of its size and
    keeps the others, so that growth with the PG count stays in one file."""
    runs: list[dict[str, Any]] = []
    if out.exists():
        try:
            runs = [r for r in json.loads(out.read_text()).get("runs", [])
                    if r.get("pgs") != run["pgs"]]
        except (ValueError, AttributeError):
            runs = []
    runs = sorted(runs + [run], key=lambda r: int(r["pgs"]))
    growth = [{"pgs": r["pgs"], "entries": r["entries"], "pacing": p["pacing"],
               "estimated": bool(p.get("sampled")), "wall_secs": p["wall_secs"],
               "epochs": p["epochs"], "mon_cpu_secs": p["mon_cpu_secs"],
               "osdmap_bytes_after": p["osdmap_bytes_after"],
               "way_back_epochs": p["way_back"]["epochs"],
               "way_back_secs": p["way_back"]["wall_secs"]}
              for r in runs for p in r["pacings"]]
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({
        "provenance": prov,
        "what": "cost to the monitor of a switch to shared (pg_upmap_items, one pair per PG) "
                "and of the rule swap back, per pacing and PG count; each run carries the "
                "provenance of the command that made it",
        "summary": growth, "runs": runs}, indent=2) + "\n")


if __name__ == "__main__":
    sys.exit(main())
