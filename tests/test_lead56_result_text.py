"""The text of many parallel results counts toward the context in use before the request goes out
(audit10): 25 reads of 40,000 characters after a short reply went out as one request of some 250,000
tokens on a 200,000-token window, which the API refused as too long before the history was shrunk."""

from __future__ import annotations

from messages_api import MessagesAPI, message, tool_use

from agent import Agent, Budget, HistoryPolicy, StopReason, tool
from agent.history import Shrunk
from agent.journal import Call, Entry, Reply, Result, Task
from agent.models.anthropic import AnthropicModel
from agent.temporal import _wire as w

MODEL = "claude-haiku-4-5"  # a 200,000-token window
DONE = tool_use("finish", {"kind": "done", "note": "ok"})
NOTE = "lorem ipsum " * 3_400  # 40,800 characters: cut to the policy's 40,000, some 10,000 tokens
READS = 25


@tool
def notes(part: int) -> str:
    """A long part of the notes."""
    return f"part {part}: {NOTE}"


def test_25_parallel_long_results_shrink_the_history_before_the_request_not_after_a_refusal() -> None:
    first = message(tool_use("notes", {"part": 0}))
    many = message(*[tool_use("notes", {"part": i}) for i in range(1, READS + 1)])
    with MessagesAPI(first, many, message(DONE), context_window=200_000) as api:
        model = AnthropicModel(MODEL, api_key="sk-test", base_url=api.url)
        agent = Agent("reader", model, tools=[notes], budget=Budget(max_turns=6, max_seconds=None))
        result = agent.run("Read every part of the notes.")
    assert result.reason is StopReason.SUCCESS, result.note
    assert len(api.requests) == len(api.usages) == 3  # each request answered, none refused as too long


def _parallel(reads: int, reply_tokens: int) -> list[Entry]:
    calls = tuple(Call(f"c{i}", "notes", {"part": i}) for i in range(reads))
    results = [Result(f"c{i}", "x" * 40_000, ran="notes") for i in range(reads)]
    return [Task("t"), Reply(calls, input_tokens=reply_tokens), *results]


def test_the_text_of_results_since_the_last_reply_counts_and_runs_started_before_judge_without_it() -> None:
    journal = _parallel(READS, reply_tokens=2_000)  # 2,000 + 25 x 10,000 tokens on a 200,000 window
    shrink = HistoryPolicy().due(journal, 200_000)
    assert isinstance(shrink, Shrunk)
    assert HistoryPolicy(results_in_context=False).due(journal, 200_000) is None  # as before 2026-12-06
    assert HistoryPolicy().due(_parallel(2, reply_tokens=2_000), 200_000) is None  # a few: nothing to do
    long = [Task("t"), Reply((Call("c", "notes", {}),), input_tokens=50_000), Result("c", "x" * 400_000)]
    assert HistoryPolicy().due(long, 200_000) is None  # counted as sent: cut to 40,000 characters
    assert isinstance(HistoryPolicy(max_result_chars=None).due(long, 200_000), Shrunk)  # sent whole


def test_a_plan_leaves_out_results_in_context_so_a_worker_from_before_it_reads_it() -> None:
    planned = w.history_plan(HistoryPolicy(keep_last=1, results_in_context=False))
    assert "results_in_context" not in planned and planned["keep_last"] == 1
    assert w.history_of({"history": planned}).results_in_context  # the workflow then asks `patched`
