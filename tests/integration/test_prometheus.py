"""A real Prometheus (Debian's package) on loopback scrapes the sla module and
Ceph's prometheus module; a mode switch is driven with urgent load; every
dashboard panel's query must then return data."""
from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness.cephcluster import ROOT, Cluster, PacedWriter, scrape, wait_for, wait_mode

from .conftest import DWELL

pytestmark = pytest.mark.integration


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Prometheus:
    def __init__(self, workdir: Path, targets: list[str]) -> None:
        self.port = free_port()
        config = workdir / "prometheus.yml"
        config.write_text(json.dumps({  # JSON is YAML
            "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
            "scrape_configs": [{"job_name": "ceph", "static_configs": [{"targets": targets}]}],
        }))
        self.log = open(workdir / "prometheus.log", "w")  # noqa: SIM115
        self.proc = subprocess.Popen(
            ["prometheus", f"--config.file={config}", f"--storage.tsdb.path={workdir / 'tsdb'}",
             f"--web.listen-address=127.0.0.1:{self.port}", "--log.level=warn"],
            stdout=self.log, stderr=subprocess.STDOUT)
        wait_for("prometheus ready", self._ready, 60)

    def _ready(self) -> bool:
        if self.proc.poll() is not None:
            raise AssertionError(f"prometheus exited with {self.proc.returncode}")
        try:
            return urllib.request.urlopen(f"http://127.0.0.1:{self.port}/-/ready",
                                          timeout=2).status == 200
        except OSError:
            return False

    def api(self, path: str, **params: Any) -> Any:
        url = f"http://127.0.0.1:{self.port}/api/v1/{path}?{urllib.parse.urlencode(params)}"
        body = json.loads(urllib.request.urlopen(url, timeout=10).read())
        assert body["status"] == "success", body
        return body["data"]

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)
        self.log.close()


@pytest.fixture(scope="module")
def prometheus(sla_pools: Cluster, tmp_path_factory: pytest.TempPathFactory
               ) -> Iterator[Prometheus]:
    if shutil.which("prometheus") is None:
        pytest.fail("prometheus is not installed: run deploy/install-deps.sh")
    cluster = sla_pools
    cluster.ceph("mgr", "module", "enable", "prometheus")
    p = cluster.ports()
    targets = [f"127.0.0.1:{p['SLA_METRICS_PORT']}", f"127.0.0.1:{p['PROMETHEUS_MODULE_PORT']}"]
    prom = Prometheus(tmp_path_factory.mktemp("prometheus"), targets)
    try:
        wait_for("both targets up", lambda: sorted(
            t["health"] for t in prom.api("targets")["activeTargets"]) == ["up", "up"], 90)
        yield prom
    finally:
        prom.stop()
        cluster.ceph("mgr", "module", "disable", "prometheus")


def dashboard_queries() -> list[dict[str, Any]]:
    out = subprocess.run([sys.executable, str(ROOT / "deploy/grafana/generate.py"),
                          "--list-queries"], check=True, capture_output=True, text=True)
    return json.loads(out.stdout)  # type: ignore[no-any-return]


def test_every_dashboard_query_returns_data_after_a_switch(
        sla_pools: Cluster, prometheus: Prometheus, tmp_path: Path) -> None:
    cluster = sla_pools
    start = time.time()
    wait_mode(cluster, "shared", DWELL + 180)
    # an objective far above any latency here: its panel has a line, and the
    # IOPS threshold alone decides
    cluster.ceph("sla", "set-slo", "100000")
    bench = PacedWriter(cluster, "urgent")
    try:
        wait_mode(cluster, "isolated", 60)
        switched = time.time()
        wait_for("time to isolation", lambda: cluster.sla_status()[
            "time_to_isolation_secs"] is not None, 240)
    finally:
        bench.stop()
    queries = dashboard_queries()
    assert len(queries) >= 10

    def answers(q: dict[str, Any]) -> bool:
        if q["instant"]:
            return bool(prometheus.api("query", query=q["expr"])["result"])
        data = prometheus.api("query_range", query=q["expr"], start=start, end=time.time(),
                              step=1)
        return bool(data["result"])

    empty = []
    for q in queries:
        try:
            wait_for(f"data for {q['panel']}", lambda q=q: answers(q), 45)
        except AssertionError:
            empty.append(f"{q['panel']}: {q['expr']}")
    cluster.ceph("sla", "set-slo", "0")
    assert not empty, "panels without data:\n" + "\n".join(empty)

    # a full cycle for the docs picture: quiet again -> shared after the dwell
    wait_mode(cluster, "shared", DWELL + 120)
    back = time.time()
    wait_for("prometheus to see shared", lambda: prometheus.api(
        "query", query="max(ceph_sla_mode)")["result"][0]["value"][1] == "0", 30)
    series = {name: [[float(t), float(v)] for t, v in prometheus.api(
        "query_range", query=f"max(ceph_sla_{name})", start=start, end=time.time(),
        step=1)["result"][0]["values"]] for name in
        ("mode", "urgent_iops", "threshold_iops", "threshold_low_iops")}
    series["switches"] = [switched, back]
    (tmp_path / "timeline.json").write_text(json.dumps(series))
    target = ROOT / "docs/img/mode-timeline.png" if os.environ.get("SLA_RENDER_DOCS") else \
        tmp_path / "timeline.png"
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return
    subprocess.run([sys.executable, str(ROOT / "deploy/grafana/render_timeline.py"),
                    str(tmp_path / "timeline.json"), str(target)], check=True, timeout=120)
    assert target.stat().st_size > 10_000


def refused(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=3).close()
    except ConnectionRefusedError:
        return True
    except OSError:
        pass
    return False


def test_metrics_endpoint_stops_with_the_module_and_comes_back(sla_pools: Cluster) -> None:
    port = sla_pools.ports()["SLA_METRICS_PORT"]
    assert "ceph_sla_mode" in (scrape(port) or "")
    sla_pools.ceph("mgr", "module", "disable", "sla")
    try:
        # A failed scrape is not enough: a listener that no longer accepts
        # still takes the connection and times the scrape out.
        wait_for("nobody to listen on the port", lambda: refused(port), 60)
        with socket.socket() as s:  # nobody listens: the server really closed it
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # scrapes' TIME_WAITs
            s.bind(("127.0.0.1", port))
            s.listen()
    finally:
        sla_pools.enable_sla()
    wait_for("metrics served again", lambda: "ceph_sla_mode" in (scrape(port) or ""), 60)


def test_a_taken_port_is_a_health_warning_not_a_crash(sla_pools: Cluster) -> None:
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    port = sla_pools.ports()["SLA_METRICS_PORT"]
    try:
        sla_pools.ceph("config", "set", "mgr", "mgr/sla/metrics_port",
                       str(taken.getsockname()[1]))
        checks = wait_for("SLA_METRICS_PORT", lambda: (h := sla_pools.json(
            "health", "detail")["checks"]).get("SLA_METRICS_PORT") and h, 60)
        assert "SLA_METRICS_PORT" in checks
        assert sla_pools.sla_status()["mode"] in ("isolated", "shared")  # still serving
    finally:
        sla_pools.ceph("config", "set", "mgr", "mgr/sla/metrics_port", str(port))
        taken.close()
    wait_for("warning cleared", lambda: "SLA_METRICS_PORT" not in sla_pools.json(
        "health", "detail")["checks"], 60)
    wait_for("metrics served again", lambda: "ceph_sla_mode" in (scrape(port) or ""), 60)
