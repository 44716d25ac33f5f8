"""The SLA benchmark as shipped: the module's default configuration (each
normal pool `auto`: its strategy chosen at every switch to shared, shared only
when its expected gain reaches min_gain, the urgent write budget) with three
normal pools side by side: read-heavy (95% reads), mixed (70%) and
write-heavy (10%).

    python3 -m bench.sla_workloads [--smoke] [--out docs/benchmarks/workloads.json]
                                   [--hdd-iops 150] [--ssd-iops 500]
                                   [--module-option KEY=VALUE ...]

--module-option sets a mgr/sla option for the whole run (recorded with the
results), to measure what it costs and gains against the defaults: e.g.
share_past_min_size=true.

On the SLA benchmark's cluster (8 BlueStore OSDs, 4 hosts of 1 hdd + 1 ssd,
emulated device speeds: bench/emulation.py), three cases:

- fast-urgent: the SSDs at --ssd-iops (the urgent region can serve more);
- slow-urgent: the SSDs at a third of an HDD's I/Os (the urgent region is too
  slow for the normal pools' reads: sharing costs them);
- mix-change: the SSDs as fast as the HDDs, and the read-heavy and
  write-heavy pools swap their mixes every other cycle (what the module
  measured at one mix judges the pool at the next).

The smoke run takes one cycle of mix-change and of slow-urgent (fast-urgent
runs the same steps at other device speeds).

Each case runs cycles of a quiet isolated spell, the module's switch to shared
(which pools it shares, by which strategy, which it keeps and why), a shared
spell, and the urgent client (the module isolates; its p99 is measured once
isolated). Reported per pool and cycle: shared or not and how, the module's
model and measured gain, the clients' own gain (ops/s shared over isolated:
closed-loop clients) and the module's against the clients' at the shared mix,
bytes the switch sent to urgent OSDs, the urgent p99.
The cycles are in bench/workload_rounds.py, the clients in
bench/workload_clients.py.
"""
from __future__ import annotations

if __name__ == "__main__" and not __package__:
    import _script  # noqa: F401  (bench/_script.py: runs this as python3 -m bench.<name>)

import sys
import time
from collections.abc import Callable
from dataclasses import asdict
from typing import Any

from bench.common import emulated_main, machine
from bench.emulation import DeviceSpeeds
from bench.sla_cluster import bench_cluster
from bench.sla_plan import MODULE_CONFIG, Plan
from bench.workload_rounds import SLOW_SSD_FRACTION, THRESHOLDS, WorkloadCase, WorkloadPlan

SMOKE = WorkloadPlan(("mix-change", "slow-urgent"), cycles=1, spell_secs=50, dwell_secs=60)
FULL = WorkloadPlan(("fast-urgent", "slow-urgent", "mix-change"), cycles=3, spell_secs=75,
                    dwell_secs=110)
# what the module runs with beyond the SLA benchmark's timing (MODULE_CONFIG):
# nothing of the strategy, the gain or the write budget is set (their defaults)
DEFAULT_OPTIONS = ("default_strategy", "min_gain", "gain_retry_secs", "max_urgent_drive_writes",
                   "gain_prior")


def run(plan: WorkloadPlan, speeds: DeviceSpeeds, say: Callable[[str], None],
        options: dict[str, str] | None = None) -> dict[str, Any]:
    started = time.monotonic()
    # the urgent client of the SLA benchmark (fio: write then read back 8 MB)
    urgent = Plan((0,), (), urgent_mb=8, normal_secs=0, calibration_secs=0,
                  back_to_shared=False, block_kb=plan.block_kb, pg_num=plan.pg_num)
    with bench_cluster(urgent, speeds) as bench:
        c = bench.cluster
        c.ceph("config", "set", "mgr", "mgr/sla/min_dwell_secs", str(plan.dwell_secs))
        for key, value in (options or {}).items():
            c.ceph("config", "set", "mgr", f"mgr/sla/{key}", value)
        options = {o: c.ceph("config", "get", "mgr", f"mgr/sla/{o}").strip()
                   for o in DEFAULT_OPTIONS}
        say("cluster up")
        cases = [WorkloadCase(bench, plan, say).run(case) for case in plan.cases]
    return {"cases": cases, "summary": summary(cases),
            "plan": {**asdict(plan), "osds": 8, "objectstore": "bluestore",
                     "threshold_iops": {case: list(t) for case, t in THRESHOLDS.items()},
                     "module": {**MODULE_CONFIG, "min_dwell_secs": str(plan.dwell_secs),
                                **(options or {})},
                     "module_defaults": options,
                     "slow_ssd": f"hdd_iops // {SLOW_SSD_FRACTION}",
                     "normal_client": f"fio rados engine, {plan.block_kb} KB random ops, "
                                      f"iodepth {plan.iodepth}, one per pool",
                     "urgent_client": "fio rados engine: write then read back 8 MB"},
            "emulation": {"hdd_device_iops": speeds.hdd_iops, "ssd_device_iops": speeds.ssd_iops,
                          "mechanism": "cgroup v1 blkio.throttle.{read,write}_iops_device "
                                       "per OSD process"},
            "machine_tools": machine(), "elapsed_secs": round(time.monotonic() - started, 1)}


def summary(cases: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per case and pool: how often it was shared and how, its last measured
    gain, its clients' gain over the cycles it was shared, why it was last kept,
    and the urgent p99 (median over the cycles)."""
    out = []
    for case in cases:
        cycles = case["cycles"]
        p99s = sorted(c["urgent"]["urgent_p99_ms"] for c in cycles)
        for pool, reads in case["mix_read_percent"].items():
            seen = [c["switch"]["pools"][pool] for c in cycles]
            shared = [s["strategy"] if s["shared"] else None for s in seen]
            gains = [c["client_gain"].get(pool) for c, s in zip(cycles, shared) if s]
            last = cycles[-1]["shared"]["pools"][pool]["gain"] or {}
            known = [g for g in gains if g is not None]
            out.append({
                "case": case["case"], "pool": pool, "read_percent": reads,
                "read_percent_by_cycle": [c["mix"][pool] for c in cycles],
                "shared_by_cycle": shared,
                # the module's measured gain over its clients' at the shared mix, - 1
                # (a pool kept isolated has no clients' gain to hold it against)
                "module_error_by_cycle": [(c["gain_check"].get(pool) or {}).get("error")
                                          if s else None for c, s in zip(cycles, shared)],
                "measured_gain": last.get("measured"), "model_gain": last.get("model"),
                "client_gain_shared": round(sum(known) / len(known), 2) if known else None,
                # the clients' at the cycle's mix, where the pool was shared: what the
                # placement brought (a pool kept isolated has none to show)
                "client_gain_by_cycle": [(c["gain_check"].get(pool) or {}).get("clients_at_mix")
                                         if s else None for c, s in zip(cycles, shared)],
                "kept_why": next((s["kept_isolated"] for s in reversed(seen)
                                  if s["kept_isolated"]), None),
                "bytes_to_urgent": sum(c["switch"].get("bytes_to_urgent") or 0
                                       for c in cycles),
                "urgent_p99_ms": p99s[len(p99s) // 2]})
    return out


def table(results: dict[str, Any]) -> str:
    rows = ["| case | pool (reads, per cycle) | shared, per cycle | measured gain (model) "
            "| clients' gain, per cycle | module vs clients, per cycle | urgent p99 "
            "| kept because |", "|" + "---|" * 8]
    for r in results["summary"]:
        shared = ", ".join(s or "no" for s in r["shared_by_cycle"])
        measured = "-" if r["measured_gain"] is None else f"{r['measured_gain']:.2f}x"
        model = "-" if r["model_gain"] is None else f"{r['model_gain']:.2f}x"
        client = ", ".join("-" if g is None else f"{g:.2f}x" for g in r["client_gain_by_cycle"])
        by_cycle = r["read_percent_by_cycle"]
        reads = f"{by_cycle[0]}%" if len(set(by_cycle)) == 1 else \
            ", ".join(f"{p}%" for p in by_cycle)
        errors = ", ".join("-" if e is None else f"{e:+.0%}" for e in r["module_error_by_cycle"])
        rows.append(f"| {r['case']} | {r['pool']} ({reads}) | {shared} "
                    f"| {measured} ({model}) | {client} | {errors} | {r['urgent_p99_ms']} ms "
                    f"| {r['kept_why'] or '-'} |")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    return emulated_main(argv, who="sla-workloads", doc=__doc__, out="workloads.json",
                         tools=("fio", "rados", "ceph"), strategy="upmap+copy",
                         smoke_help="one cycle of mix-change and slow-urgent (about 9 minutes)",
                         run=run, sizes=(SMOKE, FULL), table=table, module_options=True)


if __name__ == "__main__":
    sys.exit(main())
