"""bench/strategy_table.py at its smallest size: the JSON it writes carries
its provenance and a cell per volume and read mix, with the module's verdict."""
from __future__ import annotations

import json
from pathlib import Path

from bench.strategy_table import main


def test_the_table_at_its_smallest_size(tmp_path: Path) -> None:
    out = tmp_path / "table.json"
    assert main(["--volumes-tb", "0.01", "100", "--reads", "0", "0.7", "--out", str(out)]) == 0
    data = json.loads(out.read_text())
    prov = data["provenance"]
    assert {"commit", "date", "command", "machine", "ceph_release", "placement_design"} <= set(
        prov)
    cells = {(c["volume_tb"], c["read_fraction"]): c for c in data["cells"]}
    assert set(cells) == {(0.01, 0.0), (0.01, 0.7), (100, 0.0), (100, 0.7)}
    for c in cells.values():
        assert c["copy"]["time_to_isolation_secs"] == cells[(0.01, 0.0)]["copy"][
            "time_to_isolation_secs"]  # copy: independent of the data
        assert 1.0 <= c["copy"]["gain"] < 10 and 1.0 <= c["move"]["gain"] < 10
    assert cells[(100, 0.0)]["move"]["usable"] is False  # hours to isolate 100 TB
    assert cells[(100, 0.7)]["recommended"] == "copy"
