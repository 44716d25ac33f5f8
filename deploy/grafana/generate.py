#!/usr/bin/env python3
"""Generate the ceph-sla Grafana dashboard (deploy/grafana/ceph-sla.json).

The dashboard is code, like Ceph's own (monitoring/ceph-mixin): edit this
file, run it, commit both. Output is deterministic (sorted keys, ids assigned
in panel order) so tests can check that the committed JSON is current.

    python3 deploy/grafana/generate.py                 # rewrite ceph-sla.json
    python3 deploy/grafana/generate.py --check         # exit 1 if it is stale
    python3 deploy/grafana/generate.py --list-queries  # every PromQL as JSON

Queries use fixed ranges ([1m], [5m]) rather than Grafana's $__rate_interval
so that the same text runs unchanged against Prometheus in tests.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

OUTPUT = Path(__file__).with_name("ceph-sla.json")
UID = "ceph-sla"
DS = {"type": "prometheus", "uid": "${datasource}"}

# One series per pool with its name and role. max by() drops instance/job so
# a mgr failover (two sla endpoints briefly) cannot make the join many-to-many.
POOL_ROLE = "max by (pool_id, name, role) (ceph_sla_pool_role)"
POOL_IOPS = "sum by (pool_id) (rate(ceph_pool_rd[1m]) + rate(ceph_pool_wr[1m]))"


@dataclass
class Target:
    expr: str
    legend: str = ""
    instant: bool = False


@dataclass
class Panel:
    title: str
    kind: str  # Grafana panel type
    targets: list[Target]
    w: int
    h: int
    description: str = ""
    unit: str = "short"
    extra: dict[str, Any] = field(default_factory=dict)


MODE_MAPPINGS = [
    {
        "options": {
            "0": {"color": "green", "index": 0, "text": "shared"},
            "1": {"color": "orange", "index": 1, "text": "isolated"},
        },
        "type": "value",
    }
]
BOOL_MAPPINGS = [
    {
        "options": {
            "0": {"color": "text", "index": 0, "text": "no"},
            "1": {"color": "yellow", "index": 1, "text": "yes"},
        },
        "type": "value",
    }
]


def panels() -> list[Panel]:
    """The dashboard, top to bottom, left to right (24 columns wide)."""
    return [
        Panel(
            "Mode", "stat", [Target("max(ceph_sla_mode)", instant=True)], 4, 4,
            "Mapping mode of the normal pools now.",
            extra={"mappings": MODE_MAPPINGS},
        ),
        Panel(
            "Pinned", "stat", [Target("max(ceph_sla_pinned)", instant=True)], 4, 4,
            "An operator pinned the mode: the module does not switch.",
            extra={"mappings": BOOL_MAPPINGS},
        ),
        Panel(
            "Dry run", "stat", [Target("max(ceph_sla_dry_run)", instant=True)], 4, 4,
            "The module only logs the switches it would make.",
            extra={"mappings": BOOL_MAPPINGS},
        ),
        Panel(
            "Last switch", "stat",
            [Target("max(ceph_sla_last_switch_timestamp_seconds) * 1000", instant=True)],
            4, 4, "When the module last switched the mode.", unit="dateTimeFromNow",
        ),
        Panel(
            "Switches (24h)", "stat",
            [Target("sum(increase(ceph_sla_mode_switches_total[24h]))", instant=True)],
            4, 4, "Mode switches in the last 24 hours; each one moves data.",
        ),
        Panel(
            "Time to isolation", "stat",
            [Target("max(ceph_sla_time_to_isolation_seconds)", instant=True)], 4, 4,
            "Last measured time from urgent IOPS crossing the threshold to isolated "
            "normal pools.",
            unit="s",
        ),
        Panel(
            "Mode timeline", "state-timeline",
            [Target("max(ceph_sla_mode)", "mode")], 24, 5,
            "Isolated (urgent clients active) or shared. Annotations mark switches.",
            extra={"mappings": MODE_MAPPINGS},
        ),
        Panel(
            "Urgent IOPS against thresholds", "timeseries",
            [
                Target("max(ceph_sla_urgent_iops)", "urgent IOPS"),
                Target("max(ceph_sla_threshold_iops)", "isolate at (high)"),
                Target("max(ceph_sla_threshold_low_iops)", "share below (low)"),
            ],
            12, 8,
            "Urgent IOPS as the module measures them; it isolates at the high "
            "threshold and shares again below the low one.",
            unit="iops",
        ),
        Panel(
            "Client IOPS per pool by role", "timeseries",
            [
                Target(
                    f"{POOL_IOPS} * on (pool_id) group_left (name, role) {POOL_ROLE}",
                    "{{role}}: {{name}}",
                )
            ],
            12, 8,
            "rate(ceph_pool_rd) + rate(ceph_pool_wr) from Ceph's prometheus module, "
            "labelled with each pool's sla role.",
            unit="iops",
        ),
        Panel(
            "Client IOPS by role (sla module view)", "timeseries",
            [
                Target(
                    "sum by (role) (max by (pool_id) (ceph_sla_pool_client_iops)"
                    f" * on (pool_id) group_left (role) {POOL_ROLE})",
                    "{{role}}",
                )
            ],
            12, 8,
            "The per-pool IOPS the module decides on, summed by role.",
            unit="iops",
        ),
        Panel(
            "Misplaced ratio per pool", "timeseries",
            [
                Target(
                    "max by (pool_id) (ceph_sla_pool_misplaced_ratio)"
                    f" * on (pool_id) group_left (name, role) {POOL_ROLE}",
                    "{{name}}",
                )
            ],
            12, 8,
            "Share of each pool's copies still moving after a rule change.",
            unit="percentunit",
        ),
        Panel(
            "CRUSH rule per pool", "table",
            [
                Target(
                    "max by (pool_id, name, rule) (ceph_sla_pool_rule)"
                    " * on (pool_id) group_left (role) max by (pool_id, role) "
                    "(ceph_sla_pool_role)",
                    instant=True,
                )
            ],
            12, 8,
            "Rule each pool uses now (sla_isolated_normal, sla_shared, "
            "sla_isolated_urgent, sla_hybrid, ...).",
            extra={"table": True},
        ),
        Panel(
            "Time to isolation history", "timeseries",
            [Target("max(ceph_sla_time_to_isolation_seconds)", "time to isolation")],
            12, 8,
            "Seconds from urgent IOPS crossing the threshold until the normal pools "
            "were isolated; one value per isolation.",
            unit="s",
        ),
        Panel(
            "Blocked switches by reason", "timeseries",
            [
                Target(
                    "sum by (reason) (increase(ceph_sla_blocked_switches_total[5m]))",
                    "{{reason}}",
                )
            ],
            24, 8,
            "Switches the module wanted but held back (per 5 minutes), by reason.",
            extra={"bars": True},
        ),
    ]


ANNOTATION_EXPR = "sum(increase(ceph_sla_mode_switches_total[1m])) > 0"


def _field_config(panel: Panel) -> dict[str, Any]:
    defaults: dict[str, Any] = {
        "color": {"mode": "palette-classic"},
        "mappings": panel.extra.get("mappings", []),
        "unit": panel.unit,
    }
    if panel.kind == "timeseries":
        defaults["custom"] = {
            "drawStyle": "bars" if panel.extra.get("bars") else "line",
            "fillOpacity": 20 if panel.extra.get("bars") else 10,
            "lineInterpolation": "stepAfter",
            "showPoints": "auto",
            "spanNulls": False,
        }
    if panel.extra.get("mappings"):
        defaults["color"] = {"mode": "thresholds"}
        defaults["thresholds"] = {"mode": "absolute", "steps": [{"color": "text", "value": None}]}
    return {"defaults": defaults, "overrides": []}


def _options(panel: Panel) -> dict[str, Any]:
    if panel.kind == "stat":
        return {
            "colorMode": "value",
            "graphMode": "none",
            "reduceOptions": {"calcs": ["lastNotNull"], "fields": "", "values": False},
            "textMode": "auto",
        }
    if panel.kind == "state-timeline":
        return {"mergeValues": True, "showValue": "auto", "legend": {"showLegend": False}}
    if panel.kind == "table":
        return {"showHeader": True}
    return {
        "legend": {"displayMode": "table", "placement": "right", "calcs": ["lastNotNull"]},
        "tooltip": {"mode": "multi", "sort": "desc"},
    }


def _layout(items: list[Panel]) -> list[dict[str, int]]:
    # Simple row filling: panels wrap when the 24 columns are used up.
    pos, x, y, row_h = [], 0, 0, 0
    for p in items:
        if x + p.w > 24:
            x, y, row_h = 0, y + row_h, 0
        pos.append({"h": p.h, "w": p.w, "x": x, "y": y})
        x, row_h = x + p.w, max(row_h, p.h)
    return pos


def _panel_json(panel_id: int, panel: Panel, grid: dict[str, int]) -> dict[str, Any]:
    targets = []
    for i, t in enumerate(panel.targets):
        target: dict[str, Any] = {
            "datasource": DS,
            "expr": t.expr,
            "instant": t.instant,
            "legendFormat": t.legend or "__auto",
            "range": not t.instant,
            "refId": chr(ord("A") + i),
        }
        if panel.extra.get("table"):
            target["format"] = "table"
        targets.append(target)
    out: dict[str, Any] = {
        "datasource": DS,
        "description": panel.description,
        "fieldConfig": _field_config(panel),
        "gridPos": grid,
        "id": panel_id,
        "options": _options(panel),
        "targets": targets,
        "title": panel.title,
        "type": panel.kind,
    }
    if panel.extra.get("table"):
        # Hide Prometheus bookkeeping columns; show name, role, rule.
        out["transformations"] = [
            {
                "id": "organize",
                "options": {
                    "excludeByName": {"Time": True, "Value": True},
                    "indexByName": {"pool_id": 0, "name": 1, "role": 2, "rule": 3},
                },
            }
        ]
    return out


def dashboard() -> dict[str, Any]:
    items = panels()
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
        "panels": [
            _panel_json(i + 1, p, g)
            for i, (p, g) in enumerate(zip(items, _layout(items), strict=True))
        ],
        "refresh": "30s",
        "schemaVersion": 38,
        "tags": ["ceph", "ceph-sla"],
        "templating": {
            "list": [
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
                }
            ]
        },
        "time": {"from": "now-6h", "to": "now"},
        "timezone": "",
        "title": "Ceph SLA",
        "uid": UID,
        "version": 1,
    }


def render() -> str:
    return json.dumps(dashboard(), indent=2, sort_keys=True) + "\n"


def queries() -> list[dict[str, Any]]:
    """Every PromQL of the dashboard, for tests that run them against Prometheus."""
    out: list[dict[str, Any]] = []
    for panel in dashboard()["panels"]:
        for target in panel["targets"]:
            out.append(
                {
                    "panel_id": panel["id"],
                    "panel": panel["title"],
                    "ref_id": target["refId"],
                    "expr": target["expr"],
                    "instant": target["instant"],
                }
            )
    out.append(
        {
            "panel_id": None,
            "panel": "annotation: Mode switches",
            "ref_id": "annotation",
            "expr": ANNOTATION_EXPR,
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
