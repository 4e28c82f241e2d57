"""The provider-neutral shapes a model adapter speaks.

Messages use the Messages API's block layout (`text`, `tool_use`, `tool_result`)
as plain JSON-ready dicts, so a run's history can be saved in a snapshot as is.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

Message = dict[str, Any]
ToolSpec = dict[str, Any]


@dataclass(frozen=True)
class ToolCall:
    """One `tool_use` block from a reply."""

    id: str
    name: str
    arguments: dict[str, Any]


@dataclass(frozen=True)
class ModelRequest:
    """What the loop asks of a model for one turn."""

    system: str
    messages: list[Message]
    tools: list[ToolSpec]
    max_tokens: int


@dataclass(frozen=True)
class ModelReply:
    """A model's answer for one turn.

    `input_tokens` counts every input token of the call, as the GenAI
    semantic conventions ask: uncached input plus cache reads plus cache
    writes. The cache parts are also given on their own
    (`cache_read_input_tokens`, `cache_creation_input_tokens`, and of the
    writes those with the 1-hour TTL), so a price table can price each.
    `time_to_first_token` is seconds from sending the request to the first
    streamed token (None when the adapter does not stream);
    `server_tool_use` counts the provider-run tool uses by kind
    (`web_search_requests`, `web_fetch_requests`, `code_execution_requests`).
    """

    content: list[dict[str, Any]]
    input_tokens: int = 0
    output_tokens: int = 0
    stop_reason: str = "end_turn"
    model: str = ""
    response_id: str = ""
    extra: dict[str, Any] = field(default_factory=dict)
    cache_read_input_tokens: int = 0
    cache_creation_input_tokens: int = 0
    cache_creation_1h_input_tokens: int = 0
    time_to_first_token: float | None = None
    server_tool_use: dict[str, int] = field(default_factory=dict)

    @property
    def text(self) -> str:
        return "\n".join(b["text"] for b in self.content if b.get("type") == "text").strip()

    @property
    def tool_calls(self) -> list[ToolCall]:
        return [
            ToolCall(b["id"], b["name"], dict(b.get("input") or {}))
            for b in self.content
            if b.get("type") == "tool_use"
        ]


@runtime_checkable
class Model(Protocol):
    """A model adapter: one async call per turn.

    Raise `TransientModelError` for failures worth retrying (429, 529, 5xx,
    timeouts) and `ModelError` for the rest; the loop owns retries and budget.
    """

    @property
    def name(self) -> str: ...

    @property
    def provider(self) -> str: ...

    async def complete(self, request: ModelRequest) -> ModelReply: ...


# -- the usage of a call cut off before its reply ------------------------------

_cut_calls: ContextVar[list[ModelReply] | None] = ContextVar("endstate_cut_calls", default=None)


@contextmanager
def recording_cut_calls() -> Iterator[list[ModelReply]]:
    """Collect the usage of model calls cancelled mid-way inside this block.

    A call cut off (the time budget's `asyncio.timeout`, or a cancellation)
    still used tokens: an adapter that knows how many records a partial
    `ModelReply` with `record_cut_call` before the cancellation goes on.
    The list is per task (a context variable), so concurrent runs sharing
    one model never see each other's calls.

        with recording_cut_calls() as cut:
            async with asyncio.timeout(left):
                reply = await model.complete(request)
        # on TimeoutError: charge each reply in `cut`
    """
    calls: list[ModelReply] = []
    token = _cut_calls.set(calls)
    try:
        yield calls
    finally:
        _cut_calls.reset(token)


def record_cut_call(partial: ModelReply) -> None:
    """Record the usage of a call that is being cut off (see `recording_cut_calls`)."""
    calls = _cut_calls.get()
    if calls is not None:
        calls.append(partial)
