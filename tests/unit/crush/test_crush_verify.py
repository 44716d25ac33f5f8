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
)


def test_duplicate_osd_is_reported():
    report = check_rule(R.SHARED, {0: [0, 2, 0], 1: [0, 3, 4]}, LAYOUT, None)
    assert report.duplicate_osd_pgs == 1
    failures, _ = requirement_failures({R.SHARED: report}, None, True)
    assert any(f.startswith("R1") and "twice" in f for f in failures)


def test_two_replicas_in_one_host_are_reported():
    # osd.0 and osd.1 share host 0: the two-emit defect
    report = check_rule(R.HYBRID, {0: [1, 0, 2], 1: [3, 0, 4]}, LAYOUT, None)
    assert report.failure_domain_violations == 1
    assert report.duplicate_osd_pgs == 0
    failures, _ = requirement_failures({R.HYBRID: report}, None, True)
    assert any("failure domain" in f for f in failures)


def test_isolation_inclusion_and_identity_with_isolated():
    iso = check_rule(R.ISOLATED_NORMAL, {0: [0, 2, 4], 1: [0, 2, 5]}, LAYOUT, 3)
    assert iso.isolation_violations == 1
    reference = {0: [0, 2, 4], 1: [2, 4, 6]}
    shared = check_rule(R.SHARED, {0: [0, 3, 5], 1: [1, 3, 5]}, LAYOUT, 3, isolated=reference)
    assert shared.inclusion == 0.5
    assert shared.pgs_differing_from_isolated == 2
    failures, _ = requirement_failures({R.ISOLATED_NORMAL: iso, R.SHARED: shared}, None, True)
    codes = {f.split()[0] for f in failures}
    assert {"R2", "R3", "R4"} <= codes
    assert any(f.startswith("R4") and "2/2 PGs map differently" in f for f in failures)


def test_order_counts_for_identity_and_missing_pgs_differ():
    reference = {0: [0, 2, 4], 1: [2, 4, 6]}
    same = check_rule(R.SHARED, {0: [0, 2, 4], 1: [2, 4, 6]}, LAYOUT, 3, isolated=reference)
    assert same.pgs_differing_from_isolated == 0
    reordered = check_rule(R.SHARED, {0: [2, 0, 4], 1: [2, 4, 6]}, LAYOUT, 3, isolated=reference)
    assert reordered.pgs_differing_from_isolated == 1  # another primary is another mapping
    short = check_rule(R.SHARED, {0: [0, 2, 4]}, LAYOUT, 3, isolated=reference)
    assert short.pgs_differing_from_isolated == 1
    assert check_rule(R.ISOLATED_NORMAL, reference, LAYOUT, 3).pgs_differing_from_isolated is None


def test_short_pg_fails_normal_rules_only():
    short = {0: [0, 2]}
    normal = check_rule(R.ISOLATED_NORMAL, short, LAYOUT, None)
    urgent = check_rule(R.ISOLATED_URGENT, {0: [1, 3]}, LAYOUT, None)
    failures, warnings = requirement_failures(
        {R.ISOLATED_NORMAL: normal, R.ISOLATED_URGENT: urgent}, None, True)
    assert any("fewer replicas" in f for f in failures)
    assert any("fewer replicas" in w for w in warnings)


def test_movement_counts_sets_not_positions_and_must_be_zero():
    iso = {0: [0, 2, 4], 1: [2, 4, 6]}
    # PG 0: one ssd replaces osd.4; PG 1: reordered only + one hdd move
    shared = {0: [0, 2, 5], 1: [4, 2, 0]}
    pair = movement(iso, shared, LAYOUT)
    assert (pair.replicas_moved, pair.replicas_must_move) == (2, 1)
    assert pair.movement_efficiency == 0.5
    failures, _ = requirement_failures({}, pair, True)
    assert any(f.startswith("R5") and "moves 2 replicas" in f for f in failures)
    reordered = movement(iso, {0: [4, 2, 0], 1: [6, 4, 2]}, LAYOUT)
    assert reordered.replicas_moved == 0 and reordered.movement_efficiency == 1.0
    assert requirement_failures({}, reordered, True) == ([], [])


def test_hybrid_must_match_isolated_only_when_it_has_its_weight_set():
    reference = {0: [0, 2, 4], 1: [2, 4, 6]}
    report = check_rule(R.HYBRID, {0: [1, 2, 4], 1: [2, 4, 6]}, LAYOUT, 6, isolated=reference)
    assert report.pgs_differing_from_isolated == 1 and report.isolation_violations is None
    failures, _ = requirement_failures({R.HYBRID: report}, None, True)
    assert any(f.startswith("R4 sla_hybrid (pool 6)") for f in failures)
    failures, warnings = requirement_failures({R.HYBRID: report}, None, False)
    assert not failures and any("no choose_args" in w for w in warnings)
