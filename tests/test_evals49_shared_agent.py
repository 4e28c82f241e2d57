"""Each catalog case changes its own copy of the agent its catalog builds, as a start does
(`dataclasses.replace`). A catalog whose build returns one shared agent (made once at import) had
each case change that agent for the next: a case with `break_verifiers: true` left every later case
without verifiers (their "done" accepted unchecked), and the eval's hooks and the replay's model
stayed on it. A build that returns no agent is said so, not an AttributeError."""

from __future__ import annotations

import asyncio
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from agent.evals.case import load_file
from agent.evals.judges import JUDGES
from agent.evals.runner import run_cases
from agent.hooks import NoHooks

TEAM = """
from pathlib import Path

from agent import Agent, Budget
from agent.durable.catalog import Catalog
from agent.evals.judges import judge
from agent.models.scripted import ScriptedModel


def checked(ctx):
    return [] if "checked" in ctx.note else ["say what you checked"]


MODEL = ScriptedModel([])
SHARED = Agent(name="clerk", model=MODEL, verifiers=[checked], budget=Budget(max_turns=4, max_seconds=60),
               task_type="clerk")


def prepare(state, run_id):
    folder = Path(state["base"]) / run_id
    folder.mkdir()
    return {**state, "workdir": str(folder)}


@judge("evals49_said_checked")
def said_checked(run):
    return [] if not run.succeeded or "checked" in run.answer else ["the note says nothing checked"]


catalog = Catalog()
catalog.register("clerk", lambda state: SHARED, prepare=prepare)
catalog.register("nothing", lambda state: None, prepare=prepare)
"""


def _done(note: str, n: int) -> str:
    return f"{{content: [{{type: tool_use, id: t{n}, name: finish, input: {{kind: done, note: {note}}}}}]}}"


CASES = f"""
cases:
  - name: clerk/unchecked
    agent: clerk
    catalog: evals49_shared:catalog
    state: {{base: "{{base}}"}}
    task: File the form.
    task_type: clerk
    expect: success
    break_verifiers: true
    replay: [{_done("filed", 1)}]
  - name: clerk/checked
    agent: clerk
    catalog: evals49_shared:catalog
    state: {{base: "{{base}}"}}
    task: File the form.
    task_type: clerk
    expect: success
    expect_rejected: true
    judge: [evals49_said_checked]
    replay: [{_done("filed", 1)}, {_done("filed and checked", 2)}]
    results: [{{call: finish, text: "Criterion not met: say what you checked", is_error: true}}]
  - name: clerk/nothing
    agent: nothing
    catalog: evals49_shared:catalog
    state: {{base: "{{base}}"}}
    task: File the form.
    task_type: clerk
    expect: gave_up
"""


@pytest.fixture
def team(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Path, ModuleType]]:
    (tmp_path / "evals49_shared.py").write_text(textwrap.dedent(TEAM))
    (tmp_path / "worlds").mkdir()
    path = tmp_path / "cases.yaml"
    path.write_text(CASES.replace("{base}", str(tmp_path / "worlds")))
    monkeypatch.syspath_prepend(str(tmp_path))
    load_file(path)  # imports the team's module, for its judge
    yield path, sys.modules["evals49_shared"]
    sys.modules.pop("evals49_shared", None)
    JUDGES.pop("evals49_said_checked", None)


def test_a_case_that_breaks_verifiers_leaves_the_next_case_its_verifiers(
    team: tuple[Path, ModuleType],
) -> None:
    path, _ = team
    unchecked, checked, _ = asyncio.run(run_cases(load_file(path)))
    assert unchecked.met, unchecked.problems
    assert checked.met and not checked.false_success, checked.problems  # its "done" was checked
    assert any(s.result.verifier_failures for s in checked.segments)


def test_the_agent_the_catalog_built_is_left_as_it_was(team: tuple[Path, ModuleType]) -> None:
    path, module = team
    asyncio.run(run_cases(load_file(path)))
    shared = module.SHARED
    assert list(shared.verifiers) == [module.checked] and shared.model is module.MODEL
    assert isinstance(shared.hooks, NoHooks) and shared.checkpoint is None


def test_a_build_that_returns_no_agent_is_said_so(team: tuple[Path, ModuleType]) -> None:
    path, _ = team
    nothing = asyncio.run(run_cases(load_file(path)))[2]
    assert "its catalog entry's build returned NoneType, not an Agent" in nothing.crashed
