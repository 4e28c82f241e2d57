"""A cancel signal cancels a run only when its `is_set()` says True.

The loop read `is_set()` by truth: a signal whose `is_set()` returned a Mock (a test double left
unconfigured) or the string "no" cancelled the run at once, as if the caller had. Now True cancels,
False goes on, and any other answer ends the run as `error` with a note naming the protocol (the same
through the store's runner, which combines signals); a Temporal worker logs it and the run goes on.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from unittest.mock import Mock

import pytest

from agent import Agent, StopReason, tool
from agent.durable.catalog import Catalog
from agent.durable.runner import Runner
from agent.durable.store import open_store
from agent.models.scripted import ScriptedModel, call, finish
from agent.temporal._activities import _is_set


class Answers:
    """A cancel signal whose `is_set()` gives the answers in order (the last one from then on)."""

    def __init__(self, *answers: object) -> None:
        self.answers = list(answers)

    def is_set(self) -> object:
        return self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]


@tool
def look() -> str:
    """Look around."""
    return "seen"


def _agent(model: ScriptedModel) -> Agent:
    return Agent(name="a", model=model, tools=[look])  # type: ignore[list-item]


@pytest.mark.parametrize(
    "signal", [Mock(), Answers("no"), Answers(1), Answers(None)], ids=["Mock", "no", "1", "None"]
)
def test_a_signal_answering_no_bool_ends_the_run_as_error_naming_the_protocol(signal: object) -> None:
    model = ScriptedModel([[finish("done", "ok")]])

    result = _agent(model).run("t", cancel=signal)  # type: ignore[arg-type]

    assert result.reason is StopReason.ERROR and result.error_type == "ConfigError"
    assert "is_set() returned" in result.note and "not True or False" in result.note
    assert "CancelSignal" in result.note and model.requests == []  # no paid call on a guess


def test_a_signal_that_turns_odd_mid_run_ends_it_as_error_after_the_turns_it_allowed() -> None:
    model = ScriptedModel([[call("look")], [finish("done", "ok")]])

    result = _agent(model).run("t", cancel=Answers(False, "no"))  # type: ignore[arg-type]

    assert result.reason is StopReason.ERROR and result.turns == 1 and len(model.requests) == 1


def test_true_cancels_and_false_goes_on() -> None:
    assert _agent(ScriptedModel([[finish("done", "ok")]])).run("t", cancel=Answers(True)).reason is (
        StopReason.CANCELLED
    )
    assert _agent(ScriptedModel([[finish("done", "ok")]])).run("t", cancel=Answers(False)).reason is (
        StopReason.SUCCESS
    )


def test_the_runner_combining_signals_passes_on_an_odd_answer(tmp_path: object) -> None:
    """The runner asks the caller's signal with its own shutdown event: `any` read a Mock as set."""
    catalog = Catalog()
    catalog.register("quick", lambda state: Agent("quick", ScriptedModel([[finish("done", "ok")]])))
    store = open_store(f"{tmp_path}/runs.db")
    try:
        runner = Runner(store, catalog)
        odd = asyncio.run(runner.drive(runner.begin("quick", "go"), cancel=Mock()))
        unset = asyncio.run(runner.drive(runner.begin("quick", "go"), cancel=threading.Event()))
    finally:
        store.close()
    assert odd.reason is StopReason.ERROR and "is_set() returned Mock" in odd.note
    assert unset.reason is StopReason.SUCCESS


def test_a_temporal_worker_reads_an_odd_answer_as_not_set_and_says_so(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING):
        assert _is_set(Mock(), "r1") is False and _is_set(Answers("yes"), "r2") is False  # type: ignore[arg-type]
    assert _is_set(Answers(True), "r3") is True and _is_set(None, "r4") is False  # type: ignore[arg-type]
    assert (
        "run r1: The cancel signal's is_set() returned Mock" in caplog.text
        and "the run goes on" in caplog.text
    )
