"""bench/upmap_scale.py's map: OSD ids in a CRUSH tree of hdd and ssd hosts, the
shared and isolated rules, the pool on the shared rule, and the switch's
pg_upmap_items entries planned from the PGs' up sets on the mon's own map.
"""
from __future__ import annotations

import json
import random
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.upmap_rig import SIZE, MonRig, parallel

POOL = "normal"
RULE_SHARED = "shared"  # take default; chooseleaf firstn 0 type host
RULE_ISOLATED = "isolated"  # take default class hdd; chooseleaf firstn 0 type host


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
