"""`serve_metrics`, the `/metrics` of `endstate run --metrics-port` and of each Temporal worker, answers
any `Accept` header with a page of metrics, never a 500.

prometheus_client's own server compared a `version=` that is no number (`version=garbage`,
`version=1.a`, a version of 5,000 digits) with numbers: a TypeError, so a scraper or anyone who
reached the port had a 500 and a traceback on the worker's stderr. The service's `/metrics` read
such a header as if the version were left out; the worker's now does the same."""

from __future__ import annotations

from collections.abc import Iterator

import httpx2
import pytest
from prometheus_client import CollectorRegistry, Counter, Histogram

from telemetry import Telemetry
from telemetry.metrics import MetricsServer, serve_metrics

OPENMETRICS = "application/openmetrics-text"
ODD = [
    (f"{OPENMETRICS}; version=garbage", OPENMETRICS),
    (f"{OPENMETRICS};version=1.a", OPENMETRICS),
    (f"{OPENMETRICS}; version=1..0", OPENMETRICS),
    (f"{OPENMETRICS}; version={'9' * 5000}", OPENMETRICS),
    (f"*/*;q=0.1, {OPENMETRICS};version=1e3", OPENMETRICS),
    ("text/plain; version=x", "text/plain"),
]


@pytest.fixture
def served() -> Iterator[MetricsServer]:
    registry = CollectorRegistry()
    Counter("scrapes_seen", "a counter", registry=registry).inc()
    Histogram("waits", "a histogram", registry=registry).observe(1.0, {"trace_id": "abc123"})
    server = serve_metrics(0, registry)
    try:
        yield server
    finally:
        server.close()


@pytest.mark.parametrize(("accept", "format_"), ODD)
def test_an_odd_accept_header_gets_the_page_not_a_500(
    served: MetricsServer, accept: str, format_: str
) -> None:
    page = httpx2.get(served.url, headers={"Accept": accept}, timeout=10)
    assert page.status_code == 200, (accept[:80], page.status_code, page.text[:300])
    assert page.headers["content-type"].startswith(format_), page.headers["content-type"]
    assert "scrapes_seen_total 1.0" in page.text


def test_the_formats_a_scraper_asks_for_are_served_as_before(served: MetricsServer) -> None:
    for accept, format_ in [
        ("", "text/plain; version=0.0.4"),
        (f"{OPENMETRICS}; version=1.0.0", f"{OPENMETRICS}; version=1.0.0"),
        (f"{OPENMETRICS}; version=0.0.1,text/plain;version=0.0.4;q=0.5", "text/plain; version=0.0.4"),
    ]:
        page = httpx2.get(served.url, headers={"Accept": accept}, timeout=10)
        assert page.status_code == 200, (accept, page.status_code)
        assert page.headers["content-type"].startswith(format_), (accept, page.headers)
        assert ('trace_id="abc123"' in page.text) == format_.startswith(OPENMETRICS)  # exemplars: OpenMetrics


def test_the_page_without_accept_and_other_methods(served: MetricsServer) -> None:
    assert httpx2.get(served.url, timeout=10).headers["content-type"].startswith("text/plain; version=0.0.4")
    assert httpx2.post(served.url, timeout=10).status_code == 405


@pytest.mark.parametrize(("accept", "format_"), ODD)
def test_the_exposition_reads_an_odd_accept_header_too(accept: str, format_: str) -> None:
    """`Telemetry.exposition`, which the service's `/metrics` (SQLite, PostgreSQL or Temporal) serves."""
    telemetry = Telemetry.from_env({"OTEL_SDK_DISABLED": "true"}, registry=CollectorRegistry())
    try:
        body, content_type = telemetry.exposition(accept)
    finally:
        telemetry.shutdown()
    assert content_type.startswith(format_) and b"agent_help_oldest_pending_seconds" in body
