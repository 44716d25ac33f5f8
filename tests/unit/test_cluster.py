"""Views of the mgr's dicts."""
from mgr_sla.core.cluster import (
    PoolInfo,
    cluster_view,
    mapping_change,
    pgs_acting_on,
    pgs_not_clean,
    pool_misplaced_ratios,
    pool_refusal,
)

OSD_MAP = {
    "epoch": 42, "crush_version": 7,
    "pools": [{"pool": 1, "pool_name": "fast", "crush_rule": 3, "size": 3},
              {"pool": 2, "pool_name": "bulk", "crush_rule": 1, "size": 3}],
    "osds": [{"osd": 0, "up": 1, "in": 1}, {"osd": 1, "up": 0, "in": 1},
             {"osd": 2, "up": 0, "in": 0}],
}
CRUSH = {
    "rules": [{"rule_id": 0, "rule_name": "replicated_rule"},
              {"rule_id": 1, "rule_name": "sla_isolated_normal"},
              {"rule_id": 3, "rule_name": "sla_isolated_urgent"}],
    "devices": [{"id": 0, "name": "osd.0", "class": "hdd"},
                {"id": 1, "name": "osd.1", "class": "ssd"},
                {"id": 2, "name": "osd.2", "class": "ssd"}],
    "choose_args": {"2": [], "-1": []},
}


def test_view():
    v = cluster_view(OSD_MAP, CRUSH)
    assert v.epoch == 42 and v.crush_version == 7
    assert v.pool_by_name("bulk").pool_id == 2 and v.pool_by_name("nope") is None
    assert v.rule_name(3) == "sla_isolated_urgent" and v.rule_name(9) == "rule 9"
    assert v.down_in_osds == (1,)
    assert v.osds_of_class("ssd") == {1, 2}
    assert v.choose_args_pools == {2}
    assert v.positional_choose_args == ()


def test_positional_weight_sets_are_found() -> None:
    flat = [{"bucket_id": -1, "weight_set": [[1.0, 0.0]], "ids": [-5, -6]}]
    positional = [{"bucket_id": -1, "weight_set": [[1.0, 0.0], [1.0, 1.0]]}]
    crush = {**CRUSH, "choose_args": {"2": flat, "3": positional, "-1": positional}}
    assert cluster_view(OSD_MAP, crush).positional_choose_args == (-1, 3)


def test_pg_views():
    stats = [
        {"pgid": "2.0", "acting": [0, 1], "state": "active+clean"},
        {"pgid": "2.1", "acting": [0, 4], "state": "active+remapped+backfilling"},
        {"pgid": "1.0", "acting": [1, 2], "state": "peering"},
    ]
    assert pgs_acting_on(stats, [2], frozenset({1, 2})) == 1
    assert pgs_acting_on(stats, [2], frozenset({7})) == 0
    # peering: the stats' acting set may be the new up set before pg_temp is in
    assert pgs_acting_on(stats, [1], frozenset({7})) == 1
    for state in ("activating+remapped", "remapped+peering", "unknown"):
        assert pgs_acting_on([{"pgid": "2.0", "acting": [0], "state": state}], [2],
                             frozenset({7})) == 1, state
    assert pgs_acting_on([{"pgid": "2.0", "acting": [0], "state": "active+recovery_wait+degraded"}],
                         [2], frozenset({7})) == 0
    assert pgs_not_clean(stats, [2]) == 1
    assert pgs_not_clean(stats, [1, 2]) == 2


def test_misplaced_ratio_per_pool():
    dump = {"pool_stats": [
        {"poolid": 2, "stat_sum": {"num_object_copies": 300, "num_objects_misplaced": 30}},
        {"poolid": 3, "stat_sum": {"num_object_copies": 0, "num_objects_misplaced": 0}}]}
    assert pool_misplaced_ratios(dump) == {2: 0.1, 3: 0.0}


def test_mapping_change_counts_new_replicas():
    before = {"2.0": [0, 2, 4], "2.1": [0, 2, 4]}
    after = {"2.0": [0, 2, 4], "2.1": [0, 5, 4]}
    assert mapping_change(before, after) == (1, 1)


def test_pg_bytes_by_seed():
    from mgr_sla.core.cluster import pg_bytes_by_seed
    stats = [{"pgid": "2.a", "stat_sum": {"num_bytes": 100}},
             {"pgid": "2.1f", "stat_sum": {"num_bytes": 5}},
             {"pgid": "12.0", "stat_sum": {"num_bytes": 7}}]
    assert pg_bytes_by_seed(stats, 2) == {10: 100, 31: 5}


def test_pgs_without_a_class_use_the_up_sets():
    from mgr_sla.core.cluster import pgs_without
    stats = [{"pgid": "2.0", "up": [0, 1, 3]}, {"pgid": "2.1", "up": [1, 3, 5]},
             {"pgid": "3.0", "up": [1, 3, 5]}]
    hdd = frozenset({0, 2, 4, 6})
    assert pgs_without(stats, [2], hdd) == ["2.1"]
    assert pgs_without(stats, [], hdd) == []


def test_scrubbing_and_snaptrim_count_as_settled() -> None:
    stats = [{"pgid": "2.0", "state": "active+clean+scrubbing+deep"},
             {"pgid": "2.1", "state": "active+clean+snaptrim"},
             {"pgid": "2.2", "state": "active+clean+laggy"},
             {"pgid": "2.3", "state": "active+remapped+backfilling"},
             {"pgid": "2.4", "state": "active+undersized+degraded"}]
    assert pgs_not_clean(stats, [2]) == 2


def test_pool_refusal_names_ec_root_and_failure_domain() -> None:
    def rule(rid: int, name: str, root: str, fd: str) -> dict:
        return {"rule_id": rid, "rule_name": name, "steps": [
            {"op": "take", "item_name": root}, {"op": "chooseleaf_firstn", "type": fd},
            {"op": "emit"}]}
    crush = {"rules": [rule(0, "replicated_rule", "default", "host"),
                       rule(1, "by_rack", "default", "rack"),
                       rule(2, "other_root", "fast~ssd", "host"),
                       rule(3, "sla_shared", "default", "host")]}
    assert pool_refusal(PoolInfo(1, "a", 0, 3), crush, "host") is None
    assert pool_refusal(PoolInfo(1, "a", 3, 3), crush, "host") is None
    assert "erasure-coded" in pool_refusal(PoolInfo(1, "ec", 0, 3, erasure=True), crush, "host")
    assert "failure domain 'rack'" in pool_refusal(PoolInfo(1, "r", 1, 3), crush, "host")
    assert pool_refusal(PoolInfo(1, "r", 1, 3), crush, "rack") is None
    assert "root 'fast'" in pool_refusal(PoolInfo(1, "o", 2, 3), crush, "host")


# A pool as Pacific's `ceph osd dump -f json` prints it (pg_pool_t::dump), trimmed.
PACIFIC_POOL = {
    "pool": 3, "pool_name": "bench.hdd", "flags": 1, "flags_names": "hashpspool", "type": 1,
    "size": 2, "min_size": 1, "crush_rule": 2, "object_hash": 2, "pg_autoscale_mode": "on",
    "pg_num": 125, "pg_placement_num": 120, "pg_placement_num_target": 32,
    "pg_num_target": 32, "pg_num_pending": 124, "quota_max_bytes": 1 << 40,
    "quota_max_objects": 0,
}


def test_pool_counts_from_the_dump() -> None:
    from mgr_sla.core.cluster import pool_info
    info = pool_info(PACIFIC_POOL)
    assert (info.min_size, info.pg_num, info.pg_num_pending, info.pg_num_target) == (1, 125,
                                                                                      124, 32)
    assert (info.pgp_num, info.pgp_num_target) == (120, 32)
    assert info.quota_max_bytes == 1 << 40 and info.pg_autoscale_mode == "on"
    assert info.merging and not info.splitting


def test_pool_counts_default_to_nothing_changing() -> None:
    """An older dump (or a test's dict) without the counts: nothing is known to
    merge or split, and the counts follow pg_num."""
    from mgr_sla.core.cluster import pool_info
    bare = pool_info({"pool": 1, "pool_name": "a", "crush_rule": 0, "size": 3})
    assert (bare.pg_num, bare.pg_num_pending, bare.pgp_num, bare.min_size) == (0, 0, 0, 0)
    assert not bare.merging and not bare.splitting and bare.pg_autoscale_mode == ""
    only_pg_num = pool_info({"pool": 1, "pool_name": "a", "crush_rule": 0, "size": 3,
                             "pg_num": 64, "pg_autoscale_mode": None})
    assert (only_pg_num.pg_num_pending, only_pg_num.pg_num_target,
            only_pg_num.pgp_num, only_pg_num.pgp_num_target) == (64, 64, 64, 64)
    assert not only_pg_num.merging and not only_pg_num.splitting


def test_pools_with_a_merge_or_a_split() -> None:
    from mgr_sla.core.cluster import pools_changing_pg_num, pools_with_pg_merge

    def entry(pid: int, **counts: int) -> dict:
        return {"pool": pid, "pool_name": f"p{pid}", "crush_rule": 0, "size": 3, **counts}
    osd_map = {"pools": [
        entry(1, pg_num=64, pg_num_target=64, pg_num_pending=64, pg_placement_num=64),
        entry(2, pg_num=64, pg_num_target=32, pg_num_pending=64, pg_placement_num=40),
        entry(3, pg_num=64, pg_num_target=64, pg_num_pending=63, pg_placement_num=63),
        entry(4, pg_num=64, pg_num_target=128, pg_num_pending=64, pg_placement_num=64),
        entry(5, pg_num=128, pg_num_target=128, pg_num_pending=128, pg_placement_num=64,
              pg_placement_num_target=128),
        entry(6)]}
    view = cluster_view(osd_map, CRUSH)
    assert pools_with_pg_merge(view) == {2, 3}
    assert pools_changing_pg_num(view) == {2: "merge", 3: "merge", 4: "split", 5: "split"}
