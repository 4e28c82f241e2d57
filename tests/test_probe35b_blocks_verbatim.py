"""A reply block the adapter does not type itself (a server tool's result, a container upload, a
block type a later API adds) goes back to the API as the SDK itself sends a reply's content back
(`Message.to_param`: every field the API sent, a null too), across a suspension and a resume.
It was dumped without its null fields: a field the API requires back, even as null (as it does a
citation's `document_title`), was lost, and the request refused."""

from __future__ import annotations

import json
from typing import Any

import anthropic
import pytest
from anthropic._models import construct_type
from anthropic._utils._json import openapi_model_dump
from messages_api import MessagesAPI, message, tool_use

from agent import Agent, Approval, Budget, RetryPolicy, Snapshot, StopReason, tool
from agent.models.anthropic import AnthropicModel, content_block, web_search

MODEL = "claude-haiku-4-5"
FAST = RetryPolicy(max_attempts=2, base_delay=0.01, max_delay=0.02, jitter=False)
DONE = tool_use("finish", {"kind": "done", "note": "ok"})
SEARCH = {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {"query": "q"}}

BLOCKS: dict[str, list[dict[str, Any]]] = {
    "future": [{"type": "future_block", "token": "abc", "parent_id": None, "meta": {"seen": None}}],
    "web_search": [
        SEARCH,
        {
            "type": "web_search_tool_result",
            "tool_use_id": "srvtoolu_1",
            "content": [
                {"type": "web_search_result", "url": "https://e.com", "title": "t", "encrypted_content": "e"}
                | {"page_age": None}
            ],
        },
    ],
}


@tool(needs_approval=True)
def deploy(target: str) -> str:
    """Deploy (a person approves first)."""
    return f"deployed {target}"


def without_breakpoints(blocks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: v for k, v in block.items() if k != "cache_control"} for block in blocks]


@pytest.mark.parametrize("case", BLOCKS)
def test_a_block_goes_back_with_every_field_the_api_sent_across_a_suspension_and_resume(case: str) -> None:
    blocks = BLOCKS[case]
    first = message(*blocks, tool_use("deploy", {"target": "prod"}, id="toolu_D"))
    with MessagesAPI(first, message(DONE)) as api:
        model = AnthropicModel(MODEL, api_key="sk-test", base_url=api.url, server_tools=[web_search()])
        agent = Agent("verbatim", model, tools=[deploy], budget=Budget(max_turns=4), retry=FAST)
        paused = agent.run("Deploy.")
        assert paused.reason is StopReason.NEED_HELP, paused.note
        snapshot = Snapshot.from_json(json.loads(json.dumps(paused.snapshot.to_json())))
        resumed = agent.resume(snapshot, Approval())
        assert resumed.reason is StopReason.SUCCESS, resumed.note
        sent_back = api.bodies[1]["messages"][1]["content"]
    assert without_breakpoints(sent_back[: len(blocks)]) == blocks


@pytest.mark.parametrize("case", BLOCKS)
def test_a_block_is_kept_as_the_sdk_itself_would_send_it_back(case: str) -> None:
    blocks = [
        construct_type(type_=anthropic.types.ContentBlock, value=b) for b in BLOCKS[case]
    ]  # as streamed
    assert [content_block(b) for b in blocks] == [openapi_model_dump(b) for b in blocks]
