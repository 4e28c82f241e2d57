"""`endstate demo` with OTEL_EXPORTER_OTLP_ENDPOINT set: every run segment arrives over OTLP."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from typing import Any

from otlp_receiver import OtlpReceiver

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
