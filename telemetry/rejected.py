"""Spans a collector took but rejected: an OTLP partial success.

A collector or backend may answer an export 200 with `partial_success`
(`rejected_spans`, `error_message`): those spans are lost although the export
succeeded, and the SDK's OTLP/HTTP exporter reads no response body, so it
reports success. `Rejections` reads the body of each answer the exporter's
`requests` session gets (a response hook, run in the exporting thread), and
`CountingExporter` takes the count after each export: the spans are counted as
dropped (`export_failed`) and the export as a failure.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

# the OTLP/HTTP span exporter's logger: `telemetry.setup` holds its lines back and says the latest once
_log = logging.getLogger("opentelemetry.exporter.otlp.proto.http.trace_exporter")


class Rejections:
    """Rejected spans noted from the collector's answers, per exporting thread, until taken."""

    def __init__(self) -> None:
        self._local = threading.local()

    def session(self) -> Any:
        """A `requests.Session` whose answers are read for rejected spans (give it to the exporter)."""
        import requests  # the OTLP/HTTP exporter's own dependency

        session = requests.Session()
        session.hooks["response"].append(self.on_response)
        return session

    def on_response(self, response: Any, *args: Any, **kwargs: Any) -> None:
        """Note the spans a 200 answer says were rejected; never raises."""
        try:
            if response.status_code != 200 or not response.content:
                return
            answer = ExportTraceServiceResponse.FromString(response.content)
            rejected = int(answer.partial_success.rejected_spans)
        except Exception:  # not a protobuf answer: nothing to read
            return
        if rejected > 0:
            self._local.count = getattr(self._local, "count", 0) + rejected
            said = " ".join(answer.partial_success.error_message.split())[:200] or "no reason given"
            _log.warning("the collector rejected %d spans: %s", rejected, said)

    def take(self) -> int:
        """The spans noted as rejected in this thread since the last call."""
        count = getattr(self._local, "count", 0)
        self._local.count = 0
        return int(count)
