"""A catalog case run with a model swapped in (`endstate eval --model`, or a case's `budget:`) is
checked as the agent would be if the team built it with that model: a cost budget refuses a model of
no known price before any call. The eval set the model on the built agent, past that check, so a
cost ceiling never stopped the run (its cost, unknown, counts as nothing spent) and calls were paid."""

from __future__ import annotations

import asyncio
import importlib
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from agent.evals.case import load_file
from agent.evals.runner import run_case

TEAM = """
from pathlib import Path

from agent import Agent, Budget
from agent.durable.catalog import Catalog
from agent.models.scripted import ScriptedModel, finish

CALLED = []


class HouseModel:
    \"\"\"A model API no price table knows.\"\"\"

    name = "evals49-house-model"
    provider = "house"

    async def complete(self, request):
        CALLED.append(request)
        raise RuntimeError("a paid call")


def prepare(state, run_id):
    folder = Path(state["base"]) / run_id
    folder.mkdir()
    return {**state, "workdir": str(folder)}


def build(state):
    cost = state.get("cost")
    return Agent(name="fetcher", model=ScriptedModel([[finish("give_up", "the portal is down")]]),
                 budget=Budget(max_turns=3, max_seconds=60, max_cost_usd=cost), task_type="fetch")


catalog = Catalog()
catalog.register("fetcher", build, prepare=prepare)
"""

CASE = """
cases:
  - name: fetch/down
    agent: fetcher
    catalog: evals49_priced:catalog
    state: {{base: "{base}", {more}}}
    task: Fetch the invoice.
    task_type: fetch
    expect: gave_up
"""


@pytest.fixture
def team(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Path, ModuleType]]:
    (tmp_path / "evals49_priced.py").write_text(textwrap.dedent(TEAM))
    (tmp_path / "worlds").mkdir()
    monkeypatch.syspath_prepend(str(tmp_path))
    module = importlib.import_module("evals49_priced")  # written just above: no static import

    yield tmp_path, module
    sys.modules.pop("evals49_priced", None)


def _case(tmp_path: Path, more: str) -> Path:
    path = tmp_path / "cases.yaml"
    path.write_text(CASE.format(base=tmp_path / "worlds", more=more))
    return path


def test_a_cost_budget_refuses_a_model_of_no_known_price_before_any_call(
    team: tuple[Path, ModuleType],
) -> None:
    tmp_path, module = team
    (case,) = load_file(_case(tmp_path, "cost: 1.0"))
    outcome = asyncio.run(run_case(case, module.HouseModel))
    assert module.CALLED == []  # nothing paid
    assert "evals49-house-model" in outcome.crashed and "price" in outcome.crashed
    assert not outcome.met


def test_without_a_cost_budget_the_model_is_called_as_before(team: tuple[Path, ModuleType]) -> None:
    tmp_path, module = team
    (case,) = load_file(_case(tmp_path, "other: 1"))
    outcome = asyncio.run(run_case(case, module.HouseModel))
    assert not outcome.crashed, outcome.crashed
    assert module.CALLED  # it ran, and its run ended in error: a failed case
    assert outcome.final is not None and outcome.final.error_type == "RuntimeError"
