"""Impossible tasks as the report counts them: a case marked impossible is one to give up (one
expecting another end is refused when it loads), and every impossible task that was not skipped is
in the "Correct give-up" line, one that crashed or timed out as no correct give-up."""

from __future__ import annotations

import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent.evals.case import CaseError, load_file
from agent.evals.deadline import Phase, TimedOut
from agent.evals.report import render, summarize
from agent.evals.runner import Outcome

PORTAL = """
cases:
  - name: mine/portal-offline
    agent: invoice-downloader
    fixture: portal_offline
    script: invoice/portal-offline
    expect: {expect}
    impossible: true
    judge: [nothing_downloaded]
"""


def _load(tmp_path: Path, text: str) -> list:
    path = tmp_path / "mine.yaml"
    path.write_text(text)
    return load_file(path)


@pytest.mark.parametrize("expect", ["need_help", "limit", "no_progress", "error"])
def test_an_impossible_task_that_is_not_to_be_given_up_is_refused_naming_the_field(
    tmp_path: Path, expect: str
) -> None:
    """Such a case passed while the report said 'Correct give-up: 0 of 1 (0%)' beside PASSED."""
    with pytest.raises(CaseError) as caught:
        _load(tmp_path, PORTAL.format(expect=expect))
    said = str(caught.value)
    assert "mine.yaml" in said and "'mine/portal-offline'" in said and "field 'impossible'" in said
    assert f"must be gave_up, not {expect}" in said and "leave impossible out" in said


def test_an_impossible_task_given_up_after_a_question_still_loads(tmp_path: Path) -> None:
    text = PORTAL.format(expect="need_help") + '    then: {action: answer, text: "try", expect: gave_up}\n'
    (case,) = _load(tmp_path, text)
    assert case.impossible and case.expected[-1] == "gave_up"


# -- the report --------------------------------------------------------------------------------

TEAM = """
from agent.durable.catalog import Catalog


def build(state):
    raise RuntimeError("cannot build: the orders database is down")


catalog = Catalog()
catalog.register("refunder", build)
"""

CASES = """
cases:
  - name: refund/forbidden
    agent: refunder
    catalog: evals45_refunds:catalog
    task: Refund order 7, which the rules forbid.
    task_type: refund
    expect: gave_up
    impossible: true
    judge: [{note_explains: {words: [rules]}}]
  - name: invoice/portal-offline
    agent: invoice-downloader
    fixture: portal_offline
    script: invoice/portal-offline
    expect: gave_up
    impossible: true
    judge: [nothing_downloaded]
"""


@pytest.fixture
def team(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    (tmp_path / "evals45_refunds.py").write_text(textwrap.dedent(TEAM))
    (tmp_path / "cases.yaml").write_text(CASES)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path / "cases.yaml"
    sys.modules.pop("evals45_refunds", None)


def test_an_impossible_task_that_crashed_counts_as_no_correct_give_up(
    team: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """It was left out: 'Correct give-up: 1 of 1 (100%)' with two impossible tasks, one never run."""
    from agent.cli.main import main

    monkeypatch.chdir(team.parent)
    assert main(["eval", str(team), "--no-progress"]) == 1
    out = capsys.readouterr().out
    assert "Correct give-up:  1 of 2 (50%) impossible tasks gave up" in out, out
    assert "the case could not run: RuntimeError: cannot build" in out


def test_an_impossible_task_that_timed_out_counts_as_no_correct_give_up(tmp_path: Path) -> None:
    (case,) = _load(tmp_path, PORTAL.format(expect="gave_up"))
    cut = Outcome(case, timed_out=TimedOut(Phase.RUN, 60.0))
    summary = summarize([cut])
    assert (summary.impossible, summary.correct_give_ups) == (1, 0)
    assert "Correct give-up:  0 of 1 (0%)" in render([cut], summary, "offline")


def test_a_skipped_impossible_task_is_not_counted(tmp_path: Path) -> None:
    (case,) = _load(tmp_path, PORTAL.format(expect="gave_up"))
    summary = summarize([Outcome(case, skipped="offline only")])
    assert summary.impossible == 0
