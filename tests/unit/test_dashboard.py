"""Checks of the generated Grafana dashboard (deploy/grafana/)."""

from __future__ import annotations

import importlib.util
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
GRAFANA = ROOT / "deploy" / "grafana"
GENERATOR = GRAFANA / "generate.py"
COMMITTED = GRAFANA / "ceph-sla.json"
CEPH_METRICS = {"ceph_pool_rd", "ceph_pool_wr", "ceph_pool_metadata"}
PROMTOOL = shutil.which("promtool")


def load(name: str, path: Path) -> ModuleType:
    # By path: the mgr_sla package's __init__ needs ceph-mgr, metrics.py does not.
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


gen = load("sla_dashboard_generator", GENERATOR)
metrics = load("sla_metrics_under_test", ROOT / "mgr_sla" / "metrics.py")


def committed() -> dict[str, Any]:
    return json.loads(COMMITTED.read_text())


def test_committed_json_is_current() -> None:
    assert COMMITTED.read_bytes() == gen.render().encode(), (
        "deploy/grafana/ceph-sla.json is stale: run python3 deploy/grafana/generate.py"
    )


def test_generation_is_deterministic(tmp_path: Path) -> None:
    outs = []
    for i in range(2):
        out = tmp_path / f"d{i}.json"
        subprocess.run([sys.executable, str(GENERATOR), "-o", str(out)], check=True)
        outs.append(out.read_bytes())
    assert outs[0] == outs[1] == COMMITTED.read_bytes()
    check = subprocess.run([sys.executable, str(GENERATOR), "--check"], check=False)
    assert check.returncode == 0


def test_every_panel_has_a_query_and_a_unique_id() -> None:
    panels = committed()["panels"]
    assert [p["id"] for p in panels] == list(range(1, len(panels) + 1))
    assert len({p["title"] for p in panels}) == len(panels)
    for panel in panels:
        assert panel["targets"], panel["title"]
        for target in panel["targets"]:
            assert target["expr"].strip(), panel["title"]
            assert target["datasource"]["uid"] == "${datasource}"
        grid = panel["gridPos"]
        assert grid["x"] + grid["w"] <= 24


def test_datasource_variable() -> None:
    [var] = [v for v in committed()["templating"]["list"] if v["type"] == "datasource"]
    assert var["name"] == "datasource" and var["query"] == "prometheus"


def test_required_panels_present() -> None:
    exprs = {p["title"]: " ".join(t["expr"] for t in p["targets"]) for p in committed()["panels"]}
    kinds = {p["title"]: p["type"] for p in committed()["panels"]}
    assert kinds["Mode timeline"] == "state-timeline" and "ceph_sla_mode" in exprs["Mode timeline"]
    urgent = exprs["Urgent IOPS against thresholds"]
    for name in ("ceph_sla_urgent_iops", "ceph_sla_threshold_iops", "ceph_sla_threshold_low_iops"):
        assert name in urgent
    by_role = exprs["Client IOPS per pool by role"]
    assert "rate(ceph_pool_rd[1m])" in by_role and "rate(ceph_pool_wr[1m])" in by_role
    assert "on (pool_id)" in by_role and "ceph_sla_pool_role" in by_role
    assert "ceph_sla_pool_rule" in exprs["CRUSH rule per pool"]
    assert "ceph_sla_pool_misplaced_ratio" in exprs["Misplaced ratio per pool"]
    assert "ceph_sla_time_to_isolation_seconds" in exprs["Time to isolation history"]
    assert "ceph_sla_blocked_switches_total" in exprs["Blocked switches by reason"]
    annotations = [a for a in committed()["annotations"]["list"] if "expr" in a]
    assert len(annotations) == 1 and "ceph_sla_mode_switches_total" in annotations[0]["expr"]


def test_metrics_referenced_exist() -> None:
    known = set(metrics.METRIC_NAMES) | CEPH_METRICS
    for query in gen.queries():
        names = set(re.findall(r"\bceph_[a-z0-9_]+", query["expr"]))
        assert names, query
        assert names <= known, (query["panel"], names - known)


def test_list_queries_cli_matches_dashboard() -> None:
    out = subprocess.run(
        [sys.executable, str(GENERATOR), "--list-queries"],
        check=True, capture_output=True, text=True,
    ).stdout
    listed = json.loads(out)
    panel_exprs = [t["expr"] for p in committed()["panels"] for t in p["targets"]]
    annotation_exprs = [a["expr"] for a in committed()["annotations"]["list"] if "expr" in a]
    assert [q["expr"] for q in listed] == panel_exprs + annotation_exprs
    assert {"panel", "panel_id", "ref_id", "expr", "instant"} <= set(listed[0])


# --- queries evaluated by promtool against synthetic scrapes -------------

needs_promtool = pytest.mark.skipif(
    PROMTOOL is None,
    reason="promtool missing: apt-get install -y --no-install-recommends prometheus",
)


def _series_from_exporter() -> list[dict[str, str]]:
    """Input series for promtool built from metrics.py's real exposition."""
    pytest.importorskip("prometheus_client")
    from prometheus_client.parser import text_string_to_metric_families

    helpers = load("sla_test_metrics_helpers", Path(__file__).with_name("test_metrics.py"))
    exposition, sample_snapshot = helpers.exposition, helpers.sample_snapshot

    job = {"instance": "mgr-a:9284", "job": "ceph-sla"}
    series = []
    for family in text_string_to_metric_families(exposition(sample_snapshot())):
        for s in family.samples:
            labels = {**s.labels, **job}
            pairs = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
            selector = f"{s.name}{{{pairs}}}"
            # Counters grow by one a minute so rate()/increase() queries see change.
            values = f"{s.value:g}+1x15" if family.type == "counter" else f"{s.value:g}x15"
            series.append({"series": selector, "values": values})
    ceph = 'instance="mgr-a:9283",job="ceph"'
    for pool_id, name, rd, wr in (("1", "db", 60, 120), ("3", "bulk", 600, 0)):
        # rd/wr per minute: pool 1 does 1 + 2 = 3 op/s, pool 3 does 10 op/s.
        series += [
            {"series": f'ceph_pool_rd{{{ceph},pool_id="{pool_id}"}}', "values": f"0+{rd}x15"},
            {"series": f'ceph_pool_wr{{{ceph},pool_id="{pool_id}"}}', "values": f"0+{wr}x15"},
            {
                "series": f'ceph_pool_metadata{{{ceph},pool_id="{pool_id}",name="{name}"}}',
                "values": "1x15",
            },
        ]
    return series


def _promtool_test(tmp_path: Path, expr_tests: list[dict[str, Any]]) -> None:
    doc = {
        "rule_files": [],
        "evaluation_interval": "1m",
        "tests": [
            {
                "interval": "1m",
                "input_series": _series_from_exporter(),
                "promql_expr_test": expr_tests,
            }
        ],
    }
    path = tmp_path / "dashboard.test.yml"
    path.write_text(json.dumps(doc, indent=1))  # JSON is valid YAML
    assert PROMTOOL is not None
    res = subprocess.run(
        [PROMTOOL, "test", "rules", str(path)],
        capture_output=True, text=True, timeout=120, check=False,
    )
    assert res.returncode == 0, res.stdout + res.stderr


@needs_promtool
def test_every_query_parses_and_returns_data(tmp_path: Path) -> None:
    # clamp_max(count(Q), 1) is 1 exactly when Q returns at least one series:
    # catches typos in metric names and joins that match nothing.
    tests = [
        {
            "expr": f"clamp_max(count({q['expr']}), 1)",
            "eval_time": "10m",
            "exp_samples": [{"labels": "{}", "value": 1}],
        }
        for q in gen.queries()
    ]
    _promtool_test(tmp_path, tests)


@needs_promtool
def test_per_pool_iops_join_values(tmp_path: Path) -> None:
    [expr] = [
        t["expr"]
        for p in committed()["panels"]
        if p["title"] == "Client IOPS per pool by role"
        for t in p["targets"]
    ]
    [rule_expr] = [
        t["expr"] for p in committed()["panels"] if p["title"] == "CRUSH rule per pool"
        for t in p["targets"]
    ]
    _promtool_test(
        tmp_path,
        [
            {
                "expr": expr,
                "eval_time": "10m",
                "exp_samples": [
                    {"labels": '{name="db", pool_id="1", role="urgent"}', "value": 3},
                    {"labels": '{name="bulk", pool_id="3", role="normal"}', "value": 10},
                ],
            },
            {
                "expr": rule_expr,
                "eval_time": "10m",
                "exp_samples": [
                    {
                        "labels": '{name="db", pool_id="1", role="urgent", '
                        'rule="sla_isolated_urgent"}',
                        "value": 1,
                    },
                    {
                        "labels": '{name="bulk", pool_id="3", role="normal", '
                        'rule="sla_isolated_normal"}',
                        "value": 1,
                    },
                ],
            },
        ],
    )
