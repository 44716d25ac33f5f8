"""The mon's PG projection on a size change, per release, before the module
raises a copy pool's size."""
from __future__ import annotations

from mgr_sla.core.cluster import cluster_view
from mgr_sla.core.mon_projection import PoolPgs, SizeRaise, counts_for, size_refusals

# 10 in OSDs: 8 hdd + 2 ssd; rule 1 takes hdd, rule 2 (a copy rule) hdd and ssd
POOLS = [PoolPgs(1, 64, 3, 1), PoolPgs(2, 64, 2, 1), PoolPgs(3, 32, 2, 1)]
UNDER = {1: 8, 2: 10}.__getitem__


def test_releases_run_their_own_count() -> None:
    assert counts_for("pacific") == (True, False)
    assert counts_for("reef") == (False, True) and counts_for("Tentacle") == (False, True)
    assert counts_for("quincy") == (True, True) and counts_for("v99") == (True, True)


def test_raises_are_taken_in_order_and_a_refused_one_does_not_count() -> None:
    # cluster-wide: 192 + 128 + 64 = 384 now; b to 3 adds 64, c to 3 adds 32
    raises = [SizeRaise(2, "b", 3, 2), SizeRaise(3, "c", 3, 2)]
    assert size_refusals(POOLS, raises, 48, 10, UNDER, "pacific") == {}  # 480 <= 480
    refused = size_refusals(POOLS, raises, 45, 10, UNDER, "pacific")  # 450
    assert list(refused) == [3] and "480 PG replicas projected" in refused[3]
    assert "'osd pool set c size 3' (ERANGE)" in refused[3] and "x 10 in OSDs = 450" in refused[3]
    # b refused: c alone (384 + 32 = 416) still goes
    assert list(size_refusals(POOLS, raises, 44, 10, UNDER, "pacific")) == [2]
    # b kept isolated for another reason: checked, but not counted for c
    unsent = [SizeRaise(2, "b", 3, 2, sent=False), raises[1]]
    assert size_refusals(POOLS, unsent, 45, 10, UNDER, "pacific") == {}
    assert list(size_refusals(POOLS, unsent, 44, 10, UNDER, "pacific")) == [2]


def test_per_rule_counts_only_the_rule_s_pools_over_the_osds_under_its_takes() -> None:
    raises = [SizeRaise(2, "b", 3, 2), SizeRaise(3, "c", 3, 2)]
    # on rule 2: 192 then 288 over 10 OSDs; the cluster-wide total does not count
    assert size_refusals(POOLS, raises, 29, 10, UNDER, "reef") == {}
    refused = size_refusals(POOLS, raises, 28, 10, UNDER, "reef")
    assert list(refused) == [3] and "under its rule's takes = 280" in refused[3]
    # Quincy: both counts must pass
    assert list(size_refusals(POOLS, raises, 29, 10, UNDER, "quincy")) == [2, 3]
    # the mon assumes 3 OSDs at least
    assert "x 3 in OSDs under" in size_refusals(POOLS, raises[:1], 10, 10,
                                                 {2: 1}.__getitem__, "reef")[2]


def test_the_view_counts_in_osds_under_a_rule_s_class_takes() -> None:
    osd_map = {"osds": [{"osd": o, "in": int(o != 3), "up": 1} for o in range(6)], "pools": []}
    crush = {"devices": [{"id": o, "class": "ssd" if o >= 4 else "hdd"} for o in range(6)],
             "rules": [{"rule_id": 0, "rule_name": "plain",
                        "steps": [{"op": "take", "item": -1, "item_name": "default"}]},
                       {"rule_id": 5, "rule_name": "sla_copy_2",
                        "steps": [{"op": "take", "item": -6, "item_name": "default~ssd"},
                                  {"op": "emit"},
                                  {"op": "take", "item": -2, "item_name": "default~hdd"}]},
                       {"rule_id": 6, "rule_name": "ssd_only",
                        "steps": [{"op": "take", "item": -6, "item_name": "default~ssd"}]}]}
    view = cluster_view(osd_map, crush)
    assert view.in_osds == {0, 1, 2, 4, 5}
    assert (view.in_under_takes(0), view.in_under_takes(5), view.in_under_takes(6)) == (5, 5, 2)


def test_a_copy_the_mon_could_not_drop_with_a_domain_out_is_never_shared() -> None:
    """Up to Pacific the mon counts a size decrease too: a raise that fits only
    while every OSD is in could trap the copy once a host's OSDs are out."""
    raises = [SizeRaise(2, "b", 3, 2)]
    assert size_refusals(POOLS, raises, 48, 10, UNDER, "pacific") == {}  # 448 <= 480
    trapped = size_refusals(POOLS, raises, 48, 10, UNDER, "pacific", domain_osds=2)
    assert "its way back, 'osd pool set b size 2'" in trapped[2]
    assert "448 PG replicas projected, over mon_max_pg_per_osd 48 x 8 in OSDs left with " \
           "the largest failure domain out = 384" in trapped[2]
    assert "(ERANGE)" not in trapped[2]
    assert size_refusals(POOLS, raises, 56, 10, UNDER, "pacific", domain_osds=2) == {}
    # Tentacle counts increases only (measured): no room kept for the way back
    assert size_refusals(POOLS, raises, 48, 10, UNDER, "tentacle", domain_osds=2) == {}
