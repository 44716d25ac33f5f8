"""Checks of deploy/prometheus/ceph-sla-alerts.yml with promtool (Debian package prometheus)."""

from __future__ import annotations

import importlib.util
import re
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
PROM = ROOT / "deploy" / "prometheus"
RULES = PROM / "ceph-sla-alerts.yml"
RULE_TESTS = PROM / "ceph-sla-alerts.test.yml"
ALERTS = ("SLAModeFlapping", "SLAUrgentHighNotIsolated", "SLASwitchBlocked", "SLAModuleAbsent")
CEPH_METRICS = {"ceph_pool_rd", "ceph_pool_wr", "ceph_pool_metadata"}

PROMTOOL = shutil.which("promtool")
needs_promtool = pytest.mark.skipif(
    PROMTOOL is None,
    reason="promtool missing: apt-get install -y --no-install-recommends prometheus",
)


def load_metrics() -> ModuleType:
    # By path: the mgr_sla package's __init__ needs ceph-mgr, metrics.py does not.
    name = "sla_metrics_under_test"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, ROOT / "mgr_sla" / "metrics.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


def promtool(*args: str, cwd: Path = PROM) -> subprocess.CompletedProcess[str]:
    assert PROMTOOL is not None
    return subprocess.run(
        [PROMTOOL, *args], cwd=cwd, capture_output=True, text=True, timeout=120, check=False
    )


@needs_promtool
def test_promtool_check_rules() -> None:
    res = promtool("check", "rules", str(RULES))
    assert res.returncode == 0, res.stdout + res.stderr
    assert f"SUCCESS: {len(ALERTS)} rules found" in res.stdout


@needs_promtool
def test_promtool_test_rules() -> None:
    res = promtool("test", "rules", str(RULE_TESTS))
    assert res.returncode == 0, res.stdout + res.stderr


def _rules() -> list[dict[str, Any]]:
    yaml = pytest.importorskip("yaml")
    doc = yaml.safe_load(RULES.read_text())
    return [rule for group in doc["groups"] for rule in group["rules"]]


def test_alert_set_labels_and_annotations() -> None:
    rules = _rules()
    assert [r["alert"] for r in rules] == list(ALERTS)
    for rule in rules:
        assert rule["labels"]["severity"] in {"warning", "critical"}, rule["alert"]
        assert rule["labels"]["type"] == "ceph_default"
        assert "oid" not in rule["labels"]
        assert rule["annotations"]["summary"] and rule["annotations"]["description"]


def test_alerts_use_exported_metrics_only() -> None:
    known = set(load_metrics().METRIC_NAMES) | CEPH_METRICS
    for rule in _rules():
        for name in re.findall(r"\bceph_[a-z0-9_]+", rule["expr"]):
            assert name in known, (rule["alert"], name)


def test_every_alert_has_firing_and_quiet_cases() -> None:
    yaml = pytest.importorskip("yaml")
    doc = yaml.safe_load(RULE_TESTS.read_text())
    fires: set[str] = set()
    quiet: set[str] = set()
    for case in doc["tests"]:
        for check in case.get("alert_rule_test", []):
            (fires if check.get("exp_alerts") else quiet).add(check["alertname"])
    assert fires == set(ALERTS)
    assert quiet == set(ALERTS)


@needs_promtool
@pytest.mark.parametrize("alert", ALERTS)
@pytest.mark.parametrize("mutant", ["vector(1) == 0", "vector(1)"])
def test_rule_tests_catch_a_broken_alert(tmp_path: Path, alert: str, mutant: str) -> None:
    """An alert that never fires, or always fires, must fail its promtool tests."""
    yaml = pytest.importorskip("yaml")
    doc = yaml.safe_load(RULES.read_text())
    for group in doc["groups"]:
        for rule in group["rules"]:
            if rule["alert"] == alert:
                rule["expr"] = mutant
    (tmp_path / RULES.name).write_text(yaml.safe_dump(doc))
    shutil.copy(RULE_TESTS, tmp_path / RULE_TESTS.name)
    res = promtool("test", "rules", RULE_TESTS.name, cwd=tmp_path)
    assert res.returncode != 0, f"{alert} as {mutant!r} still passes:\n{res.stdout}"
    assert alert in res.stdout + res.stderr


def test_docs_explain_every_alert() -> None:
    doc = (ROOT / "docs" / "observability.md").read_text()
    for alert in ALERTS:
        assert alert in doc, alert


@needs_promtool
def test_scrape_fragment_is_valid_config(tmp_path: Path) -> None:
    # The fragment names /etc/prometheus/...; point it at the repo's copy.
    text = (PROM / "scrape-ceph-sla.yml").read_text()
    text = text.replace("/etc/prometheus/ceph-sla-alerts.yml", str(RULES))
    (tmp_path / "prometheus.yml").write_text(text)
    res = promtool("check", "config", str(tmp_path / "prometheus.yml"))
    assert res.returncode == 0, res.stdout + res.stderr
