"""The map reader converts once per epoch, and again when the region spec changes."""
from harness.fake_mgr import FakeCluster
from mgr_sla.core.maps import RegionSpec
from mgr_sla.shell.map_reader import MapReader


def test_a_changed_region_spec_converts_the_same_maps_again():
    cluster = FakeCluster()
    gets: list[str] = []

    def get(what: str):
        gets.append(what)
        return cluster.get(what)

    reader = MapReader(get)
    hdd_normal = RegionSpec("host", "hdd", "ssd")
    first = reader.current(0.0, hdd_normal)
    assert first.regions.normal_class == "hdd"
    assert reader.current(1.0, hdd_normal) is first  # same epoch, same spec: cached
    converted = len(gets)
    swapped = reader.current(2.0, RegionSpec("host", "ssd", "hdd"))
    assert len(gets) > converted and swapped is not first
    assert swapped.regions.normal_class == "ssd" and swapped.regions.urgent_class == "hdd"
    assert {o for o, s in swapped.regions.osds.items() if s.cls == "ssd"} == {1, 3, 5, 7}
