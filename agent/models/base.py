"""The provider-neutral shapes a model adapter speaks.

Messages use the Messages API's block layout (`text`, `tool_use`, `tool_result`)
as plain JSON-ready dicts, so a run's history can be saved in a snapshot as is.
"""

from __future__ import annotations

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
    """A model's answer for one turn."""

    content: list[dict[str, Any]]
    input_tokens: int = 0
    output_tokens: int = 0
    stop_reason: str = "end_turn"
    model: str = ""
    response_id: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

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
