"""A stream that never ends (a broken proxy or a hostile endpoint streaming well-formed text deltas
for ever, fast) is cut once it has sent more characters than any reply within the request's
`max_tokens` can hold: a `malformed_reply`, retried, then the run's `error`, what each call used
counted. Before, only the run's time budget bounded it (with none, it never ended), and the SDK
held every delta in memory the whole time."""

from __future__ import annotations

from messages_api import MessagesAPI, Response, flood, message, text, tool_use

from agent import Agent, Budget, RetryPolicy, RunResult, StopReason
from agent.models.anthropic import _MOST_CHARS_PER_TOKEN, _MOST_SAMPLINGS, AnthropicModel

MODEL = "claude-haiku-4-5"
FAST = RetryPolicy(max_attempts=3, base_delay=0.01, max_delay=0.02, jitter=False)
MAX_TOKENS = 1_024
BOUND = MAX_TOKENS * _MOST_SAMPLINGS * _MOST_CHARS_PER_TOKEN  # characters: about 1.3 million
DONE = tool_use("finish", {"kind": "done", "note": "ok"})
DELTAS, SIZE = 1_000_000, 1_000  # a gigabyte of text, sent only to a client that reads it all


def run_against(*responses: Response) -> tuple[RunResult, MessagesAPI]:
    with MessagesAPI(*responses) as api:
        model = AnthropicModel(MODEL, api_key="sk-ant-test", base_url=api.url)
        agent = Agent(
            "endless", model, max_tokens=MAX_TOKENS, budget=Budget(max_turns=2, max_seconds=120), retry=FAST
        )
        return agent.run("Answer."), api


def test_a_stream_that_never_ends_is_cut_as_a_malformed_reply() -> None:
    result, api = run_against(*(flood(DELTAS, SIZE) for _ in range(FAST.max_attempts)))
    assert result.reason is StopReason.ERROR, result.note
    assert result.error_type == "malformed_reply"
    assert "more than a reply of max_tokens 1,024 can hold" in result.note
    assert len(api.requests) == FAST.max_attempts  # retried as the retry policy says, then the error
    # Each stream cut near the bound: what the client read, plus what the sockets held (a few MB).
    assert api.flood_sent < FAST.max_attempts * (BOUND // SIZE + 20_000) < DELTAS
    # What each cut call used is counted: its input, and its output estimated (never past max_tokens).
    assert result.input_tokens == FAST.max_attempts * 10
    assert result.output_tokens == FAST.max_attempts * MAX_TOKENS


def test_a_long_reply_near_max_tokens_is_read_whole() -> None:
    """A reply at the most a call can write (`max_tokens` in each of the samplings of a server tool
    loop), at 4 characters a token, streams well under the bound."""
    long = "word " * (MAX_TOKENS * _MOST_SAMPLINGS * 4 // 5)
    reply = message(text(long), output_tokens=MAX_TOKENS * _MOST_SAMPLINGS)
    result, api = run_against(reply, message(DONE))
    assert result.reason is StopReason.SUCCESS, result.note
    assert len(api.requests) == 2  # never retried
    assert result.output_tokens == MAX_TOKENS * _MOST_SAMPLINGS + 5
    sent_back = api.bodies[1]["messages"][1]
    assert sent_back["role"] == "assistant"
    assert [b.get("text") for b in sent_back["content"]] == [long]  # the whole reply, as streamed
