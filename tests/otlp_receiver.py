"""A local OTLP/HTTP trace receiver that decodes what the real exporter sends.

`mode="ok"` answers 200 with an `ExportTraceServiceResponse`; `mode="hang"`
reads the request and never answers until closed; `mode="hold"` answers nothing
until `release()`, then 400 (an export refused for good: not retried).
`closed_port()` gives a port where nothing listens (connections refused).
"""

from __future__ import annotations

import gzip
import threading
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue
from ports import refused_port


class OtlpReceiver:
    """Collects decoded export requests on 127.0.0.1; use as a context manager."""

    def __init__(self, mode: str = "ok") -> None:
        self.mode = mode
        self.requests: list[ExportTraceServiceRequest] = []
        self.paths: list[str] = []
        self.headers: list[dict[str, str]] = []  # each request's headers, names in lower case
        self.released = threading.Event()
        self.arrived = threading.Event()  # set when the first request comes in, whatever the mode
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> OtlpReceiver:
        self._thread.start()
        return self

    def release(self) -> None:
        """Let the requests held (`hang`, `hold`) go; `hold` answers them, and all after, 400."""
        self.released.set()

    def __exit__(self, *exc: object) -> None:
        self.released.set()
        self._server.shutdown()
        self._server.server_close()

    def spans(self) -> list[tuple[dict[str, Any], Any]]:
        """(resource attributes, span) for every span received."""
        return [
            (attributes(rs.resource.attributes), span)
            for request in self.requests
            for rs in request.resource_spans
            for ss in rs.scope_spans
            for span in ss.spans
        ]


def attributes(pairs: Any) -> dict[str, Any]:
    return {kv.key: value(kv.value) for kv in pairs}


def value(v: AnyValue) -> Any:
    kind = v.WhichOneof("value")
    if kind == "array_value":
        return [value(x) for x in v.array_value.values]
    return getattr(v, kind) if kind else None


def closed_port() -> int:
    """A loopback port nothing listens on: a connection to it is refused (`refused_port`)."""
    return refused_port()


def _handler(receiver: OtlpReceiver) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            receiver.arrived.set()
            if receiver.mode == "hang":
                receiver.released.wait(60)
                return
            if receiver.mode == "hold":
                receiver.released.wait()
                self.send_error(400, "held, then refused")
                return
            encoding = self.headers.get("Content-Encoding", "")
            body = gzip.decompress(body) if encoding == "gzip" else body
            body = zlib.decompress(body) if encoding == "deflate" else body
            request = ExportTraceServiceRequest()
            request.ParseFromString(body)
            receiver.requests.append(request)
            receiver.paths.append(self.path)
            receiver.headers.append({name.lower(): text for name, text in self.headers.items()})
            reply = ExportTraceServiceResponse().SerializeToString()
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", str(len(reply)))
            self.end_headers()
            self.wfile.write(reply)

        def log_message(self, format: str, *args: Any) -> None:
            return None

    return Handler
