"""Probe 35c: a Claude Agent SDK run whose context the CLI could not shrink ends `limit`/`context`.

Claude Code compacts a conversation that outgrows the model's context window (its history policy);
when even that cannot make the request fit, the run ends with `terminal_reason: "prompt_too_long"`
(or `"blocking_limit"`), an `is_error` result. That is DESIGN's `limit`/`context` (the context window
is full and the history policy cannot shrink it further), as Endstate's own runs end there: counted
with the limit stops the alerts watch, not as an `error`. Any other API error is still an `error`.

The real bundled CLI, offline, against the local Messages API server.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from integrations_support import Rig, StreamingMessagesAPI, rigged
from messages_api import Response, error
from test_integrations_claude_cli import options

from agent import LimitKind, RunResult, StopReason
from agent.integrations import claude_agent_sdk as claude
from telemetry import names as n

pytestmark = pytest.mark.slow
TASK = "probe35c"
TOO_LONG = "prompt is too long: 250000 tokens > 200000 maximum"


@pytest.fixture
def rig() -> Iterator[Rig]:
    with rigged() as rig:
        yield rig


def run_answered(rig: Rig, workdir: Path, reply: Response) -> RunResult:
    with StreamingMessagesAPI(reply) as api:
        opts = options(api, workdir)
        return claude.run("summarise everything", options=opts, hooks=rig.hooks, task_type=TASK)


def test_a_prompt_too_long_to_compact_is_a_context_limit(rig: Rig, tmp_path: Path) -> None:
    res = run_answered(rig, tmp_path, error(400, TOO_LONG, type="invalid_request_error"))
    assert res.raw.terminal_reason == "prompt_too_long"
    assert (res.reason, res.limit) == (StopReason.LIMIT, LimitKind.CONTEXT), (res.reason, res.note)
    assert "Prompt is too long" in res.note
    assert rig.stops("claude_agent", TASK, "limit", "context") == 1
    assert rig.stops("claude_agent", TASK, "error") == 0
    (span,) = rig.run_spans()
    assert (span.attributes or {})[n.STOP_LIMIT] == "context"


def test_another_request_the_api_rejects_is_still_an_error(rig: Rig, tmp_path: Path) -> None:
    res = run_answered(rig, tmp_path, error(400, "tools.0: unknown field", type="invalid_request_error"))
    assert res.reason is StopReason.ERROR, (res.reason, res.note)
    assert rig.stops("claude_agent", TASK, "error") == 1
