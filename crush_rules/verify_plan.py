"""Which pools of which osdmap verification maps the SLA rules on.

Offline, a synthetic osdmap made for the map (every device up and in, pool 1
of pg_num PGs); with a live osdmap, its own pools.  verify_run.py maps the
rules on a plan and checks them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from .crushmap import ChooseArg, CrushMap
from .errors import CrushError
from .sampling import Pool
from .tools import Tools

SYNTHETIC_POOL = 1  # the pool osdmaptool --createsimple --with-default-pool makes
SYNTHETIC_PG_NUM = 256  # PGs of the synthetic pool used when a live pool cannot serve R8


@dataclass(frozen=True)
class VerifyPlan:
    """Which pools of which osdmap the rules are tried on."""

    osdmap: bytes
    synthetic: bool
    normal_pool: Pool
    urgent_pool: Pool
    normal_args: tuple[ChooseArg, ...] | None
    hybrid_args: tuple[ChooseArg, ...] | None
    normal_pool_label: int | None
    urgent_pool_label: int | None


def synthetic_osdmap(tools: Tools, crush: CrushMap, size: int, pgs: int) -> bytes:
    """An osdmap with every device of the map and a pool 1 of >= pgs PGs."""
    return tools.simple_osdmap(max(crush.devices, default=0) + 1, pgs, size)


def synthetic_plan(
    osdmap: bytes,
    pg_num: int,
    normal_args: tuple[ChooseArg, ...] | None,
    hybrid_args: tuple[ChooseArg, ...] | None,
    labels: tuple[int | None, int | None],
) -> VerifyPlan:
    """Verify on the first pg_num PGs of the synthetic pool 1, with the given weight sets."""
    pool = Pool(SYNTHETIC_POOL, 0, pg_num)
    return VerifyPlan(osdmap, True, pool, pool, normal_args, hybrid_args, labels[0], labels[1])


def live_plan(
    tools: Tools,
    osdmap: bytes,
    pool_ids: Sequence[int],
    urgent_pool_ids: Sequence[int],
    normal_args: tuple[ChooseArg, ...] | None,
    hybrid_args: tuple[ChooseArg, ...] | None,
) -> VerifyPlan:
    """Verify on real pools: the first normal pool, the first urgent one (or the normal one)."""
    pools = {int(p["pool"]): p for p in tools.osdmap_dump(osdmap).get("pools", [])}
    if not pools:
        raise CrushError("the osdmap has no pools to verify on; create a pool or verify offline")
    for pool_id in list(pool_ids) + list(urgent_pool_ids):
        if pool_id not in pools:
            raise CrushError(f"pool id {pool_id} is not in the osdmap (pools: {sorted(pools)})")
    normal_id = pool_ids[0] if pool_ids else min(pools)
    urgent_id = urgent_pool_ids[0] if urgent_pool_ids else normal_id

    def pool(pool_id: int) -> Pool:
        raw = pools[pool_id]
        return Pool(pool_id, int(raw["crush_rule"]), int(raw["pg_num"]))

    return VerifyPlan(osdmap, False, pool(normal_id), pool(urgent_id), normal_args, hybrid_args,
                      normal_id, urgent_id if urgent_pool_ids else None)
