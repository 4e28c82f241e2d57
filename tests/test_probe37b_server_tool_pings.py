"""While a tool the API runs is at work (code execution, a web fetch, an advisor), the stream shows
nothing but `ping` keep-alives between the tool's call block and its result block, and while the
model then reads the result before it writes again: a step that can take minutes. The watchdog that
cuts a stream showing only pings for the client's read timeout cut such steps too: with `timeout=30`
(the most seconds between reads, which the SDK resets on every ping), a 45-second code run failed
and was retried, run again and cut again. Through a server tool's step the watchdog waits at least
the SDK's default read timeout (600 s) instead; a stall anywhere else is still cut at the client's
timeout, and a step is still bounded."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from messages_api import MessagesAPI, Response, events_of, message, text

import agent.models.anthropic as adapter
from agent.errors import TransientModelError
from agent.models.anthropic import AnthropicModel, code_execution
from agent.models.base import ModelRequest

PING = ("ping", {"type": "ping"})
CODE = {"type": "server_tool_use", "id": "srvtoolu_1", "name": "code_execution", "input": {"code": "run()"}}
RESULT = {
    "type": "code_execution_tool_result",
    "tool_use_id": "srvtoolu_1",
    "content": {
        "type": "code_execution_result",
        "stdout": "done",
        "stderr": "",
        "return_code": 0,
        "content": [],
    },
}


def call(response: Response, timeout: float) -> Any:
    with MessagesAPI(response, validate=False) as api:
        model = AnthropicModel(
            "claude-haiku-4-5",
            api_key="sk-ant-test",
            base_url=api.url,
            timeout=timeout,
            server_tools=[code_execution()],
        )
        request = ModelRequest.of_messages("", [{"role": "user", "content": "run it"}], [], 256)
        return asyncio.run(model.complete(request))


def paused_after(block_type: str, pings: int) -> Response:
    """A reply whose stream sends `pings` pings (0.05 s apart) after its first block of `block_type` ends."""
    events = list(events_of(message(CODE, RESULT, text("It ran."))))
    first = next(
        i for i, (_, data) in enumerate(events) if data.get("content_block", {}).get("type") == block_type
    )
    stop = next(i for i, (name, data) in enumerate(events) if name == "content_block_stop" and i > first)
    events[stop + 1 : stop + 1] = [PING] * pings
    return Response(200, None, events=tuple(events), stream_delay=0.05)


@pytest.mark.parametrize("after", ["server_tool_use", "code_execution_tool_result"], ids=["tool", "reading"])
def test_a_server_tool_step_longer_than_the_client_timeout_is_waited_for(after: str) -> None:
    # The tool at work (pings after its call), then the model reading its result (pings after it).
    reply = call(paused_after(after, pings=30), timeout=0.5)  # 1.5 s of pings
    assert [b["type"] for b in reply.content] == ["server_tool_use", "code_execution_tool_result", "text"]


def test_pings_alone_once_the_model_writes_again_are_still_cut_at_the_client_timeout() -> None:
    with pytest.raises(TransientModelError) as caught:
        call(paused_after("text", pings=60), timeout=0.5)
    assert caught.value.error_type == "timeout"
    assert "the client's read timeout" in str(caught.value)


def test_a_server_tool_step_that_shows_nothing_but_pings_for_too_long_is_cut(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(adapter, "_SERVER_STEP", 1.0)  # 600 s in use: too long to wait for here
    with pytest.raises(TransientModelError) as caught:
        call(paused_after("server_tool_use", pings=60), timeout=0.5)  # 3 s of pings
    assert caught.value.error_type == "timeout"
    assert "no progress for 1 s while a tool the API runs was at work" in str(caught.value)


def test_after_a_long_server_tool_step_a_stall_is_cut_at_the_client_timeout_again() -> None:
    # The step's longer bound is for the step alone: once the model writes again, pings alone for the
    # client's timeout cut the stream (not 600 s later, when a timer set during the step fires).
    events = list(paused_after("server_tool_use", pings=30).events or ())
    stop = max(
        i for i, (name, data) in enumerate(events) if name == "content_block_stop" and data["index"] == 2
    )
    events[stop + 1 : stop + 1] = [PING] * 60  # 3 s of pings after the model's text
    with pytest.raises(TransientModelError) as caught:
        call(Response(200, None, events=tuple(events), stream_delay=0.05), timeout=0.5)
    assert "the client's read timeout" in str(caught.value)
