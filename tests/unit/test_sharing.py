"""What sharing does to PG health: a copy pool's missing urgent copies are by
design until placed; more missing copies than that is real degradation."""
from __future__ import annotations

from mgr_sla.core.sharing import SharingProgress, sharing_health

MIB = 2**20


def test_a_copy_pool_placing_its_copy_is_named_with_what_is_left() -> None:
    placing, beyond = sharing_health([SharingProgress("bulk", 1000, 400, 4 * MIB, 100 * MIB)])
    assert beyond == []
    assert placing == ["pool bulk: 400 object copies (~1.56 GiB) left to place on the urgent "
                       "region, about 16 s at 100 MiB/s; its PGs are undersized by design "
                       "until then"]


def test_missing_copies_beyond_the_extra_copy_are_a_real_alarm() -> None:
    placing, beyond = sharing_health([SharingProgress("bulk", 1000, 1300, 4 * MIB)])
    assert len(placing) == 1 and "1000 object copies" in placing[0] and "about" not in placing[0]
    assert beyond == ["pool bulk: 300 object copies missing beyond the ones sharing adds "
                      "(an OSD down or out, or a PG an OSD does not take: 'ceph pg ls-by-pool bulk "
                      "degraded')"]


def test_a_move_pool_adds_no_copy_so_any_missing_one_is_real() -> None:
    placing, beyond = sharing_health([SharingProgress("moved", 0, 7, 4 * MIB)])
    assert placing == [] and len(beyond) == 1 and "7 object copies" in beyond[0]
    assert sharing_health([SharingProgress("quiet", 1000, 0, 4 * MIB)]) == ([], [])
