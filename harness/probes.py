"""What a test watches while the module acts: client ops that keep being
served (harness/op_probe.py, its own process) and PGs that stay inactive
(the PG dump polled by a thread). Both stop by their own handle, never by
name, and report what they saw."""
from __future__ import annotations

import json
import subprocess
import threading
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from harness.cephcluster import Cluster, wait_for

SCRIPT = Path(__file__).resolve().with_name("op_probe.py")


class OpProbe:
    """A write and a read on each pool every second; `stop` gives per pool
    the longest an op took (an op still waiting counted to now)."""

    def __init__(self, cluster: Cluster, pools: Iterable[str]) -> None:
        self.proc = subprocess.Popen(
            cluster.tool("/usr/bin/python3", str(SCRIPT), cluster.conf, *pools),
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        assert self.proc.stdout is not None
        wait_for("the op probe to connect", lambda: self.proc.stdout.readline().strip()
                 == "ready" or self.proc.poll() is not None, 60)

    def stop(self) -> dict[str, dict[str, float]]:
        if self.proc.poll() is None:
            self.proc.terminate()
        try:
            out, _ = self.proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            out, _ = self.proc.communicate(timeout=10)
        line = (out or "").strip().splitlines()
        return json.loads(line[-1]) if line else {}


class InactiveWatch:
    """Polls the PG states; `stop` gives each PG's longest spell not active
    (pools in `ignore` left out: those a test makes inactive itself)."""

    def __init__(self, cluster: Cluster, ignore: Iterable[int] = (), every: float = 1.0) -> None:
        self._cluster, self._ignore = cluster, {str(p) for p in ignore}
        self._every = every
        self._since: dict[str, float] = {}
        self.longest: dict[str, float] = {}
        self.states: dict[str, str] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                brief = self._cluster.json("pg", "dump", "pgs_brief")
            except Exception:  # a command timing out is not a PG state
                brief = None
            now = time.monotonic()
            pgs: list[Any] = brief.get("pg_stats", []) if isinstance(brief, dict) \
                else (brief or [])
            seen = set()
            for pg in pgs:
                pgid, state = str(pg["pgid"]), str(pg["state"])
                if pgid.split(".")[0] in self._ignore or "active" in state.split("+"):
                    continue
                seen.add(pgid)
                start = self._since.setdefault(pgid, now)
                self.longest[pgid] = max(self.longest.get(pgid, 0.0), now - start)
                self.states[pgid] = state
            self._since = {pg: t for pg, t in self._since.items() if pg in seen}
            self._stop.wait(self._every)

    def stop(self) -> dict[str, float]:
        self._stop.set()
        self._thread.join(30)
        return dict(self.longest)


def assert_served(ops: dict[str, dict[str, float]], inactive: dict[str, float],
                  states: dict[str, str], max_op_secs: float = 30.0,
                  max_inactive_secs: float = 15.0) -> None:
    """No client op waited past `max_op_secs`, no PG stayed inactive past
    `max_inactive_secs`; the message says what was seen."""
    # an op still waiting counts from its start; no op done and none waiting: the
    # probe never ran on that pool
    slow = {p: r for p, r in ops.items() if r["longest_secs"] > max_op_secs
            or not (r["ops"] or r["waiting_secs"])}
    stuck = {pg: (round(s, 1), states.get(pg)) for pg, s in inactive.items()
             if s > max_inactive_secs}
    assert ops and not slow and not stuck, {"ops": ops, "slow": slow, "stuck": stuck}


def settled_pg_counts(cluster: Cluster, timeout: float = 300) -> dict[int, int]:
    """Each OSD's PG count by its own last report, once the reports match the
    up sets of every PG (strays of an earlier placement deleted): what the
    module counts is then what the map says."""
    def mapped() -> dict[int, int]:
        out: dict[int, int] = {}
        brief = cluster.json("pg", "dump", "pgs_brief")
        for pg in brief.get("pg_stats", brief) if isinstance(brief, dict) else brief:
            for osd in pg["up"]:
                out[osd] = out.get(osd, 0) + 1
        return out

    def reported() -> dict[int, int]:
        out = cluster.json("pg", "dump", "osds")
        return {int(o["osd"]): int(o["num_pgs"]) for o in out.get("osd_stats", out)}

    def settled() -> dict[int, int] | None:
        held = reported()
        return held if held and held == mapped() else None

    return wait_for("each OSD's PG count to match the up sets", settled, timeout)
