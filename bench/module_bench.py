"""Reaction time and time to isolation of the `sla` module on a real cluster.

    python3 -m bench.module_bench [--trials 20] [--stats-periods 5] [--conf CEPH_CONF]
                                  [--out docs/benchmarks/module.json]

Without --conf it starts its own mini cluster (deploy/minicluster.sh) and stops
it at the end. Each trial: the normal pool shares, then an urgent client
starts (`rados bench` 4 KiB writes). Half the trials start at a set phase of
the OSDs' report period once the cluster is clean (phases spread evenly over
the period, in a shuffled order; the OSDs log each report with debug_mgrc 20,
and every trial records its measured phase), half right after the switch to
shared (while its upmap entries still move data; phase as it comes). Reaction = bench start ->
the normal pool's crush_rule seen changed by an independent poller (librados,
every 100 ms, /usr/bin/python3); also the module's own switch record time.
Time to isolation = the module's record (switch -> no normal-pool PG acting on
an ssd OSD). Module settings are its defaults except thresholds and dwell.
"""
from __future__ import annotations

if __name__ == "__main__" and not __package__:
    import _script  # noqa: F401  (bench/_script.py: runs this as python3 -m bench.<name>)

import argparse
import json
import random
import re
import select
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

from bench import provenance
from bench.common import cluster_for, progress, rados_bench, write_json
from harness.cephcluster import Cluster, RadosBench, wait_for

HIGH, LOW, DWELL = 60, 25, 8


POLLER = r"""
import json, os, sys, time, rados
conf, pool = sys.argv[1], sys.argv[2]
parent = os.getppid()  # the bench: exit with it, however it ends
c = rados.Rados(conffile=conf)
c.connect(timeout=20)
def rule():
    rc, out, err = c.mon_command(json.dumps({"prefix": "osd pool get", "pool": pool,
                                             "var": "crush_rule", "format": "json"}), b"")
    return json.loads(out)["crush_rule"] if rc == 0 else None
first = rule()
print(json.dumps({"t": time.time(), "rule": first}), flush=True)
while os.getppid() == parent:
    now = rule()
    if now != first:
        print(json.dumps({"t": time.time(), "rule": now}), flush=True)
        break
    time.sleep(0.1)
"""


def setup(cluster: Cluster) -> None:
    cluster.enable_sla()
    cluster.ceph("sla", "rules", "apply", timeout=300)
    for pool in ("urgent", "normal"):
        cluster.create_pool(pool, 32)
    rados_bench(cluster, "normal", 5, "write", "-b", "65536", "-t", "4", "--no-cleanup")
    cluster.ceph("config", "set", "mgr", "mgr/sla/min_dwell_secs", str(DWELL))
    cluster.ceph("sla", "set-threshold", str(HIGH), str(LOW))
    cluster.ceph("sla", "pool", "set", "urgent", "urgent", timeout=120)
    # the move strategy (pg_upmap_items): what the figures are about
    cluster.ceph("sla", "pool", "set", "normal", "normal", "--strategy", "move", timeout=300)


def settled_shared(cluster: Cluster) -> bool:
    """Shared, the normal pool on its shared rule, upmaps placed, nothing blocked."""
    status = cluster.sla_status()
    normal = next(p for p in status["pools"] if p["name"] == "normal")
    placed = (normal.get("upmaps") or {}).get("pending") == 0
    return (status["mode"] == "shared" and normal["rule"] == "sla_shared" and placed
            and not status["gates"])


REPORT_OSD = 1  # an urgent-class OSD; the OSDs' reports go out together (measured)
REPORT_LINE = re.compile(r"^(\S+) .* mgrc _send_report")


def report_times(cluster: Cluster) -> list[float]:
    """When the OSD sent its reports to the mgr (debug_mgrc 20 logs each one)."""
    out = []
    with open(cluster.path / "log" / f"osd.{REPORT_OSD}.log", errors="replace") as log:
        for line in log:
            m = REPORT_LINE.match(line)
            if m:
                out.append(datetime.fromisoformat(m.group(1).replace("+0000", "+00:00"))
                           .timestamp())
    return out


def phase_of(t: float, reports: list[float], period: float) -> float | None:
    """Seconds since the last OSD report at or before t (None: no report known)."""
    before = [r for r in reports if r <= t]
    return round((t - before[-1]) % period, 2) if before else None


def wait_for_phase(cluster: Cluster, phase: float, period: float) -> None:
    """Sleep until `phase` s after an OSD report: the trials' start phases are
    set, not left to chance (the cluster's clean state, which the trials wait
    for, shows right after a report, so a random sleep after it is not a
    uniform phase)."""
    reports = wait_for("an OSD report in the log", lambda: report_times(cluster), 30)
    last = reports[-1]
    now = time.time()
    target = last + phase + period * max(0, int((now - last - phase) // period) + 1)
    time.sleep(max(0.0, target - time.time()))  # a start time, not a wait for a condition


def trial(cluster: Cluster, kind: str, period: float, phase: float | None) -> dict[str, Any]:
    if kind == "after-switch":
        # right after the switch to shared: its upmap entries still move data
        wait_for("the switch to shared", lambda: cluster.pool_rule("normal") == "sla_shared",
                 300, interval=0.1)
    else:
        wait_for("shared and settled", lambda: settled_shared(cluster), 300)
        cluster.wait_clean(300)
    poller = subprocess.Popen(["/usr/bin/python3", "-c", POLLER, cluster.conf, "normal"],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert poller.stdout is not None
        first = json.loads(poller.stdout.readline())
        assert first["rule"] == "sla_shared", first
        if phase is not None:
            wait_for_phase(cluster, phase, period)
        started = time.time()
        bench = RadosBench(cluster, "urgent", secs=90)
        try:
            ready, _, _ = select.select([poller.stdout], [], [], 120)
            if not ready:
                raise AssertionError("the normal pool's rule did not change within 120 s "
                                     f"of the urgent load: {cluster.sla_status()}")
            changed = json.loads(poller.stdout.readline())
            last = wait_for("time to isolation", lambda: (h := cluster.json("sla", "history")[0])
                            ["to"] == "isolated" and h["time_to_isolation_secs"] is not None
                            and h, 300)
        finally:
            bench.stop()
            bench.cleanup()  # 20 trials of writes would fill the memstore OSDs
    finally:
        if poller.poll() is None:
            poller.kill()
        poller.wait(10)
    return {"kind": kind, "phase_secs": phase_of(started, report_times(cluster), period),
            "reaction_secs": round(changed["t"] - started, 2),
            "reaction_record_secs": round(float(last["time"]) - started, 2),
            "time_to_isolation_secs": float(last["time_to_isolation_secs"]),
            "pgs_moved": last["pgs_moved"], "replicas_moved": last["replicas_moved"],
            "reason": last["reason"]}


def stats(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    p90 = ordered[min(len(ordered) - 1, int(round(0.9 * (len(ordered) - 1))))]
    return {"median": round(statistics.median(ordered), 2), "p90": round(p90, 2),
            "max": round(ordered[-1], 2), "min": round(ordered[0], 2)}


def summary(rows: list[dict[str, Any]], key: str) -> str:
    st = stats([r[key] for r in rows])
    return f"{st['median']:6.1f} / {st['p90']:.1f} / {st['max']:.1f}"


SETTINGS = {
    "threshold_iops": HIGH, "threshold_low_iops": LOW, "min_dwell_secs": DWELL,
    "module_options": "defaults (interval 1 s, sustain 0 s, rate window 5 s, OSD perf "
                      "query as the rate source)",
    "phases": "set-phase trials start at phases spread evenly over the OSDs' report "
              "period; after-switch trials right after the rule change to shared; "
              "phase_secs = seconds since the last OSD report (osd.1's log)",
    "urgent_client": "rados bench 4 KiB writes, 8 threads",
    "reaction": "rados bench start -> crush_rule seen changed by a librados poller (100 ms)"}


def period_trials(cluster: Cluster, period: int, trials: int, rng: random.Random,
                  say: Callable[[str], None]) -> list[dict[str, Any]]:
    """`trials` trials at mgr_stats_period `period`, alternating set-phase and
    after-switch; the set-phase trials cover the period evenly, in a shuffled order."""
    cluster.ceph("config", "set", "mgr", "mgr_stats_period", str(period))
    for osd in range(8):  # each report logged: the trials' phases are measured
        cluster.ceph("tell", f"osd.{osd}", "config", "set", "debug_mgrc", "20")
    phases = [(k + 0.5) * period / ((trials + 1) // 2) for k in range((trials + 1) // 2)]
    rng.shuffle(phases)
    rows: list[dict[str, Any]] = []
    for i in range(trials):
        kind = "set-phase" if i % 2 == 0 else "after-switch"
        say(f"trial {i + 1} of {trials} ({kind}) at mgr_stats_period {period} s")
        rows.append(trial(cluster, kind, period, phases[i // 2] if kind == "set-phase" else None))
        print(json.dumps(rows[-1]), flush=True)  # a trial at a time, kept if one fails
    return rows


def print_summary(results: dict[str, Any]) -> None:
    print(f"{'mgr_stats_period':>16} {'trials':>6} {'reaction s: median / p90 / max':>32} "
          f"{'time to isolation s':>26}")
    for period, rows in results["trials"].items():
        print(f"{period:>16} {len(rows):>6} {summary(rows, 'reaction_secs'):>32} "
              f"{summary(rows, 'time_to_isolation_secs'):>26}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--trials", type=int, default=20)
    ap.add_argument("--stats-periods", type=int, nargs="+", default=[5])
    ap.add_argument("--seed", type=int, default=20)
    ap.add_argument("--conf", help="use this running cluster instead of starting one")
    ap.add_argument("--out", type=Path, help="write the results as JSON here")
    args = ap.parse_args(argv)
    if args.trials < 1:
        ap.error("--trials must be >= 1")
    results: dict[str, Any] = {"trials": {}, "summary": {}, "settings": SETTINGS}
    rng = random.Random(args.seed)
    say = progress("module-bench")
    with cluster_for(args.conf, "sla-bench-") as cluster:
        release = provenance.ceph_release(cluster.tool("ceph", "--version"))
        say("cluster up; rules, pools and the module's settings")
        setup(cluster)
        for period in args.stats_periods:
            rows = results["trials"][str(period)] = period_trials(cluster, period, args.trials,
                                                                  rng, say)
            results["summary"][str(period)] = {
                key: stats([r[key] for r in rows])
                for key in ("reaction_secs", "reaction_record_secs", "time_to_isolation_secs")}
    print_summary(results)
    if args.out:
        results["provenance"] = provenance.provenance(
            "bench.module_bench", sys.argv[1:] if argv is None else argv, release,
            provenance.CURRENT_DESIGN)
        write_json(args.out, results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
