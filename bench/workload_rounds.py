"""One case of the workloads benchmark (bench/sla_workloads.py) on the SLA
benchmark's cluster: three normal pools, each with its own mix, under the
module's default configuration, through quiet and urgent periods.

A cycle: an isolated quiet spell (the module's dwell: after the pools were
set up, then after the urgent client), the module's switch to shared (which
pools it shares, by which strategy, which it keeps and why), a shared spell
(until the module has measured each pool it shared, within a bound), then the
urgent client (the module isolates; the urgent p99 is measured once
isolated). The normal clients run throughout, at the cycle's mix; each
spell's figures are theirs.

After each shared spell the module's measured gain of each shared pool is held
against its clients' own: their mean read and write latency isolated over
shared, combined at the shared spell's mix (what the placement brought, the
same measure the module takes), and their ops/s ratio beside it.
"""
from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from bench.sla_clients import UrgentClient
from bench.sla_cluster import Bench
from bench.workload_clients import PoolClients, lay_out
from harness.cephcluster import PacedWriter, wait_for
from mgr_sla.core.gain_stats import KINDS, kind_shares, needed_kinds

ISOLATED_RULE, NORMAL_SIZE = "sla_isolated_normal", 3
# the warm-up urgent clients: synchronous ones side by side, half reads, so that
# even the slow urgent region takes their ops above the high threshold
URGENT_WARMUP_CLIENTS, URGENT_WARMUP_OPS = 4, 20
# the urgent IOPS thresholds (high, low) of each case: an urgent region a third
# of an HDD serves a few dozen ops a second, and its operator sets them lower
THRESHOLDS = {"fast-urgent": ("30", "10"), "slow-urgent": ("12", "5"),
              "mix-change": ("30", "10")}
# the mix-change case: SSDs as fast as the HDDs, and the read-heavy and the
# write-heavy pools swap their mixes every other cycle (the first one swapped;
# the mixed pool keeps its own): what the module measured at one mix must
# judge the pool at the next, by what the placement brings at that mix
CYCLE_MIXES: dict[str, tuple[dict[str, int], ...]] = {
    "mix-change": ({"reads": 10, "writes": 95}, {})}
# a shared spell runs on past spell_secs, this long at most, until the module
# has a measured gain for each pool it shared (two settled windows each side)
MEASURE_GRACE_SECS = 75
# the urgent clients' figures count once read this long after they started
# (the mgr's samples of the counters span about 100 s, most of it theirs then)
PRIOR_WARMUP_SECS = 45.0



@dataclass(frozen=True)
class WorkloadPlan:
    cases: tuple[str, ...]  # "fast-urgent", "slow-urgent", "mix-change"
    cycles: int  # switches to shared per case
    spell_secs: int  # each shared spell
    dwell_secs: int  # the module's min_dwell_secs: each quiet isolated spell
    mix: tuple[tuple[str, int], ...] = (("reads", 95), ("mixed", 70), ("writes", 10))
    pg_num: int = 16
    block_kb: int = 16
    iodepth: int = 2  # ops in flight per pool: the middle of one of the module's load bins


# the slow case: the urgent region's devices at a third of an HDD's I/Os
SLOW_SSD_FRACTION = 3


class WorkloadCase:
    def __init__(self, bench: Bench, plan: WorkloadPlan, say: Callable[[str], None]) -> None:
        self.bench, self.plan, self.say = bench, plan, say
        self.c = bench.cluster
        self.mix: Mapping[str, int] = dict(plan.mix)  # the pools laid out, their mixes
        self.cycle_mix: Mapping[str, int] = self.mix  # this cycle's (CYCLE_MIXES)
        self.ssd = {o for o, cls in bench.classes.items() if cls == "ssd"}
        self.placed_status: dict[str, Any] = {"pools": []}

    # setup

    def device_speeds(self, case: str) -> dict[str, Any]:
        speeds = self.bench.speeds
        ssd = {"fast-urgent": speeds.ssd_iops, "mix-change": speeds.hdd_iops}.get(
            case, max(1, speeds.hdd_iops // SLOW_SSD_FRACTION))
        for osd, cls in self.bench.classes.items():
            name = f"osd.{osd}"
            self.bench.throttle.limit(name, self.bench.pids[name],
                                      ssd if cls == "ssd" else speeds.hdd_iops)
        self.c.ceph("sla", "set-threshold", *THRESHOLDS[case])
        return {"hdd_device_iops": speeds.hdd_iops, "ssd_device_iops": ssd,
                "threshold_iops": list(THRESHOLDS[case])}

    def fresh_pools(self) -> dict[str, Any]:
        """The urgent pool and the normal pools, empty, each managed by the
        module (normal ones without --strategy: the default, auto), isolated;
        the urgent region's latencies as the module read them meanwhile."""
        c = self.c
        c.ceph("sla", "mode", "isolated")
        wait_for("the module pinned isolated", lambda: self.bench.mode() == "isolated", 120)
        for pool in ("urgent", *self.mix):
            if c.ceph_raw("sla", "pool", "rm", pool, timeout=300).returncode not in (0, 2):
                raise RuntimeError(f"sla pool rm {pool} failed")
            if self.bench.pool_id(pool) is not None:
                c.ceph("osd", "pool", "rm", pool, pool, "--yes-i-really-really-mean-it")
        c.wait_clean(600)
        for pool in ("urgent", *self.mix):
            c.create_pool(pool, self.plan.pg_num)
        c.ceph("sla", "pool", "set", "urgent", "urgent", timeout=300)
        for pool in self.mix:
            c.ceph("sla", "pool", "set", pool, "normal", timeout=300)
        c.wait_clean(600)
        # the devices as the module's prior compares them before a first
        # share (osd bench on each class), as an operator runs it once; a
        # class whose benches all failed (an OSD busy past the module's
        # deadline) is benched once more, as an operator would
        for attempt in range(2):
            c.ceph("sla", "advise", "--calibrate", timeout=900)
            failed = {cls: v["failed"] for cls, v in self._calibration().items()
                      if "iops" not in v}
            if not failed:
                break
            print(f"calibration attempt {attempt + 1}: {failed}", flush=True)
        # urgent clients while the normal pools are laid out (the mode pinned
        # isolated): the gain's prior then knows the urgent devices at this
        # case's speeds, as a cluster's own urgent clients would have shown them
        started = time.time()
        warmup = [PacedWriter(c, "urgent", secs=600, ops=URGENT_WARMUP_OPS, reads=0.5)
                  for _ in range(URGENT_WARMUP_CLIENTS)]
        try:
            lay_out(c, self.mix)
            return wait_for("the urgent region's latencies read at this case's speeds",
                            lambda: _read_since(c.json("sla", "plan", timeout=120), started
                                                + PRIOR_WARMUP_SECS), 300)
        finally:
            for client in warmup:
                client.stop()

    # what the module did

    def pools_now(self, status: dict[str, Any] | None = None) -> dict[str, dict[str, Any]]:
        """Each normal pool as the module shows it (in `status`, or now):
        placement, strategy, why kept, gain."""
        out = {}
        for p in (status or self.c.sla_status())["pools"]:
            if p["name"] in self.mix:
                nxt = p.get("next_strategy") or {}
                out[p["name"]] = {
                    "shared": p["rule"] != ISOLATED_RULE or p["size"] != NORMAL_SIZE,
                    "rule": p["rule"], "size": p["size"], "strategy": p["strategy"],
                    "auto": p["strategy_auto"], "read_fraction": p["read_fraction"],
                    "kept_isolated": p["kept_isolated"], "gain": p["gain"],
                    "next_strategy": nxt.get("strategy"),
                    "options": nxt.get("options")}
        return out

    def _calibration(self) -> dict[str, Any]:
        """The module's stored calibration: class -> its figure or failure."""
        data = json.loads(self.c.ceph("config-key", "get", "mgr/sla/calibration"))
        return data.get("classes", {})

    def ledger(self) -> list[dict[str, Any]]:
        """The module's measured-gain sums of the normal pools as its store
        has them (per placement, period and load bin; saved once a window),
        so a gain can be traced to the periods behind it."""
        p = self.c.ceph_raw("config-key", "get", "mgr/sla/gain_ledger")
        if p.returncode != 0:
            return []
        ids = {self.bench.pool_id(name): name for name in self.mix}
        return [{**entry, "pool": ids[entry["pool"]]}
                for entry in json.loads(p.stdout).get("pools", []) if entry["pool"] in ids]

    def placed(self) -> bool:
        """Every normal pool where the module wants it, its PGs clean; isolated:
        none acting on an urgent OSD."""
        status = self.c.sla_status()
        isolated = status["mode"] == "isolated"
        for p in status["pools"]:
            if p["name"] in self.mix and (p["rule"], p["size"]) != (
                    p["expected_rule"], p["expected_size"]):
                raise RuntimeError(f"{p['name']} on {p['rule']} size {p['size']}, expected "
                                   f"{p['expected_rule']} size {p['expected_size']}")
        for pool in self.mix:
            pgs = self.c.json("pg", "ls-by-pool", pool)
            for pg in pgs["pg_stats"] if isinstance(pgs, dict) else pgs:
                if pg["state"] != "active+clean" or (isolated and self.ssd & set(pg["acting"])):
                    raise RuntimeError(f"{pool} PG {pg['pgid']} {pg['state']} on {pg['acting']}")
        # the decisions as placed: an auto pool may change strategy a moment later
        self.placed_status = status
        return True

    def switch_record(self, to: str, since: float) -> dict[str, Any]:
        def recorded() -> dict[str, Any] | None:
            h = self.c.json("sla", "history")[0]
            return h if h["to"] == to and h["time"] >= since - 1 and \
                h["pgs_moved"] is not None else None
        h = wait_for(f"the switch to {to} recorded", recorded, 600)
        return {k: h.get(k) for k in ("to", "reason", "pgs_moved", "replicas_moved",
                                      "bytes_to_urgent", "pools_to_urgent",
                                      "time_to_isolation_secs")}

    # spells

    def spell(self, until: Callable[[], bool], timeout: float, what: str,
              mix: Mapping[str, int]) -> dict[str, Any]:
        """The normal clients at `mix` run until `until()` (checked each second)
        or `timeout`."""
        clients = PoolClients(self.c, mix, self.plan.block_kb, self.plan.iodepth)
        started = time.monotonic()
        try:
            while time.monotonic() - started < timeout and not until():
                time.sleep(1)
        finally:
            figures = clients.stop()
        secs = round(time.monotonic() - started, 1)
        self.say(f"{what}: {secs} s, " + ", ".join(
            f"{pool} {f['ops_per_sec']} ops/s" for pool, f in figures.items()))
        return {"spell": what, "secs": secs, "clients": figures}

    def measured_after(self, min_secs: float) -> Callable[[], bool]:
        """A spell's end: `min_secs` past, and every pool shared now has the
        module's measured gain (asked every few seconds)."""
        started, asked = time.monotonic(), [0.0]

        def done() -> bool:
            now = time.monotonic()
            if now - started < min_secs or now - asked[0] < 5:
                return False
            asked[0] = now
            try:
                pools = self.pools_now()
            except RuntimeError:  # the CLI's hiccup: asked again in a moment
                return False
            return all((p.get("gain") or {}).get("measured") is not None
                       for p in pools.values() if p["shared"])
        return done

    def to_shared(self, cycle: int) -> tuple[dict[str, Any], dict[str, Any]]:
        """The quiet isolated spell until the module shares, then the clients
        run on until every pool is placed: (spell, switch)."""
        if cycle == 0:  # the pool set ran pinned isolated: now the module decides
            self.c.ceph("sla", "mode", "auto")
        quiet = self.spell(lambda: self.bench.mode() == "shared", self.plan.dwell_secs + 120,
                           "isolated (quiet, the dwell)", self.cycle_mix)
        wall = time.time() - quiet["secs"]
        t0 = time.monotonic()
        self.spell(lambda: self.bench.mode() == "shared" and _quietly(self.placed),
                   900, "the switch to shared, until placed", self.cycle_mix)
        switch = {**self.switch_record("shared", wall),
                  "placed_secs": round(time.monotonic() - t0, 1),
                  "pools": self.pools_now(self.placed_status)}
        return quiet, switch

    def urgent(self) -> dict[str, Any]:
        """The urgent client comes: the module isolates under the normal load;
        then the urgent client's run, isolated, beside the normal clients."""
        clients = PoolClients(self.c, self.cycle_mix, self.plan.block_kb, self.plan.iodepth)
        try:
            # a steady urgent writer above the high threshold until isolated
            wall = time.time()
            warmup = [PacedWriter(self.c, "urgent", secs=900, ops=URGENT_WARMUP_OPS, reads=0.5)
                      for _ in range(URGENT_WARMUP_CLIENTS)]
            try:
                wait_for("mode isolated", lambda: self.bench.mode() == "isolated", 300)
                reaction = round(time.time() - wall, 1)
                wait_for("the normal pools isolated and clean", self.placed, 900)
            finally:
                for client in warmup:
                    client.stop()
            switch = self.switch_record("isolated", wall)
            measured = UrgentClient(self.c, self.bench.plan, self.bench.workdir).result()
        finally:
            figures = clients.stop()
        return {"reaction_secs": reaction, "switch": switch, **measured,
                "mode_after": self.bench.mode(), "clients": figures}

    def run(self, case: str) -> dict[str, Any]:
        self.say(f"case {case}")
        speeds = self.device_speeds(case)
        urgent_devices = self.fresh_pools()
        cycles = []
        for cycle in range(self.plan.cycles):
            self.cycle_mix = cycle_mix(case, cycle, self.mix)
            quiet, switch = self.to_shared(cycle)
            shared = self.spell(self.measured_after(self.plan.spell_secs),
                                self.plan.spell_secs + MEASURE_GRACE_SECS, "shared",
                                self.cycle_mix)
            shared["pools"] = self.pools_now()
            shared["ledger"] = self.ledger()
            urgent = self.urgent()
            self.say(f"cycle {cycle + 1}: urgent p99 {urgent['urgent_p99_ms']} ms, shared "
                     + ", ".join(f"{n} {'by ' + p['strategy'] if p['shared'] else 'no'}"
                                 for n, p in switch["pools"].items()))
            cycles.append({"cycle": cycle + 1, "mix": dict(self.cycle_mix),
                           "isolated": quiet, "switch": switch, "shared": shared,
                           "urgent": urgent, "client_gain": client_gain(quiet, shared),
                           "gain_check": gain_check(quiet, shared)})
        return {"case": case, "devices": speeds, "urgent_devices_read": urgent_devices,
                "mix_read_percent": dict(self.mix), "cycles": cycles}


def cycle_mix(case: str, cycle: int, base: Mapping[str, int]) -> dict[str, int]:
    """Each pool's read percent in `cycle` (from 0) of `case`."""
    changes = CYCLE_MIXES.get(case, ({},))
    return {**base, **changes[cycle % len(changes)]}


def _read_since(plan: Mapping[str, Any], since: float) -> dict[str, Any] | None:
    """The urgent region's newest read and write latencies in `plan`, and the
    calibration, once both kinds were read at `since` or later (the module
    reads them once a minute)."""
    devices = plan.get("devices") or {}
    urgent = {k: (v or [{}])[0] for k, v in (devices.get("urgent") or {}).items()}
    fresh = all((urgent.get(k) or {}).get("at", 0.0) >= since for k in ("read", "write"))
    return {**urgent, "calibrated_iops": devices.get("calibrated_iops")} if fresh else None


def _quietly(probe: Callable[[], bool]) -> bool:
    try:
        return probe()
    except RuntimeError:
        return False


def client_gain(isolated: Mapping[str, Any], shared: Mapping[str, Any]) -> dict[str, float]:
    """Per pool: its clients' ops/s in the shared spell over the isolated one
    (closed-loop clients: a throughput ratio is a latency ratio)."""
    out = {}
    for pool, s in shared["clients"].items():
        i = isolated["clients"].get(pool, {}).get("ops_per_sec") or 0
        if i:
            out[pool] = round(s["ops_per_sec"] / i, 2)
    return out


def clients_gain_at_mix(isolated: Mapping[str, Any], shared: Mapping[str, Any]
                        ) -> float | None:
    """A pool's clients' mean latency per op isolated over shared, each kind's
    own, combined at the shared spell's mix: what the placement brought them
    (the module's measure), free of a change of mix between the spells."""
    r = shared.get("read_fraction")
    if r is None:
        return None
    timed = {k: (isolated.get(f"{k}_ms") or 0.0, shared.get(f"{k}_ms") or 0.0) for k in KINDS}
    # the kinds the module's gain needs at this mix (gain_stats); a kind not timed on
    # both sides leaves the kinds weighed by their ops
    latency = {k: a if all(timed[k]) else 0.0 for k, (a, _) in timed.items()}
    if any(not all(timed[k]) for k in needed_kinds(r, latency)):
        return None
    share = kind_shares(r)
    used = [k for k in KINDS if share[k] > 0 and all(timed[k])]
    iso = sum(share[k] * timed[k][0] for k in used)
    sh = sum(share[k] * timed[k][1] for k in used)
    return round(iso / sh, 3) if sh else None


def gain_check(isolated: Mapping[str, Any], shared: Mapping[str, Any]
               ) -> dict[str, dict[str, Any]]:
    """Per pool shared in the spell: the module's measured gain after it
    against its clients' at the shared mix; `error` the module's over theirs, - 1."""
    out = {}
    for pool, seen in shared["pools"].items():
        if not seen["shared"]:
            continue
        module = (seen.get("gain") or {}).get("measured")
        clients = clients_gain_at_mix(isolated["clients"].get(pool, {}),
                                      shared["clients"].get(pool, {}))
        out[pool] = {"module": module, "clients_at_mix": clients,
                     "clients_ops": client_gain(isolated, shared).get(pool),
                     "error": round(module / clients - 1, 3) if module and clients else None}
    return out
