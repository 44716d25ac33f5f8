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
# Metrics of Ceph's own prometheus mgr module (src/pybind/mgr/prometheus/module.py:
# DF_POOL, POOL_METADATA, OSD_METADATA; ceph_osd_stat_bytes* are the OSD perf
# counters osd.stat_bytes and osd.stat_bytes_used, PRIO_USEFUL, exported as is).
CEPH_METRICS = {
    "ceph_pool_rd",
    "ceph_pool_wr",
    "ceph_pool_metadata",
    "ceph_osd_metadata",
    "ceph_osd_stat_bytes",
    "ceph_osd_stat_bytes_used",
}
MATCHERS = ('cluster=~"$cluster"', 'job=~"$job"')
PROMTOOL = shutil.which("promtool")


def load(name: str, path: Path) -> ModuleType:
    # By path: the generator and the test helpers are not packages
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


gen = load("sla_dashboard_generator", GENERATOR)
from mgr_sla.shell import metrics  # noqa: E402  (the package imports without ceph-mgr)


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


def test_cluster_and_job_variables() -> None:
    variables = {v["name"]: v for v in committed()["templating"]["list"]}
    cluster, job = variables["cluster"], variables["job"]
    assert cluster["type"] == job["type"] == "query"
    assert cluster["datasource"]["uid"] == job["datasource"]["uid"] == "${datasource}"
    assert cluster["definition"] == "label_values(ceph_sla_mode, cluster)"
    assert not cluster["includeAll"] and not cluster["multi"]
    # job: All (any job) by default, so Ceph's prometheus module's job joins too.
    assert job["includeAll"] and job["multi"] and job["allValue"] == ".+"
    assert job["current"]["value"] == ["$__all"]
    assert 'cluster=~"$cluster"' in job["definition"]
    assert variables["urgent_class"]["query"] == "ssd"


def _selectors(expr: str) -> list[tuple[str, str]]:
    """(metric, "{labels}") of every metric selector of a PromQL expression."""
    # Label names in by (...), on (...), group_left (...) are not metrics.
    stripped = re.sub(
        r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", "", expr
    )
    return re.findall(r"\b(ceph_[a-z0-9_]+)(\{[^}]*\})?", re.sub(r'"[^"]*"', '""', stripped))


def _all_templates() -> list[tuple[str, str]]:
    out = [(q["panel"], q["template"]) for q in gen.queries()]
    for var in committed()["templating"]["list"]:
        if var["type"] == "query" and var["name"] != "cluster":
            out.append((f"variable {var['name']}", var["definition"]))
    return out


def test_every_query_uses_the_cluster_and_job_variables() -> None:
    templates = _all_templates()
    assert len(templates) >= 25
    for where, expr in templates:
        selectors = re.findall(r"(?:\b(ceph_[a-z0-9_]+))?(\{[^}]*\})", expr)
        assert selectors, (where, expr)
        for metric, labels in selectors:
            for matcher in MATCHERS:
                if where.startswith("variable") and matcher.startswith("job"):
                    continue  # the job variable lists the jobs
                assert matcher in labels, (where, metric, expr)
        # No bare metric name without a selector.
        for metric, labels in _selectors(expr):
            assert labels, (where, metric, expr)


def test_panels_and_annotation_in_the_json_use_the_variables() -> None:
    doc = committed()
    exprs = [t["expr"] for p in doc["panels"] for t in p["targets"]]
    exprs += [a["expr"] for a in doc["annotations"]["list"] if "expr" in a]
    for expr in exprs:
        assert all(expr.count(m) == expr.count("{") for m in MATCHERS), expr
        assert "$" not in gen.resolve(expr)


def test_resolve() -> None:
    expr = 'max(ceph_sla_mode{cluster=~"$cluster", job=~"$job"})'
    assert gen.resolve(expr) == 'max(ceph_sla_mode{cluster=~"", job=~".+"})'
    assert gen.resolve(expr, {"cluster": "c1", "job": "ceph-sla"}) == (
        'max(ceph_sla_mode{cluster=~"c1", job=~"ceph-sla"})'
    )


def test_required_panels_present() -> None:
    exprs = {p["title"]: " ".join(t["expr"] for t in p["targets"]) for p in committed()["panels"]}
    kinds = {p["title"]: p["type"] for p in committed()["panels"]}
    assert kinds["Mode timeline"] == "state-timeline" and "ceph_sla_mode" in exprs["Mode timeline"]
    urgent = exprs["Urgent IOPS against thresholds"]
    for name in ("ceph_sla_urgent_iops", "ceph_sla_threshold_iops", "ceph_sla_threshold_low_iops"):
        assert name in urgent
    by_role = exprs["Client IOPS per pool by role"]
    assert re.search(r"rate\(ceph_pool_rd\{[^}]*\}\[1m\]\)", by_role)
    assert re.search(r"rate\(ceph_pool_wr\{[^}]*\}\[1m\]\)", by_role)
    assert "on (pool_id)" in by_role and "ceph_sla_pool_role" in by_role
    assert "ceph_sla_pool_rule" in exprs["CRUSH rule per pool"]
    assert "ceph_sla_pool_misplaced_ratio" in exprs["Misplaced ratio per pool"]
    assert "ceph_sla_time_to_isolation_seconds" in exprs["Time to isolation history"]
    assert "ceph_sla_blocked_switches_total" in exprs["Blocked switches by reason"]
    assert "ceph_sla_gate_blocking" in exprs["Gates blocking now"]
    assert kinds["Gates blocking"] == "state-timeline"
    assert "ceph_sla_gate_blocking" in exprs["Gates blocking"]
    assert "ceph_sla_pool_urgent_replica_share" in exprs["Urgent replica share per pool"]
    assert "ceph_sla_pool_upmap_pending" in exprs["Upmap entries pending per pool"]
    assert "ceph_sla_pgs_without_normal_replica" in exprs["PGs without normal replica"]
    fill = exprs["Urgent OSD fill"]
    for name in ("ceph_osd_stat_bytes_used", "ceph_osd_stat_bytes", "ceph_osd_metadata"):
        assert name in fill
    assert 'device_class="$urgent_class"' in fill and "on (ceph_daemon)" in fill
    tick = exprs["Tick duration"]
    assert "histogram_quantile(0.99" in tick and "ceph_sla_tick_seconds_bucket" in tick
    annotations = [a for a in committed()["annotations"]["list"] if "expr" in a]
    assert len(annotations) == 1 and "ceph_sla_mode_switches_total" in annotations[0]["expr"]


def test_metrics_referenced_exist() -> None:
    known = set(metrics.SAMPLE_NAMES) | CEPH_METRICS
    for query in gen.queries():
        names = {metric for metric, _ in _selectors(query["expr"])}
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
    assert [q["template"] for q in listed] == panel_exprs + annotation_exprs
    # expr runs as is against Prometheus: the variables as Grafana sends them.
    assert [q["expr"] for q in listed] == [gen.resolve(e) for e in panel_exprs + annotation_exprs]
    assert {"panel", "panel_id", "ref_id", "expr", "template", "instant"} <= set(listed[0])


# --- queries evaluated by promtool against synthetic scrapes -------------

needs_promtool = pytest.mark.skipif(
    PROMTOOL is None,
    reason="promtool missing: apt-get install -y --no-install-recommends prometheus",
)


def _series_from_exporter(
    snapshot: dict[str, Any] | None = None, cluster: str | None = None
) -> list[dict[str, str]]:
    """Input series for promtool built from metrics.py's real exposition."""
    from mgr_sla._vendor.prometheus_client.parser import text_string_to_metric_families

    helpers = load("sla_test_metrics_helpers", Path(__file__).with_name("test_metrics.py"))
    exposition, sample_snapshot = helpers.exposition, helpers.sample_snapshot

    job = {"instance": "mgr-a:9284", "job": "ceph-sla"}
    ceph_job = {"instance": "mgr-a:9283", "job": "ceph"}
    if cluster is not None:
        job["cluster"] = ceph_job["cluster"] = cluster

    def selector(name: str, labels: dict[str, str]) -> str:
        pairs = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
        return f"{name}{{{pairs}}}"

    series = []
    text = exposition(snapshot if snapshot is not None else sample_snapshot())
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            # Counters (and histogram buckets) grow by one a minute so that
            # rate()/increase() queries see change.
            grows = family.type in ("counter", "histogram")
            values = f"{s.value:g}+1x15" if grows else f"{s.value:g}x15"
            series.append({"series": selector(s.name, {**s.labels, **job}), "values": values})
    for pool_id, name, rd, wr in (("1", "db", 60, 120), ("3", "bulk", 600, 0)):
        # rd/wr per minute: pool 1 does 1 + 2 = 3 op/s, pool 3 does 10 op/s.
        pool = {**ceph_job, "pool_id": pool_id}
        series += [
            {"series": selector("ceph_pool_rd", pool), "values": f"0+{rd}x15"},
            {"series": selector("ceph_pool_wr", pool), "values": f"0+{wr}x15"},
            {"series": selector("ceph_pool_metadata", {**pool, "name": name}), "values": "1x15"},
        ]
    # osd.0 hdd (not urgent), osd.1 ssd half full, osd.2 ssd a quarter full.
    for osd, device_class, host, used in ((0, "hdd", "h1", 900), (1, "ssd", "h1", 500),
                                          (2, "ssd", "h2", 250)):
        daemon = {**ceph_job, "ceph_daemon": f"osd.{osd}"}
        meta = {**daemon, "device_class": device_class, "hostname": host,
                "objectstore": "bluestore"}
        series += [
            {"series": selector("ceph_osd_stat_bytes", daemon), "values": "1000x15"},
            {"series": selector("ceph_osd_stat_bytes_used", daemon), "values": f"{used}x15"},
            {"series": selector("ceph_osd_metadata", meta), "values": "1x15"},
        ]
    return series


def _promtool_test(
    tmp_path: Path,
    expr_tests: list[dict[str, Any]],
    input_series: list[dict[str, str]] | None = None,
) -> None:
    doc = {
        "rule_files": [],
        "evaluation_interval": "1m",
        "tests": [
            {
                "interval": "1m",
                "input_series": input_series or _series_from_exporter(),
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
                "expr": gen.resolve(expr),
                "eval_time": "10m",
                "exp_samples": [
                    {"labels": '{name="db", pool_id="1", role="urgent"}', "value": 3},
                    {"labels": '{name="bulk", pool_id="3", role="normal"}', "value": 10},
                ],
            },
            {
                "expr": gen.resolve(rule_expr),
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


def _panel_expr(title: str) -> str:
    [expr] = [t["expr"] for p in committed()["panels"] if p["title"] == title
              for t in p["targets"]]
    return expr


@needs_promtool
def test_new_panels_values(tmp_path: Path) -> None:
    _promtool_test(
        tmp_path,
        [
            {
                # only the OSDs of the urgent class, with their host
                "expr": gen.resolve(_panel_expr("Urgent OSD fill")),
                "eval_time": "10m",
                "exp_samples": [
                    {"labels": '{ceph_daemon="osd.1", hostname="h1"}', "value": 0.5},
                    {"labels": '{ceph_daemon="osd.2", hostname="h2"}', "value": 0.25},
                ],
            },
            {
                "expr": gen.resolve(_panel_expr("Urgent OSD fill"), {"urgent_class": "hdd"}),
                "eval_time": "10m",
                "exp_samples": [
                    {"labels": '{ceph_daemon="osd.0", hostname="h1"}', "value": 0.9},
                ],
            },
            {
                "expr": gen.resolve(_panel_expr("Gates blocking now")),
                "eval_time": "10m",
                "exp_samples": [
                    {"labels": '{reason="cluster_flags"}', "value": 0},
                    {"labels": '{reason="misplaced"}', "value": 1},
                    {"labels": '{reason="pgs_degraded"}', "value": 0},
                ],
            },
            {
                "expr": gen.resolve(_panel_expr("Urgent replica share per pool")),
                "eval_time": "10m",
                "exp_samples": [
                    {"labels": '{name="bulk", pool_id="3", role="normal"}', "value": 0.125},
                ],
            },
            {
                "expr": gen.resolve(_panel_expr("Upmap entries pending")),
                "eval_time": "10m",
                "exp_samples": [{"labels": "{}", "value": 3}],
            },
            {
                # every bucket grows by one a minute: all ticks in the lowest bucket
                "expr": gen.resolve(_panel_expr("Tick duration (p99, 5m)")),
                "eval_time": "10m",
                "exp_samples": [{"labels": "{}", "value": 0.00495}],
            },
        ],
    )


@needs_promtool
def test_cluster_variable_selects_one_cluster(tmp_path: Path) -> None:
    helpers = load("sla_test_metrics_helpers", Path(__file__).with_name("test_metrics.py"))
    shared = helpers.sample_snapshot()
    shared["mode"] = "shared"
    series = _series_from_exporter(cluster="c1") + _series_from_exporter(shared, cluster="c2")
    mode = _panel_expr("Mode")
    by_role = _panel_expr("Client IOPS per pool by role")
    _promtool_test(
        tmp_path,
        [
            {
                "expr": gen.resolve(mode, {"cluster": "c1"}),
                "eval_time": "10m",
                "exp_samples": [{"labels": "{}", "value": 1}],
            },
            {
                "expr": gen.resolve(mode, {"cluster": "c2"}),
                "eval_time": "10m",
                "exp_samples": [{"labels": "{}", "value": 0}],
            },
            {
                # a job that exports no sla series: nothing
                "expr": gen.resolve(mode, {"cluster": "c1", "job": "ceph"}),
                "eval_time": "10m",
                "exp_samples": [],
            },
            {
                # the join across the two jobs stays within one cluster
                "expr": gen.resolve(by_role, {"cluster": "c2", "job": "ceph-sla|ceph"}),
                "eval_time": "10m",
                "exp_samples": [
                    {"labels": '{name="db", pool_id="1", role="urgent"}', "value": 3},
                    {"labels": '{name="bulk", pool_id="3", role="normal"}', "value": 10},
                ],
            },
        ],
        input_series=series,
    )
