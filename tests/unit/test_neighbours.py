"""The other mgr modules on the managed pools: the balancer's pool list, the
classes of foreign upmap entries, the autoscaler's changes."""
from mgr_sla.core.cluster import PoolInfo
from mgr_sla.core.neighbours import (
    BalancerView,
    balancer_exclusion,
    balancer_health,
    balancer_release,
    balancer_view,
    classify_entries,
    module_option_default,
    operator_intent,
    parse_pool_ids,
)
from mgr_sla.core.upmap.regions import OsdPlace, Regions

POOLS = [1, 2, 3, 4, 5]
MANAGED = [2, 3]


def upmap(pool_ids: str = "", mode: str = "upmap", active: bool = True) -> BalancerView:
    return BalancerView(mode, active, pool_ids)


def test_an_unset_option_takes_the_default_the_mgr_map_declares() -> None:
    mgr_map = {"available_modules": [
        {"name": "alerts", "module_options": {"mode": {"default_value": "x"}}},
        {"name": "balancer", "module_options": {
            "mode": {"name": "mode", "default_value": "upmap"},
            "active": {"name": "active", "default_value": "True"}}}]}
    assert module_option_default(mgr_map, "balancer", "mode") == "upmap"
    assert module_option_default(mgr_map, "balancer", "active") == "True"
    assert module_option_default(mgr_map, "balancer", "pool_ids") is None
    assert module_option_default(mgr_map, "nosuch", "mode") is None
    assert module_option_default(None, "balancer", "mode") is None
    assert module_option_default({}, "balancer", "mode") is None
    # as the guard reads it: "True" is on, the mode moves data
    view = balancer_view({"mode": "upmap", "active": "True"}, None)
    assert view.active and view.moves_data


def test_pool_ids_parse_like_the_balancer_writes_them() -> None:
    assert parse_pool_ids("") == () and parse_pool_ids(None) == ()
    assert parse_pool_ids("3,1, 2,,x") == (1, 2, 3)
    assert balancer_view({"active": True, "mode": "upmap"}, None) == upmap()
    assert balancer_view({"active": "false", "mode": "none"}, "4") == upmap("4", "none", False)


def test_an_empty_list_becomes_every_other_pool() -> None:
    """The default: every pool. `balancer pool rm` would do nothing there; the
    list of the unmanaged pools is what leaves the managed ones out."""
    first = balancer_exclusion(upmap(""), POOLS, MANAGED)
    assert first.write == "1,4,5" and first.intent == "" and first.written == "1,4,5"
    assert first.warning is None and first.reaches == ()
    # next time: already in force, nothing to write; a new pool joins the list
    again = balancer_exclusion(upmap("1,4,5"), POOLS, MANAGED, first.intent, first.written)
    assert again.write is None and again.intent == ""
    grown = balancer_exclusion(upmap("1,4,5"), POOLS + [6], MANAGED, first.intent,
                               first.written)
    assert grown.write == "1,4,5,6" and grown.intent == ""
    # a pool becomes managed, another is released
    moved = balancer_exclusion(upmap("1,4,5"), POOLS, [2, 4], first.intent, first.written)
    assert moved.write == "1,3,5"
    assert balancer_release("1,4,5", first.intent, first.written) == ""


def test_an_explicit_list_loses_only_the_managed_pools() -> None:
    act = balancer_exclusion(upmap("1,2,4"), POOLS, MANAGED)
    assert act.write == "1,4" and act.intent == "1,2,4"
    # a list without managed pools is left as it is and never recorded
    alone = balancer_exclusion(upmap("1,4"), POOLS, MANAGED)
    assert alone.write is None and alone.written is None
    assert balancer_release("1,4", act.intent, act.written) == "1,2,4"
    assert balancer_release("1,4", None, None) is None


def test_changes_made_by_someone_else_are_the_operators() -> None:
    # added a pool to our list: still 'every pool' for release
    assert operator_intent("1,4,5,9", "", "1,4,5") == ""
    # took one out: their explicit list from now on
    assert operator_intent("1,4", "", "1,4,5") == "1,4"
    # reset to the default
    assert operator_intent("", "1,2,4", "1,4") == ""
    # edited an explicit list: their edit plus the managed pools we had taken out
    assert operator_intent("1,5", "1,2,4", "1,4") == "1,2,5"
    act = balancer_exclusion(upmap("1,5"), POOLS, MANAGED, "1,2,4", "1,4")
    assert act.write is None and act.intent == "1,2,5" and act.written == "1,5"
    # someone put a managed pool back: taken out again
    back = balancer_exclusion(upmap("1,2,4"), POOLS, MANAGED, "1,2,4", "1,4")
    assert back.write == "1,4"


def test_every_pool_managed_cannot_be_listed_out_so_it_warns() -> None:
    act = balancer_exclusion(upmap(""), [2, 3], MANAGED, names={2: "bulk", 3: "fast"})
    assert act.write is None and act.reaches == (2, 3)
    assert "ceph balancer off" in act.warning and "bulk, fast" in act.warning
    health = balancer_health(act)
    assert health["SLA_BALANCER_CONFLICT"]["count"] == 2
    assert balancer_health(balancer_exclusion(upmap(""), POOLS, MANAGED)) == {}
    # a list of only managed pools: the same (an empty list would mean every pool)
    assert balancer_exclusion(upmap("2"), POOLS, MANAGED).reaches == (2,)


def test_a_balancer_in_mode_none_is_left_alone_even_off_it_counts() -> None:
    assert balancer_exclusion(upmap("", "none"), POOLS, MANAGED).write is None
    # off but in upmap mode: `balancer on` would start a round at once
    assert balancer_exclusion(upmap("", active=False), POOLS, MANAGED).write == "1,4,5"
    assert balancer_exclusion(upmap("", "upmap-read"), POOLS, MANAGED).write == "1,4,5"


def test_entries_are_classified() -> None:
    osds = {0: OsdPlace("hdd", -1, 1.0), 2: OsdPlace("hdd", -2, 1.0),
            4: OsdPlace("hdd", -3, 1.0), 6: OsdPlace("hdd", -4, 1.0),
            1: OsdPlace("ssd", -1, 1.0), 3: OsdPlace("ssd", -2, 1.0),
            7: OsdPlace("ssd", -4, 1.0)}
    regions = Regions("hdd", "ssd", osds)
    current = {"1.0": ((4, 6),),          # balancer: hdd -> hdd, harmless
               "1.1": ((4, 7),),          # ours: onto an ssd
               "1.2": ((4, 1),),          # onto an ssd beside osd.0's host: conflicts
               "1.3": ((4, 6), (2, 3))}   # both kinds
    up = {"1.0": [0, 2, 6], "1.1": [0, 2, 7], "1.2": [0, 2, 1], "1.3": [0, 3, 6]}
    found = classify_entries(up, current, regions)
    assert (found.harmless, found.ours) == (2, 2)
    assert found.conflicting == ("1.2",)


def test_autoscaler_view_names_changes_under_way() -> None:
    from mgr_sla.core.neighbours import autoscaler_view
    pools = {2: PoolInfo(2, "bulk", 1, 3, pg_num=64, pg_num_pending=64, pg_num_target=32,
                         pgp_num=40, pgp_num_target=32, pg_autoscale_mode="on"),
             3: PoolInfo(3, "fast", 1, 3)}
    view = autoscaler_view(pools, [2, 3, 9])
    assert view[2]["changing"] == "merge" and view[2]["pg_autoscale_mode"] == "on"
    assert view[3] == {"pg_autoscale_mode": None, "pg_num": None, "pg_num_target": None,
                       "pgp_num": None, "changing": None}
    assert 9 not in view
