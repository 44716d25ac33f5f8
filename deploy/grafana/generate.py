#!/usr/bin/env python3
"""Generate the ceph-sla Grafana dashboard (deploy/grafana/ceph-sla.json).

The dashboard is code, like Ceph's own (monitoring/ceph-mixin): edit the
generator (this file: variables, annotations, the document; the panels in
dashboard_panels.py; their Grafana JSON in panel_json.py), run it, commit
both. Output is deterministic (sorted keys, ids assigned in panel order) so
tests can check that the committed JSON is current.

    python3 deploy/grafana/generate.py                 # rewrite ceph-sla.json
    python3 deploy/grafana/generate.py --check         # exit 1 if it is stale
    python3 deploy/grafana/generate.py --list-queries  # every PromQL as JSON

Queries use fixed ranges ([1m], [5m]) rather than Grafana's $__rate_interval
so that the same text runs unchanged against Prometheus in tests.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

# The sibling modules are imported by name. Run as a file, this directory is
# sys.path[0]; loaded by path (tests/unit/test_dashboard.py) it is not.
HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from dashboard_panels import panels, sel  # noqa: E402
from panel_json import DS, panels_json  # noqa: E402

OUTPUT = Path(__file__).with_name("ceph-sla.json")
UID = "ceph-sla"

# What --list-queries substitutes, as Grafana does with no `cluster` label and
# job = All, so the queries run unchanged against Prometheus.
VARIABLE_DEFAULTS = {"cluster": "", "job": ".+", "urgent_class": "ssd"}


def resolve(expr: str, values: dict[str, str] | None = None) -> str:
    """expr with the dashboard variables replaced (default: VARIABLE_DEFAULTS)."""
    values = {**VARIABLE_DEFAULTS, **(values or {})}
    return re.sub(r"\$(\w+)", lambda m: values.get(m.group(1), m.group(0)), expr)


def _query_variable(name: str, label: str, query: str, **extra: Any) -> dict[str, Any]:
    return {
        "current": {},
        "datasource": DS,
        "definition": query,
        "hide": 0,
        "includeAll": False,
        "label": label,
        "multi": False,
        "name": name,
        "options": [],
        "query": {"query": query, "refId": f"{name}-variable"},
        "refresh": 2,  # on time range change: follows failovers and new clusters
        "regex": "",
        "sort": 1,
        "type": "query",
        **extra,
    }


VARIABLES: list[dict[str, Any]] = [
    {
        "current": {},
        "hide": 0,
        "includeAll": False,
        "label": "Data source",
        "multi": False,
        "name": "datasource",
        "options": [],
        "query": "prometheus",
        "refresh": 1,
        "regex": "",
        "type": "datasource",
    },
    # As ceph-mixin: the `cluster` label set by the Prometheus configuration
    # (external_labels or relabelling); hidden value "" when there is none.
    _query_variable("cluster", "Cluster", "label_values(ceph_sla_mode, cluster)"),
    # Both the sla module's job and the job of Ceph's prometheus module (the
    # per-pool IOPS and the OSD fill come from it): All by default.
    _query_variable(
        "job", "Job",
        'label_values({__name__=~"ceph_sla_mode|ceph_pool_metadata", '
        'cluster=~"$cluster"}, job)',
        includeAll=True, multi=True, allValue=VARIABLE_DEFAULTS["job"],
        current={"selected": True, "text": ["All"], "value": ["$__all"]},
    ),
    {
        "current": {"text": "ssd", "value": "ssd"},
        "description": "CRUSH device class of the urgent OSDs (mgr/sla/urgent_class)",
        "hide": 0,
        "label": "Urgent class",
        "name": "urgent_class",
        "options": [{"selected": True, "text": "ssd", "value": "ssd"}],
        "query": "ssd",
        "type": "textbox",
    },
]

ANNOTATION_EXPR = f"sum(increase({sel('ceph_sla_mode_switches_total')}[1m])) > 0"


def dashboard() -> dict[str, Any]:
    panel_list = panels_json(panels())
    return {
        "annotations": {
            "list": [
                {
                    "builtIn": 1,
                    "datasource": {"type": "grafana", "uid": "-- Grafana --"},
                    "enable": True,
                    "hide": True,
                    "iconColor": "rgba(0, 211, 255, 1)",
                    "name": "Annotations & Alerts",
                    "type": "dashboard",
                },
                {
                    "datasource": DS,
                    "enable": True,
                    "expr": ANNOTATION_EXPR,
                    "iconColor": "orange",
                    "name": "Mode switches",
                    "step": "60s",
                    "tagKeys": "",
                    "textFormat": "",
                    "titleFormat": "SLA mode switch",
                    "useValueForTime": False,
                },
            ]
        },
        "description": "ceph-mgr sla module: isolated/shared mode of normal pools for "
        "urgent clients",
        "editable": True,
        "graphTooltip": 1,
        "links": [],
        "panels": panel_list,
        "refresh": "30s",
        "schemaVersion": 38,
        "tags": ["ceph", "ceph-sla"],
        "templating": {"list": VARIABLES},
        "time": {"from": "now-6h", "to": "now"},
        "timezone": "",
        "title": "Ceph SLA",
        "uid": UID,
        "version": 1,
    }


def render() -> str:
    return json.dumps(dashboard(), indent=2, sort_keys=True) + "\n"


def queries() -> list[dict[str, Any]]:
    """Every PromQL of the dashboard, for tests that run them against Prometheus:
    `template` as in the dashboard, `expr` with the variables as Grafana sends
    them with no `cluster` label and job = All (VARIABLE_DEFAULTS)."""
    out: list[dict[str, Any]] = []
    for panel in dashboard()["panels"]:
        for target in panel["targets"]:
            out.append(
                {
                    "panel_id": panel["id"],
                    "panel": panel["title"],
                    "ref_id": target["refId"],
                    "template": target["expr"],
                    "expr": resolve(target["expr"]),
                    "instant": target["instant"],
                }
            )
    out.append(
        {
            "panel_id": None,
            "panel": "annotation: Mode switches",
            "ref_id": "annotation",
            "template": ANNOTATION_EXPR,
            "expr": resolve(ANNOTATION_EXPR),
            "instant": False,
        }
    )
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--list-queries", action="store_true", help="print the queries as JSON")
    parser.add_argument("--check", action="store_true", help="fail if the JSON file is stale")
    parser.add_argument("-o", "--output", type=Path, default=OUTPUT)
    args = parser.parse_args(argv)
    if args.list_queries:
        json.dump(queries(), sys.stdout, indent=2, sort_keys=True)
        sys.stdout.write("\n")
        return 0
    text = render()
    if args.check:
        current = args.output.read_text() if args.output.exists() else ""
        if current != text:
            print(f"{args.output} is stale: run {sys.argv[0]}", file=sys.stderr)
            return 1
        return 0
    args.output.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
