"""The module's options: one spec per Settings field, typed reads, shared defaults."""
from __future__ import annotations

from dataclasses import fields

import crush_rules
from mgr_sla.core.settings import SETTINGS_SPECS, Settings


def test_every_setting_has_one_option_spec_and_the_default_lives_in_settings() -> None:
    assert [s.name for s in SETTINGS_SPECS] == [f.name for f in fields(Settings)]
    for spec in SETTINGS_SPECS:
        assert spec.fields()["default"] == getattr(Settings(), spec.name)
        assert spec.desc and spec.fields()["runtime"] is True


def test_time_span_defaults_are_whole_seconds_ceph_can_parse() -> None:
    # Ceph reads a secs default as a time span ("60", not "60.0", which it shows as 0)
    for spec in SETTINGS_SPECS:
        if spec.type == "secs":
            default = spec.fields()["default"]
            assert isinstance(default, int) and str(default).isdigit(), (spec.name, default)


def test_placement_defaults_are_the_generators() -> None:
    d = crush_rules.DEFAULT_SCOPE
    s = Settings()
    assert (s.normal_class, s.urgent_class, s.failure_domain) == (
        d.normal_class, d.urgent_class, d.failure_domain)
    assert crush_rules.GenerateOptions().size == crush_rules.DEFAULT_SIZE


def test_read_casts_what_the_mgr_returns_and_unset_takes_the_default() -> None:
    raw = {"threshold_iops": "250", "max_switches_per_day": "12", "dry_run": "true",
           "active": "false", "urgent_class": "nvme", "sustain_secs": None}
    s = Settings.read(raw.get)
    assert s.threshold_iops == 250.0 and isinstance(s.threshold_iops, float)
    assert s.max_switches_per_day == 12 and s.dry_run is True and s.active is False
    assert s.urgent_class == "nvme" and s.sustain_secs == Settings().sustain_secs
    assert s.thresholds().low_iops == 125.0  # 0: half of high
