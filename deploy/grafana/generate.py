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
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

OUTPUT = Path(__file__).with_name("ceph-sla.json")
UID = "ceph-sla"
DS = {"type": "prometheus", "uid": "${datasource}"}

# Every selector carries these, as in Ceph's own dashboards (ceph-mixin):
# $cluster is the Prometheus `cluster` label (empty when there is none: the
# matcher then selects the series without it), $job the scrape jobs (All: .+;
# the sla module's job and Ceph's prometheus module's job both count).
MATCHERS = 'cluster=~"$cluster", job=~"$job"'
# What --list-queries substitutes, as Grafana does with no `cluster` label and
# job = All, so the queries run unchanged against Prometheus.
VARIABLE_DEFAULTS = {"cluster": "", "job": ".+", "urgent_class": "ssd"}


def sel(metric: str, extra: str = "") -> str:
    """metric{cluster=~"$cluster", job=~"$job"[, extra]}"""
    return f"{metric}{{{MATCHERS}{', ' + extra if extra else ''}}}"


def resolve(expr: str, values: dict[str, str] | None = None) -> str:
    """expr with the dashboard variables replaced (default: VARIABLE_DEFAULTS)."""
    values = {**VARIABLE_DEFAULTS, **(values or {})}
    return re.sub(r"\$(\w+)", lambda m: values.get(m.group(1), m.group(0)), expr)


# One series per pool with its name and role. max by() drops instance/job so
# a mgr failover (two sla endpoints briefly) cannot make the join many-to-many.
POOL_ROLE = f"max by (pool_id, name, role) ({sel('ceph_sla_pool_role')})"
POOL_IOPS = (
    f"sum by (pool_id) (rate({sel('ceph_pool_rd')}[1m]) + rate({sel('ceph_pool_wr')}[1m]))"
)


def per_pool(metric: str) -> str:
    """A per-pool sla gauge with the pool's name and role."""
    return f"max by (pool_id) ({sel(metric)}) * on (pool_id) group_left (name, role) {POOL_ROLE}"


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


GATE_MAPPINGS = [
    {
        "options": {
            "0": {"color": "green", "index": 0, "text": "clear"},
            "1": {"color": "red", "index": 1, "text": "blocking"},
        },
        "type": "value",
    }
]
ON_OFF_MAPPINGS = [
    {
        "options": {
            "0": {"color": "red", "index": 0, "text": "off"},
            "1": {"color": "green", "index": 1, "text": "on"},
        },
        "type": "value",
    }
]
# Ceph's default mon_osd_nearfull_ratio / full_ratio: the sla capacity gate
# keeps shared mode from taking an urgent OSD past nearfull.
FILL_THRESHOLDS = [(None, "green"), (0.85, "orange"), (0.95, "red")]

URGENT_CLASS = 'device_class="$urgent_class"'
# Fill of every OSD of the urgent device class, from Ceph's prometheus module
# (OSD perf counters osd.stat_bytes*, CRUSH class in ceph_osd_metadata).
URGENT_OSD_FILL = (
    f"(max by (ceph_daemon) ({sel('ceph_osd_stat_bytes_used')})"
    f" / max by (ceph_daemon) ({sel('ceph_osd_stat_bytes')}))"
    " * on (ceph_daemon) group_left (hostname) max by (ceph_daemon, hostname) "
    f"({sel('ceph_osd_metadata', URGENT_CLASS)})"
)
GATES = f"max by (reason) ({sel('ceph_sla_gate_blocking')})"
NOT_P99 = 'quantile!="0.99"'  # the objective's percentile


def tick_quantile(q: float) -> str:
    return (
        f"histogram_quantile({q}, sum by (le) "
        f"(rate({sel('ceph_sla_tick_seconds_bucket')}[5m])))"
    )


def panels() -> list[Panel]:
    """The dashboard, top to bottom, left to right (24 columns wide)."""
    return [
        Panel(
            "Mode", "stat", [Target(f"max({sel('ceph_sla_mode')})", instant=True)], 4, 4,
            "Mapping mode of the normal pools now.",
            extra={"mappings": MODE_MAPPINGS},
        ),
        Panel(
            "Module", "stat", [Target(f"max({sel('ceph_sla_active')})", instant=True)], 4, 4,
            "ceph sla on|off: when off the module switches nothing.",
            extra={"mappings": ON_OFF_MAPPINGS},
        ),
        Panel(
            "Pinned", "stat", [Target(f"max({sel('ceph_sla_pinned')})", instant=True)], 4, 4,
            "An operator pinned the mode: the module does not switch.",
            extra={"mappings": BOOL_MAPPINGS},
        ),
        Panel(
            "Dry run", "stat", [Target(f"max({sel('ceph_sla_dry_run')})", instant=True)], 4, 4,
            "The module only logs the switches it would make.",
            extra={"mappings": BOOL_MAPPINGS},
        ),
        Panel(
            "Last switch", "stat",
            [
                Target(
                    f"max({sel('ceph_sla_last_switch_timestamp_seconds')}) * 1000",
                    instant=True,
                )
            ],
            4, 4, "When the module last switched the mode.", unit="dateTimeFromNow",
        ),
        Panel(
            "Switches (24h)", "stat",
            [
                Target(
                    f"sum(increase({sel('ceph_sla_mode_switches_total')}[24h]))",
                    instant=True,
                )
            ],
            4, 4, "Mode switches in the last 24 hours; each one moves data.",
        ),
        Panel(
            "Time to isolation", "stat",
            [Target(f"max({sel('ceph_sla_time_to_isolation_seconds')})", instant=True)], 4, 4,
            "Last measured time from a switch to isolated until no PG of a normal pool "
            "acted on an urgent OSD.",
            unit="s",
        ),
        Panel(
            "PGs without normal replica", "stat",
            [Target(f"max({sel('ceph_sla_pgs_without_normal_replica')})", instant=True)],
            4, 4,
            "PGs of normal pools with no replica on the normal class (normal inclusion "
            "broken; SLA_NORMAL_INCLUSION). Should be 0.",
            extra={"thresholds": [(None, "green"), (1, "red")]},
        ),
        Panel(
            "Upmap entries pending", "stat",
            [
                Target(
                    f"sum(max by (pool_id) ({sel('ceph_sla_pool_upmap_pending')}))",
                    instant=True,
                )
            ],
            4, 4,
            "The module's pg_upmap_items entries still to set or remove, all pools.",
        ),
        Panel(
            "Weight-set repairs", "stat",
            [Target(f"max({sel('ceph_sla_weight_set_repairs')})", instant=True)], 4, 4,
            "Drift repairs of the sla weight sets listed in ceph sla status (the last "
            "few): a routine CRUSH change (reweight, new OSD) had changed them.",
        ),
        Panel(
            "Urgent OSD fill (max)", "stat",
            [Target(f"max({URGENT_OSD_FILL})", instant=True)], 4, 4,
            "Fullest OSD of the urgent device class ($urgent_class); the module does not "
            "share at nearfull.",
            unit="percentunit", extra={"thresholds": FILL_THRESHOLDS},
        ),
        Panel(
            "Tick duration (p99, 5m)", "stat",
            [Target(tick_quantile(0.99), instant=True)], 4, 4,
            "99th percentile of the module's tick duration over 5 minutes.",
            unit="s",
        ),
        Panel(
            "Gates blocking now", "stat", [Target(GATES, "{{reason}}", instant=True)], 24, 4,
            "Every safety gate: blocking a switch now, or clear (ceph_sla_gate_blocking).",
            extra={"mappings": GATE_MAPPINGS, "text_mode": "value_and_name",
                   "color_mode": "background"},
        ),
        Panel(
            "Mode timeline", "state-timeline",
            [Target(f"max({sel('ceph_sla_mode')})", "mode")], 24, 5,
            "Isolated (urgent clients active) or shared. Annotations mark switches.",
            extra={"mappings": MODE_MAPPINGS},
        ),
        Panel(
            "Gates blocking", "state-timeline", [Target(GATES, "{{reason}}")], 24, 7,
            "When each safety gate held a switch back.",
            extra={"mappings": GATE_MAPPINGS},
        ),
        Panel(
            "Urgent IOPS against thresholds", "timeseries",
            [
                Target(f"max({sel('ceph_sla_urgent_iops')})", "urgent IOPS"),
                Target(f"max({sel('ceph_sla_threshold_iops')})", "isolate at (high)"),
                Target(f"max({sel('ceph_sla_threshold_low_iops')})", "share below (low)"),
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
            [Target(f"sum by (role) ({per_pool('ceph_sla_pool_client_iops')})", "{{role}}")],
            12, 8,
            "The per-pool IOPS the module decides on, summed by role.",
            unit="iops",
        ),
        Panel(
            "Misplaced ratio per pool", "timeseries",
            [Target(per_pool("ceph_sla_pool_misplaced_ratio"), "{{name}}")],
            12, 8,
            "Share of each pool's copies still moving after a rule change.",
            unit="percentunit",
        ),
        Panel(
            "CRUSH rule per pool", "table",
            [
                Target(
                    f"max by (pool_id, name, rule) ({sel('ceph_sla_pool_rule')})"
                    " * on (pool_id) group_left (role) max by (pool_id, role) "
                    f"({sel('ceph_sla_pool_role')})",
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
            [Target(f"max({sel('ceph_sla_time_to_isolation_seconds')})", "time to isolation")],
            12, 8,
            "Seconds from a switch to isolated until no PG of a normal pool acted on an "
            "urgent OSD; one value per isolation.",
            unit="s",
        ),
        Panel(
            "Urgent replica share per pool", "timeseries",
            [Target(per_pool("ceph_sla_pool_urgent_replica_share"), "{{role}}: {{name}}")],
            12, 8,
            "Share of each pool's replicas (up sets) on urgent OSDs: 0 for normal pools "
            "when isolated, the shared mode's target share when shared.",
            unit="percentunit",
        ),
        Panel(
            "Upmap entries pending per pool", "timeseries",
            [Target(per_pool("ceph_sla_pool_upmap_pending"), "{{name}}")],
            12, 8,
            "The module's pg_upmap_items entries still to set or remove; placed in "
            "batches every tick, held while the cluster is unhealthy.",
        ),
        Panel(
            "Urgent OSD fill", "timeseries",
            [Target(URGENT_OSD_FILL, "{{ceph_daemon}} ({{hostname}})")],
            12, 8,
            "Used / size of every OSD of the urgent device class ($urgent_class), from "
            "Ceph's prometheus module. Shared mode puts normal data there; the module "
            "does not share when an urgent OSD would pass nearfull (0.85).",
            unit="percentunit", extra={"thresholds": FILL_THRESHOLDS},
        ),
        Panel(
            "Urgent latency and objective", "timeseries",
            [
                Target(f"max by (pool_id, op) ({sel('ceph_sla_urgent_latency_seconds', NOT_P99)})",
                       "{{op}}, pool {{pool_id}}"),
                Target(f"max({sel('ceph_sla_slo_latency_seconds')})", "objective"),
            ],
            12, 8,
            "Urgent pools' latency at the objective's percentile of the per-period means "
            "(ceph sla set-slo), and the objective itself (absent while off).",
            unit="s",
        ),
        Panel(
            "Tick duration", "timeseries",
            [
                Target(tick_quantile(0.5), "p50"),
                Target(tick_quantile(0.99), "p99"),
            ],
            12, 8,
            "How long one tick of the module takes (ceph_sla_tick_seconds, 5-minute "
            "rate): a tick longer than interval_secs delays the reaction.",
            unit="s",
        ),
        Panel(
            "Blocked switches by reason", "timeseries",
            [
                Target(
                    f"sum by (reason) (increase({sel('ceph_sla_blocked_switches_total')}[5m]))",
                    "{{reason}}",
                )
            ],
            24, 8,
            "Blocked episodes started (per 5 minutes), by reason.",
            extra={"bars": True},
        ),
    ]


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
    if panel.extra.get("thresholds"):
        defaults["thresholds"] = {
            "mode": "absolute",
            "steps": [{"color": c, "value": v} for v, c in panel.extra["thresholds"]],
        }
        if panel.kind == "timeseries":
            defaults["custom"]["thresholdsStyle"] = {"mode": "line"}
        else:
            defaults["color"] = {"mode": "thresholds"}
    return {"defaults": defaults, "overrides": []}


def _options(panel: Panel) -> dict[str, Any]:
    if panel.kind == "stat":
        return {
            "colorMode": panel.extra.get("color_mode", "value"),
            "graphMode": "none",
            "reduceOptions": {"calcs": ["lastNotNull"], "fields": "", "values": False},
            "textMode": panel.extra.get("text_mode", "auto"),
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
    grid = _layout(items)
    assert len(grid) == len(items)
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
        "panels": [_panel_json(i + 1, p, g) for i, (p, g) in enumerate(zip(items, grid))],
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
