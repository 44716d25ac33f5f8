"""Prometheus endpoint of the sla module.

Ceph's prometheus mgr module cannot export another module's state, so the sla
module serves its own ``/metrics`` (default port 9284, next to Ceph's 9283).
Every scrape calls ``snapshot()`` (the dict ``ceph sla status -f json`` prints)
and maps it to metric families in :func:`collect_families`, so the exported
values are never older than the module's own state.

The exposition is prometheus_client's, the module's own pinned copy
(mgr_sla/_vendor): no Ceph package or container image carries the library,
so the module never depends on the mgr's interpreter having it. Should the copy
fail to import (a Python it does not support), the module still loads and
:meth:`MetricsServer.start` raises :class:`MetricsUnavailableError`.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from typing import Any

try:
    from .._vendor.prometheus_client.core import (
        CounterMetricFamily,
        GaugeMetricFamily,
        HistogramMetricFamily,
        Metric,
    )
    from .._vendor.prometheus_client.utils import floatToGoString

    PROMETHEUS_CLIENT_AVAILABLE = True
    PROMETHEUS_CLIENT_ERROR = ""
except Exception as e:  # pragma: no cover - a Python the copy does not support
    PROMETHEUS_CLIENT_AVAILABLE = False
    PROMETHEUS_CLIENT_ERROR = f"{type(e).__name__}: {e}"

from .metric_specs import METRIC_NAMES, METRICS, POOL, SAMPLE_NAMES, MetricSpec

log = logging.getLogger(__name__)
__all__ = ["METRICS", "METRIC_NAMES", "SAMPLE_NAMES", "MetricSpec", "collect_families"]

Snapshot = Mapping[str, Any]


_SPECS: dict[str, MetricSpec] = {m.name: m for m in METRICS}


def _number(value: Any) -> float | None:
    # bool is an int subclass; keep it so pinned/dry_run map to 1/0.
    if isinstance(value, (int, float)):
        return float(value)
    return None


def _gauge(name: str, value: Any) -> GaugeMetricFamily:
    spec = _SPECS[name]
    family = GaugeMetricFamily(name, spec.help, labels=[])
    number = _number(value)
    # An unknown value is left out rather than exported as 0, which would read
    # as a real measurement ("time to isolation 0 s").
    if number is not None:
        family.add_metric([], number)
    return family


def _counter(name: str, labels: Iterable[str] = ()) -> CounterMetricFamily:
    spec = _SPECS[name]
    # CounterMetricFamily strips a trailing "_total" from the family name and
    # the text exposition adds it back to the sample, so the samples come out
    # exactly as named in METRICS.
    return CounterMetricFamily(name, spec.help, labels=list(labels))


def _quantiles(name: str) -> Metric:
    """A summary of quantile samples only: `quantile` is a summary's label (a
    gauge carrying it fails promtool's lint); sum and count are not kept."""
    spec = _SPECS[name]
    return Metric(name, spec.help, "summary")


def _labelled_gauge(name: str) -> GaugeMetricFamily:
    spec = _SPECS[name]
    return GaugeMetricFamily(name, spec.help, labels=list(spec.labels))


def _pool_id(pool: Mapping[str, Any]) -> str | None:
    raw = pool.get("pool_id")
    if isinstance(raw, bool) or not isinstance(raw, (int, str)):
        return None
    try:
        # Same spelling as the prometheus module's pool_id label ("3", not "3.0").
        return str(int(raw))
    except ValueError:
        return None


def _mode_value(mode: Any) -> float | None:
    return {"isolated": 1.0, "shared": 0.0}.get(mode) if isinstance(mode, str) else None


def _gate_blocking(snapshot: Snapshot) -> GaugeMetricFamily:
    """1 for every gate blocking now, 0 for every other known gate.

    The known gates are the keys of blocked_total (the module lists every
    name of gates.GATE_NAMES there, at 0 when never blocked), so that an alert
    can hold `== 1` for minutes while the counter, which counts episodes,
    does not move.
    """
    family = _labelled_gauge("ceph_sla_gate_blocking")
    gates = snapshot.get("gates")
    if not isinstance(gates, list):
        return family  # what blocks now is unknown: no sample rather than a false 0
    blocking = {
        str(g["name"]) for g in gates if isinstance(g, Mapping) and g.get("name") is not None
    }
    known = snapshot.get("blocked_total")
    names = blocking | {str(n) for n in (known if isinstance(known, Mapping) else {})}
    for name in sorted(names):
        family.add_metric([name], 1.0 if name in blocking else 0.0)
    return family


def _histogram(name: str, raw: Any) -> HistogramMetricFamily:
    """A cumulative histogram {"count", "sum", "buckets": {"0.005": n, ..., "+Inf": n}}.

    Anything malformed (a bound that is not a number, counts going down)
    leaves the family without samples.
    """
    spec = _SPECS[name]
    family = HistogramMetricFamily(name, spec.help, labels=[])
    if not isinstance(raw, Mapping):
        return family
    count, total, buckets = _number(raw.get("count")), _number(raw.get("sum")), raw.get("buckets")
    if count is None or total is None or not isinstance(buckets, Mapping):
        return family
    bounds: list[tuple[float, float]] = []
    for key, value in buckets.items():
        number = _number(value)
        try:
            bound = float(key)
        except (TypeError, ValueError):
            return family
        if number is None or bound != bound:  # NaN bound
            return family
        bounds.append((bound, number))
    bounds.sort()
    if not bounds or bounds[-1][0] != float("inf"):
        bounds.append((float("inf"), count))
    counts = [c for _, c in bounds]
    if any(b > a for b, a in zip(counts, counts[1:])) or counts[-1] != count:
        return family
    family.add_metric(
        [], [(floatToGoString(b), c) for b, c in bounds], sum_value=total
    )
    return family


def collect_families(snapshot: Snapshot) -> list[Metric]:
    """Map a status snapshot to metric families, in METRICS order.

    Missing or malformed fields leave the family without samples instead of
    failing the whole scrape: a half-initialised module still exports the rest.
    """
    last_switch = snapshot.get("last_switch")
    last_time = last_switch.get("time") if isinstance(last_switch, Mapping) else None
    repairs = snapshot.get("weight_set_repairs")
    repairs_count = len(repairs) if isinstance(repairs, list) else None
    pools = snapshot.get("pools")
    per_pool = _pool_families(_sorted_pools(pools if isinstance(pools, list) else []))
    return [
        _gauge("ceph_sla_mode", _mode_value(snapshot.get("mode"))),
        _gauge("ceph_sla_active", snapshot.get("active")),
        _gauge("ceph_sla_pinned", snapshot.get("pinned")),
        _gauge("ceph_sla_dry_run", snapshot.get("dry_run")),
        _gauge("ceph_sla_dry_run_mode", _mode_value(snapshot.get("dry_run_mode"))),
        _gauge("ceph_sla_urgent_iops", snapshot.get("urgent_iops")),
        _gauge("ceph_sla_threshold_iops", snapshot.get("threshold_iops")),
        _gauge("ceph_sla_threshold_low_iops", snapshot.get("threshold_low_iops")),
        *_switch_counters(snapshot),
        _gate_blocking(snapshot),
        _gauge("ceph_sla_last_switch_timestamp_seconds", last_time),
        _gauge("ceph_sla_time_to_isolation_seconds", snapshot.get("time_to_isolation_secs")),
        _gauge("ceph_sla_pgs_without_normal_replica", snapshot.get("pgs_without_normal_replica")),
        _gauge("ceph_sla_weight_set_repairs", repairs_count),
        *_write_budget(snapshot.get("urgent_writes")),
        _histogram("ceph_sla_tick_seconds", snapshot.get("tick_seconds")),
        *per_pool[:10],
        _gauge("ceph_sla_slo_latency_seconds", _slo_seconds(snapshot.get("slo"))),
        *per_pool[10:],
    ]


def _write_budget(raw: Any) -> list[Metric]:
    budget = raw if isinstance(raw, Mapping) else {}
    return [_gauge("ceph_sla_urgent_written_bytes", budget.get("written_last_day_bytes")),
            _gauge("ceph_sla_urgent_write_budget_bytes", budget.get("budget_bytes_per_day"))]


def _switch_counters(snapshot: Snapshot) -> list[Metric]:
    switches = _counter("ceph_sla_mode_switches_total")
    switches_value = _number(snapshot.get("switches_total"))
    if switches_value is not None:
        switches.add_metric([], switches_value)
    blocked = _counter("ceph_sla_blocked_switches_total", ("reason",))
    blocked_raw = snapshot.get("blocked_total")
    if isinstance(blocked_raw, Mapping):
        for reason in sorted(blocked_raw):
            count = _number(blocked_raw[reason])
            if count is not None:
                blocked.add_metric([str(reason)], count)
    return [switches, blocked]


def _pool_families(pools: list[Mapping[str, Any]]) -> list[Metric]:
    """Per pool, in METRICS order: role, rule, misplaced, IOPS, the three
    upmap families, the three gain families, then urgent latency and SLO
    violation seconds."""
    role = _labelled_gauge("ceph_sla_pool_role")
    rule = _labelled_gauge("ceph_sla_pool_rule")
    plain = [_labelled_gauge(n) for n in ("ceph_sla_pool_misplaced_ratio",
                                          "ceph_sla_pool_client_iops")]
    upmap = [_labelled_gauge(n) for n in ("ceph_sla_pool_urgent_replica_share",
                                          "ceph_sla_pool_upmap_pending",
                                          "ceph_sla_pool_pgs_with_upmaps")]
    gain = [_labelled_gauge(f"ceph_sla_pool_gain_{k}") for k in ("model", "measured",
                                                                 "expected")]
    latency = _quantiles("ceph_sla_urgent_latency_seconds")
    violations = _counter("ceph_sla_slo_violation_seconds_total", POOL)
    for pool in pools:
        pool_id = _pool_id(pool)
        if pool_id is None:
            continue
        name = str(pool.get("name", ""))
        if pool.get("role") is not None:
            role.add_metric([pool_id, name, str(pool["role"])], 1.0)
        if pool.get("rule") is not None:
            rule.add_metric([pool_id, name, str(pool["rule"])], 1.0)
        _add_numbers(plain, pool_id, (pool.get("misplaced_ratio"), pool.get("client_iops")))
        upmaps = pool.get("upmaps")
        if isinstance(upmaps, Mapping):
            _add_numbers(upmap, pool_id, (upmaps.get("urgent_replica_share"),
                                          upmaps.get("pending"), upmaps.get("pgs_with_upmaps")))
        gains = pool.get("gain")
        if isinstance(gains, Mapping):
            _add_numbers(gain, pool_id, (gains.get("model"), gains.get("measured"),
                                         gains.get("expected")))
        lat = pool.get("latency")
        if isinstance(lat, Mapping):
            _add_latency(latency, violations, pool_id, lat)
    return [role, rule, *plain, *upmap, *gain, latency, violations]


def _add_numbers(families: list[GaugeMetricFamily], pool_id: str, values: tuple[Any, ...]
                 ) -> None:
    for family, value in zip(families, values):
        number = _number(value)
        if number is not None:
            family.add_metric([pool_id], number)


def _add_latency(latency: Metric, violations: CounterMetricFamily, pool_id: str,
                 lat: Mapping[str, Any]) -> None:
    q = _number(lat.get("percentile"))
    for op in ("write", "read"):
        for quantile, value in ((q, lat.get(f"{op}_ms")), (99.0, lat.get(f"{op}_p99_ms"))):
            ms = _number(value)
            if ms is not None and quantile is not None:
                latency.add_sample(latency.name, {"pool_id": pool_id, "op": op,
                                                  "quantile": f"{quantile / 100:g}"}, ms / 1000)
    seconds = _number(lat.get("slo_violation_seconds"))
    if seconds is not None:
        violations.add_metric([pool_id], seconds)


def _slo_seconds(slo: Any) -> float | None:
    if isinstance(slo, Mapping):
        ms = _number(slo.get("latency_ms"))
        return ms / 1000 if ms else None
    return None


def _sorted_pools(pools: list[Any]) -> list[Mapping[str, Any]]:
    # Stable output order makes scrapes diffable and tests simple.
    valid = [p for p in pools if isinstance(p, Mapping)]
    return sorted(valid, key=lambda p: (_pool_id(p) is None, int(_pool_id(p) or 0)))


