"""The cost table of `sla plan` and `sla advise`, per normal pool and
strategy, as text and as JSON (what CostWatch last computed)."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..core.report import gain_line

if TYPE_CHECKING:
    from .cost_watch import CostWatch


def render(watch: CostWatch) -> str:
    """The cost table of `sla plan` / `sla advise`."""
    if not watch.costs:
        return ""
    lines = ["", f"{'POOL':<16} {'STRATEGY':<8} {'TO SHARED':>10} {'TO ISOL':>10} "
                 f"{'ISOLATION':>10} {'EPOCHS':>7} {'GAIN':>6}  RECOMMENDED"]
    for pid, cost in sorted(watch.costs.items()):
        for c in cost.costs:
            mark = "*" if c.strategy == cost.strategy else " "
            lines.append(f"{cost.name:<16} {c.strategy + mark:<8} "
                         f"{_gib(c.bytes_to_shared):>10} {_gib(c.bytes_to_isolated):>10} "
                         f"{c.time_to_isolation_secs:>9g}s {c.epochs_to_shared:>7} "
                         f"{c.expected_gain:>5.2f}x  {cost.recommended}")
        slots = watch.slots.verdict
        if slots is not None and pid in slots.worst_if_shared:
            osd, pgs = slots.worst_if_shared[pid]
            basis = "CRUSH's mapping" if pid in watch.slots.mapped \
                or pid in watch.off_isolated else "estimate"
            lines.append(f"  PG slots shared: up to {pgs} PGs on osd.{osd} (a failure "
                         f"domain lost; {basis}), limit {slots.limit}")
        space = watch.space_if_shared(pid)
        if space is not None and watch.maps is not None:
            lines.append(f"  urgent space shared: osd.{space[0]} {space[1]:.0%} full "
                         f"(nearfull_ratio {watch.maps.nearfull_ratio:.0%})")
        if watch.keep_isolated.get(pid):
            lines.append(f"  kept isolated: {watch.keep_isolated[pid]}")
        gain = watch.gain_view(pid)
        if gain is not None:
            lines.append(f"  gain: {gain_line(gain)}")
        choice = watch.strategies.choices.get(pid)
        if choice is not None:
            how = "auto" if choice.auto else "pinned"
            lines.append(f"  next switch to shared: {choice.strategy} ({how}: {choice.why})")
        lines.append(f"  {cost.reason}; reads {cost.read_fraction:.0%} "
                     f"({cost.read_fraction_basis})")
    return "\n".join(lines) + "\n(* the pool's strategy; GiB; isolation: expected time "\
        "to isolation)\n"

def report(watch: CostWatch) -> list[dict[str, Any]]:
    out = []
    for pid, cost in sorted(watch.costs.items()):
        entry = cost.to_dict()
        entry["kept_isolated"] = watch.keep_isolated.get(pid)
        entry["gain"] = watch.gain_view(pid)
        entry["next_strategy"] = watch.next_strategy(pid)
        slots = watch.slots.verdict
        worst = slots.worst_if_shared.get(pid) if slots is not None else None
        mapped = watch.slots.mapped.get(pid)
        entry["pg_slots_if_shared"] = None if worst is None or slots is None else {
            "osd": worst[0], "pgs": worst[1], "limit": slots.limit,
            "lost_failure_domain": slots.lost_domain,
            "basis": "crush" if mapped is not None or pid in watch.off_isolated
            else "estimate",
            # the pool's own PGs per urgent OSD, as CRUSH maps its sharing
            "pool_pgs_per_urgent_osd": None if mapped is None else {
                str(o): n for o, n in sorted(mapped.items())}}
        space = watch.space_if_shared(pid)
        entry["urgent_space_if_shared"] = None if space is None or watch.maps is None else {
            "osd": space[0], "fill": round(space[1], 4),
            "nearfull_ratio": watch.maps.nearfull_ratio}
        out.append(entry)
    return out


def _gib(value: float) -> str:
    return f"{value / 2**30:.2f}G"
