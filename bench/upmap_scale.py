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

The rig is in bench/upmap_rig.py, the map and the planned entries in
bench/upmap_osdmap.py, the pacings and what they measure in
bench/upmap_pacings.py.

Run it under the cluster lock:
    flock /tmp/sla-cluster.lock python3 -m bench.upmap_scale --pgs 100000
"""
from __future__ import annotations

if __name__ == "__main__" and not __package__:
    import _script  # noqa: F401  (bench/_script.py: runs this as python3 -m bench.<name>)

import argparse
import json
import math
import shutil
import signal
import sys
import tempfile
import threading
import time
from pathlib import Path
from types import FrameType
from typing import Any

from bench import provenance as P
from bench.upmap_osdmap import RULE_ISOLATED, RULE_SHARED, Topology, build, plan, up_sets
from bench.upmap_pacings import Pacing, idle_epochs, measure, pacing, today_sampled, way_back
from bench.upmap_rig import SIZE, MonRig, import_rados

ROOT = Path(__file__).resolve().parents[1]

DEFAULT_OUT = ROOT / "docs/benchmarks/upmap-scale.json"


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


def parse_args(argv: list[str] | None) -> tuple[argparse.Namespace, list[Pacing], int]:
    """The options, the pacings they name and the entries of the switch."""
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
    return args, pacings, entries


def prepare(rig: MonRig, topo: Topology, args: argparse.Namespace, entries: int,
            workdir: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The map built on the running mon and the entries planned from it: (what
    the results say of the rig, the entries' commands)."""
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
    return rig_info, cmds


def run_pacings(rig: MonRig, cmds: list[dict[str, Any]], pacings: list[Pacing],
                args: argparse.Namespace) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Each pacing from the same starting map, then its way back: (the idle
    epochs, with no entry and with the first pacing's all present; a row per
    pacing)."""
    rows: list[dict[str, Any]] = []
    idle: list[dict[str, Any]] = []
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
    return idle, rows


def results(args: argparse.Namespace, argv: list[str] | None, entries: int,
            rig_info: dict[str, Any], idle: list[dict[str, Any]], rows: list[dict[str, Any]],
            started: float) -> dict[str, Any]:
    """This run's results, with its provenance and what the down OSDs showed."""
    accepted = all(r["commands_failed"] == 0 for r in rows)
    kept = all(r["entries_present_after"] == r["entries_sent"] for r in rows)
    prov = P.provenance("bench.upmap_scale", argv if argv is not None else sys.argv[1:],
                        P.ceph_release(), P.CURRENT_DESIGN)
    return {
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


def main(argv: list[str] | None = None) -> int:
    args, pacings, entries = parse_args(argv)
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
    try:
        rig.up(rados)
        rig_info, cmds = prepare(rig, topo, args, entries, workdir)
        idle, rows = run_pacings(rig, cmds, pacings, args)
    finally:
        rig.down()
        shutil.rmtree(workdir, ignore_errors=True)
    run = results(args, argv, entries, rig_info, idle, rows, started)
    write(args.out, run["provenance"], run)
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
