"""bench/upmap_scale.py's pacings: how the entries are sent to the mon (today's
rounds, bursts, the balancer's all at once) and what each costs it; the epochs
that change no entry; the way back by the rule swap, and the reset between runs.
"""
from __future__ import annotations

import argparse
import json
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from bench.upmap_osdmap import POOL, RULE_ISOLATED, RULE_SHARED
from bench.upmap_rig import CMD_TIMEOUT, MonRig, parallel

TODAY_PARALLEL = 8  # mgr_sla/core/switch_cost.py UPMAP_PARALLEL
TODAY_BATCH = 256  # mgr_sla/placement/placer.py UPMAP_BATCH


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
