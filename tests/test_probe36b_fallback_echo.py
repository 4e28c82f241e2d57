"""A reply a server-side fallback served mid-output holds what the declining model wrote before the
turn's last `fallback` block. The API's rule for sending such a turn back (the refusals-and-fallback
guide, "Continuing the conversation"; the SDK's `BetaFallbackBlockParam`): before the last `fallback`
block, `thinking`, `redacted_thinking`, `connector_text` and client `tool_use` blocks are left out, and
a `server_tool_use` only when its result is not in the turn; text, paired server tool blocks, the
`fallback` block itself and everything after it go back as they came. A `tool_use` left out gets no
`tool_result`: only the calls of the model that served the reply are run."""

from __future__ import annotations

from typing import Any

from messages_api import MessagesAPI, fallback_block, message, text, tool_use

from agent import Agent, Budget, RetryPolicy, StopReason, tool

FAST = RetryPolicy(max_attempts=2, base_delay=0.01, max_delay=0.02, jitter=False)
REQUESTED, SERVING = "claude-opus-4-6", "claude-haiku-4-5"
DONE = tool_use("finish", {"kind": "done", "note": "ok"})
RAN: list[str] = []


@tool
def delete(path: str) -> str:
    """Delete a file."""
    RAN.append(f"delete {path}")
    return f"deleted {path}"


@tool
def read(path: str) -> str:
    """Read a file."""
    RAN.append(f"read {path}")
    return "contents"


THINKING = {"type": "thinking", "thinking": "the declined thought", "signature": "sig-declined"}
DECLINED_CALL = tool_use("delete", {"path": "/etc/passwd"}, id="toolu_declined")
SERVED_CALL = tool_use("read", {"path": "notes.txt"}, id="toolu_served")
SEARCH = {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {"query": "x"}}
SEARCH_RESULT = {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": []}
UNPAIRED = {"type": "server_tool_use", "id": "srvtoolu_2", "name": "web_search", "input": {"query": "y"}}


def served(*content: dict[str, Any]) -> Any:
    iterations = [
        {"type": "message", "input_tokens": 100, "output_tokens": 20, "model": REQUESTED},
        {"type": "fallback_message", "input_tokens": 120, "output_tokens": 30, "model": SERVING},
    ]
    usage = {
        "iterations": [
            i | {"cache_read_input_tokens": 0, "cache_creation_input_tokens": 0} for i in iterations
        ]
    }
    return message(*content, input_tokens=220, output_tokens=50, model=SERVING, usage=usage)


def run(*replies: Any) -> tuple[Any, MessagesAPI]:
    RAN.clear()
    with MessagesAPI(*replies) as api:
        from agent.models.anthropic import AnthropicModel

        model = AnthropicModel(REQUESTED, api_key="sk-ant-test", base_url=api.url)
        agent = Agent("fallback", model, tools=[delete, read], budget=Budget(max_turns=4), retry=FAST)
        return agent.run("Tidy up."), api


def test_a_call_the_declining_model_made_before_the_fallback_is_not_run_nor_sent_back() -> None:
    reply = served(
        THINKING,
        text("I will delete"),
        DECLINED_CALL,
        fallback_block(REQUESTED, SERVING),
        text("Reading."),
        SERVED_CALL,
    )
    result, api = run(reply, message(DONE))
    assert result.reason is StopReason.SUCCESS, result.note
    assert RAN == ["read notes.txt"]
    sent = api.bodies[1]["messages"]
    assistant = [{k: v for k, v in b.items() if k != "cache_control"} for b in sent[1]["content"]]
    assert assistant == [
        text("I will delete"),
        fallback_block(REQUESTED, SERVING),
        text("Reading."),
        SERVED_CALL,
    ]
    results = [b["tool_use_id"] for b in sent[2]["content"] if b.get("type") == "tool_result"]
    assert results == ["toolu_served"]


def test_only_the_blocks_the_rule_names_are_left_out_before_the_last_fallback() -> None:
    redacted = {"type": "redacted_thinking", "data": "opaque"}
    connector = {"type": "connector_text", "text": "between tools"}
    later_thinking = {"type": "thinking", "thinking": "served thought", "signature": "sig-served"}
    reply = served(
        redacted,
        SEARCH,
        SEARCH_RESULT,
        UNPAIRED,
        connector,
        text("partial"),
        fallback_block(REQUESTED, SERVING),
        later_thinking,
        text("Reading."),
        SERVED_CALL,
    )
    result, api = run(reply, message(DONE))
    assert result.reason is StopReason.SUCCESS, result.note
    sent = [
        {k: v for k, v in b.items() if k != "cache_control"} for b in api.bodies[1]["messages"][1]["content"]
    ]
    assert sent == [
        SEARCH,
        SEARCH_RESULT,
        text("partial"),
        fallback_block(REQUESTED, SERVING),
        later_thinking,
        text("Reading."),
        SERVED_CALL,
    ]


def test_a_turn_with_two_fallbacks_keeps_only_what_follows_the_last() -> None:
    hop = fallback_block(REQUESTED, SERVING) | {"to": {"model": "claude-sonnet-4-5"}}
    second = fallback_block(REQUESTED, SERVING) | {"from": {"model": "claude-sonnet-4-5"}}
    middle_call = tool_use("delete", {"path": "b"}, id="toolu_middle")
    reply = served(DECLINED_CALL, hop, middle_call, second, SERVED_CALL)
    result, api = run(reply, message(DONE))
    assert result.reason is StopReason.SUCCESS, result.note
    assert RAN == ["read notes.txt"]
    sent = [
        {k: v for k, v in b.items() if k != "cache_control"} for b in api.bodies[1]["messages"][1]["content"]
    ]
    assert sent == [hop, second, SERVED_CALL]


def test_a_reply_with_no_fallback_block_is_sent_back_whole() -> None:
    reply = message(THINKING, text("I will read"), SERVED_CALL)
    result, api = run(reply, message(DONE))
    assert result.reason is StopReason.SUCCESS, result.note
    sent = [
        {k: v for k, v in b.items() if k != "cache_control"} for b in api.bodies[1]["messages"][1]["content"]
    ]
    assert sent == [THINKING, text("I will read"), SERVED_CALL]


def test_a_declined_call_the_refusal_cut_off_mid_input_does_not_spoil_the_reply() -> None:
    # Streamed: the refusal stopped the declining model's call before its JSON ended (the SDK's tool
    # runner says so too); the fallback model's answer after the block is whole and is kept.
    from messages_api import events_of, streamed

    events = events_of(
        served(text("I will delete"), DECLINED_CALL, fallback_block(REQUESTED, SERVING), SERVED_CALL)
    )
    for _, data in events:
        if data.get("index") == 1 and data.get("type") == "content_block_delta":
            data["delta"]["partial_json"] = '{"path": "/et'  # no more of it came
    result, api = run(streamed(*events), message(DONE))
    assert result.reason is StopReason.SUCCESS, result.note
    assert RAN == ["read notes.txt"]
    assert len(api.requests) == 2


def test_a_cache_breakpoint_never_lands_on_a_fallback_block() -> None:
    # The API's fallback block param takes no `cache_control` (it is not rendered into the prompt):
    # a message ending with one (a reply paused right after a fallback, sent back to go on) has its
    # breakpoint on the block before.
    from agent.models.anthropic import cache_control, with_message_breakpoints

    paused = {"role": "assistant", "content": [text("partial"), fallback_block(REQUESTED, SERVING)]}
    marked = with_message_breakpoints([{"role": "user", "content": "Tidy up."}, paused], cache_control("5m"))
    assert marked[1]["content"] == [
        text("partial") | {"cache_control": {"type": "ephemeral"}},
        fallback_block(REQUESTED, SERVING),
    ]
