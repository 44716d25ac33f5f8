"""The PG limit each urgent OSD runs with, read from the OSD itself."""
from __future__ import annotations

import json
import logging
from typing import Any

from mgr_sla.core.pg_slots import PgLimit
from mgr_sla.shell.mgr_port import TimedResult
from mgr_sla.shell.osd_limits import OsdLimits, parse_value


class Port:
    """The calls OsdLimits makes of the mgr: `config get` answered per OSD."""

    def __init__(self, answers: dict[int, dict[str, str]], mgr_value: Any = 250,
                 config_db: dict[str, Any] | None = None) -> None:
        self.answers = answers
        self.mgr_value = mgr_value
        self.config_db = config_db or {}
        self.asked: list[tuple[str, str]] = []
        self.log = logging.getLogger("test")

    def send_command(self, result: Any, svc: str, who: str, command: str, tag: str) -> None:
        cmd = json.loads(command)
        self.asked.append((who, cmd["var"]))
        value = self.answers.get(int(who), {}).get(cmd["var"])
        if value is not None:  # an OSD that does not answer leaves it pending
            result.complete(0, json.dumps({cmd["var"]: value}), "")

    def get_ceph_option(self, name: str) -> Any:
        return {"mon_max_pg_per_osd": self.mgr_value,
                "osd_max_pg_per_osd_hard_ratio": 3.0}[name]

    def get_foreign_ceph_option(self, who: str, name: str) -> Any:
        return self.config_db[f"{who}/{name}"]


def read(limits: OsdLimits, osds: list[int], up: set[int]) -> dict[int, PgLimit]:
    limits.limits(osds, frozenset(up))
    limits.wait(15)
    return limits.limits(osds, frozenset(up))


def test_the_osds_own_values_and_nothing_before_they_answer() -> None:
    port = Port({1: {"mon_max_pg_per_osd": "35", "osd_max_pg_per_osd_hard_ratio": "1.000000"},
                 3: {"mon_max_pg_per_osd": "250", "osd_max_pg_per_osd_hard_ratio": "3"}})
    limits = OsdLimits(port)  # type: ignore[arg-type]
    assert limits.limits([1, 3], frozenset({1, 3})) == {}  # asked, not known yet
    got = read(limits, [1, 3], {1, 3})
    assert got == {1: PgLimit(35, 1.0, "the OSD"), 3: PgLimit(250, 3.0, "the OSD")}
    assert ("1", "mon_max_pg_per_osd") in port.asked and limits.version >= 1


def test_an_osd_that_does_not_answer_gets_the_config_database_then_the_mgrs_value(
        monkeypatch: Any) -> None:
    monkeypatch.setattr("mgr_sla.shell.osd_limits.ANSWER_SECS", 0.2)
    db = {"osd.5/mon_max_pg_per_osd": 100, "osd.5/osd_max_pg_per_osd_hard_ratio": 2.0}
    limits = OsdLimits(Port({}, config_db=db))  # type: ignore[arg-type]
    got = read(limits, [5, 7], {5, 7})
    assert got[5] == PgLimit(100, 2.0, "the config database")
    assert got[7] == PgLimit(250, 3.0, "the mgr's value")
    # a down OSD is not asked: the fallback at once
    assert OsdLimits(Port({})).limits([9], frozenset())[9].basis == "the mgr's value"  # type: ignore[arg-type]


def test_replies_as_json_or_text() -> None:
    assert parse_value("mon_max_pg_per_osd", '{"mon_max_pg_per_osd": "35"}') == 35.0
    assert parse_value("mon_max_pg_per_osd", "35\n") == 35.0
    assert parse_value("mon_max_pg_per_osd", '{"other": 1}') is None
    done = TimedResult()
    assert done.wait(0.01) is None
    done.complete(0, "1", "")
    assert done.wait(0.01) == (0, "1", "")
