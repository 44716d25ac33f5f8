"""Benchmark the SLA CRUSH rules on synthetic topologies; prints a Markdown table.

Usage: python bench/crush_bench.py [--pg-num 1024] [--skip-large]

Per topology: generate (with calibration) and verify on --pg-num PGs of a
synthetic pool, then map two naive alternatives for comparison: the two-emit
hybrid rule and the isolated/Map_all pair drawn from different roots.
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
    "8 hosts x 3 hdd, 2 with 1 ssd": synthetic.few_ssd,
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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--pg-num", type=int, default=1024)
    parser.add_argument("--skip-large", action="store_true")
    args = parser.parse_args()
    tools = Tools()
    print("| topology | OSDs | tail | target urgent share | urgent share | ratio | inclusion "
          "| moved / must move | efficiency | dup+fd violations | hybrid primary urgent "
          "| urgent load cv (noise) | two-emit fd violations | different-roots efficiency "
          "| generate s | verify s |")
    print("|" + "---|" * 16)
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
        shared = report.rules[R.SHARED]
        pair = report.pair
        assert pair is not None
        defects = sum(r.duplicate_osd_pgs + r.failure_domain_violations
                      for r in report.rules.values())
        two_emit, roots_eff = naive_figures(tools, binary, pg_num)
        osds = sum(len(h) for h in hosts)
        print(
            f"| {name} | {osds} | {result.params.tail} | {report.target_urgent_share:.4f} "
            f"| {shared.urgent_share:.4f} | {shared.urgent_share_ratio:.3f} "
            f"| {shared.inclusion:.3f} | {pair.replicas_moved} / {pair.replicas_must_move} "
            f"| {pair.movement_efficiency:.3f} | {defects} "
            f"| {report.rules[R.HYBRID].primary_urgent:.3f} "
            f"| {shared.urgent_load_cv} ({shared.urgent_load_noise_cv}) "
            f"| {two_emit}/{pg_num} | {roots_eff:.3f} "
            f"| {result.seconds['generate']:.1f} | {result.seconds['verify']:.1f} |"
        )
        if not report.ok:
            print(f"|  FAILED: {'; '.join(report.failures)} |")
        if "10,000" in name and total > 30:
            print(f"| 10,000-OSD generation + verification took {total:.1f} s > 30 s |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
