"""An eval case's cancel signal (its catalog entry's `cancel`) is read as a run reads it: only True
cancels, and an answer that is neither True nor False ends the run `error` naming the protocol.

Before, the eval's own pair of signals (the entry's and the replay's world's) read them with `or`:
an `is_set()` that forgot to return (None) was taken as "not set", so the case passed in the eval
while the same agent's runs under `endstate serve` ended error."""

from __future__ import annotations

import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

TEAM = """
from agent import Agent
from agent.durable.catalog import Catalog
from agent.models.scripted import ScriptedModel, finish


class ForgetsToReturn:
    def is_set(self):
        pass  # no return: None, which is no answer


catalog = Catalog()
catalog.register(
    "quick",
    lambda state: Agent("quick", ScriptedModel([[finish("done", "ok")]])),
    cancel=lambda state: ForgetsToReturn(),
)
"""

CASES = """
cases:
  - name: quick/done
    agent: quick
    catalog: review45_cancels:catalog
    task: Say done.
    task_type: say
    expect: success
    judge: [{file_absent: {path: never-written.txt}}]
"""


@pytest.fixture
def team(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    (tmp_path / "review45_cancels.py").write_text(textwrap.dedent(TEAM))
    (tmp_path / "cases.yaml").write_text(CASES)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.chdir(tmp_path)
    yield tmp_path / "cases.yaml"
    sys.modules.pop("review45_cancels", None)


def test_a_cancel_signal_answering_none_ends_the_case_error(
    team: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from agent.cli.main import main

    assert main(["eval", str(team), "--no-progress"]) == 1
    out = capsys.readouterr().out
    assert "is_set() returned NoneType, not True or False" in out, out
