"""Benchmark the SLA CRUSH rules on synthetic topologies; prints a Markdown table.

Usage: python3 -m bench.crush_bench [--pg-num 1024] [--skip-large] [--out F]

Per topology: generate (flat weight sets) and verify on --pg-num PGs of a
synthetic pool: R1 violations (duplicate OSD, two replicas in one failure
domain, short PGs; all rules), sla_shared's normal inclusion, the PGs that
sla_shared and sla_hybrid map exactly like sla_isolated_normal, the replicas an
isolated <-> shared switch moves; then map two naive alternatives for
comparison: the two-emit hybrid rule and the isolated/Map_all pair drawn from
different roots (no weight sets). With --out, the rows as JSON too. Exit 1
when a requirement fails or the 10,000-OSD map takes more than 30 s.
"""

from __future__ import annotations

if __name__ == "__main__" and not __package__:
    import _script  # noqa: F401  (bench/_script.py: runs this as python3 -m bench.<name>)

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench import provenance
from bench.common import write_json
from crush_rules import rules as R
from crush_rules import synthetic
from crush_rules.crushmap import crushmap_from_dump
from crush_rules.crushtext import parse_blocks, with_exact_weights
from crush_rules.generate import (
    GenerateOptions,
    generate,
    read_map,
    synthetic_osdmap,
    synthetic_plan,
    verify_rules,
)
from crush_rules.tools import Tools
from crush_rules.topology import analyse

TOPOLOGIES: dict[str, Callable[[], list[synthetic.Host]]] = {
    "paper 4x(1 hdd+1 ssd)": synthetic.paper,
    "8 hosts x 3 hdd, 3 with 1 ssd": synthetic.few_ssd,
    "disjoint 6 hdd + 3 ssd hosts": synthetic.disjoint,
    "disjoint 4 hdd + 4 ssd hosts": synthetic.disjoint_large_ssd,
    "40 uneven hosts": synthetic.uneven,
    "10,000 OSDs (400 hosts)": synthetic.large,
}
LARGE = "10,000 OSDs (400 hosts)"
LARGE_LIMIT_S = 30.0
HEADER = ("| topology | OSDs | R1 violations | inclusion | shared = isolated PGs "
          "| hybrid = isolated PGs | replicas moved isolated<->shared | weight-set positions "
          "| two-emit fd violations | different-roots efficiency | generate s | verify s |\n"
          + "|" + "---|" * 12)


def naive_figures(tools: Tools, binary: bytes, pg_num: int) -> tuple[int, float]:
    """(PGs with two replicas in one host under two-emit, efficiency of different roots)."""
    crush = crushmap_from_dump(tools.dump(binary))
    options = GenerateOptions()
    topo = analyse(crush, options.scope(), options.size)
    blocks = with_exact_weights(parse_blocks(tools.decompile(binary)), crush)
    plan = synthetic_plan(synthetic_osdmap(tools, crush, 3, pg_num), pg_num, None, None,
                          (None, None))
    report = verify_rules(tools, blocks, crush, topo, plan,
                          {"two_emit": R.naive_two_emit_steps(options.scope())})
    assert report.pair is not None
    return report.rules["two_emit"].failure_domain_violations, report.pair.movement_efficiency


def topology_row(tools: Tools, name: str, hosts: list[synthetic.Host], pg_num: int
                 ) -> dict[str, Any]:
    """One topology's figures (generate + verify, then the naive alternatives)."""
    binary = read_map(tools, synthetic.crush_text(hosts).encode())
    started = time.monotonic()
    result = generate(tools, binary, GenerateOptions(pool_ids=(1,), urgent_pool_ids=(2,),
                                                     pg_num=pg_num))
    total = time.monotonic() - started
    report = result.report
    shared, hybrid = report.rules[R.SHARED], report.rules[R.HYBRID]
    pair = report.pair
    assert pair is not None
    r1 = sum(r.duplicate_osd_pgs + r.failure_domain_violations for r in report.rules.values())
    r1 += report.rules[R.ISOLATED_NORMAL].short_pgs + shared.short_pgs
    crush = crushmap_from_dump(tools.dump(result.binary))
    positions = sorted({len(a.weight_set) for p in (1, 2) for a in crush.choose_args[p]})
    two_emit, roots_eff = naive_figures(tools, binary, pg_num)
    return {
        "topology": name, "osds": sum(len(h) for h in hosts), "pgs": shared.pgs,
        "r1_violations": r1, "inclusion": round(shared.inclusion, 4),
        "shared_same_as_isolated_pgs": shared.pgs - (shared.pgs_differing_from_isolated or 0),
        "hybrid_same_as_isolated_pgs": hybrid.pgs - (hybrid.pgs_differing_from_isolated or 0),
        "replicas_moved": pair.replicas_moved, "weight_set_positions": positions,
        "two_emit_fd_violations": two_emit, "different_roots_efficiency": round(roots_eff, 4),
        "generate_secs": round(result.seconds["generate"], 2),
        "verify_secs": round(result.seconds["verify"], 2),
        "total_secs": round(total, 2), "ok": report.ok, "failures": list(report.failures)}


def markdown(row: dict[str, Any], pg_num: int) -> str:
    line = (f"| {row['topology']} | {row['osds']} | {row['r1_violations']} "
            f"| {row['inclusion']:.3f} | {row['shared_same_as_isolated_pgs']}/{row['pgs']} "
            f"| {row['hybrid_same_as_isolated_pgs']}/{row['pgs']} | {row['replicas_moved']} "
            f"| {','.join(map(str, row['weight_set_positions']))} "
            f"| {row['two_emit_fd_violations']}/{pg_num} "
            f"| {row['different_roots_efficiency']:.3f} "
            f"| {row['generate_secs']:.2f} | {row['verify_secs']:.2f} |")
    if not row["ok"]:
        line += f"\n|  FAILED: {'; '.join(row['failures'])} |"
    return line


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--pg-num", type=int, default=1024)
    parser.add_argument("--skip-large", action="store_true")
    parser.add_argument("--out", type=Path, help="write the results as JSON here")
    args = parser.parse_args(argv)
    tools = Tools()
    print(HEADER)
    rows = []
    for name, build in TOPOLOGIES.items():
        if args.skip_large and name == LARGE:
            continue
        rows.append(topology_row(tools, name, build(), args.pg_num))
        print(markdown(rows[-1], args.pg_num), flush=True)
    failed = not all(r["ok"] for r in rows)
    large = next((r for r in rows if r["topology"] == LARGE), None)
    if large is not None:
        verdict = "ok" if large["total_secs"] <= LARGE_LIMIT_S else "TOO SLOW"
        failed = failed or large["total_secs"] > LARGE_LIMIT_S
        print(f"\n10,000-OSD map: generate + verify {large['total_secs']:.1f} s "
              f"(limit {LARGE_LIMIT_S:.0f} s): {verdict}")
    if args.out:
        write_json(args.out, {
            "pg_num": args.pg_num, "topologies": rows, "ok": not failed,
            "large_limit_secs": LARGE_LIMIT_S,
            "provenance": provenance.provenance(
                "bench.crush_bench", sys.argv[1:] if argv is None else argv,
                provenance.ceph_release([tools.osdmaptool, "--version"]),
                provenance.CURRENT_DESIGN)})
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
