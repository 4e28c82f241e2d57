"""The Claude Agent SDK running its real bundled Claude Code CLI, offline, against the local
Messages API server (streamed replies): the rows a model reply can reach, end to end."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from claude_agent_sdk import ClaudeAgentOptions, HookMatcher
from integrations_support import Rig, StreamingMessagesAPI, rigged
from messages_api import Response, message, text, tool_use

from agent import LimitKind, StopReason
from agent.integrations import claude_agent_sdk as claude
from telemetry import names as n

pytestmark = pytest.mark.slow
TASK = "cli_task"
MODEL = "claude-sonnet-4-5"


@pytest.fixture
def rig() -> Iterator[Rig]:
    with rigged() as rig:
        yield rig


def options(api: StreamingMessagesAPI, workdir: Path, **fields: Any) -> ClaudeAgentOptions:
    """The CLI pointed at the local server, with its home and working directory under `workdir`."""
    env = {
        "ANTHROPIC_BASE_URL": api.url,
        "ANTHROPIC_API_KEY": "test",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_TELEMETRY": "1",
        "HOME": str(workdir / "home"),
    }
    return ClaudeAgentOptions(env=env, cwd=str(workdir), model=MODEL, **fields)


def read_call(path: Path) -> Response:
    return message(tool_use("Read", {"file_path": str(path)}))


def test_the_real_cli_reads_a_file_and_ends_in_success(rig: Rig, tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("hello file")
    with StreamingMessagesAPI(read_call(tmp_path / "a.txt"), message(text("read it"))) as api:
        opts = options(api, tmp_path, allowed_tools=["Read"], max_turns=5)
        res = claude.run("read a.txt", options=opts, hooks=rig.hooks, task_type=TASK)
        tool_results = [b for m in api.bodies[-1]["messages"] for b in m["content"] if isinstance(b, dict)]
    assert (res.reason, res.output, res.turns) == (StopReason.SUCCESS, "read it", 2)
    assert res.input_tokens == 20 and res.cost_usd > 0
    assert any("hello file" in str(b.get("content")) for b in tool_results if b.get("type") == "tool_result")
    names = [s.name for s in rig.spans()]
    assert names.count("execute_tool Read") == 1 and names.count(f"chat {MODEL}") == 2
    assert rig.stops("claude_agent", TASK, "success") == 1


@pytest.mark.parametrize(
    ("fields", "limit"), [({"max_turns": 1}, LimitKind.TURNS), ({"max_budget_usd": 0.00001}, LimitKind.COST)]
)
def test_the_real_cli_max_turns_and_budget_are_limits(
    rig: Rig, tmp_path: Path, fields: dict[str, Any], limit: LimitKind
) -> None:
    (tmp_path / "a.txt").write_text("x")
    replies = [read_call(tmp_path / "a.txt") for _ in range(3)]
    with StreamingMessagesAPI(*replies) as api:
        opts = options(api, tmp_path, allowed_tools=["Read"], **fields)
        res = claude.run("read a.txt forever", options=opts, hooks=rig.hooks, task_type=TASK)
    assert (res.reason, res.limit) == (StopReason.LIMIT, limit)
    assert res.raw.subtype in ("error_max_turns", "error_max_budget_usd")
    assert rig.stops("claude_agent", TASK, "limit", str(limit)) == 1
    (span,) = rig.run_spans()
    assert (span.attributes or {})[n.STOP_LIMIT] == str(limit)


@pytest.mark.parametrize(("approved", "exists"), [(True, False), (False, True)])
def test_a_deferred_call_is_need_help_and_the_persons_decision_resumes_it(
    rig: Rig, tmp_path: Path, approved: bool, exists: bool
) -> None:
    target = tmp_path / "a.txt"
    target.write_text("x")
    asked: list[str | None] = []

    async def gate(input: Any, tool_use_id: str | None, context: Any) -> Any:
        asked.append(tool_use_id)  # the team's own policy: every Bash call waits for a person
        return {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "defer"}}

    replies = [message(tool_use("Bash", {"command": f"rm {target}"})), message(text("done"))]
    with StreamingMessagesAPI(*replies) as api:
        opts = options(api, tmp_path, hooks={"PreToolUse": [HookMatcher(matcher="Bash", hooks=[gate])]})
        res = claude.run("remove a.txt", options=opts, hooks=rig.hooks, task_type=TASK)
        assert res.reason is StopReason.NEED_HELP and res.suspension and res.suspension.pending
        assert res.suspension.pending.name == "Bash" and target.exists()
        done = claude.resume(res, approved, "not now", options=opts, hooks=rig.hooks, task_type=TASK)
    assert (done.reason, done.output, done.run_id) == (StopReason.SUCCESS, "done", res.run_id)
    assert target.exists() is exists
    assert len(asked) == 1  # the person decided the deferred call, not the team's hook again
    assert rig.stops("claude_agent", TASK, "need_help") == 1
    assert [s.name for s in rig.spans()].count(n.SPAN_HUMAN_WAIT) == 1
