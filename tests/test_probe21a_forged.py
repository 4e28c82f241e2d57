"""A snapshot's JSON edited by hand (or by an attacker) never defeats a budget or a deadline: the
numbers a budget or a wait is measured with are read only when they are finite numbers, and
anything else is a `SnapshotError` that names the field."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agent import Agent, Answer, Budget, Price, PriceTable, Snapshot, SnapshotError, tool
from agent.models.scripted import ScriptedModel, call, finish, reply


@tool
def look(x: int) -> str:
    """Look at x."""
    return f"seen {x}"


def _agent(budget: Budget | None = None) -> Agent:
    turn = iter(range(10**6))
    return Agent(
        name="forged",
        model=ScriptedModel(
            [reply(finish("need_help", "Which file?"), input_tokens=100, output_tokens=0)],
            then=lambda _t: reply(call("look", x=next(turn)), input_tokens=100, output_tokens=0),
        ),
        tools=[look],
        budget=budget or Budget(max_turns=None),
        prices=PriceTable({"scripted": Price(1.0, 1.0)}),
    )


def _suspended() -> dict[str, Any]:
    result = _agent().run("find the file")
    assert result.reason == "need_help" and result.snapshot is not None
    data: dict[str, Any] = json.loads(result.snapshot.to_json())
    return data


def test_an_honest_snapshot_stops_at_its_cost_budget() -> None:
    """The baseline the forged ones are held to: the cost budget ends the resumed run."""
    snap = Snapshot.from_json(json.dumps(_suspended()))
    result = _agent(Budget(max_turns=40, max_cost_usd=0.001)).resume(snap, Answer("a.py"))
    assert (result.reason, result.limit) == ("limit", "cost")
    assert result.turns < 40


@pytest.mark.parametrize("key", ["cost_usd", "active_seconds"])
@pytest.mark.parametrize("value", [float("nan"), float("inf")])
def test_a_usage_that_no_budget_can_pass_is_refused(key: str, value: float) -> None:
    """`NaN >= ceiling` is false: a run resumed from such a head would never run out of that budget
    (and an infinite one is no spending Endstate writes)."""
    data = _suspended()
    data["usage"][key] = value
    with pytest.raises(SnapshotError, match=rf"usage.{key}.*>= 0 \(and finite\)"):
        Snapshot.from_json(json.dumps(data))


def test_an_unknown_cost_written_as_null_is_refused_not_a_crash() -> None:
    """`cost_usd: null` was read, and the resume raised TypeError (the budget compared None)."""
    data = _suspended()
    data["usage"]["cost_usd"] = None
    with pytest.raises(SnapshotError, match="cost_usd"):
        Snapshot.from_json(json.dumps(data))


@pytest.mark.parametrize("key", ["deadline", "suspended_at"])
def test_a_nan_moment_of_a_wait_is_refused(key: str) -> None:
    """A NaN deadline is neither passed nor not, and a wait from a NaN moment has no length (the
    result's waiting seconds were NaN)."""
    data = _suspended()
    data["journal"][-1]["suspension"][key] = float("nan")
    with pytest.raises(SnapshotError, match=f"{key}.*finite time"):
        Snapshot.from_json(json.dumps(data))


def test_an_infinite_start_of_a_wait_is_refused_but_an_endless_deadline_is_read() -> None:
    data = _suspended()
    data["journal"][-1]["suspension"]["suspended_at"] = float("inf")
    with pytest.raises(SnapshotError, match="suspended_at"):
        Snapshot.from_json(json.dumps(data))
    data = _suspended()
    data["journal"][-1]["suspension"]["deadline"] = float("inf")
    snap = Snapshot.from_json(json.dumps(data))
    result = _agent(Budget(max_turns=3)).resume(snap, Answer("a.py"))
    assert result.reason == "limit" and result.waiting_seconds >= 0
