"""Probe 35c: a Claude Agent SDK model call the API failed is a failed call, not a reply of `<synthetic>`.

When a request fails (a 400, or a 429 still failing after the CLI's own retries), the CLI hands the
SDK a synthetic assistant message in the reply's place: `model="<synthetic>"`, no tokens, and its
`error` (`invalid_request`, `rate_limit`, ...). Read as a reply, it was a successful call, and in a
run naming no model (its calls labelled as each names its model) a call of a model `<synthetic>`:
a span `chat <synthetic>` and its own series on the model panels. It is the run's model call that
failed: its span an error, its duration counted with `error_type` the CLI's kind, no model invented.

The real bundled CLI, offline, against the local Messages API server.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path
from typing import get_args

import pytest
from claude_agent_sdk.types import AssistantMessageError
from integrations_support import Rig, StreamingMessagesAPI, rigged
from messages_api import error
from opentelemetry.trace import StatusCode
from test_integrations_claude_cli import MODEL, options

from agent import StopReason
from agent.integrations import claude_agent_sdk as claude
from telemetry import names as n

pytestmark = pytest.mark.slow
TASK = "probe35c"


@pytest.fixture
def rig() -> Iterator[Rig]:
    with rigged() as rig:
        yield rig


def models_in_metrics(rig: Rig) -> set[str]:
    return {
        s.labels["gen_ai_request_model"]
        for metric in rig.registry.collect()
        for s in metric.samples
        if "gen_ai_request_model" in s.labels
    }


@pytest.mark.parametrize("model", [MODEL, None])
def test_a_call_the_api_rejected_is_a_failed_call_of_the_runs_model(
    rig: Rig, tmp_path: Path, model: str | None
) -> None:
    with StreamingMessagesAPI(error(400, "tools.0: unknown field", type="invalid_request_error")) as api:
        opts = dataclasses.replace(options(api, tmp_path), model=model)
        res = claude.run("hi", options=opts, hooks=rig.hooks, task_type=TASK)
    assert res.reason is StopReason.ERROR
    shown = model or claude.DEFAULT_MODEL
    chats = [s for s in rig.spans() if s.name.startswith(n.SPAN_CHAT + " ")]
    assert chats and {s.name for s in chats} == {f"{n.SPAN_CHAT} {shown}"}
    assert chats[-1].status.status_code is StatusCode.ERROR
    assert "<synthetic>" not in models_in_metrics(rig)
    failed = {  # each failed call's duration, its error_type the CLI's kind of failure
        s.labels["error_type"]: s.value
        for metric in rig.registry.collect()
        for s in metric.samples
        if s.name == "gen_ai_client_operation_duration_seconds_count" and s.labels.get("error_type")
        if s.labels["gen_ai_operation_name"] == "chat" and s.labels["gen_ai_request_model"] == shown
    }
    assert sum(failed.values()) == len(chats)
    assert set(failed) <= set(get_args(AssistantMessageError)), failed
