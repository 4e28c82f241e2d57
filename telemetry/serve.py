"""`/metrics` over HTTP, in OpenMetrics when the scraper asks (so exemplars reach Prometheus)."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from wsgiref.simple_server import WSGIServer

from prometheus_client import CollectorRegistry, start_http_server


@dataclass
class MetricsServer:
    """A running metrics endpoint; `close()` stops it."""

    server: WSGIServer
    thread: threading.Thread

    @property
    def port(self) -> int:
        return int(self.server.server_port)

    @property
    def url(self) -> str:
        host = str(self.server.server_address[0])
        return f"http://{host}:{self.port}/metrics"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)


def serve_metrics(port: int, registry: CollectorRegistry, addr: str = "127.0.0.1") -> MetricsServer:
    """Serve `registry` on `addr:port` (port 0 picks a free one) in a daemon thread.

    Text format 0.0.4 by default; OpenMetrics, with exemplars, when the
    request's Accept header asks for `application/openmetrics-text`, as
    Prometheus does when started with `--enable-feature=exemplar-storage`.
    """
    server, thread = start_http_server(port, addr=addr, registry=registry)
    return MetricsServer(server, thread)
