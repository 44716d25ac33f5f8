"""The Prometheus endpoint of the sla module: an HTTP server on its own
thread whose every scrape reads a fresh status snapshot and maps it with
metrics.collect_families."""
from __future__ import annotations

import html
import logging
import socket
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from .metrics import PROMETHEUS_CLIENT_AVAILABLE, PROMETHEUS_CLIENT_ERROR, collect_families

if PROMETHEUS_CLIENT_AVAILABLE:
    from .._vendor.prometheus_client.core import Metric
    from .._vendor.prometheus_client.exposition import CONTENT_TYPE_LATEST, generate_latest
    from .._vendor.prometheus_client.registry import CollectorRegistry

log = logging.getLogger(__name__)


class MetricsBindError(OSError):
    """The metrics endpoint could not listen on the requested address/port."""


class MetricsUnavailableError(MetricsBindError):
    """The module's copy of prometheus_client did not import: metrics are disabled.

    A subclass of MetricsBindError so that a caller handling a failed start
    handles this case too, with a message telling the operator what to install.
    """


class _SnapshotCollector:
    """Collector whose every collect() reads a fresh snapshot."""

    def __init__(self, snapshot: Callable[[], dict[str, Any]]) -> None:
        self._snapshot = snapshot

    def describe(self) -> list[Metric]:
        # Returning nothing keeps register() from calling snapshot() before
        # the module is ready.
        return []

    def collect(self) -> Iterator[Metric]:
        yield from collect_families(self._snapshot())


_INDEX_PAGE = (
    "<!DOCTYPE html>\n<html><head><title>ceph-mgr sla metrics</title></head>\n"
    '<body><h1>ceph-mgr sla module</h1><p><a href="/metrics">Metrics</a></p></body></html>\n'
)


class _Handler(BaseHTTPRequestHandler):
    # Set on a per-server subclass in MetricsServer.start().
    registry: Any = None
    server_version = "ceph-sla-metrics"

    def do_GET(self) -> None:  # name fixed by BaseHTTPRequestHandler
        path = self.path.split("?", 1)[0]
        if path == "/metrics":
            self._metrics()
        elif path == "/":
            self._send(200, "text/html; charset=utf-8", _INDEX_PAGE.encode())
        else:
            body = f"not found: {html.escape(path)}\n".encode()
            self._send(404, "text/plain; charset=utf-8", body)

    def _metrics(self) -> None:
        try:
            body = generate_latest(self.registry)
        except Exception as exc:  # any failure of snapshot()
            # A failed scrape (up == 0) is more honest than an empty page,
            # which would look like a module with no pools.
            log.exception("metrics scrape failed")
            self._send(500, "text/plain; charset=utf-8", f"snapshot failed: {exc}\n".encode())
            return
        self._send(200, CONTENT_TYPE_LATEST, body)

    def _send(self, code: int, content_type: str, body: bytes) -> None:
        self.send_response(code)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:  # base class's signature
        # The default writes every request to stderr, which the mgr would
        # interleave with its own log.
        log.debug("metrics %s: " + format, self.address_string(), *args)


class _Server(ThreadingHTTPServer):
    daemon_threads = True  # a hung scraper must not block stop()
    allow_reuse_address = True  # rebind at once after stop(), despite TIME_WAIT
    # Never share the port with another listener: a taken port must fail.
    # (Python 3.14's socketserver has this knob; older versions ignore it.)
    allow_reuse_port = False


def _resolve(addr: str, port: int) -> tuple[socket.AddressFamily, tuple[Any, ...]]:
    host = addr.strip()
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    infos = socket.getaddrinfo(
        host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
    )
    family, _, _, _, sockaddr = infos[0]
    return family, sockaddr


class MetricsServer:
    """HTTP server for /metrics, started and stopped by the module.

    Its own ThreadingHTTPServer (not prometheus_client.start_http_server) so
    that stop() closes the listening socket and the port is free again when it
    returns, e.g. when the operator changes mgr/sla/metrics_port.
    """

    def __init__(self, snapshot: Callable[[], dict[str, Any]]) -> None:
        self._snapshot = snapshot
        self._lock = threading.Lock()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    @property
    def running(self) -> bool:
        thread = self._thread
        return self._server is not None and thread is not None and thread.is_alive()

    @property
    def bound(self) -> tuple[str, int] | None:
        """(address, port) actually listened on; the port is real when 0 was asked."""
        server = self._server
        if server is None:
            return None
        sockaddr = server.socket.getsockname()
        return str(sockaddr[0]), int(sockaddr[1])

    def start(self, addr: str, port: int) -> None:
        """Listen on addr:port; a running server is stopped first.

        Raises MetricsBindError (MetricsUnavailableError without
        prometheus_client); the server is then stopped.
        """
        if not PROMETHEUS_CLIENT_AVAILABLE:
            raise MetricsUnavailableError(
                "the module's own prometheus_client (mgr_sla/_vendor) did not import "
                f"({PROMETHEUS_CLIENT_ERROR}); metrics disabled: report it with the mgr's "
                "Python version"
            )
        with self._lock:
            # Stopped first even if the new address fails: the old one may be
            # the port asked for, and a failed start() never leaves a server.
            self._stop_locked()
            if not isinstance(port, int) or not 0 <= port <= 65535:
                # getaddrinfo would quietly wrap 70000 to 4464.
                raise MetricsBindError(
                    f"cannot serve metrics on {addr!r} port {port}: not a TCP port"
                )
            try:
                family, sockaddr = _resolve(addr, port)
                server_cls = type("_BoundServer", (_Server,), {"address_family": family})
                server = server_cls(sockaddr, self._handler_class())
            except (OSError, OverflowError, UnicodeError) as exc:
                errno = exc.errno if isinstance(exc, OSError) else None
                reason = getattr(exc, "strerror", None) or str(exc)
                message = f"cannot serve metrics on {addr!r} port {port}: {reason}"
                # OSError(None, msg) would print "[Errno None]"; keep errno only if real.
                raise (
                    MetricsBindError(errno, message) if errno is not None
                    else MetricsBindError(message)
                ) from exc
            thread = threading.Thread(
                target=server.serve_forever,
                kwargs={"poll_interval": 0.5},
                name="sla-metrics",
                daemon=True,
            )
            thread.start()
            self._server, self._thread = server, thread
            log.info("serving metrics on %s", self.bound)

    def stop(self) -> None:
        """Stop serving and free the port; safe to call any number of times."""
        with self._lock:
            self._stop_locked()

    def _stop_locked(self) -> None:
        server, thread = self._server, self._thread
        self._server = self._thread = None
        if server is None:
            return
        if thread is not None and thread.is_alive():
            server.shutdown()  # returns once serve_forever() has left its loop
        server.server_close()  # closes the listening socket: port free now
        if thread is not None:
            thread.join(timeout=5)

    def _handler_class(self) -> type[_Handler]:
        registry = CollectorRegistry(auto_describe=False)
        registry.register(_SnapshotCollector(self._snapshot))
        return type("_BoundHandler", (_Handler,), {"registry": registry})
