"""`ceph sla status` / `history` output: one dict (also the metrics snapshot)
and its plain-text rendering. Pure."""
from __future__ import annotations

import time
from typing import Any

from .admission_facts import BASES
from .advise import Advice
from .state import ModuleState


def _thresholds_line(status: dict[str, Any]) -> str:
    dwell = f"dwell {status['min_dwell_secs']:g} s"
    if status["threshold_iops"] is None:
        return f"thresholds:  invalid ({status.get('threshold_error')}): no switch; {dwell}"
    return (f"thresholds:  high {status['threshold_iops']:g}, low "
            f"{status['threshold_low_iops']:g} IOPS, {dwell}")


def render_status(status: dict[str, Any]) -> str:
    lines = [
        f"sla {status.get('version', '')}".rstrip(),
        f"mode:        {status['mode']} ({'pinned' if status['pinned'] else 'auto'})"
        + ("  [dry run: nothing is changed]" if status["dry_run"] else "")
        + ("" if status.get("active", True) else "  [off: 'ceph sla on' to resume]"),
        f"since:       {_when(status['since'])}",
        "urgent IOPS: " + ("unknown yet" if status["urgent_iops"] is None
                           else f"{status['urgent_iops']:.1f}"),
        _thresholds_line(status),
    ]
    if status.get("monitors", "answering") != "answering":
        lines.append(f"monitors:    {status['monitors']}: nothing is sent")
    if status["dry_run"] and status.get("dry_run_mode"):
        lines.append(f"dry run:     would be {status['dry_run_mode']}")
    last = status.get("last_switch")
    if last:
        lines.append(f"last switch: {_when(last['time'])} {last['from']} -> {last['to']}: "
                     f"{last['reason']}")
    if status.get("time_to_isolation_secs") is not None:
        lines.append(f"time to isolation (last): {status['time_to_isolation_secs']:.1f} s")
    for gate in status["gates"]:
        lines.append(f"blocked:     {gate['name']}: {gate['detail']}"
                     + (f" -> {gate['release']}" if gate.get("release") else ""))
    lines += render_holds(status)
    if status.get("waiting_for_next_step"):
        lines.append("next step:   " + ", ".join(status["waiting_for_next_step"])
                     + " (a switch to shared goes a step at a time: max_step_pgs)")
    if status.get("pgs_without_normal_replica"):
        lines.append(f"inclusion:   {status['pgs_without_normal_replica']} PGs of normal pools "
                     "without a normal replica (ceph health detail)")
    for repair in status.get("weight_set_repairs") or []:
        lines.append(f"repaired:    {repair}")
    lines += writes_line(status.get("urgent_writes") or {})
    if status["pools"]:
        lines.append("")
        lines.append(f"{'POOL':<20} {'ID':>4} {'ROLE':<7} {'STRATEGY':<10} {'RULE':<22} "
                     f"{'EXPECTED':<22} {'SIZE':>4} {'IOPS':>8}")
        for p in status["pools"]:
            iops = "-" if p["client_iops"] is None else f"{p['client_iops']:.1f}"
            strategy = p.get("strategy") if p["role"] == "normal" else "-"
            if p["role"] == "normal" and p.get("strategy_auto"):
                strategy = f"auto/{strategy}"
            lines.append(f"{p['name']:<20} {p['pool_id']:>4} {p['role']:<7} {strategy:<10} "
                         f"{p['rule']:<22} {p['expected_rule']:<22} {p.get('size', 0):>4} "
                         f"{iops:>8}")
    else:
        lines.append("no managed pools: 'ceph sla pool set <pool> urgent|normal'")
    return "\n".join(lines) + "\n"


def history_dicts(state: ModuleState) -> list[dict[str, Any]]:
    return [r.to_dict() for r in reversed(state.history)]


def render_history(state: ModuleState) -> str:
    if not state.history:
        return "no switches yet\n"
    lines = [f"{'TIME':<20} {'SWITCH':<20} {'EPOCH':>6} {'PGS':>5} {'REPL':>5} {'TTI s':>6}  "
             "REASON"]
    for r in reversed(state.history):
        switch = f"{r.from_mode}->{r.to_mode}" + (" (dry)" if r.dry_run else "")
        lines.append(f"{_when(r.time):<20} {switch:<20} {_dash(r.epoch):>6} "
                     f"{_dash(r.pgs_moved):>5} {_dash(r.replicas_moved):>5} "
                     f"{_dash(r.time_to_isolation_secs):>6}  {r.reason}")
    return "\n".join(lines) + "\n"


def _dash(value: object) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.1f}"
    return str(value)


def _when(ts: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(ts))


def writes_line(writes: dict[str, Any]) -> list[str]:
    """The urgent OSDs' write budget, once a switch wrote there."""
    if not writes.get("written_last_day_bytes"):
        return []
    budget = writes.get("budget_bytes_per_day")
    of = f" of {budget / 2**30:.1f} GiB a day" if budget else " (no limit)"
    return [f"writes:      {writes['written_last_day_bytes'] / 2**30:.1f} GiB placed on urgent "
            f"OSDs by the last 24 h's switches{of}"]


def gain_line(gain: dict[str, Any]) -> str:
    """A normal pool's gain of sharing, as status and plan say it."""
    model = gain.get("model")
    out = f"model {model:.2f}x" if model is not None else "model -"
    if gain.get("measured") is not None:
        out += f", measured {gain['measured']:.2f}x ({gain['measured_basis']})"
    else:
        out += ", not measured yet"
    if gain.get("expected") is not None:
        out += f"; decided on {gain['expected']:.2f}x ({gain['source']})"
    return out


def by_hand_lines(pool: dict[str, Any]) -> list[str]:
    """A pool's base size or min_size taken from an operator, or a change not taken."""
    hand = pool.get("by_hand") or {}
    lines = [f"by hand:     {pool['name']}: {what} {hand[what]['value']} (set by hand at "
             f"{_when(hand[what]['set_at'])})" for what in ("base_size", "base_min_size")
             if what in hand]
    if hand.get("refused"):
        lines.append(f"by hand:     {hand['refused']}")
    return lines


def render_holds(status: dict[str, Any]) -> list[str]:
    """What keeps the mode, or the end of a switch, where it is."""
    lines = []
    for hold in status.get("holds") or []:
        lines.append(f"holds:       {hold['name']}: {hold['detail']} -> {hold['release']}")
    lines += isolation_lines(status.get("isolation"))
    for pool in status.get("pools") or []:
        if pool.get("kept_isolated"):
            lines.append(f"isolated:    {pool['name']}: {pool['kept_isolated']}")
        lines += by_hand_lines(pool)
        if (pool.get("gain") or {}).get("measured") is not None:
            lines.append(f"gain:        {pool['name']}: {gain_line(pool['gain'])}")
        choice = pool.get("next_strategy") or {}
        if choice.get("auto") and choice.get("strategy") != pool.get("strategy"):
            lines.append(f"strategy:    {pool['name']}: {choice['strategy']} at the next "
                         f"switch to shared ({choice['why']})")
    if status.get("stats_period_secs") and status["stats_period_secs"] > 5:
        lines.append(f"stats:       mgr_stats_period {status['stats_period_secs']:g} s: the "
                     "module sees urgent load up to that late")
    return lines


def isolation_lines(isolation: dict[str, Any] | None) -> list[str]:
    """Isolating past a normal OSD's hard PG limit, and the pools held shared for it."""
    if not isolation or not isolation.get("over"):
        return []
    lines = [f"isolation:   would put {isolation['pgs']} PGs on osd.{isolation['osd']}, past the "
             f"{isolation['hard_limit']} it holds at most ({isolation['osds_over']} normal "
             "OSDs past theirs: SLA_ISOLATION_PG_LIMIT)"]
    for pool, why in (isolation.get("held") or {}).items():
        lines.append(f"held shared: {pool}: {why}")
    return lines


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:g}"


def render_advice(advice: Advice) -> str:
    """Plain text for `ceph sla advise`: one row per figure, its basis last."""
    overfill = {None: "unknown", True: "overfills", False: "fits"}[advice.shared_overfill]
    needed = "-" if advice.urgent_osds_needed is None else str(advice.urgent_osds_needed)
    dm = advice.data_metadata
    rows = [
        ("urgent OSDs", f"{needed} needed", str(advice.urgent_osds),
         f"{advice.verdict}: {advice.urgent_osds_basis}"),
        ("urgent capacity", f"{advice.urgent_client_capacity_iops:.0f} IOPS", "-",
         advice.urgent_client_capacity_basis),
        ("normal capacity", f"{advice.normal_client_capacity_iops:.0f} IOPS", "-",
         advice.normal_client_capacity_basis),
        ("shared mode", overfill, "-", advice.shared_overfill_basis),
        ("threshold_iops", _num(advice.threshold_iops), _num(advice.current_threshold_iops),
         advice.threshold_iops_basis),
        ("threshold_low_iops", _num(advice.threshold_low_iops),
         _num(advice.current_threshold_low_iops), advice.threshold_low_iops_basis),
        ("min_dwell_secs", _num(advice.min_dwell_secs), _num(advice.current_min_dwell_secs),
         advice.min_dwell_secs_basis),
        ("data/metadata", "-" if dm is None else dm.winner, "-", advice.data_metadata_basis),
    ]
    lines = [f"{'ITEM':<19} {'ADVICE':<16} {'NOW':<8} BASIS"]
    lines += [f"{a:<19} {b:<16} {c:<8} {d}" for a, b, c, d in rows]
    if dm is not None:
        lines.append("")
        lines.append(f"{'LAYOUT':<12} {'SPEEDUP':>8} {'COST/GB':>8} {'PERF/COST':>10}")
        for la in dm.layouts:
            lines.append(f"{la.name:<12} {_num(la.speedup):>8} {la.cost_per_gb:>8.2f} "
                         f"{'-' if la.perf_per_cost is None else f'{la.perf_per_cost:.2f}':>10}")
    lines += [f"note: {n}" for n in advice.notes]
    return "\n".join(lines) + "\n"


def render_plan_costs(pools: list[dict[str, Any]]) -> str:
    """The cost table of `sla plan` / `sla advise`, from the admission's
    entries (AdmissionPool.to_dict): each strategy's figures, then what the
    module decided for the pool and why."""
    if not pools:
        return ""
    lines = ["", f"{'POOL':<16} {'STRATEGY':<8} {'TO SHARED':>10} {'TO ISOL':>10} "
                 f"{'ISOLATION':>10} {'EPOCHS':>7} {'GAIN':>6}  DECIDED"]
    for pool in pools:
        for name, c in pool["costs"].items():
            mark = "*" if name == pool["strategy"] else " "
            lines.append(f"{pool['name']:<16} {name + mark:<8} "
                         f"{_gib(c['bytes_to_shared']):>10} {_gib(c['bytes_to_isolated']):>10} "
                         f"{c['time_to_isolation_secs']:>9g}s {c['epochs_to_shared']:>7} "
                         f"{c['expected_gain']:>5.2f}x  {pool['recommended']}")
        slots = pool.get("pg_slots_if_shared")
        if slots is not None:
            lost = "" if slots["lost_failure_domain"] is None else "a failure domain lost; "
            lines.append(f"  PG slots shared: up to {slots['pgs']} PGs on osd.{slots['osd']} "
                         f"({lost}{BASES.get(slots['basis'], slots['basis'])}), limit "
                         f"{slots['limit']} (holds at most "
                         f"{slots['hard_limit']}; {slots['limit_basis']})")
        space = pool.get("urgent_space_if_shared")
        if space is not None:
            lines.append(f"  urgent space shared: osd.{space['osd']} {space['fill']:.0%} full "
                         f"(nearfull_ratio {space['nearfull_ratio']:.0%})")
        if pool.get("kept_isolated"):
            lines.append(f"  kept isolated: {pool['kept_isolated']}")
        if pool.get("gain") is not None:
            lines.append(f"  gain: {gain_line(pool['gain'])}")
        choice = pool.get("next_strategy")
        if choice is not None:
            how = "auto" if choice["auto"] else "pinned"
            lines.append(f"  next switch to shared: {choice['strategy']} ({how}: "
                         f"{choice['why']})")
        lines.append(f"  {pool['reason']}; reads {pool['read_fraction']:.0%} "
                     f"({pool['read_fraction_basis']})")
    return "\n".join(lines) + "\n(* the pool's strategy; GiB; isolation: expected time "\
        "to isolation)\n"


def _gib(value: float) -> str:
    return f"{value / 2**30:.2f}G"
