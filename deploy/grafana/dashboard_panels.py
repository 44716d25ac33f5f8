"""The panels of the ceph-sla dashboard, section by section, and the PromQL they use.

generate.py writes them to deploy/grafana/ceph-sla.json, with the JSON of
each panel from panel_json.py.  A section is a few adjacent panels on one
theme; the grid is filled row by row, so the order of panels() fixes both
the layout and the panel ids.
"""

from __future__ import annotations

from panel_json import Panel, Target

# Every selector carries these, as in Ceph's own dashboards (ceph-mixin):
# $cluster is the Prometheus `cluster` label (empty when there is none: the
# matcher then selects the series without it), $job the scrape jobs (All: .+;
# the sla module's job and Ceph's prometheus module's job both count).
MATCHERS = 'cluster=~"$cluster", job=~"$job"'


def sel(metric: str, extra: str = "") -> str:
    """metric{cluster=~"$cluster", job=~"$job"[, extra]}"""
    return f"{metric}{{{MATCHERS}{', ' + extra if extra else ''}}}"


# One series per pool with its name and role. max by() drops instance/job so
# a mgr failover (two sla endpoints briefly) cannot make the join many-to-many.
POOL_ROLE = f"max by (pool_id, name, role) ({sel('ceph_sla_pool_role')})"
POOL_IOPS = (
    f"sum by (pool_id) (rate({sel('ceph_pool_rd')}[1m]) + rate({sel('ceph_pool_wr')}[1m]))"
)


def per_pool(metric: str) -> str:
    """A per-pool sla gauge with the pool's name and role."""
    return f"max by (pool_id) ({sel(metric)}) * on (pool_id) group_left (name, role) {POOL_ROLE}"


# a normal pool's gain of sharing: measured where the module has measured it,
# the model's always (one query: the measured series exist only once measured)
GAIN_BY_SOURCE = (
    "(" + " or ".join(
        f'label_replace(max by (pool_id) ({sel("ceph_sla_pool_gain_" + source)}), '
        f'"source", "{source}", "", "")' for source in ("measured", "model"))
    + f") * on (pool_id) group_left (name, role) {POOL_ROLE}")

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
    return (
        _mode_stats()
        + _health_stats()
        + _gate_and_mode_timelines()
        + _iops_and_misplaced()
        + _pool_rules_and_placement()
        + _gain()
        + _urgent_osds_and_ticks()
    )


def _mode_stats() -> list[Panel]:
    """First stat row: the mode, whether the module may switch it, its last switches."""
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
    ]


def _health_stats() -> list[Panel]:
    """Second stat row: isolation, placement, urgent fill and tick time now."""
    return [
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
    ]


def _gate_and_mode_timelines() -> list[Panel]:
    """The gates now, then the mode and the gates over time (full width)."""
    return [
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
    ]


def _iops_and_misplaced() -> list[Panel]:
    """Urgent and per-pool client IOPS, and the data still moving."""
    return [
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
    ]


def _pool_rules_and_placement() -> list[Panel]:
    """Each pool's rule and urgent share, time to isolation, pending upmaps."""
    return [
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
    ]


def _gain() -> list[Panel]:
    """What sharing brings each normal pool."""
    return [
        Panel(
            "Gain of sharing per normal pool", "timeseries",
            [Target(GAIN_BY_SOURCE, "{{name}} {{source}}")],
            12, 8,
            "Shared over isolated client service of each normal pool: measured by the "
            "module (latency per op at matched loads while urgent clients were quiet) and "
            "as its strategy's model expects. A pool under min_gain (1.05) stays isolated.",
        ),
        Panel("Urgent OSD writes by switches (24 h)", "timeseries",
              [Target(f"max({sel('ceph_sla_urgent_written_bytes')})", "written"),
               Target(f"max({sel('ceph_sla_urgent_write_budget_bytes')})", "budget a day")],
              12, 8, "Bytes the switches to shared of the last 24 hours placed on urgent "
              "OSDs, and the budget (max_urgent_drive_writes x the urgent raw capacity).",
              unit="bytes"),
    ]


def _urgent_osds_and_ticks() -> list[Panel]:
    """Urgent OSD fill and latency, tick time, blocked switches."""
    return [
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
