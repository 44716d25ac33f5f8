"""Benchmark the SLA CRUSH rules on synthetic topologies; prints a Markdown table.

Usage: python bench/crush_bench.py [--pg-num 1024] [--skip-large]

Per topology: generate (flat weight sets) and verify on --pg-num PGs of a
synthetic pool: R1 violations (duplicate OSD, two replicas in one failure
domain, short PGs; all rules), sla_shared's normal inclusion, the PGs that
sla_shared and sla_hybrid map exactly like sla_isolated_normal, the replicas an
isolated <-> shared switch moves; then map two naive alternatives for
comparison: the two-emit hybrid rule and the isolated/Map_all pair drawn from
different roots (no weight sets).  Exit 1 when a requirement fails or the
10,000-OSD map takes more than 30 s.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from crush_rules import rules as R  # noqa: E402
from crush_rules import synthetic  # noqa: E402
from crush_rules.crushmap import crushmap_from_dump  # noqa: E402
from crush_rules.crushtext import parse_blocks, with_exact_weights  # noqa: E402
from crush_rules.generate import (  # noqa: E402
    GenerateOptions,
    generate,
    read_map,
    synthetic_osdmap,
    synthetic_plan,
    verify_rules,
)
from crush_rules.tools import Tools  # noqa: E402
from crush_rules.topology import analyse  # noqa: E402

TOPOLOGIES: dict[str, Callable[[], list[synthetic.Host]]] = {
    "paper 4x(1 hdd+1 ssd)": synthetic.paper,
    "8 hosts x 3 hdd, 3 with 1 ssd": synthetic.few_ssd,
    "disjoint 6 hdd + 3 ssd hosts": synthetic.disjoint,
    "disjoint 4 hdd + 4 ssd hosts": synthetic.disjoint_large_ssd,
    "40 uneven hosts": synthetic.uneven,
    "10,000 OSDs (400 hosts)": synthetic.large,
}


def naive_figures(tools: Tools, binary: bytes, pg_num: int) -> tuple[int, float]:
    """(PGs with two replicas in one host under two-emit, efficiency of different roots)."""
    crush = crushmap_from_dump(tools.dump(binary))
    options = GenerateOptions()
    topo = analyse(crush, options.placement(), options.size)
    blocks = with_exact_weights(parse_blocks(tools.decompile(binary)), crush)
    plan = synthetic_plan(synthetic_osdmap(tools, crush, 3, pg_num), pg_num, None, None,
                          (None, None))
    report = verify_rules(tools, blocks, crush, topo, plan,
                          {"two_emit": R.naive_two_emit_steps(options.placement())})
    assert report.pair is not None
    return report.rules["two_emit"].failure_domain_violations, report.pair.movement_efficiency


LARGE_LIMIT_S = 30.0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--pg-num", type=int, default=1024)
    parser.add_argument("--skip-large", action="store_true")
    args = parser.parse_args()
    tools = Tools()
    failed = False
    print("| topology | OSDs | R1 violations | inclusion | shared = isolated PGs "
          "| hybrid = isolated PGs | replicas moved isolated<->shared | weight-set positions "
          "| two-emit fd violations | different-roots efficiency | generate s | verify s |")
    print("|" + "---|" * 12)
    large_total: float | None = None
    for name, build in TOPOLOGIES.items():
        if args.skip_large and "10,000" in name:
            continue
        hosts = build()
        binary = read_map(tools, synthetic.crush_text(hosts).encode())
        pg_num = args.pg_num
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
        osds = sum(len(h) for h in hosts)
        same_shared = shared.pgs - (shared.pgs_differing_from_isolated or 0)
        same_hybrid = hybrid.pgs - (hybrid.pgs_differing_from_isolated or 0)
        print(
            f"| {name} | {osds} | {r1} | {shared.inclusion:.3f} "
            f"| {same_shared}/{shared.pgs} | {same_hybrid}/{hybrid.pgs} "
            f"| {pair.replicas_moved} | {','.join(map(str, positions))} "
            f"| {two_emit}/{pg_num} | {roots_eff:.3f} "
            f"| {result.seconds['generate']:.2f} | {result.seconds['verify']:.2f} |"
        )
        if not report.ok:
            failed = True
            print(f"|  FAILED: {'; '.join(report.failures)} |")
        if "10,000" in name:
            large_total = total
    if large_total is not None:
        verdict = "ok" if large_total <= LARGE_LIMIT_S else "TOO SLOW"
        failed = failed or large_total > LARGE_LIMIT_S
        print(f"\n10,000-OSD map: generate + verify {large_total:.1f} s "
              f"(limit {LARGE_LIMIT_S:.0f} s): {verdict}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
