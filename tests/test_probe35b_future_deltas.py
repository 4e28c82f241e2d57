"""A block of a type a later API adds may stream its fields in deltas of a type of its own, as each
block that streams does (`text_delta`, `thinking_delta`, `compaction_delta`: string pieces of the
field of the same name). The SDK drops a delta type it does not know, so such a block went back to
the API, and into the journal, without what it streamed: not the block the API sent."""

from __future__ import annotations

import json
from typing import Any

from messages_api import MessagesAPI, events_of, message, streamed, tool_use

from agent import Agent, Approval, Budget, RetryPolicy, Snapshot, StopReason, tool
from agent.models.anthropic import AnthropicModel

MODEL = "claude-haiku-4-5"
FAST = RetryPolicy(max_attempts=2, base_delay=0.01, max_delay=0.02, jitter=False)
DONE = tool_use("finish", {"kind": "done", "note": "ok"})
STARTED = {"type": "future_block", "data": "ab", "step": 1, "parent_id": None}
DELTAS = [
    {"type": "future_delta", "data": "cd"},
    {"type": "future_delta", "data": "ef", "step": 2},
]
WHOLE = {"type": "future_block", "data": "abcdef", "step": 2, "parent_id": None}


@tool(needs_approval=True)
def deploy(target: str) -> str:
    """Deploy (a person approves first)."""
    return f"deployed {target}"


def with_deltas(
    events: list[tuple[str, Any]], index: int, deltas: list[dict[str, Any]]
) -> list[tuple[str, Any]]:
    """`events` with `deltas` streamed to block `index` after its start."""
    at = next(
        i for i, (name, data) in enumerate(events) if name == "content_block_start" and data["index"] == index
    )
    streamed_deltas = [
        ("content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta})
        for delta in deltas
    ]
    return [*events[: at + 1], *streamed_deltas, *events[at + 1 :]]


def test_a_block_streamed_in_deltas_of_an_unknown_type_goes_back_whole_across_a_resume() -> None:
    events = events_of(message(STARTED, tool_use("deploy", {"target": "prod"}, id="toolu_D")), model=MODEL)
    with MessagesAPI(streamed(*with_deltas(events, 0, DELTAS)), message(DONE)) as api:
        model = AnthropicModel(MODEL, api_key="sk-test", base_url=api.url)
        agent = Agent("future", model, tools=[deploy], budget=Budget(max_turns=4), retry=FAST)
        paused = agent.run("Deploy.")
        assert paused.reason is StopReason.NEED_HELP, paused.note
        snapshot = Snapshot.from_json(json.loads(json.dumps(paused.snapshot.to_json())))
        resumed = agent.resume(snapshot, Approval())
        assert resumed.reason is StopReason.SUCCESS, resumed.note
        sent_back = api.bodies[1]["messages"][1]["content"][0]
    assert {k: v for k, v in sent_back.items() if k != "cache_control"} == WHOLE
