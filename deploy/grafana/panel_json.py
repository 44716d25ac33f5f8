"""Grafana JSON of the dashboard's panels: field config, options, grid positions.

A Panel says what to show (dashboard_panels.py); panels_json() turns the
list into Grafana panel JSON, ids in list order, laid out in 24 columns.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

DS = {"type": "prometheus", "uid": "${datasource}"}


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


def panels_json(items: list[Panel]) -> list[dict[str, Any]]:
    """Each panel's JSON, ids from 1 in list order, at its place in the grid."""
    grid = _layout(items)
    assert len(grid) == len(items)
    return [_panel_json(i + 1, p, g) for i, (p, g) in enumerate(zip(items, grid))]
