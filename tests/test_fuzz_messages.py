"""fuzz: generated Messages API replies (server-sent event sequences and whole JSON bodies) through the
real `anthropic` SDK and `AnthropicModel`, in whole runs.

A well-formed reply is taken apart at random: events dropped, repeated, swapped, of unknown types or
with unknown fields; usage missing, negative, huge or not a number; odd stop reasons; a tool call
whose input is not JSON; content blocks of unknown types. Whatever comes, the run ends with a named
stop (never an exception out of `run`), `success` only when the verifier passed, and no usage below 0.
"""

from __future__ import annotations

import json
import os
from typing import Any

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from messages_api import MessagesAPI, Response, events_of, message, streamed, text, tool_use

from agent import Agent, Budget, RetryPolicy, StopReason, tool
from agent.models.anthropic import AnthropicModel
from agent.result import RunResult

FUZZ = settings(
    max_examples=int(os.environ.get("FUZZ_EXAMPLES", "80")),  # more while hunting
    deadline=None,
    database=None,
    derandomize=os.environ.get("FUZZ_RANDOM") is None,  # FUZZ_RANDOM=1: new examples each run, while hunting
    suppress_health_check=[HealthCheck.too_slow],
)
MODEL = "claude-haiku-4-5"
Event = tuple[str, Any]


@tool
def read(page: int) -> str:
    """Read one page."""
    return f"page {page}"


# -- what is generated -----------------------------------------------------------------------------

ODD = (
    st.none()
    | st.booleans()
    | st.integers(-(10**20), 10**20)
    | st.floats(allow_nan=False)
    | st.text(max_size=12)
    | st.sampled_from([-1, 2**63, 10**40, "12", [], {}])
)
STOP_REASONS = (
    st.sampled_from(
        [
            "end_turn",
            "tool_use",
            "max_tokens",
            "stop_sequence",
            "pause_turn",
            "refusal",
            "model_context_window_exceeded",
        ]
    )
    | ODD
)
BLOCKS = st.sampled_from(  # each made when drawn: a tool call's id is new, as the API's are
    [
        lambda: text("Working on it."),
        lambda: tool_use("read", {"page": 1}),
        lambda: tool_use("read", {"page": "one"}),
        lambda: tool_use("finish", {"kind": "done", "note": "read"}),
        lambda: tool_use("finish", {"kind": "give_up", "note": "cannot"}),
        lambda: tool_use("finish", {"kind": "need_help", "note": "which page?"}),
        lambda: tool_use("finish", {"kind": "later"}),
        lambda: tool_use("nosuch", {}),
        lambda: {"type": "thinking", "thinking": "hmm", "signature": "sig"},
        lambda: {"type": "redacted_thinking", "data": "opaque"},
        lambda: {"type": "later_block", "data": 1},
        lambda: {
            "type": "server_tool_use",
            "id": f"srv{tool_use('x')['id']}",
            "name": "web_search",
            "input": {},
        },
    ]
).map(lambda make: make())
VALUES = st.recursive(
    ODD,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=8,
)
USAGE_KEYS = st.sampled_from(
    [
        "input_tokens",
        "output_tokens",
        "cache_read_input_tokens",
        "cache_creation_input_tokens",
        "later_tokens",
    ]
)


@st.composite
def replies(draw: st.DrawFn) -> Response:
    """A reply: a message of generated blocks and usage, streamed with its events taken apart, or whole."""
    blocks = draw(st.lists(BLOCKS, min_size=0, max_size=3))
    usage = draw(st.dictionaries(USAGE_KEYS, ODD | st.integers(0, 10**6), max_size=4))
    reply = message(*blocks, stop_reason=draw(STOP_REASONS), usage=usage)  # type: ignore[arg-type]
    if draw(st.integers(0, 3)) == 0:  # an error, or something in its place
        status = draw(st.sampled_from([400, 401, 404, 408, 409, 413, 429, 500, 502, 503, 504, 529]))
        body = draw(
            st.fixed_dictionaries({"type": st.just("error") | ODD, "error": VALUES})
            | st.none()
            | st.dictionaries(st.text(max_size=8), VALUES, max_size=3)
        )
        after = draw(st.none() | st.sampled_from(["0", "0.01", "-1", "nan", "inf", "1e400", "soon", ""]))
        return Response(status, body, {"retry-after": after} if after is not None else {})
    events = [mangled(draw, e) for e in events_of(reply)]
    for _ in range(draw(st.integers(0, 4))):
        events = draw(mutations(events))
    return streamed(*events)


def mangled(draw: st.DrawFn, event: Event) -> Event:
    """`event`, perhaps with a field added, removed or changed."""
    name, data = event
    if not isinstance(data, dict) or draw(st.integers(0, 4)) != 0:
        return event
    data = json.loads(json.dumps(data))
    where = data.get("delta") if isinstance(data.get("delta"), dict) and draw(st.booleans()) else data
    key = draw(st.sampled_from([*sorted(where), "later_field", "usage", "index", "partial_json"]))
    if draw(st.booleans()) and key in where:
        del where[key]
    else:
        where[key] = draw(ODD | st.sampled_from(['{"page": ', "not json", '{"page": 1}{', "[1]"]))
    return name, data


def mutations(events: list[Event]) -> st.SearchStrategy[list[Event]]:
    """`events` with one event dropped, repeated, moved, or a later API's event put in."""
    if not events:
        return st.just([("later_event", {"type": "later_event"})])
    at = st.integers(0, len(events) - 1)
    later = st.sampled_from(
        [
            ("later_event", {"type": "later_event", "x": 1}),
            ("ping", {"type": "ping"}),
            ("ping", "not json"),
            ("", {}),
        ]
    )
    return st.one_of(
        at.map(lambda i: events[:i] + events[i + 1 :]),
        at.map(lambda i: events[: i + 1] + events[i:]),
        st.tuples(at, at).map(lambda ij: swapped(events, *ij)),
        st.tuples(at, later).map(lambda ie: [*events[: ie[0]], ie[1], *events[ie[0] :]]),
    )


def swapped(events: list[Event], i: int, j: int) -> list[Event]:
    moved = list(events)
    moved[i], moved[j] = moved[j], moved[i]
    return moved


# -- the run -----------------------------------------------------------------------------------------


def run(replies_: list[Response], passes: bool) -> tuple[RunResult, list[int]]:
    """A run of at most 3 turns over `replies_` (then a `done` every time), its verifier passing or not."""
    checked: list[int] = []

    def verify(ctx: Any) -> list[str]:
        checked.append(1)
        return [] if passes else ["the page is not read yet"]

    with MessagesAPI(*replies_) as api:  # type: ignore[arg-type]
        api.intercept = lambda body: None if api._queue else done()  # called under the server's lock
        model = AnthropicModel(MODEL, api_key="sk-test", base_url=api.url)
        agent = Agent(
            "fuzzed",
            model,
            tools=[read],
            verifiers=[verify],
            budget=Budget(max_turns=3, max_seconds=20),
            retry=RetryPolicy(max_attempts=2, base_delay=0.01, max_delay=0.02, jitter=False),
        )
        result = agent.run("Read page 1.")
    return result, checked


def done() -> Response:
    """A `done` call with an id of its own (the API never repeats one)."""
    return message(tool_use("finish", {"kind": "done", "note": "read"}))


@FUZZ
@given(replies_=st.lists(replies(), min_size=1, max_size=3), passes=st.booleans())
def test_any_reply_ends_the_run_in_a_named_stop(replies_: list[Response], passes: bool) -> None:
    result, checked = run(replies_, passes)
    event(f"{result.reason} {result.limit or result.cause or result.error_type or ''}")
    assert isinstance(result.reason, StopReason)
    assert result.reason is not StopReason.ERROR or result.error_type, result
    if result.reason is StopReason.SUCCESS:
        assert passes and checked and result.verified, result
    usage = result.usage
    counts = (usage.input_tokens, usage.output_tokens, usage.cache_read_tokens, usage.cache_write_tokens)
    assert all(isinstance(n, int) and n >= 0 for n in counts), usage
    assert usage.cost_usd is None or usage.cost_usd >= 0, usage
