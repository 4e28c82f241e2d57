"""A model that plays recorded turns: for tests and the offline default.

A script is a list of steps. Each step is a `ModelReply`, a list of blocks
(made with `say`, `call` and `finish`), an exception to raise, or a function
of the request. The model finds its place from the history it is sent at every
call: it goes on after the last reply of the script the request holds (a reply's
id names its step: `msg_003` is the third, as its tool calls' ids do, `toolu_003_0`,
so they stay unique when a compaction leaves replies out) when that is further on than the step
it would play next, so a run plays each step once however many processes or
workers serve its turns, each with its own model, and a run suspended in one
process resumes in another with a fresh model. Otherwise it goes on from its
own place: after an exception step the loop asks again with the same request and
gets the next step, a summary the model wrote for a compaction (its request holds
only the older turns) is not played again, and a script one model plays for
several runs, one after another, goes on from run to run. Nothing in a request
says which exception steps were raised or which summary was written: another
model that such a call reaches plays that step again. (A history of replies the
script did not make, say written by hand, places a fresh model after as many
reply steps.)

A step may give its stop reason in the Messages API's words (`reply(...,
stop_reason="max_tokens")`, or a `ModelReply`'s own), so a script plays a
reply cut at `max_tokens`, a `pause_turn`, a `refusal` or a full context
window; its kind (`StopKind`) is the one Anthropic's adapter gives the same
word (`agent.stops.MESSAGES_API_STOPS`), unless the step sets `stop` itself.

The model records the requests it is sent (`requests`, for tests to read), the last `keep_requests`
of them whole (KEEP_REQUESTS; None: all): each holds the history as it was sent, so keeping every
one of a long run grew with the square of its length.
"""

from __future__ import annotations

import copy
import itertools
import re
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from typing import Any, overload

from agent._valid import is_whole
from agent.errors import ConfigError, ScriptExhausted
from agent.journal import Reply
from agent.models.base import ModelReply, ModelRequest, StopKind
from agent.stops import MESSAGES_API_STOPS

Block = dict[str, Any]
Step = ModelReply | Sequence[Block] | BaseException | Callable[[ModelRequest], Any]
_REPLY_ID = re.compile(r"msg_(\d+)(_then)?")  # a played reply's id: its step's number, or past the steps
KEEP_REQUESTS = 100  # the requests a scripted model keeps whole, the last ones: see `Requests`


def say(text: str) -> Block:
    """A text block."""
    return {"type": "text", "text": text}


def call(name: str, **arguments: Any) -> Block:
    """A tool call block; the model gives it an id when it plays it."""
    return {"type": "tool_use", "name": name, "input": arguments}


def finish(kind: str, note: str = "") -> Block:
    """A call of the `finish` tool."""
    return call("finish", kind=kind, note=note)


def reply(
    *blocks: Block,
    input_tokens: int | None = None,
    output_tokens: int | None = None,
    stop_reason: str | None = None,
    stop: StopKind | None = None,
) -> ModelReply:
    """A reply of the given blocks; token counts default to the model's estimate, and the stop
    reason to the API's own (`tool_use` or `end_turn`); pass e.g. `refusal` or `pause_turn`. Its kind
    is that word's in the Messages API, unless `stop` gives it (a provider's own word, replayed)."""
    for block in blocks:
        if not isinstance(block, dict):
            raise ConfigError(
                f"reply() takes content blocks: say('text'), call('tool', ...) or finish('done', ...), "
                f"not {type(block).__name__} {block!r:.60}"
            )
    extra = {"input_tokens": input_tokens, "output_tokens": output_tokens, "stop_reason": stop_reason}
    return ModelReply(
        content=list(blocks), extra={k: v for k, v in extra.items() if v is not None}, stop=stop
    )


class Requests(Sequence[ModelRequest]):
    """The requests a model was sent, in order: every one counted, the last `keep` of them (None:
    all) held whole. Read as a list: by index (an index from the start still counts every request;
    one no longer held raises IndexError), sliced as a list, compared with a list."""

    def __init__(self, keep: int | None = KEEP_REQUESTS) -> None:
        self._kept: deque[ModelRequest] = deque(maxlen=keep)
        self._count = 0

    def append(self, request: ModelRequest) -> None:
        self._kept.append(request)
        self._count += 1

    def __len__(self) -> int:
        return self._count

    @overload
    def __getitem__(self, index: int) -> ModelRequest: ...
    @overload
    def __getitem__(self, index: slice) -> list[ModelRequest]: ...
    def __getitem__(self, index: int | slice) -> ModelRequest | list[ModelRequest]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(self._count))]
        at = index + self._count if index < 0 else index
        if not 0 <= at < self._count:
            raise IndexError(f"request {index} of {self._count}: no such request")
        dropped = self._count - len(self._kept)
        if at < dropped:
            raise IndexError(
                f"request {at} of {self._count} is no longer kept: a scripted model keeps its last "
                f"{self._kept.maxlen} (ScriptedModel(keep_requests=None) keeps all)"
            )
        return self._kept[at - dropped]

    def __iter__(self) -> Iterator[ModelRequest]:
        return (self[i] for i in range(self._count))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Requests | list):
            return len(self) == len(other) and list(self) == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # a changing record, as a list is

    def __repr__(self) -> str:
        return f"Requests({len(self)} sent, {len(self._kept)} kept)"


class ScriptedModel:
    """Plays `steps` in order, then `then(turn)` if given, and records the requests (`Requests`: the
    last `keep_requests` whole)."""

    provider = "scripted"

    def __init__(
        self,
        steps: Sequence[Step] = (),
        *,
        then: Callable[[int], Step] | None = None,
        name: str = "scripted",
        keep_requests: int | None = KEEP_REQUESTS,
    ) -> None:
        if keep_requests is not None and not (is_whole(keep_requests) and keep_requests >= 1):
            raise ConfigError(
                f"keep_requests must be a whole number from 1, or None (all), not {keep_requests!r:.60}"
            )
        self._steps = list(steps)
        self._then = then
        self._name = name
        self._cursor: int | None = None
        self._keep = keep_requests
        self.requests = Requests(keep_requests)

    @property
    def name(self) -> str:
        return self._name

    async def complete(self, request: ModelRequest) -> ModelReply:
        self.requests.append(request)
        turn = 1 + request.replies
        last = self._last_played(request)
        self._cursor = max(self._cursor or 0, self._place_after(last, request.replies))
        step, number = self._next_step(turn)
        if isinstance(step, BaseException):
            raise step
        if callable(step) and not isinstance(step, ModelReply):
            step = step(request)
        if number is not None:
            return self._played(step, f"{number:03d}", request)
        after = last[0] + 1 if last else turn  # `then`'s replies are numbered on from the last one
        return self._played(step, f"{after:03d}", request, past=True)

    def fresh(self) -> ScriptedModel:
        """This script, to be played from its first step, with no request recorded: a copy (of a
        subclass too), so that runs played each from one shared model (an eval's cases, from a catalog
        whose build returns one agent) never go on from each other's place."""
        copied = copy.copy(self)
        copied._cursor, copied.requests = None, Requests(self._keep)
        return copied

    def assert_used_up(self) -> None:
        """Fail when the script holds steps that no request reached: steps this model neither played
        nor passed over as played already (by another model serving the same run)."""
        left = len(self._steps) - (self._cursor or 0)
        if left > 0:
            raise AssertionError(f"scripted model: {left} of {len(self._steps)} steps were never played")

    def _next_step(self, turn: int) -> tuple[Step, int | None]:
        """The step to play and its number (1 for the first step; None: `then`'s)."""
        assert self._cursor is not None
        if self._cursor < len(self._steps):
            self._cursor += 1
            return self._steps[self._cursor - 1], self._cursor
        if self._then is not None:
            return self._then(turn), None
        raise ScriptExhausted(
            f"scripted model {self._name!r} has no step for turn {turn}: add steps or pass then=",
            error_type="script_exhausted",
        )

    def _last_played(self, request: ModelRequest) -> tuple[int, bool] | None:
        """The number of the request's last reply when this script played it (its id says), and
        whether it was past the steps (`then`'s); None for a reply it did not play, or none."""
        last = next((e for e in reversed(request.journal) if isinstance(e, Reply)), None)
        if last is None or last.model != self._name or not (m := _REPLY_ID.fullmatch(last.response_id)):
            return None
        return int(m[1]), bool(m[2])

    def _place_after(self, last: tuple[int, bool] | None, replies: int) -> int:
        """The index after the step `last` names, else after as many reply steps as `replies`."""
        if last is None:
            return self._position_after(replies)
        number, past = last
        return len(self._steps) if past else min(number, len(self._steps))

    def _position_after(self, replies: int) -> int:
        """The index after the `replies`-th reply step (exceptions are not replies)."""
        if replies == 0:
            return 0
        seen = itertools.accumulate(not isinstance(s, BaseException) for s in self._steps)
        for index, count in enumerate(seen):
            if count == replies:
                return index + 1
        return len(self._steps)

    def _played(self, step: Any, number: str, request: ModelRequest, past: bool = False) -> ModelReply:
        """The reply of `step`, numbered `number` (its id's, and its tool calls'), `past` the steps."""
        base = step if isinstance(step, ModelReply) else ModelReply(content=list(step))
        content = [
            {**b, "id": b.get("id") or f"toolu_{number}_{i}"} if _is_call(b) else b  # the loop judges others
            for i, b in enumerate(base.content)
        ]
        input_tokens = base.extra.get("input_tokens", 100 + 20 * request.message_count)
        output_tokens = base.extra.get("output_tokens", 30 + 10 * len(content))
        stop = _stop_reason(base, content)
        kind = base.stop or MESSAGES_API_STOPS[stop]  # a script speaks the Messages API's stop reasons
        name, msg_id = self._name, f"msg_{number}_then" if past else f"msg_{number}"
        return ModelReply(content, input_tokens, output_tokens, stop, name, msg_id, stop=kind)


def _stop_reason(step: ModelReply, content: list[Block]) -> str:
    """The stop reason a step gives: `reply(stop_reason=...)`'s, or a `ModelReply`'s own unless it is
    the default `end_turn`; else the API's for its content (`tool_use` when it calls a tool)."""
    given = step.extra.get("stop_reason") or (step.stop_reason if step.stop_reason != "end_turn" else None)
    if given is not None and not isinstance(given, str):
        raise ConfigError(
            f"a script step's stop_reason must be a Messages API stop reason such as 'max_tokens' or "
            f"'pause_turn', not {given!r:.60}"
        )
    if given:
        return given
    return "tool_use" if any(_is_call(b) for b in content) else "end_turn"


def _is_call(block: object) -> bool:
    return isinstance(block, dict) and block.get("type") == "tool_use"
