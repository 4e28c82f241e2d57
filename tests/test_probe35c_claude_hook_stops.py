"""Probe 35c: a Claude Agent SDK hook that stops the run is the team's guardrail tripping, not a success.

A hook answering `{"continue": false, "stopReason": ...}` (PreToolUse, PostToolUse) halts Claude
mid-task: the CLI's `ResultMessage` is still subtype `success`, `is_error` false, with no result
text, and only its `terminal_reason` (`hook_stopped`) says why. A UserPromptSubmit hook that
blocks the prompt ends the run before any model call, again as `success`, saying so in a system
message (`prevent_continuation`). Read as they were, both counted as successes with nothing done.
They are the SDK's guardrails: `gave_up`, cause `guardrail`, as a tripwire of the other frameworks.
A Stop hook that stops Claude once it has answered changes nothing: that run is still a success.

The real bundled CLI, offline, against the local Messages API server (streamed replies).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from claude_agent_sdk import HookMatcher
from integrations_support import Rig, StreamingMessagesAPI, rigged
from messages_api import message, text
from test_integrations_claude_cli import options, read_call

from agent import StopReason
from agent.integrations import claude_agent_sdk as claude
from telemetry import names as n

pytestmark = pytest.mark.slow
TASK = "probe35c"


@pytest.fixture
def rig() -> Iterator[Rig]:
    with rigged() as rig:
        yield rig


def run_with(rig: Rig, workdir: Path, hooks: dict[Any, list[HookMatcher]]) -> Any:
    """A run that asks to read a file, then answers; `hooks` are the team's own."""
    (workdir / "a.txt").write_text("x")
    with StreamingMessagesAPI(read_call(workdir / "a.txt"), message(text("read it"))) as api:
        opts = options(api, workdir, allowed_tools=["Read"], max_turns=5, hooks=hooks)
        return claude.run("read a.txt", options=opts, hooks=rig.hooks, task_type=TASK)


def check_guardrail_stop(rig: Rig, res: Any, said: str) -> None:
    assert (res.reason, res.cause) == (StopReason.GAVE_UP, "guardrail"), (res.reason, res.note)
    assert said in res.note
    assert rig.stops("claude_agent", TASK, "gave_up", cause="guardrail") == 1
    assert rig.stops("claude_agent", TASK, "success") == 0
    (span,) = rig.run_spans()
    assert (span.attributes or {})[n.STOP_REASON] == "gave_up"


@pytest.mark.parametrize("event", ["PreToolUse", "PostToolUse"])
def test_a_tool_hook_that_stops_the_run_is_gave_up_guardrail(rig: Rig, tmp_path: Path, event: str) -> None:
    async def halt(input: Any, tool_use_id: str | None, context: Any) -> Any:
        return {"continue": False, "stopReason": "policy: no reading files"}

    res = run_with(rig, tmp_path, {event: [HookMatcher(matcher="Read", hooks=[halt])]})
    assert res.raw.terminal_reason == "hook_stopped"
    check_guardrail_stop(rig, res, "hook_stopped")
    assert res.turns == 1


def test_a_prompt_hook_that_blocks_the_prompt_is_gave_up_guardrail(rig: Rig, tmp_path: Path) -> None:
    async def block(input: Any, tool_use_id: str | None, context: Any) -> Any:
        return {"decision": "block", "reason": "prompt not allowed here"}

    res = run_with(rig, tmp_path, {"UserPromptSubmit": [HookMatcher(hooks=[block])]})
    check_guardrail_stop(rig, res, "prompt not allowed here")
    assert res.turns == 0


def test_a_stop_hook_after_the_answer_leaves_the_run_a_success(rig: Rig, tmp_path: Path) -> None:
    async def stop(input: Any, tool_use_id: str | None, context: Any) -> Any:
        return {"continue": False, "stopReason": "done here"}

    res = run_with(rig, tmp_path, {"Stop": [HookMatcher(hooks=[stop])]})
    assert (res.reason, res.output) == (StopReason.SUCCESS, "read it")
    assert rig.stops("claude_agent", TASK, "success") == 1
