"""Synthetic CRUSH maps (crushtool text) for tests, the benchmark and dry runs.

A host is a list of (device class, weight) pairs.  The text looks like what a
Ceph cluster's map decompiles to, with a stock ``replicated_rule`` that takes
the whole root, so tests can check that rule keeps mapping as before.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

Host = list[tuple[str, float]]

_TYPES = (
    "osd", "host", "chassis", "rack", "row", "pdu", "pod", "room", "datacenter", "zone",
    "region", "root",
)


_HEADER = (
    "# begin crush map",
    "tunable choose_local_tries 0",
    "tunable choose_local_fallback_tries 0",
    "tunable choose_total_tries 50",
    "tunable chooseleaf_descend_once 1",
    "tunable chooseleaf_vary_r 1",
    "tunable chooseleaf_stable 1",
    "tunable straw_calc_version 1",
    "tunable allowed_bucket_algs 54",
    "",
    "# devices",
)


def crush_text(
    hosts: Sequence[Sequence[tuple[str, float]]], *, racks: int = 0, root: str = "default"
) -> str:
    """crushtool text for the hosts; with racks > 0 hosts are dealt round-robin into racks."""
    lines = list(_HEADER)
    osd = 0
    host_items: list[list[str]] = []
    for host in hosts:
        items = []
        for device_class, weight in host:
            lines.append(f"device {osd} osd.{osd} class {device_class}")
            items.append(f"\titem osd.{osd} weight {weight:.3f}")
            osd += 1
        host_items.append(items)
    lines += ["", "# types"] + [f"type {i} {t}" for i, t in enumerate(_TYPES)]
    lines += ["", "# buckets"]
    lines += _bucket_lines(host_items, racks, root, wide_names=len(hosts) > 99)
    lines += _rule_lines(root)
    return "\n".join(lines) + "\n"


def _bucket_lines(
    host_items: list[list[str]], racks: int, root: str, wide_names: bool
) -> list[str]:
    """The host buckets (node0.. or node000.. when wide_names), the racks, then the root."""
    lines: list[str] = []
    next_id = -2
    host_names = []
    for index, items in enumerate(host_items):
        name = f"node{index:03d}" if wide_names else f"node{index}"
        host_names.append(name)
        lines += [f"host {name} {{", f"\tid {next_id}", "\talg straw2", "\thash 0"] + items + ["}"]
        next_id -= 1
    children = host_names
    if racks:
        rack_names = []
        for r in range(racks):
            name = f"rack{r}"
            rack_names.append(name)
            members = host_names[r::racks]
            lines += [f"rack {name} {{", f"\tid {next_id}", "\talg straw2", "\thash 0"]
            lines += [f"\titem {m}" for m in members] + ["}"]
            next_id -= 1
        children = rack_names
    lines += [f"root {root} {{", "\tid -1", "\talg straw2", "\thash 0"]
    lines += [f"\titem {c}" for c in children] + ["}", ""]
    return lines


def _rule_lines(root: str) -> list[str]:
    """The stock replicated_rule, taking the whole root, and the end of the map."""
    return [
        "# rules",
        "rule replicated_rule {",
        "\tid 0",
        "\ttype replicated",
        "\tmin_size 1",
        "\tmax_size 10",
        f"\tstep take {root}",
        "\tstep chooseleaf firstn 0 type host",
        "\tstep emit",
        "}",
        "",
        "# end crush map",
    ]


def paper() -> list[Host]:
    """The paper's testbed: 4 hosts, each with one HDD and one SSD OSD."""
    return [[("hdd", 1.0), ("ssd", 1.0)] for _ in range(4)]


def few_ssd() -> list[Host]:
    """8 hosts with 3 HDDs; three of them also hold one SSD (as many as the size)."""
    return [[("hdd", 1.0)] * 3 + ([("ssd", 1.0)] if h < 3 else []) for h in range(8)]


def disjoint() -> list[Host]:
    """HDD-only hosts and SSD-only hosts (20% of the weight on SSD)."""
    return [[("hdd", 2.0)] * 2 for _ in range(6)] + [[("ssd", 1.0)] * 2 for _ in range(3)]


def disjoint_large_ssd() -> list[Host]:
    """HDD-only and SSD-only hosts with as much SSD weight as HDD weight."""
    return [[("hdd", 1.0)] * 2 for _ in range(4)] + [[("ssd", 1.0)] * 2 for _ in range(4)]


def uneven(hosts: int = 40, seed: int = 7) -> list[Host]:
    """Hosts of 2-12 OSDs of mixed sizes; some with a few SSDs, a few SSD-only."""
    rng = random.Random(seed)
    out: list[Host] = []
    for h in range(hosts):
        if h % 8 == 5:
            out.append([("ssd", rng.choice((1.0, 2.0, 4.0))) for _ in range(rng.randint(2, 4))])
            continue
        size = rng.choice((1.0, 2.0, 4.0, 8.0))
        host: list[tuple[str, float]] = [
            ("hdd", size * rng.choice((1.0, 1.0, 0.5))) for _ in range(rng.randint(2, 12))
        ]
        if rng.random() < 0.35:
            host += [("ssd", rng.choice((0.5, 1.0, 2.0))) for _ in range(rng.randint(1, 3))]
        out.append(host)
    return out


def large(osds: int = 10_000, per_host: int = 25, ssd_every: int = 5) -> list[Host]:
    """A big uniform-ish cluster: hosts of ``per_host`` OSDs, one in ``ssd_every`` an SSD."""
    out: list[Host] = []
    made = 0
    while made < osds:
        n = min(per_host, osds - made)
        host = []
        for i in range(n):
            index = made + i
            host.append(("ssd", 2.0) if index % ssd_every == 0 else ("hdd", 4.0))
        out.append(host)
        made += n
    return out
