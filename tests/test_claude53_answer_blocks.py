"""Every content block type the Messages API answers with today goes back as it came (claude53 sweep).

A coverage test, not a fix: the 2026-12 sweep of Anthropic's docs and the SDK's types (anthropic
2.17.0, the newest release) found these block types with no test naming them: the results of the
bash and text editor code execution tools, of tool search and of the advisor tool (its redacted
form too), an MCP tool's result, a Files API `container_upload`, and the error forms of the web
search and code execution results. Each is kept whole in the reply and sent back unchanged in the
next request (a cache breakpoint aside), through the real `anthropic` SDK and a local Messages API
server, and the run goes on to its finish. A block of a type no SDK knows yet does the same.
"""

from __future__ import annotations

from typing import Any

import pytest
from messages_api import MessagesAPI, message, text, tool_use

from agent import Agent, RetryPolicy, StopReason, tool
from agent.models.anthropic import AnthropicModel

FAST = RetryPolicy(max_attempts=2, base_delay=0.01, max_delay=0.02, jitter=False)
DONE = tool_use("finish", {"kind": "done", "note": "ok"})


@tool
def step(n: int) -> str:
    """Take one step of the task."""
    return f"step {n} taken"


def server_call(name: str, call_id: str) -> dict[str, Any]:
    return {"type": "server_tool_use", "id": call_id, "name": name, "input": {"q": "x"}}


def result(kind: str, call_id: str, content: Any) -> dict[str, Any]:
    return {"type": kind, "tool_use_id": call_id, "content": content}


BLOCKS: dict[str, list[dict[str, Any]]] = {
    "bash_code_execution": [
        server_call("bash_code_execution", "srvtoolu_01"),
        result(
            "bash_code_execution_tool_result",
            "srvtoolu_01",
            {
                "type": "bash_code_execution_result",
                "stdout": "hi",
                "stderr": "",
                "return_code": 0,
                "content": [],
            },
        ),
    ],
    "text_editor_code_execution": [
        server_call("text_editor_code_execution", "srvtoolu_02"),
        result(
            "text_editor_code_execution_tool_result",
            "srvtoolu_02",
            {
                "type": "text_editor_code_execution_view_result",
                "file_type": "text",
                "content": "x",
                "num_lines": 1,
                "start_line": 1,
                "total_lines": 1,
            },
        ),
    ],
    "tool_search": [
        server_call("tool_search_tool_regex", "srvtoolu_03"),
        result(
            "tool_search_tool_result",
            "srvtoolu_03",
            {
                "type": "tool_search_tool_search_result",
                "tool_references": [{"type": "tool_reference", "tool_name": "step"}],
            },
        ),
    ],
    "advisor": [
        server_call("advisor", "srvtoolu_04"),
        result(
            "advisor_tool_result", "srvtoolu_04", {"type": "advisor_result", "text": "check the tests first"}
        ),
    ],
    "advisor_redacted": [
        server_call("advisor", "srvtoolu_05"),
        result(
            "advisor_tool_result",
            "srvtoolu_05",
            {"type": "advisor_redacted_result", "encrypted_content": "ZW5j"},
        ),
    ],
    "mcp": [
        {"type": "mcp_tool_use", "id": "mcptoolu_01", "name": "lookup", "server_name": "docs", "input": {}},
        {
            "type": "mcp_tool_result",
            "tool_use_id": "mcptoolu_01",
            "is_error": False,
            "content": [{"type": "text", "text": "r"}],
        },
    ],
    "container_upload": [{"type": "container_upload", "file_id": "file_011CNha8iCJcU1wXNR6q4V8w"}],
    "web_search_error": [
        server_call("web_search", "srvtoolu_06"),
        result(
            "web_search_tool_result",
            "srvtoolu_06",
            {"type": "web_search_tool_result_error", "error_code": "max_uses_exceeded"},
        ),
    ],
    "code_execution_error": [
        server_call("code_execution", "srvtoolu_07"),
        result(
            "code_execution_tool_result",
            "srvtoolu_07",
            {"type": "code_execution_tool_result_error", "error_code": "unavailable"},
        ),
    ],
    "a_type_no_sdk_knows": [result("hologram_tool_result", "srvtoolu_08", {"frames": 3})],
}


@pytest.mark.parametrize("case", BLOCKS)
def test_a_reply_holding_the_block_is_kept_and_sent_back_unchanged(case: str) -> None:
    blocks = BLOCKS[case]
    first = message(*blocks, text("Now a step of my own."), tool_use("step", {"n": 1}))
    with MessagesAPI(first, message(DONE)) as api:
        model = AnthropicModel("claude-opus-5-5", api_key="sk-ant-test", base_url=api.url)
        result = Agent("blocks", model, tools=[step], retry=FAST).run("Do the task.")
    assert result.reason is StopReason.SUCCESS, result.note
    assert len(api.requests) == 2
    sent = api.requests[1].body["messages"][1]["content"]
    assert [{k: v for k, v in b.items() if k != "cache_control"} for b in sent[: len(blocks)]] == blocks
