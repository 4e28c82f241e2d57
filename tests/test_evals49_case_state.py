"""Rounds of a case do not share state: each run of a catalog case gets its own copy of the case's
`state:` and each judge call its own arguments. A `prepare` that appended to a list in the state
changed the case itself, so the second round of `--repeat` began from another state (said FLAKY),
and a judge that changed a list it was given judged the next segment by other words."""

from __future__ import annotations

import asyncio
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent.cli.main import main
from agent.evals.case import load_file
from agent.evals.judges import JUDGES
from agent.evals.runner import run_case

TEAM = '''
from pathlib import Path

from agent import Agent, Budget, tool
from agent.durable.catalog import Catalog
from agent.evals.judges import judge
from agent.models.scripted import ScriptedModel, call, finish


def prepare(state, run_id):
    state["made"].append(run_id)  # a team's prepare that keeps what it made in the run's state
    folder = Path(state["base"]) / run_id
    folder.mkdir()
    return {**state, "workdir": str(folder)}


def build(state):
    folder = Path(state["workdir"])

    @tool
    def write(text: str) -> str:
        """Write text to out.txt."""
        (folder / "out.txt").write_text(text)
        return "ok"

    fresh = len(state["made"]) == 1  # a run of its own state made one thing
    script = [[call("write", text="hello")], [finish("done", "wrote it")]]
    return Agent(name="writer", model=ScriptedModel(script if fresh else [[finish("give_up", "made twice")]]),
                 tools=[write], budget=Budget(max_turns=5, max_seconds=60), task_type="writing")


@judge("evals49_wrote")
def wrote(run, words: list[str]):
    path = run.world.workdir / "out.txt"
    text = path.read_text() if path.exists() else ""
    problems = [f"out.txt does not say {w!r}" for w in words if w not in text]
    words.append("again")  # a judge that changes what it is given, after it judged
    return problems


catalog = Catalog()
catalog.register("writer", build, prepare=prepare)
'''

CASE = """
cases:
  - name: writer/hello
    agent: writer
    catalog: evals49_state:catalog
    state: {{made: [], base: "{base}"}}
    task: Write hello.
    task_type: writing
    expect: success
    judge: [{{evals49_wrote: {{words: [hello]}}}}]
"""


@pytest.fixture
def cases(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    (tmp_path / "evals49_state.py").write_text(textwrap.dedent(TEAM))
    (tmp_path / "worlds").mkdir()
    path = tmp_path / "cases.yaml"
    path.write_text(CASE.format(base=tmp_path / "worlds"))
    monkeypatch.syspath_prepend(str(tmp_path))
    yield path
    sys.modules.pop("evals49_state", None)
    JUDGES.pop("evals49_wrote", None)


def test_each_run_of_a_case_starts_from_the_state_the_case_gives(cases: Path) -> None:
    (case,) = load_file(cases)
    for _ in range(3):
        outcome = asyncio.run(run_case(case))
        assert outcome.met, outcome.problems
    assert case.state["made"] == []  # the case itself is as it was loaded
    assert case.judges[0].params["words"] == ["hello"]


def test_repeat_is_not_flaky_for_a_prepare_that_changes_its_state(
    cases: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["eval", str(cases), "--repeat", "3", "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "PASSED: 1 of 1 cases" in out and "FLAKY" not in out
