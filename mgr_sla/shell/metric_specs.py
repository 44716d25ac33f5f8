"""What the sla module exports to Prometheus: every metric's name, type,
labels and help, in the order of the exposition. docs/observability.md, the
dashboard and the alert rules are checked against this list."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class MetricSpec:
    """One exported metric: the name as it appears in the text exposition."""

    name: str
    type: str  # "gauge", "counter", "histogram" or "summary" (quantile samples only)
    labels: tuple[str, ...]
    help: str

    @property
    def sample_names(self) -> tuple[str, ...]:
        """The series names Prometheus stores for this metric."""
        if self.type == "histogram":
            return (f"{self.name}_bucket", f"{self.name}_sum", f"{self.name}_count")
        return (self.name,)


# The single list of what we export; docs/observability.md, the dashboard and
# the alert rules are checked against it by the unit tests.
POOL = ("pool_id",)  # the label of the per-pool metrics
METRICS: tuple[MetricSpec, ...] = (
    MetricSpec("ceph_sla_mode", "gauge", (), "Mode of the normal pools: 1 isolated, 0 shared"),
    MetricSpec("ceph_sla_active", "gauge", (), "1 if the module is on ('ceph sla on|off')"),
    MetricSpec("ceph_sla_pinned", "gauge", (), "1 if an operator pinned the mode"),
    MetricSpec("ceph_sla_dry_run", "gauge", (), "1 if the module only logs the switches"),
    MetricSpec(
        "ceph_sla_dry_run_mode", "gauge", (),
        "Mode the dry run would apply: 1 isolated, 0 shared (absent outside a dry run)",
    ),
    MetricSpec("ceph_sla_urgent_iops", "gauge", (), "Client IOPS of the urgent pools"),
    MetricSpec("ceph_sla_threshold_iops", "gauge", (), "Urgent IOPS that isolate normal pools"),
    MetricSpec(
        "ceph_sla_threshold_low_iops", "gauge", (),
        "Urgent IOPS below which normal pools may go back to shared",
    ),
    MetricSpec("ceph_sla_mode_switches_total", "counter", (), "Mode switches made"),
    MetricSpec(
        "ceph_sla_blocked_switches_total", "counter", ("reason",),
        "Switches the module wanted but did not make, by reason (once per blocked episode)",
    ),
    MetricSpec(
        "ceph_sla_gate_blocking", "gauge", ("reason",),
        "1 while the safety gate blocks a switch now, 0 otherwise",
    ),
    MetricSpec(
        "ceph_sla_last_switch_timestamp_seconds", "gauge", (),
        "Unix time of the last mode switch (absent before the first one)",
    ),
    MetricSpec(
        "ceph_sla_time_to_isolation_seconds", "gauge", (),
        "Seconds from the last switch to isolated until every normal-pool PG was active "
        "with no urgent OSD acting",
    ),
    MetricSpec(
        "ceph_sla_pgs_without_normal_replica", "gauge", (),
        "PGs of normal pools whose up set has no OSD of the normal class",
    ),
    MetricSpec(
        "ceph_sla_weight_set_repairs", "gauge", (),
        "Weight-set drift repairs listed in 'ceph sla status' (the last few)",
    ),
    MetricSpec(
        "ceph_sla_urgent_written_bytes", "gauge", (),
        "Bytes the switches to shared of the last 24 hours placed on urgent OSDs (the "
        "write budget counts these)",
    ),
    MetricSpec(
        "ceph_sla_urgent_write_budget_bytes", "gauge", (),
        "Bytes a day the switches to shared may place on urgent OSDs "
        "(max_urgent_drive_writes; absent: no limit)",
    ),
    MetricSpec(
        "ceph_sla_tick_seconds", "histogram", (),
        "Duration of the module's ticks",
    ),
    MetricSpec("ceph_sla_pool_role", "gauge", (*POOL, "name", "role"), "Pool role (1)"),
    MetricSpec("ceph_sla_pool_rule", "gauge", (*POOL, "name", "rule"), "Pool CRUSH rule (1)"),
    MetricSpec(
        "ceph_sla_pool_misplaced_ratio", "gauge", POOL,
        "Fraction of the pool's object copies that are misplaced (moving)",
    ),
    MetricSpec("ceph_sla_pool_client_iops", "gauge", POOL, "Client IOPS of the pool"),
    MetricSpec(
        "ceph_sla_pool_urgent_replica_share", "gauge", POOL,
        "Fraction of the pool's replicas (up sets) on urgent-class OSDs",
    ),
    MetricSpec(
        "ceph_sla_pool_upmap_pending", "gauge", POOL,
        "The module's pg_upmap_items entries still to set or remove for the pool",
    ),
    MetricSpec(
        "ceph_sla_pool_pgs_with_upmaps", "gauge", POOL,
        "PGs of the pool that should carry one of the module's pg_upmap_items entries",
    ),
    MetricSpec(
        "ceph_sla_pool_gain_model", "gauge", POOL,
        "A normal pool's gain of sharing as its strategy's model expects it (shared over "
        "isolated client service)",
    ),
    MetricSpec(
        "ceph_sla_pool_gain_measured", "gauge", POOL,
        "A normal pool's gain of sharing as the module measured it (isolated over shared "
        "latency per op at matched loads; absent until measured)",
    ),
    MetricSpec(
        "ceph_sla_pool_gain_expected", "gauge", POOL,
        "The gain the module decides a normal pool's sharing on (against min_gain)",
    ),
    MetricSpec(
        "ceph_sla_slo_latency_seconds", "gauge", (),
        "The urgent pools' latency objective (absent while off)",
    ),
    MetricSpec(
        "ceph_sla_urgent_latency_seconds", "summary", (*POOL, "op", "quantile"),
        "Urgent pool latency: a percentile of the per-period mean latencies over the "
        "objective's window (quantile 0.75 by default: the objective's; and 0.99)",
    ),
    MetricSpec(
        "ceph_sla_slo_violation_seconds_total", "counter", POOL,
        "Seconds the urgent pool's latency spent above the objective",
    ),
)

METRIC_NAMES: tuple[str, ...] = tuple(m.name for m in METRICS)
# Every series name Prometheus stores (a histogram's _bucket, _sum, _count).
SAMPLE_NAMES: tuple[str, ...] = tuple(n for m in METRICS for n in m.sample_names)
