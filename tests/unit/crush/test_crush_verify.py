"""The verifier's checks on hand-made mappings."""

from crush_rules import rules as R
from crush_rules.verify import Layout, check_rule, movement, requirement_failures

# 4 hosts, each with an hdd (even ids) and an ssd (odd ids)
LAYOUT = Layout(
    device_class={o: ("hdd" if o % 2 == 0 else "ssd") for o in range(8)},
    domain_of_device={o: o // 2 for o in range(8)},
    normal_class="hdd",
    urgent_class="ssd",
    size=3,
    target_urgent_share=0.5,
    device_weight=dict.fromkeys(range(8), 65536),
)


def test_duplicate_osd_is_reported():
    report = check_rule(R.SHARED, {0: [0, 2, 0], 1: [0, 3, 4]}, LAYOUT, None)
    assert report.duplicate_osd_pgs == 1
    failures, _ = requirement_failures({R.SHARED: report}, None, True)
    assert any(f.startswith("R1") and "twice" in f for f in failures)


def test_two_replicas_in_one_host_are_reported():
    # osd.0 and osd.1 share host 0: the two-emit defect
    report = check_rule(R.HYBRID, {0: [1, 0, 2], 1: [3, 0, 4]}, LAYOUT, None, hybrid=True)
    assert report.failure_domain_violations == 1
    assert report.duplicate_osd_pgs == 0
    failures, _ = requirement_failures({R.HYBRID: report}, None, True)
    assert any("failure domain" in f for f in failures)


def test_isolation_inclusion_and_share():
    iso = check_rule(R.ISOLATED_NORMAL, {0: [0, 2, 4], 1: [0, 2, 5]}, LAYOUT, 3)
    assert iso.isolation_violations == 1
    shared = check_rule(R.SHARED, {0: [0, 3, 5], 1: [1, 3, 5]}, LAYOUT, 3)
    assert shared.inclusion == 0.5
    assert shared.urgent_share == round(5 / 6, 4)
    failures, _ = requirement_failures({R.ISOLATED_NORMAL: iso, R.SHARED: shared}, None, True)
    codes = {f.split()[0] for f in failures}
    assert {"R2", "R3", "R4"} <= codes


def test_short_pg_fails_normal_rules_only():
    short = {0: [0, 2]}
    normal = check_rule(R.ISOLATED_NORMAL, short, LAYOUT, None)
    urgent = check_rule(R.ISOLATED_URGENT, {0: [1, 3]}, LAYOUT, None)
    failures, warnings = requirement_failures(
        {R.ISOLATED_NORMAL: normal, R.ISOLATED_URGENT: urgent}, None, True)
    assert any("fewer replicas" in f for f in failures)
    assert any("fewer replicas" in w for w in warnings)


def test_movement_counts_sets_not_positions():
    iso = {0: [0, 2, 4], 1: [2, 4, 6]}
    # PG 0: one ssd replaces osd.4 (must move); PG 1: reordered only + one needless move
    shared = {0: [0, 2, 5], 1: [4, 2, 0]}
    pair = movement(iso, shared, LAYOUT)
    assert (pair.replicas_moved, pair.replicas_must_move) == (2, 1)
    assert pair.movement_efficiency == 0.5
    failures, _ = requirement_failures({}, pair, True)
    assert any(f.startswith("R5") for f in failures)


def test_hybrid_requires_urgent_primary_when_registered():
    report = check_rule(R.HYBRID, {0: [0, 3, 4], 1: [1, 2, 4]}, LAYOUT, 6, hybrid=True)
    assert report.isolation_violations == 1 and report.primary_urgent == 0.5
    failures, _ = requirement_failures({R.HYBRID: report}, None, True)
    assert any("urgent primary" in f for f in failures)
