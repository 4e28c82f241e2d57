"""What an API (or a proxy in front of it) says in an error is text from outside: it reached the run's
note, and the log lines and terminals that quote it, as sent. Escape sequences in it could clear or
rewrite a terminal, a carriage return put other words over it, a bidi override turn it around; and
a 200 reply whose call input was no JSON put all of that input in the note (the SDK's error quotes
it whole: 200 kB of note for 200 kB of input). Such words are now cut and their unprintable
characters escaped, in the note of a refusal, of an error inside the stream and of a malformed reply."""

from __future__ import annotations

import json

import pytest
from messages_api import MessagesAPI, Response, error, events_of, message, streamed, text, tool_use

from agent import Agent, Budget, RetryPolicy, RunResult, StopReason
from agent.models.anthropic import AnthropicModel

FAST = RetryPolicy(max_attempts=2, base_delay=0.01, max_delay=0.02, jitter=False)
HOSTILE = "bad \x1b[2J\x1b]0;owned\x07 words\r\rover \u202eesrever\u202c \x00 end"
RAW = ("\x1b", "\x07", "\r", "\u202e", "\x00")


def run(*responses: Response) -> RunResult:
    with MessagesAPI(*responses) as api:
        model = AnthropicModel("claude-haiku-4-5", api_key="sk-ant-test", base_url=api.url)
        return Agent("words", model, budget=Budget(max_turns=2, max_seconds=60), retry=FAST).run("Go.")


def in_stream(kind: str) -> Response:
    body = {"type": "error", "error": {"type": kind, "message": HOSTILE}}
    return Response(200, message(text("partial")).body, malformed="error_event:" + json.dumps(body))


HOSTILE_ANSWERS = {
    "a refusal": (error(400, HOSTILE),),
    "an overload, retried": (error(529, HOSTILE), error(529, HOSTILE)),
    "an error inside the stream": (in_stream("overloaded_error"), in_stream("overloaded_error")),
}


@pytest.mark.parametrize("case", HOSTILE_ANSWERS)
def test_the_apis_words_reach_the_note_with_their_control_characters_escaped(case: str) -> None:
    result = run(*HOSTILE_ANSWERS[case])
    assert result.reason is StopReason.ERROR
    note = result.note
    assert not [c for c in RAW if c in note], repr(note)
    assert "bad \\x1b[2J\\x1b]0;owned\\x07 words\\x0d\\x0dover \\u202eesrever\\u202c \\x00 end" in note


def test_a_call_input_that_is_no_json_is_not_quoted_whole_in_the_note() -> None:
    events = events_of(message(tool_use("search", {"q": "x"})))
    for kind, data in events:
        if kind == "content_block_delta":
            data["delta"]["partial_json"] = '{"q": "' + "A" * 200_000 + '\x1b[2J"}'  # no JSON string
    result = run(streamed(*events), streamed(*events))
    assert result.reason is StopReason.ERROR
    assert result.error_type == "malformed_reply"
    assert len(result.note) < 2_000
    assert "more characters" in result.note and "\x1b" not in result.note


KEY = "sk-ant-api03-hostile-echo-0123456789"


@pytest.mark.parametrize("status", [401, 500])
def test_a_key_an_error_page_echoes_is_not_in_the_note(status: int) -> None:
    page = error(status, f"invalid request: headers were x-api-key: {KEY}, accept: */*")
    with MessagesAPI(page, page) as api:
        model = AnthropicModel("claude-haiku-4-5", api_key=KEY, base_url=api.url)
        result = Agent("echo", model, budget=Budget(max_turns=2, max_seconds=60), retry=FAST).run("Go.")
    assert result.reason is StopReason.ERROR
    assert KEY not in result.note and "x-api-key: [REDACTED]" in result.note
