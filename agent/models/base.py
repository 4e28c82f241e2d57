"""The provider-neutral shapes a model adapter speaks.

A request carries the run's journal; each adapter turns it into its own
format at the edge (`messages` gives the Messages API's layout, which the
Anthropic adapter and the scripted model read). A reply's `content` uses the
same block layout as plain JSON-ready dicts; `parts` reads them into the journal's
parts, and refuses content it cannot read (`UnreadableReply`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Protocol, runtime_checkable

from agent._codec import MOST
from agent._frozen import fast_init
from agent._valid import is_whole
from agent.errors import ModelError
from agent.journal import NO_DATA, Entry, Part, Reply
from agent.journal import Call as ToolCall  # one tool call: the journal's own type
from agent.models._messages import message_count, messages_of, part_of
from agent.stops import StopKind
from agent.text import escaped, shown

Message = dict[str, Any]
ToolSpec = dict[str, Any]
PROVIDER_DATA = "provider_data"  # the key in `ModelReply.extra` of what the journal keeps of a reply
BILLED_APART = "billed_apart"  # the key in `ModelReply.extra` of calls made within one, billed apart
BILLED_BY_MODEL = "billed_by_model"  # ... of the parts of one call's usage that models billed apart
NOT_BILLED = "not_billed"  # ... true when the provider bills nothing of the call (its tokens still count)
# ... true on a part of a call (`BILLED_BY_MODEL`, `BILLED_APART`) naming a model its request did not name
# (not the model asked, nor a fallback or an advisor it listed): the server's word alone, priced as a
# reply's own model is, by the model asked (`PriceTable`: the dearer of the two)
NAMED_UNASKED = "named_unasked"
# ... on such a part billed apart, the models its request named for it (its advisor tools'): it costs at least
# what one of them would (an advisor's answer said to be by a cheaper model costs what the advisor asked does)
PRICED_AT_LEAST = "priced_at_least"
# ... true when the provider gave no count of the call's input that a call could have (none, negative,
# past what its context window holds): the tokens counted of it are a floor, its cost unknown
COUNT_UNKNOWN = "count_unknown"
# ... the output tokens the call spent thinking (Anthropic's `usage.output_tokens_details.thinking_tokens`):
# a part of `output_tokens`, which stays the billed total, for the chat span (none when not given)
THINKING_TOKENS = "thinking_output_tokens"
# What a reply's `extra` says of the whole call, and so of each part `billed_by_model`: where it ran
# (a US-only call costs more), how fast (fast mode is priced apart) and the service tier that served
# it (Priority Tier and the batch tier are priced apart).
_SAID_OF_EACH_PART = ("inference_geo", "speed", "service_tier")
_PART_FLAGS = (NOT_BILLED, NAMED_UNASKED)  # what a part of a call says of itself alone
CALL_MODEL = (
    "call_model"  # ... of the model a call asked for, told only by its reply (see `ModelRequest.model`)
)


@fast_init
@dataclass(frozen=True)
class ModelRequest:
    """What the loop asks of a model for one turn: the journal so far, the tools, the limits.

    `model` is the model this call asks for when it is not the run's: another framework's run calls
    several (an agent handed off to, a graph's nodes, a fallback). "": the run's. A call whose model
    only its reply tells has it in the reply's `extra[CALL_MODEL]`."""

    system: str
    journal: Sequence[Entry]
    tools: list[ToolSpec]
    max_tokens: int
    model: str = ""

    @classmethod
    def of_messages(
        cls, system: str, messages: list[Message], tools: list[ToolSpec], max_tokens: int
    ) -> ModelRequest:
        """A request from Messages-API messages (for tests and adapters fed by hand)."""
        from agent._upgrade import journal_of_messages

        return cls(system, journal_of_messages(messages), tools, max_tokens)

    @cached_property
    def messages(self) -> list[Message]:
        """The journal in the Messages API's layout."""
        return messages_of(self.journal)

    @property
    def message_count(self) -> int:
        """`len(self.messages)`, counted without building them (a long run's request is not made twice)."""
        return message_count(self.journal)

    @property
    def replies(self) -> int:
        """How many model replies the journal holds."""
        return sum(isinstance(e, Reply) for e in self.journal)


@fast_init
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
    `server_tool_use` counts the provider-run tool uses by tool name
    (`web_search`, `web_fetch`, `code_execution`). `extra[PROVIDER_DATA]`,
    when present, is reply-level provider data the journal keeps verbatim for
    later requests (the `Reply`'s `provider_data`: Anthropic's code execution
    `container`); in `extra`, so a worker of an older release still reads it.
    `extra[BILLED_APART]` lists calls made within this one and billed apart
    from its usage (see `billed_apart`): priced and counted, never in the
    context this reply's own `input_tokens` measure. `stop` is why the reply
    ended in no provider's words (`StopKind`), what the loop decides on; the
    journal keeps it beside the provider's own `stop_reason`, which telemetry
    records. An adapter that sets no `stop` has its `stop_reason` read in the
    Messages API's words (`agent.stops.MESSAGES_API_STOPS`). `request_id` is
    the provider's id of the HTTP request that gave the reply (Anthropic's
    `request-id` header, Amazon Bedrock's `x-amzn-requestid`): what its
    support asks for about a slow or strange reply, kept on the chat span (not
    the journal), as `shown_id` bounds it; `response_id` is the message's id.
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
    stop: StopKind | None = None
    request_id: str = ""

    @property
    def billed_apart(self) -> list[ModelReply]:
        """The calls the provider made within this one and billed apart from its usage (Anthropic's
        server-side compaction, an advisor model), each as a reply with its own usage and model
        ("" for this reply's model): `extra[BILLED_APART]`, a list of their usage fields."""
        return self._parts(BILLED_APART)

    @property
    def billed_by_model(self) -> list[ModelReply]:
        """The attempts of this call that different models made, each billed at its model's price
        (Anthropic's server-side fallback: the model that declined, then the one that answered), as
        `billed_apart` gives them; empty when one model served it all. Their tokens are the call's:
        the reply's own counts may give the answering attempt's alone."""
        return self._parts(BILLED_BY_MODEL)

    def _parts(self, key: str) -> list[ModelReply]:
        """The parts under `key`. Those `billed_by_model` split this reply's own usage, so what it says
        of the whole call holds for each (its `speed` too), and its server tool uses are billed once,
        with the last part: the model that answered. A part the provider does not bill (an attempt
        that declined before any output) says so (`NOT_BILLED` in its `extra`), and one naming a model
        its request did not name too (`NAMED_UNASKED`)."""
        if not self.extra or key not in self.extra:  # most replies: asked for every call's cost
            return []
        by_model = key == BILLED_BY_MODEL
        said = _SAID_OF_EACH_PART if by_model else ("inference_geo", "service_tier")
        extra = {k: v for k, v in self.extra.items() if k in said}
        listed = list(self.extra.get(key) or ())
        return [
            ModelReply(
                [],
                input_tokens=part.get("input_tokens", 0),
                output_tokens=part.get("output_tokens", 0),
                model=part.get("model", ""),
                extra=extra | _said_of_itself(part),
                cache_read_input_tokens=part.get("cache_read_input_tokens", 0),
                cache_creation_input_tokens=part.get("cache_creation_input_tokens", 0),
                cache_creation_1h_input_tokens=part.get("cache_creation_1h_input_tokens", 0),
                server_tool_use=dict(self.server_tool_use) if by_model and i == len(listed) - 1 else {},
            )
            for i, part in enumerate(listed)
        ]

    @property
    def text(self) -> str:
        return "\n".join(b["text"] for b in self.content if b.get("type") == "text").strip()

    @property
    def parts(self) -> tuple[Part, ...]:
        """The content as journal parts, read and checked in one pass (a turn reads it once).

        Raises `UnreadableReply`, saying what is wrong, for content the journal cannot keep: not a
        list of block dicts, or a tool call without an id or a name, or whose input is no object."""
        content = self.content
        if not isinstance(content, list):
            raise UnreadableReply(f"its content is {type(content).__name__}, not a list of content blocks")
        parts: list[Part] = []
        for block in content:
            if not isinstance(block, dict):
                raise UnreadableReply(f"a content block is {type(block).__name__}, not a dict")
            if block.get("type") == "tool_use":  # checked in line: no call a block
                if "id" not in block or "name" not in block:
                    raise UnreadableReply(f"a tool_use block has no {'id' if 'id' not in block else 'name'}")
                if not isinstance(block.get("input") or {}, dict):
                    given = type(block["input"]).__name__
                    raise UnreadableReply(f"tool call {block['name']!r}: its input is {given}, not an object")
            try:
                parts.append(part_of(block))
            except KeyError as missing:  # a text block without its text: said, not a KeyError
                raise UnreadableReply(f"a {block.get('type')!r:.40} block has no {missing}") from None
        return tuple(parts)

    def uncounted(self) -> str | None:
        """The first token count of this reply that is no count (negative, a fraction, past 64 bits:
        no store could keep it), None when every count is one."""
        extra = self.extra
        a, b = self.input_tokens, self.output_tokens
        c, d = self.cache_read_input_tokens, self.cache_creation_input_tokens
        usual = not extra and type(a) is type(b) is type(c) is type(d) is int  # no extra counts
        if usual and 0 <= a <= MOST and 0 <= b <= MOST and 0 <= c <= MOST and 0 <= d <= MOST:
            return None  # the usual reply: every count a count
        for name, value in (
            ("input_tokens", a),
            ("output_tokens", b),
            ("cache_read_input_tokens", c),
            ("cache_creation_input_tokens", d),
            ("extra cache_read_input_tokens", extra.get("cache_read_input_tokens") or 0),
            ("extra cache_creation_input_tokens", extra.get("cache_creation_input_tokens") or 0),
        ):
            if type(value) is not int or not 0 <= value <= MOST:
                return f"{name} is {value!r:.40}"
        return None

    def entry(self, parts: tuple[Part, ...]) -> Reply:
        """The journal entry for this reply, its content read as `parts` (`parts`, read once a turn).
        Its cache counts are the reply's own fields, else those in `extra` (a reply made before the
        fields existed). Check its counts first (`uncounted`): one in `extra` that is no count fails here."""
        extra = self.extra  # mostly empty: no cache counts to read from it
        read, write = self.cache_read_input_tokens, self.cache_creation_input_tokens
        if extra and not (read or write):
            read = int(extra.get("cache_read_input_tokens", 0) or 0)
            write = int(extra.get("cache_creation_input_tokens", 0) or 0)
        kept = (extra.get(PROVIDER_DATA) or NO_DATA) if extra else NO_DATA  # the reply's own (see above)
        # by position (fields in order: parts, the four token counts, stop reason, model, response id, data,
        # kind: None gives the kind of the stop reason in the Messages API's words)
        return Reply(
            parts,
            self.input_tokens,
            self.output_tokens,
            read,
            write,
            self.stop_reason,
            self.model,
            self.response_id,
            kept,
            self.stop,
        )

    @property
    def tool_calls(self) -> list[ToolCall]:
        return [
            ToolCall(b["id"], b["name"], dict(b.get("input") or {}))
            for b in self.content
            if b.get("type") == "tool_use"
        ]


def _said_of_itself(part: dict[str, Any]) -> dict[str, Any]:
    """What a part of a call says of itself alone (`_PART_FLAGS`, `PRICED_AT_LEAST`), as its `extra`."""
    said: dict[str, Any] = {flag: True for flag in _PART_FLAGS if part.get(flag) is True}
    at_least = part.get(PRICED_AT_LEAST)
    if isinstance(at_least, list) and at_least and all(isinstance(m, str) and m for m in at_least):
        said[PRICED_AT_LEAST] = list(at_least)
    return said


MOST_ID_CHARS = 128  # an id a provider sends (a request's, a message's), as a span shows it


def shown_id(value: object) -> str:
    """An id a provider sent (a response header's request id, a message id), as a span or a log may
    show it: blanks around it stripped, each character a terminal would not show as itself escaped
    (`\\xNN`, as `agent.text.visible` writes it; a line break or a tab too), and cut to
    `MOST_ID_CHARS`: a broken or hostile server's value of megabytes, or of escape sequences, never
    reaches a span raw. "" for no string. Applied twice, it gives the same."""
    if not isinstance(value, str):
        return ""
    text = value[: 4 * MOST_ID_CHARS].strip()
    if not (text.isascii() and text.isprintable()):
        text = "".join(c if shown(c) and c not in "\n\t" else escaped(c) for c in text)
    return text[:MOST_ID_CHARS].rstrip()


def max_tokens_problem(model: object, max_tokens: int) -> str | None:
    """Why `model` cannot be asked for `max_tokens` (more than the maximum output its `max_output`
    gives, from the model table), said with what to do; None when it can, or when it gives none."""
    most = getattr(model, "max_output", None)
    if not (is_whole(most) and most > 0 and is_whole(max_tokens)) or max_tokens <= most:
        return None
    return (
        f"max_tokens {max_tokens:,} is above model {getattr(model, 'name', '?')!r}'s maximum output of "
        f"{most:,} tokens (model table): ask for at most {most:,}, or give the model's row a larger "
        "max_output in the file named by ENDSTATE_MODELS"
    )


class UnreadableReply(ModelError):
    """A model adapter's reply the loop cannot read (an adapter's bug); the message says what is
    wrong. The run ends as error (`invalid_reply`)."""

    def __init__(self, problem: str) -> None:
        super().__init__(problem, error_type="invalid_reply")


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


# -- a refusal, said ---------------------------------------------------------------


def refusal_note(reply: Reply) -> str:
    """The note of a run the model API refused: its stop reason, and the category and explanation it
    gave (the Messages API's `stop_details`, which its adapter keeps in the reply's `provider_data`:
    read here, at the models' edge, so that the loop sees no provider field)."""
    said = refusal_said(reply.stop_reason, reply.provider_data)
    return f"The model API refused to go on with this task {said}"


def refusal_said(stop_reason: str, provider_data: Mapping[str, Any]) -> str:
    """What a refusal's reply said: "(stop_reason: ..., category: ...)." and the explanation given."""
    details = provider_data.get("stop_details")
    said = details if isinstance(details, Mapping) else {}
    category, explanation = (
        said.get(k) if isinstance(said.get(k), str) else "" for k in ("category", "explanation")
    )
    kind = f", category: {category[:100]}" if category else ""
    why = f" The API said: {explanation[:1000]}" if explanation else ""
    return f"(stop_reason: {stop_reason}{kind}).{why}"


# -- the usage of a call cut off before its reply ------------------------------


_cut_calls: ContextVar[_CutCalls | None] = ContextVar("endstate_cut_calls", default=None)


def recording_cut_calls(seconds: float | None = None) -> _CutCalls:
    """Collect the usage of model calls cancelled mid-way inside this block.

    A call cut off (the time budget's `asyncio.timeout`, or a cancellation)
    still used tokens: an adapter that knows how many records a partial
    `ModelReply` with `record_cut_call` before the cancellation goes on.
    The list is per task (a context variable), so concurrent runs sharing
    one model never see each other's calls. `seconds` is the time budget
    left for the call (None: not budgeted), for a model that runs the call
    elsewhere and must cut it there too (`call_seconds`).

        with recording_cut_calls(left) as cut:
            async with asyncio.timeout(left):
                reply = await model.complete(request)
        # on TimeoutError: charge each reply in `cut`
    """
    return _CutCalls(seconds)


class _CutCalls(list[ModelReply]):
    """The block of `recording_cut_calls`, and the calls cut off inside it (a list: entered once a
    model call, kept cheap), with the seconds the block was given."""

    __slots__ = ("_token", "seconds")

    def __init__(self, seconds: float | None) -> None:  # empty, as `list.__new__` made it
        self.seconds = seconds

    def __enter__(self) -> list[ModelReply]:
        self._token = _cut_calls.set(self)
        return self

    def __exit__(self, *exc: object) -> None:
        try:  # (not contextlib.suppress: this runs once a model call)
            _cut_calls.reset(self._token)
        except ValueError:  # left in another context: a dropped run's coroutine the collector closes
            return


def call_seconds() -> float | None:
    """The time budget left for the model call in progress when it began (None: not budgeted)."""
    calls = _cut_calls.get()
    return calls.seconds if calls is not None else None


def record_cut_call(partial: ModelReply) -> None:
    """Record the usage of a call that is being cut off (see `recording_cut_calls`)."""
    calls = _cut_calls.get()
    if calls is not None:
        calls.append(partial)
