"""When a cluster has settled: every PG active+clean on the map of now.

A PG's own stats can be a map behind (they come every few seconds), so
`pg stat` alone can pass before a change moved anything. Asking that every PG
reported at the epoch of now is too much: an idle PG whose mapping the change
did not touch re-reports only every `osd_pg_stat_report_interval_max`
(500 s on Pacific). So a PG counts as settled when it is active+clean, its
reported up and acting sets are the ones the mon's map gives it now, and it
reported after the last start of each of its OSDs (a restart that ends with the
same sets still makes it peer again).
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Mapped:
    up: tuple[int, ...]
    acting: tuple[int, ...]


def parse_mapping(dump: str) -> dict[str, Mapped]:
    """osdmaptool --test-map-pgs-dump-all: "<pgid> raw ([..], p) up ([..], p) acting ([..], p)"."""
    out: dict[str, Mapped] = {}
    for line in dump.splitlines():
        words = line.split()
        if len(words) < 2 or words[1] != "raw" or "." not in words[0]:
            continue
        sets = [part.split("]")[0] for part in line.split("[")[1:]]
        if len(sets) != 3:
            continue
        up, acting = (tuple(int(o) for o in s.split(",") if o.strip()) for s in sets[1:])
        out[words[0]] = Mapped(up, acting)
    return out


def _epoch(value: Any) -> int:
    return int(str(value).split("'")[0])


def unsettled(pgs: Iterable[Mapping[str, Any]], mapping: Mapping[str, Mapped],
              up_from: Mapping[int, int]) -> dict[str, str]:
    """pgid -> why it has not settled, for every PG of `pgs` (their stats) and
    every PG the map has that no stats show yet."""
    why: dict[str, str] = {}
    seen = set()
    for pg in pgs:
        pgid = str(pg["pgid"])
        seen.add(pgid)
        want = mapping.get(pgid)
        have = Mapped(tuple(pg.get("up", ())), tuple(pg.get("acting", ())))
        started = max((up_from.get(o, 0) for o in have.acting), default=0)
        if pg["state"] != "active+clean":
            why[pgid] = pg["state"]
        elif want is None:
            why[pgid] = "not in the map of now"
        elif have != want:
            why[pgid] = f"reported up {list(have.up)} acting {list(have.acting)}, " \
                        f"the map has up {list(want.up)} acting {list(want.acting)}"
        elif _epoch(pg["reported_epoch"]) < started:
            why[pgid] = f"reported at e{_epoch(pg['reported_epoch'])}, an OSD of it " \
                        f"started at e{started}"
    for pgid in sorted(set(mapping) - seen):
        why[pgid] = "no stats yet"
    return why
