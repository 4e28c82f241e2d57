"""`endstate demo` with OTEL_EXPORTER_OTLP_ENDPOINT set: every run segment arrives over OTLP."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from otlp_receiver import OtlpReceiver
from ports import PortTaken, on_free_port, port_clash

from telemetry import names


def _value(any_value: Any) -> Any:
    return getattr(any_value, any_value.WhichOneof("value"))


def _spans(receiver: OtlpReceiver) -> list[tuple[str, dict[str, Any], bytes, bytes]]:
    """(name, attributes, trace id, parent span id) of every span received."""
    return [
        (span.name, {kv.key: _value(kv.value) for kv in span.attributes}, span.trace_id, span.parent_span_id)
        for request in receiver.requests
        for resource in request.resource_spans
        for scope in resource.scope_spans
        for span in scope.spans
    ]


def test_demo_sends_every_segment_with_its_stop_reason_and_a_span_per_turn() -> None:
    with OtlpReceiver() as receiver:
        env = os.environ | {
            "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint,
            "OTEL_SERVICE_NAME": "endstate-demo-test",
        }
        env.pop("ENDSTATE_TRACES_FILE", None)
        done = subprocess.run(
            [sys.executable, "-m", "agent.cli", "demo", "--json", "csv", "invoice", "ci/api-down"],
            env=env, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        rows = [json.loads(line) for line in done.stdout.splitlines()]
        spans = _spans(receiver)

    assert {r["reason"] for r in rows} >= {"success", "limit", "no_progress", "cancelled", "gave_up", "error"}
    runs = [(a, t) for name, a, t, _ in spans if name.startswith(names.SPAN_INVOKE_AGENT + " ")]
    assert len(runs) == len(rows)
    by_trace = {bytes.fromhex(r["trace_id"]): r for r in rows}
    assert Counter(a[names.STOP_REASON] for a, _ in runs) == Counter(r["reason"] for r in rows)
    for attributes, trace_id in runs:
        row = by_trace[trace_id]
        assert attributes[names.GEN_AI_CONVERSATION_ID] == row["run_id"]
        assert attributes[names.STOP_REASON] == row["reason"]
        assert attributes[names.AGENT_TURNS] == row["turns"]
    turns = Counter(t for name, _, t, _ in spans if name == names.SPAN_TURN)
    for row in rows:
        if row["segment"] == 1:  # a first segment has one turn span per turn it took
            assert turns[bytes.fromhex(row["trace_id"])] == row["turns"], row["scenario"]


OPENMETRICS = "application/openmetrics-text; version=1.0.0"
EXEMPLAR = re.compile(r'^agent_run_active_seconds_bucket\{[^}]*\} \S+ # \{trace_id="([0-9a-f]{32})"\}', re.M)


@pytest.mark.slow
def test_demo_serves_exemplars_in_openmetrics_that_point_at_exported_traces(tmp_path: Path) -> None:
    with OtlpReceiver() as receiver:
        env = os.environ | {"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint}
        env.pop("ENDSTATE_TRACES_FILE", None)
        demo, port, lines = on_free_port(lambda port: _serving_demo(port, env, tmp_path), "endstate demo")
        with demo:
            try:
                kind, body = _scrape(f"http://127.0.0.1:{port}/metrics", OPENMETRICS)
            finally:
                demo.send_signal(signal.SIGTERM)
                assert demo.wait(timeout=30) == 0
        exported = {t.hex() for name, _, t, _ in _spans(receiver) if name.startswith(names.SPAN_INVOKE_AGENT)}
    rows = [json.loads(line) for line in lines if line.startswith("{")]
    assert kind.startswith("application/openmetrics-text") and body.rstrip().endswith("# EOF")
    exemplars = set(EXEMPLAR.findall(body))
    assert exemplars and exemplars <= {r["trace_id"] for r in rows}
    assert exemplars <= exported  # every exemplar opens a trace the collector received


def _serving_demo(
    port: int, env: dict[str, str], folder: Path
) -> tuple[subprocess.Popen[str], int, list[str]]:
    """`endstate demo --metrics-port PORT --hold csv`, once it serves: the process, the port, its
    output so far. `PortTaken` when another process took the port (picked free, taken meanwhile)."""
    argv = [sys.executable, "-m", "agent.cli", "demo", "--json", "--metrics-port", str(port), "--hold", "csv"]
    log = folder / f"demo-{port}.err"
    with log.open("w") as errors:  # the child keeps its own copy of the descriptor
        demo = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=errors, text=True)
    try:
        return demo, port, _lines_until(demo, "serving ", timeout=60)
    except AssertionError:
        demo.kill()
        demo.wait(timeout=30)
        if port_clash(log.read_text()):
            raise PortTaken(log.read_text()[-300:]) from None
        raise


def _scrape(url: str, accept: str) -> tuple[str, str]:
    request = urllib.request.Request(url, headers={"Accept": accept})
    with urllib.request.urlopen(request, timeout=5) as response:
        return response.headers["Content-Type"], response.read().decode()


def _lines_until(process: subprocess.Popen[str], marker: str, timeout: float) -> list[str]:
    """Lines of the process's output up to the one starting with `marker` (an AssertionError when
    the output ends, or `timeout` passes, without it)."""
    lines: list[str] = []
    seen, ended = threading.Event(), threading.Event()

    def read() -> None:
        assert process.stdout is not None
        with contextlib.suppress(ValueError, OSError):  # the pipe closed under us: the test is over
            for line in process.stdout:
                lines.append(line)
                if line.startswith(marker):
                    seen.set()
        ended.set()

    threading.Thread(target=read, daemon=True).start()
    deadline = time.monotonic() + timeout
    while not seen.is_set() and not ended.is_set() and time.monotonic() < deadline:
        seen.wait(0.1)
    assert seen.is_set(), f"no {marker!r} line: {lines}"
    return lines


def test_demo_offline_leaves_its_spans_in_a_file(tmp_path) -> None:  # type: ignore[no-untyped-def]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "ENDSTATE_TRACES"))}
    done = subprocess.run(
        [sys.executable, "-m", "agent.cli", "demo", "--json", "csv/clean", "invoice/portal-offline"],
        env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    rows = [json.loads(line) for line in done.stdout.splitlines()]
    spans = [json.loads(line) for line in (tmp_path / ".endstate" / "traces.jsonl").read_text().splitlines()]
    runs = {s["context"]["trace_id"][2:]: s for s in spans if s["name"].startswith(names.SPAN_INVOKE_AGENT)}
    assert {r["trace_id"]: r["reason"] for r in rows} == {
        trace: span["attributes"][names.STOP_REASON] for trace, span in runs.items()
    }


def test_an_endpoint_or_a_named_exporter_wins_over_the_offline_file() -> None:
    from telemetry.setup import with_offline_default

    assert with_offline_default({}, "t.jsonl")["ENDSTATE_TRACES_FILE"] == "t.jsonl"
    for named in (
        {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"},
        {"OTEL_TRACES_EXPORTER": "none"},
        {"ENDSTATE_TRACES_FILE": "mine.jsonl"},
    ):
        assert with_offline_default(named, "t.jsonl") == named
