"""When the integration harness counts a cluster as settled (harness.settle)."""
from __future__ import annotations

from typing import Any

from harness.settle import Mapped, parse_mapping, unsettled

DUMP = """osdmaptool: osdmap file 'm'
pool 2 pg_num 2
2.0 raw ([0,4,1], p0) up ([0,4,1], p0) acting ([0,4,1], p0)
2.1 raw ([5,2147483647,3], p5) up ([5,2147483647,3], p5) acting ([3,5,2], p3)
#osd\tcount\tfirst\tprimary\tc wt\twt
osd.0\t1\t1\t1\t1\t1
"""


def stats(pgid: str, up: list[int], acting: list[int], epoch: int,
          state: str = "active+clean") -> dict[str, Any]:
    return {"pgid": pgid, "up": up, "acting": acting, "state": state,
            "reported_epoch": f"{epoch}'12"}


def test_the_dump_gives_up_and_acting_with_holes() -> None:
    assert parse_mapping(DUMP) == {
        "2.0": Mapped((0, 4, 1), (0, 4, 1)),
        "2.1": Mapped((5, 2147483647, 3), (3, 5, 2))}


def test_an_idle_pg_that_reported_long_ago_on_the_same_sets_is_settled() -> None:
    mapping = parse_mapping(DUMP)
    pgs = [stats("2.0", [0, 4, 1], [0, 4, 1], 10),
           stats("2.1", [5, 2147483647, 3], [3, 5, 2], 12)]
    assert unsettled(pgs, mapping, {0: 3, 1: 3, 3: 5, 4: 3, 5: 3}) == {}


def test_a_pg_whose_map_moved_it_is_not_settled_though_its_stats_say_clean() -> None:
    pgs = [stats("2.0", [0, 4, 2], [0, 4, 2], 10),
           stats("2.1", [5, 2147483647, 3], [3, 5, 2], 12)]
    why = unsettled(pgs, parse_mapping(DUMP), {})
    assert list(why) == ["2.0"] and "the map has up [0, 4, 1]" in why["2.0"]


def test_a_pg_that_reported_before_an_osd_of_it_restarted_is_not_settled() -> None:
    pgs = [stats("2.0", [0, 4, 1], [0, 4, 1], 10),
           stats("2.1", [5, 2147483647, 3], [3, 5, 2], 12)]
    why = unsettled(pgs, parse_mapping(DUMP), {4: 11})
    assert list(why) == ["2.0"] and "started at e11" in why["2.0"]


def test_a_pg_not_clean_or_without_stats_is_not_settled() -> None:
    pgs = [stats("2.0", [0, 4, 1], [0, 4, 1], 10, "active+remapped+backfilling")]
    why = unsettled(pgs, parse_mapping(DUMP), {})
    assert why == {"2.0": "active+remapped+backfilling", "2.1": "no stats yet"}


def test_stats_of_a_pg_the_map_no_longer_has_are_not_settled() -> None:
    pgs = [stats("2.0", [0, 4, 1], [0, 4, 1], 10),
           stats("2.1", [5, 2147483647, 3], [3, 5, 2], 12),
           stats("2.2", [1], [1], 12)]
    assert unsettled(pgs, parse_mapping(DUMP), {}) == {"2.2": "not in the map of now"}
