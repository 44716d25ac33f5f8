"""An EC pool's profile from the osd_map dump, and what keeps it from fitting."""
from __future__ import annotations

import pytest

from mgr_sla.core.cluster import EcProfile, PoolInfo, ec_profile, pool_info
from mgr_sla.core.ec_profile import EcScope, ec_misfit

# as `ceph osd dump -f json` has them: every value a string
OSD_MAP = {"erasure_code_profiles": {
    "default": {"k": "2", "m": "2", "plugin": "jerasure", "technique": "reed_sol_van"},
    "ec21": {"k": "2", "m": "1", "plugin": "isa", "crush-failure-domain": "host",
             "crush-device-class": "hdd"},
    "local": {"k": "4", "m": "2", "l": "3", "plugin": "lrc"},
    "bad": {"k": "two", "m": "1"},
}}
SCOPE = EcScope("host", "hdd", "ssd", normal_domains=5, urgent_domains=2)
EC = PoolInfo(7, "bulk", 4, 3, erasure=True, ec_profile="ec21")


def test_the_pool_entry_names_its_profile_and_the_map_gives_k_and_m() -> None:
    info = pool_info({"pool": 7, "pool_name": "bulk", "crush_rule": 4, "size": 3, "type": 3,
                      "erasure_code_profile": "ec21"})
    assert info.erasure and info.ec_profile == "ec21"
    assert ec_profile(OSD_MAP, "ec21") == EcProfile("ec21", 2, 1, "isa", "host", "hdd")
    # Ceph's defaults where the profile says nothing
    assert ec_profile(OSD_MAP, "default") == EcProfile("default", 2, 2, "jerasure", "host", "")
    assert ec_profile(OSD_MAP, "nosuch") is None and ec_profile({}, "ec21") is None
    assert ec_profile(OSD_MAP, "bad").k == 0  # type: ignore[union-attr]


def test_a_profile_that_fits_has_no_misfit() -> None:
    assert ec_misfit(EC, ec_profile(OSD_MAP, "ec21"), SCOPE) is None
    assert ec_misfit(EC, ec_profile(OSD_MAP, "default"), SCOPE) is None  # 4 of 5 hosts


@pytest.mark.parametrize("profile,scope,words", [
    (None, SCOPE, "its profile 'ec21' is not in the osd_map"),
    (EcProfile("local", 4, 2, "lrc", "host", ""), SCOPE, "plugin lrc does not read"),
    (EcProfile("s", 4, 2, "shec", "host", ""), SCOPE, "plugin shec does not read"),
    (EcProfile("r", 2, 1, "jerasure", "rack", ""), SCOPE, "placed by rack; the regions use host"),
    (EcProfile("c", 2, 1, "jerasure", "host", "nvme"), SCOPE, "on class nvme; the normal"),
    (EcProfile("w", 4, 2, "jerasure", "host", ""), SCOPE, "puts 6 shards in 6 hosts; only 5"),
    (EcProfile("z", 2, 0, "jerasure", "host", ""), SCOPE, "needs k >= 1 and m >= 1"),
    (EcProfile("n", 2, 1, "jerasure", "host", ""),
     EcScope("host", "hdd", "ssd", 5, 0), "no host holds ssd"),
])
def test_what_keeps_an_ec_pool_from_sharing_is_named(profile: EcProfile | None, scope: EcScope,
                                                     words: str) -> None:
    why = ec_misfit(EC, profile, scope)
    assert why is not None and words in why and "pool 'bulk'" in why, why
