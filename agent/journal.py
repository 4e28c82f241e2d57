"""The run journal: a run's history as typed, append-only entries.

A run is the task, then for each turn the model's `Reply` and the `Result` of
each call it made, with the loop's own `Note`s to the model, a `Suspended`
when it waits for a person, the `Answered` that came back, and the `Stopped`
that ended it. Provider formats live at the edge: each model adapter turns
the journal into its own request. What is still to do is derived from the
journal: the calls to answer are the last reply's calls minus the results
after it, so "a turn in flight" needs no extra state.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, NoReturn, cast

from agent._frozen import fast_init
from agent.content import Block
from agent.stops import MESSAGES_API_STOPS, LimitKind, StopKind, StopReason, Suspension
from agent.text import says_something

# -- what a reply holds -------------------------------------------------------------------------


class _NoData(Mapping[str, Any]):
    """An empty mapping that cannot change, and so can be every `provider_data`'s default."""

    def __getitem__(self, key: str) -> Any:
        raise KeyError(key)

    def __iter__(self) -> Iterator[str]:
        return iter(())

    def __len__(self) -> int:
        return 0

    def __hash__(self) -> int:
        return 0

    def __repr__(self) -> str:
        return "{}"


NO_DATA: Mapping[str, Any] = _NoData()
"""No provider data: the default of every `provider_data`."""

_KEPT_AS_IT_CAME = (
    "a journal entry's data (a call's arguments, a provider's block) is kept as it came and cannot be "
    "changed: change a copy of it (copy.deepcopy gives a plain one)"
)


class FrozenDict(dict[str, Any]):
    """A JSON object of a journal entry: read as a dict, never changed (see `frozen`)."""

    __slots__ = ()

    def _refuse(self, *args: object, **kwargs: object) -> NoReturn:
        raise TypeError(_KEPT_AS_IT_CAME)

    __setitem__ = __delitem__ = __ior__ = _refuse  # type: ignore[assignment]
    clear = pop = popitem = setdefault = update = _refuse  # type: ignore[assignment]

    def __reduce__(self) -> tuple[Any, ...]:
        return thawed, (dict(self),)  # a copy (or pickle) is a plain dict, the caller's own


class FrozenList(list[Any]):
    """A JSON array of a journal entry: read as a list, never changed (see `frozen`)."""

    __slots__ = ()

    def _refuse(self, *args: object, **kwargs: object) -> NoReturn:
        raise TypeError(_KEPT_AS_IT_CAME)

    append = extend = insert = remove = pop = clear = sort = reverse = _refuse  # type: ignore[assignment]
    __setitem__ = __delitem__ = __iadd__ = __imul__ = _refuse  # type: ignore[assignment]

    def __reduce__(self) -> tuple[Any, ...]:
        return thawed, (list(self),)


_FROZEN = (FrozenDict, FrozenList)
_THAWED: dict[type[Any], type[Any]] = {dict: FrozenDict, list: FrozenList}


def frozen(value: Any) -> Any:
    """`value` with its dicts and lists, at every depth, made read-only (`FrozenDict`, `FrozenList`):
    the JSON data a journal entry holds, which a tool, a hook, a verifier or an adapter handed it could
    otherwise change in place, and with it the run's history, what is saved and what the model is sent.
    Other values are kept as they are (the journal refuses what it cannot keep as the loop takes it)."""
    kind = type(value)
    if kind not in _THAWED:
        return value
    for item in value.values() if kind is dict else value:
        if type(item) in _THAWED:
            break
    else:  # the usual call: flat, one copy made in C
        return _THAWED[kind](value)
    top = _THAWED[kind]()
    todo = [(top, value)]
    while todo:  # not recursive: a model's arguments may nest deep
        into, source = todo.pop()
        pairs = source.items() if type(source) is dict else enumerate(source)
        for key, item in pairs:
            made = item
            if (inner := type(item)) in _THAWED:
                made = _THAWED[inner]()
                todo.append((made, item))
            if type(into) is FrozenDict:
                dict.__setitem__(cast("dict[Any, Any]", into), key, made)
            else:
                list.append(into, made)
    return top


def thawed(value: Any) -> Any:
    """A plain copy of JSON data, frozen or not: its dicts and lists copied at every depth (iteratively:
    a model's arguments may nest deep); other values kept as they are (`copy.deepcopy`, `pickle`, and
    the copy a tool is given of its arguments)."""
    if type(value) not in CONTAINERS:
        return value
    top: Any = dict(value) if isinstance(value, dict) else list(value)
    todo = [top]
    while todo:
        node = todo.pop()
        for key in node.keys() if type(node) is dict else range(len(node)):
            if type(child := node[key]) in CONTAINERS:
                node[key] = dict(child) if isinstance(child, dict) else list(child)
                todo.append(node[key])
    return top


CONTAINERS = (dict, list, FrozenDict, FrozenList)


@fast_init
@dataclass(frozen=True)
class Text:
    """Text the model wrote; `provider_data` holds the provider's other fields of the block, kept
    verbatim and sent back with it (Anthropic: the `citations` of a cited text)."""

    text: str
    provider_data: Mapping[str, Any] = field(default=NO_DATA, hash=False)

    def __post_init__(self) -> None:
        if self.provider_data:
            self.__dict__["provider_data"] = frozen(self.provider_data)


@fast_init
@dataclass(frozen=True)
class Call:
    """A tool call the model made; `provider_data` holds the provider's other fields of the call,
    kept verbatim and sent back with it (Anthropic: `caller`, for a call made by code the code
    execution tool runs, and `toolset_name`, for a member of a toolset such as computer use)."""

    id: str
    name: str
    arguments: dict[str, Any]
    provider_data: Mapping[str, Any] = field(default=NO_DATA, hash=False)

    def __post_init__(self) -> None:
        self.__dict__["arguments"] = frozen(self.arguments)  # as the model made it, whoever reads it
        if self.provider_data:
            self.__dict__["provider_data"] = frozen(self.provider_data)


@fast_init
@dataclass(frozen=True)
class Opaque:
    """A provider block kept verbatim (thinking, server tool use): sent back exactly as it came."""

    data: dict[str, Any]

    def __post_init__(self) -> None:
        self.__dict__["data"] = frozen(self.data)


Part = Text | Call | Opaque
NONE_DECLINED: frozenset[str] = frozenset()
FALLBACK = "fallback"  # the type of the block a server-side fallback leaves where the declining model stopped


# -- a person's reply to a suspension -----------------------------------------------------------


@fast_init
@dataclass(frozen=True)
class Answer:
    """The answer to a question the run asked (`finish(kind="need_help")`)."""

    text: str


@dataclass(frozen=True)
class Approval:
    """The pending tool call may run."""


@fast_init
@dataclass(frozen=True)
class Denial:
    """The pending tool call may not run; `reason` goes back to the model."""

    reason: str = ""


HumanReply = Answer | Approval | Denial


def reply_problem(reply: HumanReply | None, pending: str | None, question: str | None) -> str | None:
    """What is wrong with a person's `reply` to a run that waits for approval of the call named
    `pending` or, with none pending, for an answer to `question`; None when it fits. The one check of
    a reply: the loop, the runner and the Temporal workflow each raise it as their own error."""
    if pending is not None:
        if isinstance(reply, Approval | Denial):
            return None
        return f"waits for approval of the call {pending!r}: approve or deny it"
    if isinstance(reply, Approval | Denial):
        return "waits for an answer to a question, not for an approval: answer it"
    if isinstance(reply, Answer) and says_something(reply.text):  # not blanks, not zero-width spaces
        return None
    return f"waits for an answer to {question!r}: give one" if question else "waits for an answer: give one"


# -- the entries --------------------------------------------------------------------------------


@fast_init
@dataclass(frozen=True)
class Task:
    """What the run was asked to do."""

    text: str


# The key in a reply's `provider_data` of the context it ended with (input and output tokens), when the
# provider says its usage counts more: a server-side tool loop sums the input of each of its steps. What
# the history policy judges the next call by (else the reply's input plus output).
CONTEXT_TOKENS = "context_tokens"


@fast_init
@dataclass(frozen=True)
class Reply:
    """One model reply: its parts in order, its usage, the provider's own stop reason and why it
    ended in no provider's words (`stop`, what the loop and a resume decide on).

    `provider_data` holds reply-level provider data that a later request needs, kept verbatim
    (Anthropic: the code execution `container` the reply ran in, which the next request names).
    A reply made without a `stop` (by hand, or read from a journal written before entries kept it)
    has the kind of its `stop_reason` in the Messages API's words (`MESSAGES_API_STOPS`)."""

    parts: tuple[Part, ...]
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    stop_reason: str = "end_turn"
    model: str = ""
    response_id: str = ""
    provider_data: Mapping[str, Any] = field(default=NO_DATA, hash=False)
    stop: StopKind | None = None  # never None once made: see the class

    def __post_init__(self) -> None:
        if self.provider_data:
            self.__dict__["provider_data"] = frozen(self.provider_data)
        if self.stop is None:  # (a stop reason that is no text is refused as the journal takes it)
            word = self.stop_reason
            self.__dict__["stop"] = MESSAGES_API_STOPS[word] if isinstance(word, str) else StopKind.OTHER

    @property
    def calls(self) -> list[Call]:
        return [p for p in self.parts if isinstance(p, Call)]

    @property
    def declined(self) -> frozenset[str]:
        """The ids of the calls a model that declined made: those before the reply's last `fallback`
        block (Anthropic's server-side fallback), never to be run. Only a journal an older release wrote
        holds any: the adapter has since left them out of the reply it makes."""
        last = -1  # the last fallback block's place (a loop, not a list: asked of every call a turn)
        for i, p in enumerate(self.parts):
            if isinstance(p, Opaque) and p.data.get("type") == FALLBACK:
                last = i
        return (
            frozenset(p.id for p in self.parts[:last] if isinstance(p, Call)) if last >= 0 else NONE_DECLINED
        )

    @property
    def text(self) -> str:
        return "\n".join(p.text for p in self.parts if isinstance(p, Text)).strip()


@fast_init
@dataclass(frozen=True)
class Note:
    """A message from the loop to the model ("Use a tool or call finish.")."""

    text: str


@fast_init
@dataclass(frozen=True)
class Result:
    """The result of one call; `ran` names the tool when a tool really ran (not finish, not a refusal),
    and `seen` is a digest of the state it observed, from which progress is rebuilt on resume.

    A tool that returned content blocks (agent.content) has them in `blocks`, sent as they are, and
    their `text_of` in `text`, which is what reads results as text (progress, verifiers, telemetry)."""

    call_id: str
    text: str
    is_error: bool = False
    ran: str | None = None
    seen: str = ""
    blocks: tuple[Block, ...] = ()


@fast_init
@dataclass(frozen=True)
class Started:
    """An approved call with side effects is about to run: if no `Result` follows, it may have run."""

    call_id: str


@fast_init
@dataclass(frozen=True)
class Suspended:
    """The run waits for a person."""

    suspension: Suspension


@fast_init
@dataclass(frozen=True)
class Answered:
    """What came back for a suspension, when, and from whom (`person` or `policy`)."""

    reply: HumanReply
    at: float
    by: Literal["person", "policy"] = "person"


@fast_init
@dataclass(frozen=True)
class Extended:
    """A person gave a run that stopped at a limit more budget (added to the agent's ceilings)."""

    turns: int = 0
    seconds: float = 0.0
    tokens: int = 0
    cost_usd: float = 0.0
    at: float = 0.0


@fast_init
@dataclass(frozen=True)
class Shrunk:
    """The history policy shrank what the model sees: results before `upto` cleared, or, with a
    `summary`, the entries between the task and `upto` replaced by it."""

    upto: int
    summary: str | None = None


@fast_init
@dataclass(frozen=True)
class Stopped:
    """How a segment ended; `turn_cut` when it cut a turn before its model replied (a cancellation):
    the next segment's first turn is that turn again, not counted twice. `at`: when, by the agent's
    clock (0: not known, a snapshot saved before stops kept their time)."""

    reason: StopReason
    limit: LimitKind | None = None
    note: str = ""
    turn_cut: bool = False
    at: float = 0.0


Entry = Task | Reply | Note | Result | Started | Suspended | Answered | Extended | Shrunk | Stopped


_READ_ONLY = (
    "a run's journal is append-only: add an entry with journal.append(entry); its entries cannot be "
    "changed, removed or reordered (the run's snapshots and resumes are built from them)"
)


class _Entries(list[Entry]):
    """A journal's entries: read like a list, at a list's speed (the loop reads them every turn), and
    changed only through `Journal.append`, which adds to it with `list.append` itself."""

    __slots__ = ()

    def _refuse(self, *args: object, **kwargs: object) -> NoReturn:
        raise TypeError(_READ_ONLY)

    append = extend = insert = remove = pop = clear = sort = reverse = _refuse  # type: ignore[assignment]
    __setitem__ = __delitem__ = __iadd__ = __imul__ = _refuse  # type: ignore[assignment]

    def __reduce__(self) -> tuple[type[list[Entry]], tuple[list[Entry]]]:
        return list, (list(self),)  # a copy (or pickle) is a plain list, the caller's own


def read_only(entries: Iterable[Entry]) -> list[Entry]:
    """A copy of `entries` that refuses changes, as a journal's do: the journal of a snapshot the loop
    hands out (a hook's `run_ended` and the caller read the same one, and a store saves it)."""
    return _Entries(entries)


add_entry: Callable[[Sequence[Entry], Entry], None] = list.append  # type: ignore[assignment]
"""Append to a journal's entries without `Journal.append`'s check: the loop's own records, whose types
it knows (`RunState.record`); at `list.append`'s cost, on a turn's path."""


class _Marks:
    """What `Journal._scanned` found in the entries it read: the last reply's index (-1: none), the
    first `Suspended` after it (-1: none), and the reply's declined calls once asked."""

    __slots__ = ("asked", "declined", "reply", "scanned")

    def __init__(self) -> None:
        self.scanned, self.reply, self.asked = 0, -1, -1
        self.declined: frozenset[str] | None = None


class Journal:
    """The entries of one run, appended in order, never changed: `entries` reads them (a tool, a
    verifier or a hook that tries to change or replace them gets an error), `append` adds one."""

    __slots__ = ("_marks", "entries")
    entries: Sequence[Entry]  # a list that refuses changes (`_Entries`), read at a slot's cost
    _marks: _Marks  # where the last reply and the first question after it are (see `_scanned`)

    def __init__(self, entries: Iterable[Entry] = ()) -> None:
        object.__setattr__(self, "entries", _Entries(entries))
        object.__setattr__(self, "_marks", _Marks())

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(_READ_ONLY)

    def __delattr__(self, name: str) -> None:
        raise AttributeError(_READ_ONLY)

    def __reduce__(self) -> tuple[type[Journal], tuple[list[Entry]]]:
        return Journal, (list(self.entries),)

    def append(self, entry: Entry) -> None:
        """Add an entry (the loop's own records skip this check: see `RunState.record`)."""
        if not isinstance(entry, Entry):
            raise TypeError(
                f"a journal entry is one of agent.journal's entry types (Note, Result, ...), not "
                f"{type(entry).__name__}: a run's journal keeps only what it can save and resume"
            )
        add_entry(self.entries, entry)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Journal) and list(self.entries) == list(other.entries)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Journal({list(self.entries)!r})"

    def __iter__(self) -> Iterator[Entry]:
        return iter(self.entries)

    def __len__(self) -> int:
        return len(self.entries)

    def since(self, index: int) -> Sequence[Entry]:
        return self.entries[index:]

    @property
    def task(self) -> str:
        first = self.entries[0] if self.entries else None
        return first.text if isinstance(first, Task) else ""

    def _scanned(self) -> _Marks:
        """The marks, brought up to the entries appended since they were last read. Entries are only
        ever appended, so each is read once: a reply with thousands of calls asks of the last reply for
        each call, and a scan from the end each time made its turn quadratic in its calls."""
        marks, entries = self._marks, self.entries
        for i in range(marks.scanned, len(entries)):
            entry = entries[i]
            if isinstance(entry, Reply):
                marks.reply, marks.asked, marks.declined = i, -1, None
            elif isinstance(entry, Suspended) and marks.asked < 0:
                marks.asked = i
        marks.scanned = len(entries)
        return marks

    def last_reply(self) -> tuple[int, Reply] | None:
        """The last reply and its index."""
        index = self._scanned().reply
        return (index, self.entries[index]) if index >= 0 else None  # type: ignore[return-value]

    def declined(self, call_id: str) -> bool:
        """Whether the last reply's call `call_id` was made by a model that declined (`Reply.declined`)."""
        marks = self._scanned()
        if marks.reply < 0:
            return False
        if marks.declined is None:  # read once a reply, not once a call
            reply: Reply = self.entries[marks.reply]  # type: ignore[assignment]
            marks.declined = reply.declined
        return call_id in marks.declined

    def open_calls(self) -> list[Call]:
        """The last reply's calls that have no result yet, in order."""
        last = self.last_reply()
        if last is None:
            return []
        index, reply = last
        answered = {e.call_id for e in self.entries[index + 1 :] if isinstance(e, Result)}
        return [c for c in reply.calls if c.id not in answered]

    def turn_cut(self) -> bool:
        """True when the last segment ended cutting a turn before its model replied (the next turn
        is that one again)."""
        last = self.entries[-1] if self.entries else None
        return isinstance(last, Stopped) and last.turn_cut

    def waiting(self) -> Suspended | None:
        """The suspension not yet answered, if the run waits."""
        for entry in reversed(self.entries):
            if isinstance(entry, Answered | Reply):
                return None
            if isinstance(entry, Suspended):
                return entry
        return None

    def answer_for(self, call_id: str) -> Answered | None:
        """The latest answer to a suspension on `call_id` since the last reply."""
        if not self.entries or isinstance(self.entries[-1], Reply):
            return None  # the common case: a turn's first call
        if (start := self._scanned().asked) < 0:
            return None  # no question since the last reply: nothing answered
        asked: Suspended | None = None
        found: Answered | None = None
        for entry in self.entries[start:]:
            if isinstance(entry, Suspended):
                asked = entry
            elif isinstance(entry, Answered) and asked is not None and _call_of(asked) == call_id:
                found = entry  # the latest answer counts: a later question may follow an approval
        return found

    def started(self, call_id: str) -> bool:
        """True when an approved call was marked as starting since the last reply."""
        last = self.last_reply()
        start = last[0] + 1 if last else 0
        return any(isinstance(e, Started) and e.call_id == call_id for e in self.entries[start:])

    def last_text(self) -> str:
        for entry in reversed(self.entries):
            if isinstance(entry, Reply) and (text := entry.text):  # `text` is joined at each read
                return text
        return ""


def _call_of(suspended: Suspended) -> str | None:
    s = suspended.suspension
    return s.pending.tool_use_id if s.pending else s.call_id
