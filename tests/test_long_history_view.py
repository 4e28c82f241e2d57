"""A long run past `clear_at` clears its oldest results at every turn (a rolling clear, until it compacts).
The view sent to the model was rebuilt whole at each of those clears: each turn cost as much as the view
was long (in a 5,000-turn run, 16 to 25 ms a turn against 0.3 ms at its start; the history module alone
33 ms a turn at 7,000 entries). Now a plain clear changes the results it clears, in place; the view sent
stays the one a rebuild makes."""

from __future__ import annotations

from typing import Any

import pytest

from agent import Agent, Budget, HistoryPolicy, ProgressDetector, tool
from agent import history as history_module
from agent.journal import Reply, Shrunk
from agent.models.scripted import ScriptedModel, call

TURNS = 800  # with a window of 20,000 scripted tokens: clears from turn ~300, compacts at ~420, clears again
POLICY = HistoryPolicy(max_result_chars=300)


@tool
def read(n: int) -> str:
    """Read page n: every fifth one is longer than the policy sends whole."""
    return f"page {n} " + ("x" * 400 if n % 5 == 0 else "y" * 40)


def long_run(keep_requests: int | None) -> tuple[Any, ScriptedModel]:
    model = ScriptedModel(then=lambda turn: [call("read", n=turn)], keep_requests=keep_requests)
    model.context_window = 20_000  # type: ignore[attr-defined]  # as a model with a small window says
    agent = Agent(
        "reader",
        model,
        tools=[read],
        budget=Budget(max_turns=TURNS),
        history=POLICY,
        progress=lambda: ProgressDetector(max_idle_turns=None),
    )
    return agent.run("Read every page."), model


def test_each_request_of_a_long_run_holds_the_view_a_rebuild_makes() -> None:
    result, model = long_run(keep_requests=None)
    assert (result.reason, result.turns) == ("limit", TURNS)
    journal = result.snapshot.journal
    shrinks = [e for e in journal if isinstance(e, Shrunk)]
    assert sum(s.summary is None for s in shrinks) > 100 and sum(s.summary is not None for s in shrinks) >= 1
    replies = [i for i, e in enumerate(journal) if isinstance(e, Reply)]
    assert len(model.requests) == len(replies) == TURNS
    for request, at in zip(model.requests, replies, strict=True):
        assert request.journal == tuple(POLICY.view(journal[:at])), f"the request before entry {at}"


def test_a_rolling_clear_clears_each_result_about_once(monkeypatch: pytest.MonkeyPatch) -> None:
    made: list[int] = []
    cleared = history_module._cleared
    monkeypatch.setattr(history_module, "_cleared", lambda entry: made.append(1) or cleared(entry))
    result, _ = long_run(keep_requests=1)
    clears = sum(isinstance(e, Shrunk) and e.summary is None for e in result.snapshot.journal)
    assert clears > 100
    assert len(made) < 2 * TURNS  # was some 40,000: every cleared result made again at each clear
