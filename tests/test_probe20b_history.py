"""A history policy's own `summarize` function that fails: the account written by code stands in,
saying why, as when a model's summary fails; the run goes on (it ended as error, or compacted the
older turns into an empty summary or a number). A summarizer made wrong is refused when made."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

import pytest

from agent import Agent, Budget, ConfigError, HistoryPolicy, StopReason, tool
from agent.history import ModelSummary
from agent.journal import Entry
from agent.models.scripted import ScriptedModel, call, finish, reply


@tool
def read(page: int) -> str:
    """Read one page."""
    return f"page {page}: " + "lorem " * 300


def run_with(summarize: Callable[[Sequence[Entry]], Any]) -> tuple[Any, ScriptedModel]:
    """Six reads whose replies report a nearly full window (so older turns are compacted), then done."""
    steps = [reply(call("read", page=i), input_tokens=190_000) for i in range(6)]
    model = ScriptedModel([*steps, [finish("done", "read them")]])
    policy = HistoryPolicy(summarize=summarize)
    agent = Agent("reader", model, tools=[read], history=policy, budget=Budget(max_turns=20))
    return agent.run("Read the pages."), model


def summaries(model: ScriptedModel) -> list[str]:
    """The compaction summaries the model was sent."""
    sent = [json.dumps(r.messages) for r in model.requests]
    return [s for s in sent if "was compacted to save context" in s]


def boom(older: Sequence[Entry]) -> str:
    raise ValueError("summarizer down")


def test_a_summarize_function_that_raises_has_the_account_stand_in_and_the_run_goes_on() -> None:
    result, model = run_with(boom)
    assert result.reason is StopReason.SUCCESS, result.note
    sent = summaries(model)
    assert sent, "no compaction was sent"
    assert (
        "the summarize function could not write this summary (it raised ValueError: summarizer down)"
        in sent[0]
    )
    assert "tool calls were made" in sent[0] and "read(page=0)" in sent[0]  # the account by code


@pytest.mark.parametrize("written", [None, "", "   ", 42])
def test_a_summarize_function_that_writes_no_text_has_the_account_stand_in(written: Any) -> None:
    result, model = run_with(lambda older: written)
    assert result.reason is StopReason.SUCCESS, result.note
    sent = summaries(model)
    assert sent and f"(it returned {written!r}, not text)" in sent[0]
    assert "tool calls were made" in sent[0]


def test_a_summarize_function_that_works_is_used_as_before() -> None:
    result, model = run_with(lambda older: f"{len(older)} entries: pages 0 and 1 read")
    assert result.reason is StopReason.SUCCESS
    sent = summaries(model)
    assert sent and "entries: pages 0 and 1 read" in sent[0] and "could not write" not in sent[0]


@pytest.mark.parametrize(
    ("make", "said"),
    [
        (
            lambda: ModelSummary("claude-haiku-4-5"),
            r"ModelSummary takes the model to write summaries .* not 'claude",
        ),
        (
            lambda: HistoryPolicy(summarize="summary"),
            r"HistoryPolicy.summarize is ModelSummary\(\) .* not 'summary'",
        ),
        (lambda: HistoryPolicy(summarize=5), r"HistoryPolicy.summarize is ModelSummary\(\) .* not 5"),
    ],
)
def test_a_summarizer_made_wrong_is_refused_when_made(make: Any, said: str) -> None:
    with pytest.raises(ConfigError, match=said):
        make()


def test_the_ways_to_summarize_are_still_taken() -> None:
    for how in (None, ModelSummary(), ModelSummary(ScriptedModel([])), boom):
        assert HistoryPolicy(summarize=how).summarize is how  # type: ignore[arg-type]
