"""Tests of mgr_sla/shell/metrics.py: the snapshot-to-metrics mapping and the HTTP server."""

from __future__ import annotations

import importlib.util
import socket
import sys
import threading
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from mgr_sla._vendor.prometheus_client.parser import text_string_to_metric_families

ROOT = Path(__file__).resolve().parents[2]


from mgr_sla.shell import metrics, metrics_server  # noqa: E402


def sample_snapshot() -> dict[str, Any]:
    return {
        "mode": "isolated",
        "active": True,
        "pinned": False,
        "dry_run": True,
        "dry_run_mode": "shared",
        "urgent_iops": 812.5,
        "threshold_iops": 500.0,
        "threshold_low_iops": 200.0,
        "min_dwell_secs": 120.0,
        "since": 1700000000.0,
        "switches_total": 3,
        "blocked_total": {"misplaced": 2, "pgs_degraded": 1, "cluster_flags": 0},
        "last_switch": {
            "time": 1700000100.25,
            "from": "shared",
            "to": "isolated",
            "reason": "urgent_iops >= threshold",
            "epoch": 57,
        },
        "time_to_isolation_secs": 9.5,
        "gates": [{"name": "misplaced", "detail": "6.0% of objects misplaced, above 5.0%"}],
        "pgs_without_normal_replica": 2,
        "weight_set_repairs": [
            "2024-01-02 03:04:05: osd.5 weight 0.37 in sla_shared's weight set",
            "2024-01-02 03:09:05: osd.6 weight 0.5 in sla_shared's weight set",
        ],
        "urgent_writes": {"written_last_day_bytes": 5.0e10, "budget_bytes_per_day": 1.2e11},
        "tick_seconds": {
            "count": 10,
            "sum": 0.42,
            "buckets": {"0.005": 1, "0.01": 4, "0.1": 9, "1": 10, "+Inf": 10},
        },
        "slo": {"latency_ms": 20.0, "percentile": 75.0, "low_fraction": 0.5},
        "pools": [
            {
                "pool_id": 3,
                "name": "bulk",
                "role": "normal",
                "rule": "sla_isolated_normal",
                "expected_rule": "sla_isolated_normal",
                "client_iops": 150.0,
                "misplaced_ratio": 0.02,
                "upmaps": {
                    "placement": "isolated",
                    "pgs_with_upmaps": 0,
                    "pending": 3,
                    "urgent_replica_share": 0.125,
                },
                "gain": {"model": 1.85, "measured": 1.42, "measured_basis": "...",
                         "expected": 1.42, "source": "measured"},
            },
            {
                "pool_id": 1,
                "name": "db",
                "role": "urgent",
                "rule": "sla_isolated_urgent",
                "expected_rule": "sla_isolated_urgent",
                "client_iops": 812.5,
                "misplaced_ratio": 0.0,
                "upmaps": None,
                "latency": {"percentile": 75.0, "periods": 12, "write_ms": 24.0,
                            "write_p99_ms": 41.5, "read_ms": None, "read_p99_ms": None,
                            "slo_violation_seconds": 30.5},
            },
        ],
    }


def exposition(snapshot: dict[str, Any]) -> str:
    from mgr_sla._vendor.prometheus_client.exposition import generate_latest
    from mgr_sla._vendor.prometheus_client.registry import CollectorRegistry

    class Static:
        def collect(self) -> list[Any]:
            return metrics.collect_families(snapshot)

    registry = CollectorRegistry(auto_describe=False)
    registry.register(Static())  # type: ignore[arg-type]
    return generate_latest(registry).decode()


def samples_by_name(text: str) -> dict[str, list[tuple[dict[str, str], float]]]:
    out: dict[str, list[tuple[dict[str, str], float]]] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            out.setdefault(sample.name, []).append((dict(sample.labels), sample.value))
    return out


def exposed_names(text: str) -> set[str]:
    # Names as Prometheus stores them: the sample names of the text format.
    return {
        line.split("{")[0].split(" ")[0]
        for line in text.splitlines()
        if line and not line.startswith("#")
    }


def test_every_listed_metric_is_exported_with_its_exact_name() -> None:
    text = exposition(sample_snapshot())
    assert exposed_names(text) == set(metrics.SAMPLE_NAMES)
    type_lines = {
        line.split()[2]: line.split()[3] for line in text.splitlines() if line.startswith("# TYPE")
    }
    for spec in metrics.METRICS:
        # Counters keep their _total in the TYPE line too (no double suffix).
        assert type_lines[spec.name] == spec.type, spec.name
    assert "_total_total" not in text
    assert "_created" not in text


def test_scalar_values() -> None:
    samples = samples_by_name(exposition(sample_snapshot()))

    def value(name: str) -> float:
        [(labels, v)] = samples[name]
        assert labels == {}
        return v

    assert value("ceph_sla_mode") == 1.0
    assert value("ceph_sla_active") == 1.0
    assert value("ceph_sla_pinned") == 0.0
    assert value("ceph_sla_dry_run") == 1.0
    assert value("ceph_sla_dry_run_mode") == 0.0
    assert value("ceph_sla_urgent_iops") == 812.5
    assert value("ceph_sla_threshold_iops") == 500.0
    assert value("ceph_sla_threshold_low_iops") == 200.0
    assert value("ceph_sla_mode_switches_total") == 3.0
    assert value("ceph_sla_last_switch_timestamp_seconds") == 1700000100.25
    assert value("ceph_sla_time_to_isolation_seconds") == 9.5
    assert value("ceph_sla_pgs_without_normal_replica") == 2.0
    assert value("ceph_sla_weight_set_repairs") == 2.0


def test_labelled_values() -> None:
    samples = samples_by_name(exposition(sample_snapshot()))
    assert sorted(samples["ceph_sla_blocked_switches_total"], key=lambda s: s[0]["reason"]) == [
        ({"reason": "cluster_flags"}, 0.0),
        ({"reason": "misplaced"}, 2.0),
        ({"reason": "pgs_degraded"}, 1.0),
    ]
    # Blocking now (1) for the gates of the snapshot's list, 0 for every other known one.
    assert samples["ceph_sla_gate_blocking"] == [
        ({"reason": "cluster_flags"}, 0.0),
        ({"reason": "misplaced"}, 1.0),
        ({"reason": "pgs_degraded"}, 0.0),
    ]
    assert samples["ceph_sla_pool_role"] == [
        ({"pool_id": "1", "name": "db", "role": "urgent"}, 1.0),
        ({"pool_id": "3", "name": "bulk", "role": "normal"}, 1.0),
    ]
    assert samples["ceph_sla_pool_rule"] == [
        ({"pool_id": "1", "name": "db", "rule": "sla_isolated_urgent"}, 1.0),
        ({"pool_id": "3", "name": "bulk", "rule": "sla_isolated_normal"}, 1.0),
    ]
    assert samples["ceph_sla_pool_misplaced_ratio"] == [
        ({"pool_id": "1"}, 0.0),
        ({"pool_id": "3"}, 0.02),
    ]
    assert samples["ceph_sla_pool_client_iops"] == [
        ({"pool_id": "1"}, 812.5),
        ({"pool_id": "3"}, 150.0),
    ]
    # Pool 1 has no upmap status (null): no sample, not 0.
    assert samples["ceph_sla_pool_urgent_replica_share"] == [({"pool_id": "3"}, 0.125)]
    assert samples["ceph_sla_pool_upmap_pending"] == [({"pool_id": "3"}, 3.0)]
    assert samples["ceph_sla_pool_pgs_with_upmaps"] == [({"pool_id": "3"}, 0.0)]


def test_tick_histogram() -> None:
    text = exposition(sample_snapshot())
    samples = samples_by_name(text)
    assert "# TYPE ceph_sla_tick_seconds histogram" in text
    assert samples["ceph_sla_tick_seconds_bucket"] == [
        ({"le": "0.005"}, 1.0),
        ({"le": "0.01"}, 4.0),
        ({"le": "0.1"}, 9.0),
        ({"le": "1.0"}, 10.0),
        ({"le": "+Inf"}, 10.0),
    ]
    assert samples["ceph_sla_tick_seconds_count"] == [({}, 10.0)]
    assert samples["ceph_sla_tick_seconds_sum"] == [({}, 0.42)]


def test_tick_histogram_without_inf_bucket_gets_the_count() -> None:
    snap = sample_snapshot()
    snap["tick_seconds"] = {"count": 3, "sum": 0.1, "buckets": {"0.5": 2, "0.05": 1}}
    samples = samples_by_name(exposition(snap))
    assert samples["ceph_sla_tick_seconds_bucket"] == [
        ({"le": "0.05"}, 1.0),
        ({"le": "0.5"}, 2.0),
        ({"le": "+Inf"}, 3.0),
    ]


@pytest.mark.parametrize(
    "tick",
    [
        None,
        "junk",
        {"count": 3, "sum": 0.1},
        {"count": 3, "sum": 0.1, "buckets": {"x": 1, "+Inf": 3}},
        {"count": 3, "sum": 0.1, "buckets": {"0.1": 3, "1": 2, "+Inf": 3}},  # not cumulative
        {"count": 4, "sum": 0.1, "buckets": {"0.1": 1, "+Inf": 3}},  # +Inf != count
        {"count": None, "sum": 0.1, "buckets": {"+Inf": 3}},
    ],
)
def test_missing_or_malformed_tick_histogram_is_left_out(tick: Any) -> None:
    snap = sample_snapshot()
    if tick is None:
        del snap["tick_seconds"]  # a module without the histogram yet
    else:
        snap["tick_seconds"] = tick
    samples = samples_by_name(exposition(snap))
    assert not any(name.startswith("ceph_sla_tick_seconds") for name in samples)
    assert samples["ceph_sla_mode"] == [({}, 1.0)]  # the rest is still exported


def test_gate_blocking_without_gate_list_or_known_names() -> None:
    snap = sample_snapshot()
    del snap["gates"]
    assert "ceph_sla_gate_blocking" not in samples_by_name(exposition(snap))
    snap["gates"] = [{"name": "urgent_capacity", "detail": "osd.4 would be 91% full"}]
    del snap["blocked_total"]
    assert samples_by_name(exposition(snap))["ceph_sla_gate_blocking"] == [
        ({"reason": "urgent_capacity"}, 1.0)
    ]


def test_off_and_no_dry_run() -> None:
    snap = sample_snapshot()
    snap.update(active=False, dry_run=False, dry_run_mode=None, gates=[],
                pgs_without_normal_replica=None, weight_set_repairs=[])
    samples = samples_by_name(exposition(snap))
    assert samples["ceph_sla_active"] == [({}, 0.0)]
    assert samples["ceph_sla_dry_run"] == [({}, 0.0)]
    assert "ceph_sla_dry_run_mode" not in samples
    assert "ceph_sla_pgs_without_normal_replica" not in samples  # not measured yet
    assert samples["ceph_sla_weight_set_repairs"] == [({}, 0.0)]
    assert {v for _, v in samples["ceph_sla_gate_blocking"]} == {0.0}


def _gates_py_gate_names() -> tuple[str, ...]:
    from mgr_sla.core.gates import GATE_NAMES
    return GATE_NAMES


def test_every_gate_is_exported_and_documented() -> None:
    names = _gates_py_gate_names()
    assert {"cluster_flags", "urgent_capacity"} <= set(names)
    # What module.py's snapshot holds: blocked_total lists every gate name.
    snap = sample_snapshot()
    snap["blocked_total"] = dict.fromkeys(names, 0)
    samples = samples_by_name(exposition(snap))
    assert {labels["reason"] for labels, _ in samples["ceph_sla_gate_blocking"]} == set(names)
    doc = (ROOT / "docs" / "observability.md").read_text()
    for name in names:
        assert f"`{name}`" in doc, name


def test_shared_mode_and_unknown_values_are_left_out() -> None:
    snap = sample_snapshot()
    snap.update(
        mode="shared",
        pinned=True,
        last_switch=None,
        time_to_isolation_secs=None,
        blocked_total={},
    )
    samples = samples_by_name(exposition(snap))
    assert samples["ceph_sla_mode"] == [({}, 0.0)]
    assert samples["ceph_sla_pinned"] == [({}, 1.0)]
    # Unknown is absent, not 0: 0 would read as a measured value.
    assert "ceph_sla_last_switch_timestamp_seconds" not in samples
    assert "ceph_sla_time_to_isolation_seconds" not in samples
    assert "ceph_sla_blocked_switches_total" not in samples


def test_pool_id_label_matches_ceph_prometheus_module() -> None:
    snap = sample_snapshot()
    snap["pools"] = [dict(snap["pools"][0], pool_id="7"), {"name": "no id"}, "junk"]
    samples = samples_by_name(exposition(snap))
    assert [labels["pool_id"] for labels, _ in samples["ceph_sla_pool_role"]] == ["7"]


def test_partial_snapshot_does_not_break_the_scrape() -> None:
    samples = samples_by_name(exposition({"mode": "bogus", "pools": None}))
    assert samples == {}
    families = metrics.collect_families({})
    assert [f.name for f in families] == [
        # Counter family names carry no _total; the exposition adds it.
        spec.name[: -len("_total")] if spec.type == "counter" else spec.name
        for spec in metrics.METRICS
    ]


def test_docs_list_every_metric() -> None:
    doc = (ROOT / "docs" / "observability.md").read_text()
    for name in metrics.METRIC_NAMES:
        assert f"`{name}" in doc, name


# --- HTTP server ---------------------------------------------------------


def port_is_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        # Same options as the server: TIME_WAIT from the scrape does not count.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def get(url: str) -> tuple[int, str, str]:
    try:
        with urllib.request.urlopen(url, timeout=10) as resp:
            return resp.status, resp.headers.get("Content-Type", ""), resp.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, err.headers.get("Content-Type", ""), err.read().decode()


@pytest.fixture()
def server() -> Any:
    calls: list[int] = []

    def snapshot() -> dict[str, Any]:
        calls.append(1)
        return sample_snapshot()

    srv = metrics_server.MetricsServer(snapshot)
    srv.calls = calls
    yield srv
    srv.stop()


def test_serve_scrape_stop_frees_port(server: Any) -> None:
    assert not server.running and server.bound is None
    server.start("127.0.0.1", 0)
    assert server.running
    addr, port = server.bound
    assert addr == "127.0.0.1" and port > 0
    assert server.calls == []  # nothing scraped before the first request

    status, ctype, body = get(f"http://127.0.0.1:{port}/metrics")
    assert status == 200 and ctype.startswith("text/plain")
    assert exposed_names(body) == set(metrics.SAMPLE_NAMES)
    get(f"http://127.0.0.1:{port}/metrics")
    assert len(server.calls) == 2  # a fresh snapshot per scrape

    status, ctype, body = get(f"http://127.0.0.1:{port}/")
    assert status == 200 and "text/html" in ctype and 'href="/metrics"' in body
    assert get(f"http://127.0.0.1:{port}/nope")[0] == 404

    server.stop()
    assert not server.running and server.bound is None
    assert port_is_free(port)
    server.stop()  # idempotent


def test_restart_on_same_port(server: Any) -> None:
    server.start("127.0.0.1", 0)
    port = server.bound[1]
    get(f"http://127.0.0.1:{port}/metrics")
    server.stop()
    server.start("127.0.0.1", port)
    assert server.bound == ("127.0.0.1", port)
    assert get(f"http://127.0.0.1:{port}/metrics")[0] == 200


def test_start_while_running_moves_the_listener(server: Any) -> None:
    server.start("127.0.0.1", 0)
    old = server.bound[1]
    server.start("127.0.0.1", 0)
    assert server.running and port_is_free(old)


def test_taken_port_raises_bind_error(server: Any) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(metrics_server.MetricsBindError) as info:
            server.start("127.0.0.1", port)
        assert isinstance(info.value, OSError)
        assert str(port) in str(info.value) and "in use" in str(info.value).lower()
        assert not server.running


def test_taken_port_by_another_metrics_server(server: Any) -> None:
    other = metrics_server.MetricsServer(sample_snapshot)
    other.start("127.0.0.1", 0)
    try:
        with pytest.raises(metrics_server.MetricsBindError):
            server.start("127.0.0.1", other.bound[1])
    finally:
        other.stop()


@pytest.mark.parametrize("addr", ["not an address!", "256.1.1.1"])
def test_invalid_address_raises_bind_error(server: Any, addr: str) -> None:
    with pytest.raises(metrics_server.MetricsBindError, match="cannot serve metrics"):
        server.start(addr, 0)


@pytest.mark.parametrize("port", [-1, 65536, 70000])
def test_invalid_port_raises_bind_error(server: Any, port: int) -> None:
    with pytest.raises(metrics_server.MetricsBindError, match="not a TCP port"):
        server.start("127.0.0.1", port)
    assert not server.running


def test_ipv6_loopback(server: Any) -> None:
    if not socket.has_ipv6:
        pytest.skip("no IPv6")
    try:
        server.start("::1", 0)
    except metrics_server.MetricsBindError:
        pytest.skip("IPv6 loopback not configured")
    addr, port = server.bound
    assert addr == "::1"
    assert get(f"http://[::1]:{port}/metrics")[0] == 200


def test_snapshot_failure_gives_500(server: Any) -> None:
    def broken() -> dict[str, Any]:
        raise RuntimeError("mgr not ready")

    srv = metrics_server.MetricsServer(broken)
    srv.start("127.0.0.1", 0)
    try:
        status, _, body = get(f"http://127.0.0.1:{srv.bound[1]}/metrics")
        assert status == 500 and "mgr not ready" in body
    finally:
        srv.stop()


def test_stop_with_a_slow_client_connected(server: Any) -> None:
    server.start("127.0.0.1", 0)
    port = server.bound[1]
    # A client that connects and sends nothing keeps a handler thread busy;
    # daemon threads mean stop() does not wait for it.
    idle = socket.create_connection(("127.0.0.1", port))
    try:
        done = threading.Event()
        threading.Thread(target=lambda: (server.stop(), done.set()), daemon=True).start()
        assert done.wait(5), "stop() blocked on an idle client"
        assert port_is_free(port)
    finally:
        idle.close()


def test_unavailable_client_library(server: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(metrics_server, "PROMETHEUS_CLIENT_AVAILABLE", False)
    with pytest.raises(metrics_server.MetricsBindError, match="own prometheus_client"):
        server.start("127.0.0.1", 0)


def test_tick_histogram_from_the_module_histogram() -> None:
    # The producer's real output (mgr_sla/core/histogram.py, no package imports).
    path = ROOT / "mgr_sla" / "core" / "histogram.py"
    if not path.exists():
        pytest.skip("mgr_sla/core/histogram.py not there yet")
    spec = importlib.util.spec_from_file_location("sla_histogram_under_test", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    hist = module.TickHistogram((0.001, 0.01, 0.1, 1.0))
    for seconds in (0.0005, 0.004, 0.05, 0.05, 3.0):
        hist.observe(seconds)
    snap = sample_snapshot()
    snap["tick_seconds"] = hist.to_dict()
    samples = samples_by_name(exposition(snap))
    assert samples["ceph_sla_tick_seconds_bucket"] == [
        ({"le": "0.001"}, 1.0),
        ({"le": "0.01"}, 2.0),
        ({"le": "0.1"}, 4.0),
        ({"le": "1.0"}, 4.0),
        ({"le": "+Inf"}, 5.0),
    ]
    assert samples["ceph_sla_tick_seconds_count"] == [({}, 5.0)]
    assert samples["ceph_sla_tick_seconds_sum"][0][1] == pytest.approx(3.1045)


def test_latency_objective_metrics() -> None:
    text = exposition(sample_snapshot())
    assert "ceph_sla_slo_latency_seconds 0.02" in text
    assert 'ceph_sla_urgent_latency_seconds{op="write",pool_id="1",quantile="0.75"} 0.024' in text
    assert 'ceph_sla_urgent_latency_seconds{op="write",pool_id="1",quantile="0.99"} 0.0415' in text
    assert 'op="read"' not in text  # no read ops measured: no sample
    assert 'ceph_sla_slo_violation_seconds_total{pool_id="1"} 30.5' in text
    off = {**sample_snapshot(), "slo": None}
    assert "\nceph_sla_slo_latency_seconds " not in exposition(off)


def test_the_exposition_passes_promtool() -> None:
    """What Prometheus's own linter accepts: `quantile` only on a summary,
    counters ending in _total, HELP on every family."""
    import shutil
    import subprocess
    promtool = shutil.which("promtool")
    if promtool is None:
        pytest.skip("promtool missing: apt-get install -y --no-install-recommends prometheus")
    text = exposition(sample_snapshot())
    assert 'quantile="0.99"' in text  # the urgent latency quantiles are in the sample
    done = subprocess.run([promtool, "check", "metrics"], input=text, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
