"""Why a run segment stops, who stopped it, and what it waits for: the types every part shares."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any


class TurnSignal(StrEnum):
    """What a turn that did not end the run did, as its span (`agent.turn.signal`) and the progress
    of a run show it; a turn that ends the run signals its `StopReason` instead."""

    TOOL_USE = "tool_use"
    NO_TOOL_CALL = "no_tool_call"
    DONE_REJECTED = "done_rejected"


class StopKind(StrEnum):
    """Why a model reply ended, in no provider's words: what the loop decides on. Each adapter sets
    it (`ModelReply.stop`) from its provider's own stop reason, which stays in `stop_reason` beside
    it; the journal's `Reply` keeps both. A value that crossed a JSON wire (a Temporal activity's)
    may be its plain text, so compare with `==`."""

    END = "end"  # the model ended its reply (Anthropic: `end_turn`, `stop_sequence`)
    TOOL_USE = "tool_use"  # it asks for tool calls
    MAX_TOKENS = "max_tokens"  # cut off at the request's output limit
    CONTEXT_FULL = "context_full"  # cut off when it filled the model's context window
    PAUSED = "paused"  # the provider paused the turn: send the reply back to go on
    REFUSED = "refused"  # the provider refused to go on with the task
    OTHER = "other"  # a stop reason the adapter does not know


class _MessagesApiStops(dict[str, StopKind]):
    """`StopKind` by the Messages API's stop reason; OTHER for one it does not name."""

    def __missing__(self, key: str) -> StopKind:
        return StopKind.OTHER


MESSAGES_API_STOPS = _MessagesApiStops(
    end_turn=StopKind.END,
    stop_sequence=StopKind.END,
    tool_use=StopKind.TOOL_USE,
    max_tokens=StopKind.MAX_TOKENS,
    model_context_window_exceeded=StopKind.CONTEXT_FULL,
    pause_turn=StopKind.PAUSED,
    compaction=StopKind.PAUSED,  # paused after a server-side compaction
    refusal=StopKind.REFUSED,
)
"""The kind of each of the Messages API's stop reasons, the one mapping from a provider's word to a
`StopKind` that Anthropic's adapter, the scripted model and a script step use, and the kind of any
reply or journal entry that names none (a reply of an adapter that set no `stop`, a journal entry
written before entries kept it): `stop_reason` has always used the Messages API's words."""

_KINDS = {str(k): k for k in StopKind}


def kind_named(value: object) -> StopKind | None:
    """The `StopKind` whose value is `value` (a kind that crossed JSON as its text); None for any
    other value, a kind of a later release too: its reader takes the kind of the stop reason."""
    return _KINDS.get(value) if isinstance(value, str) else None


def kind_to_keep(stop_reason: str, stop: StopKind | None) -> StopKind | None:
    """`stop` when `stop_reason`, read in the Messages API's words, would not give it, else None: what a
    journal entry or a wire keeps beside the word, so the usual reply crosses as it always did and a
    reader of a release before `stop` (a rolling deploy, an older store) takes the same kind from it."""
    return None if stop is None or stop == MESSAGES_API_STOPS[stop_reason] else stop


class StopReason(StrEnum):
    """Every way a run segment can end (DESIGN.md, "Stop reasons")."""

    SUCCESS = "success"
    LIMIT = "limit"
    GAVE_UP = "gave_up"
    NO_PROGRESS = "no_progress"
    NEED_HELP = "need_help"
    HELP_TIMEOUT = "help_timeout"
    CANCELLED = "cancelled"
    ERROR = "error"

    @property
    def terminal(self) -> bool:
        """False only for a suspended run waiting for a person."""
        return self is not StopReason.NEED_HELP

    @property
    def resumable(self) -> bool:
        """True when the result carries a snapshot that `resume` takes."""
        return self in (StopReason.NEED_HELP, StopReason.CANCELLED)


class LimitKind(StrEnum):
    """Which budget ran out for a `limit` stop."""

    TURNS = "turns"
    SECONDS = "seconds"
    TOKENS = "tokens"
    COST = "cost"
    CONTEXT = "context"


class StopCause(StrEnum):
    """Who ended a `gave_up` run: the agent itself, the model API's refusal, or a guardrail."""

    AGENT = "agent"
    REFUSAL = "refusal"
    GUARDRAIL = "guardrail"


class FinishKind(StrEnum):
    """The kinds the model may pass to the `finish` tool."""

    DONE = "done"
    GIVE_UP = "give_up"
    NEED_HELP = "need_help"


@dataclass(frozen=True)
class PendingAction:
    """A tool call that waits for a person's approval before it runs."""

    tool_use_id: str
    name: str
    arguments: dict[str, Any]


@dataclass(frozen=True)
class Suspension:
    """Why a run is waiting for a person, and until when."""

    question: str
    deadline: float
    suspended_at: float
    pending: PendingAction | None = None
    call_id: str = ""  # the call the answer goes to: the finish call, or the pending tool call
