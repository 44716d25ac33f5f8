"""Checks of deploy/prometheus/ceph-sla-alerts.yml with promtool (Debian package prometheus)."""

from __future__ import annotations

import ast
import re
import shutil
import subprocess
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
PROM = ROOT / "deploy" / "prometheus"
RULES = PROM / "ceph-sla-alerts.yml"
# The fixtures live outside deploy/prometheus/, so that a `*.yml` glob in a
# Prometheus rule_files there loads the real rules only.
FIXTURES = ROOT / "tests" / "unit" / "data" / "prometheus"
RULE_TESTS = FIXTURES / "ceph-sla-alerts.test.yml"
# Earlier versions of two rules, a fixture of RULE_TESTS only.
OLD_RULES = FIXTURES / "ceph-sla-alerts.old.yml"
ALERTS = (
    "SLAModeFlapping",
    "SLAUrgentHighNotIsolated",
    "SLASwitchBlocked",
    "SLANormalInclusionBroken",
    "SLATimeToIsolationHigh",
    "SLAUpmapPlacementStuck",
    "SLAUrgentLatencyAboveObjectiveWhileIsolated",
    "SLAModuleAbsent",
)
# Alerts about what the module does: held in a dry run and while it is off.
ACTING_ALERTS = ("SLAUrgentHighNotIsolated", "SLASwitchBlocked", "SLAUpmapPlacementStuck")
OLD_ALERTS = ("OldSLASwitchBlocked", "OldSLAUrgentHighNotIsolated")
CEPH_METRICS = {"ceph_pool_rd", "ceph_pool_wr", "ceph_pool_metadata"}

PROMTOOL = shutil.which("promtool")
needs_promtool = pytest.mark.skipif(
    PROMTOOL is None,
    reason="promtool missing: apt-get install -y --no-install-recommends prometheus",
)


def load_metrics() -> ModuleType:
    from mgr_sla.shell import metrics  # the package imports without ceph-mgr
    return metrics


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
    res = promtool("test", "rules", RULE_TESTS.name, cwd=FIXTURES)
    assert res.returncode == 0, res.stdout + res.stderr


def test_rule_tests_load_the_shipped_rules() -> None:
    """The promtool tests run against deploy/prometheus/ceph-sla-alerts.yml itself."""
    files = _rule_tests()["rule_files"]
    assert (FIXTURES / files[0]).resolve() == RULES
    assert (FIXTURES / files[1]).resolve() == OLD_RULES


def test_a_glob_over_the_deploy_directory_loads_only_the_rules() -> None:
    """deploy/prometheus/*.yml is the rule file alone: no test file, fixture or
    scrape fragment that a `rule_files: [.../*.yml]` glob would also load."""
    yaml = pytest.importorskip("yaml")
    paths = sorted([*PROM.glob("*.yml"), *PROM.glob("*.yaml")])
    assert paths == [RULES]
    for path in paths:
        doc = yaml.safe_load(path.read_text())
        assert set(doc) == {"groups"}, (path.name, sorted(doc))
        alerts = [r["alert"] for g in doc["groups"] for r in g["rules"]]
        assert alerts == list(ALERTS), path.name


def _mutated_run(tmp_path: Path, doc: dict[str, Any], alert: str
                 ) -> subprocess.CompletedProcess[str]:
    """promtool's tests of RULE_TESTS for `alert` against a changed copy of the
    rules: the alert's own cases must catch its change (and promtool evaluates
    one alert's series, not every alert's, which keeps each run short)."""
    yaml = pytest.importorskip("yaml")
    (tmp_path / RULES.name).write_text(yaml.safe_dump(doc))
    tests = _rule_tests()
    tests["rule_files"] = [str(tmp_path / RULES.name), str(OLD_RULES)]
    cases = []
    for case in tests["tests"]:
        mine = [t for t in case.get("alert_rule_test", []) if t["alertname"] == alert]
        if mine:
            cases.append({**case, "alert_rule_test": mine})
    assert cases, f"no promtool case tests {alert}"
    tests["tests"] = cases
    (tmp_path / RULE_TESTS.name).write_text(yaml.safe_dump(tests, sort_keys=False))
    return promtool("test", "rules", RULE_TESTS.name, cwd=tmp_path)


def _rules(path: Path = RULES) -> list[dict[str, Any]]:
    yaml = pytest.importorskip("yaml")
    doc = yaml.safe_load(path.read_text())
    return [rule for group in doc["groups"] for rule in group["rules"]]


def _github_anchors(markdown: str) -> set[str]:
    """The anchors GitHub gives a file's headings (lower case, punctuation dropped)."""
    anchors = set()
    for line in markdown.splitlines():
        if line.startswith("#"):
            title = line.lstrip("#").strip().lower()
            anchors.add(re.sub(r"[^\w\- ]", "", title).replace(" ", "-"))
    return anchors


def test_alert_set_labels_and_annotations() -> None:
    rules = _rules()
    assert [r["alert"] for r in rules] == list(ALERTS)
    for rule in rules:
        assert rule["labels"]["severity"] in {"warning", "critical"}, rule["alert"]
        assert rule["labels"]["type"] == "ceph_default"
        assert "oid" not in rule["labels"]
        assert rule["annotations"]["summary"] and rule["annotations"]["description"]


def test_every_alert_links_to_an_existing_doc_section() -> None:
    for rule in _rules():
        link = rule["annotations"].get("documentation", "")
        # A path in this repository, not a host: docs/<file>.md#<anchor>.
        match = re.fullmatch(r"(docs/[a-z0-9_-]+\.md)#([a-z0-9-]+)", link)
        assert match, (rule["alert"], link)
        path, anchor = match.groups()
        assert anchor in _github_anchors((ROOT / path).read_text()), (rule["alert"], link)


def _metric_names(expr: str) -> set[str]:
    # Label names (on (ceph_daemon), by (pool_id)) and label values are not metrics.
    expr = re.sub(r"\{[^}]*\}", "", expr)
    expr = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", "", expr)
    return set(re.findall(r"\bceph_[a-z0-9_]+", expr))


def test_alerts_use_exported_metrics_only() -> None:
    known = set(load_metrics().SAMPLE_NAMES) | CEPH_METRICS
    for rule in _rules():
        names = _metric_names(rule["expr"])
        assert names, rule["alert"]
        assert names <= known, (rule["alert"], names - known)


def _rule_tests() -> dict[str, Any]:
    yaml = pytest.importorskip("yaml")
    return yaml.safe_load(RULE_TESTS.read_text())  # type: ignore[no-any-return]


def test_every_alert_has_firing_and_quiet_cases() -> None:
    fires: set[str] = set()
    quiet: set[str] = set()
    for case in _rule_tests()["tests"]:
        for check in case.get("alert_rule_test", []):
            (fires if check.get("exp_alerts") else quiet).add(check["alertname"])
    assert fires - set(OLD_ALERTS) == set(ALERTS)
    assert quiet - set(OLD_ALERTS) == set(ALERTS)
    # The old rules are there to be shown missing what the new ones catch.
    assert set(OLD_ALERTS) <= quiet
    assert [r["alert"] for r in _rules(OLD_RULES)] == sorted(OLD_ALERTS)


def _quiet_inputs(alert: str) -> list[list[tuple[str, str]]]:
    """The input series of every test case in which `alert` must stay quiet."""
    out = []
    for case in _rule_tests()["tests"]:
        checks = case.get("alert_rule_test", [])
        if any(c["alertname"] == alert and not c.get("exp_alerts") for c in checks):
            out.append([(s["series"], str(s["values"])) for s in case["input_series"]])
    return out


@pytest.mark.parametrize("alert", ACTING_ALERTS)
def test_acting_alerts_have_dry_run_and_off_quiet_cases(alert: str) -> None:
    series = [s for case in _quiet_inputs(alert) for s in case]
    assert any(n.startswith("ceph_sla_dry_run{") and v.startswith("1") for n, v in series)
    assert any(n.startswith("ceph_sla_active{") and v.startswith("0") for n, v in series)
    expr = next(r["expr"] for r in _rules() if r["alert"] == alert)
    assert "ceph_sla_dry_run == 0" in expr and "ceph_sla_active == 1" in expr


def test_switch_blocked_uses_the_gate_gauge_not_the_episode_counter() -> None:
    expr = next(r["expr"] for r in _rules() if r["alert"] == "SLASwitchBlocked")
    assert "ceph_sla_gate_blocking" in expr
    assert "ceph_sla_blocked_switches_total" not in expr


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
    res = _mutated_run(tmp_path, doc, alert)
    assert res.returncode != 0, f"{alert} as {mutant!r} still passes:\n{res.stdout}"
    assert alert in res.stdout + res.stderr


@needs_promtool
@pytest.mark.parametrize("alert", ACTING_ALERTS)
@pytest.mark.parametrize(
    "clause",
    [
        "and on (cluster, instance, job) (ceph_sla_dry_run == 0)",
        "and on (cluster, instance, job) (ceph_sla_active == 1)",
    ],
)
def test_rule_tests_catch_an_alert_that_ignores_dry_run_or_off(
    tmp_path: Path, alert: str, clause: str
) -> None:
    """Without its dry-run or on/off condition, the alert must fail its promtool tests."""
    yaml = pytest.importorskip("yaml")
    doc = yaml.safe_load(RULES.read_text())
    for group in doc["groups"]:
        for rule in group["rules"]:
            if rule["alert"] == alert:
                assert clause in rule["expr"]
                rule["expr"] = rule["expr"].replace(clause, "")
    res = _mutated_run(tmp_path, doc, alert)
    assert res.returncode != 0, f"{alert} without {clause!r} still passes:\n{res.stdout}"


def test_docs_explain_every_alert() -> None:
    doc = (ROOT / "docs" / "observability.md").read_text()
    for alert in ALERTS:
        assert alert in doc, alert


@needs_promtool
def test_scrape_fragment_is_valid_config(tmp_path: Path) -> None:
    # The fragment names /etc/prometheus/...; point it at the repo's copy.
    text = (PROM / "scrape" / "scrape-ceph-sla.yml").read_text()
    text = text.replace("/etc/prometheus/ceph-sla-alerts.yml", str(RULES))
    (tmp_path / "prometheus.yml").write_text(text)
    res = promtool("check", "config", str(tmp_path / "prometheus.yml"))
    assert res.returncode == 0, res.stdout + res.stderr


def _default_dwell_secs() -> float:
    """min_dwell_secs' default, read from mgr_sla/core/settings.py (the Settings field)."""
    tree = ast.parse((ROOT / "mgr_sla" / "core" / "settings.py").read_text())
    for node in ast.walk(tree):
        if (isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)
                and node.target.id == "min_dwell_secs" and node.value is not None):
            return float(ast.literal_eval(node.value))
    raise AssertionError("no min_dwell_secs default in mgr_sla/core/settings.py")


def test_mode_flapping_fires_on_switches_the_default_dwell_allows() -> None:
    """The firing case switches no faster than the module can at its default
    dwell: each share comes at least min_dwell_secs after the isolation before
    it (isolation itself is immediate). An alert that needs faster switching
    could never fire with the defaults."""
    dwell = _default_dwell_secs()
    case = next(c for c in _rule_tests()["tests"]
                if c["name"].startswith("flapping fires at 5 switches"))
    step = _duration_secs(case["interval"])
    [series] = case["input_series"]
    values = [int(v) for v in series["values"].split()]
    times = [i * step for i in range(1, len(values))
             for _ in range(values[i] - values[i - 1])]
    assert len(times) == 5
    # switches alternate isolate, share, isolate, ...: every isolate -> share gap
    shares = [b - a for a, b in zip(times[0::2], times[1::2])]
    assert shares and all(gap >= dwell for gap in shares), (shares, dwell)
    rule = next(r for r in _rules() if r["alert"] == "SLAModeFlapping")
    window = _duration_secs(re.search(r"\[(\w+)\]", rule["expr"]).group(1))  # type: ignore[union-attr]
    assert times[-1] - times[0] <= window


def _duration_secs(text: str) -> float:
    units = {"s": 1, "m": 60, "h": 3600, "d": 86400}
    return sum(float(n) * units[u] for n, u in re.findall(r"(\d+)([smhd])", text))
