"""A success nothing independent checked is not counted as a true success.

A promoted case (`endstate review promote`) needs no judge: offline, its replay is the check (every
call must get the result recorded). Run with `--model`, only its task is used, so a success is the
agent's own verifiers' word alone. The report counted it as a "True success ... pass the eval's
independent check" and "False successes: 0": with the verifiers broken, a run that wrote nothing
passed as a true success.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from agent.cli.evals import _print_json
from agent.evals.case import load_cases
from agent.evals.report import case_json, render, summarize
from agent.evals.runner import Outcome, run_cases
from agent.evals.testing import UnjudgedSuccess, check_case
from agent.models.scripted import ScriptedModel, finish, reply

PROMOTED = """\
cases:
  - name: review/claims-done
    agent: csv-cleaner
    fixture: dirty_orders
    task: Clean orders.csv into orders_clean.csv.
    expect: success
    {judge}
    replay:
      - content: [{{type: text, text: recorded reply}}]
"""


def _claims_done() -> ScriptedModel:
    """A model that says "done" at once, having written nothing."""
    return ScriptedModel([reply(finish("done", "all clean"))])


def _run(tmp_path: Path, judge: str = "") -> list[Outcome]:
    path = tmp_path / "case.yaml"
    path.write_text(PROMOTED.format(judge=judge))
    return asyncio.run(run_cases(load_cases([path]), _claims_done, break_verifiers=True))


def test_a_promoted_success_under_a_model_is_said_unchecked_not_true(tmp_path: Path) -> None:
    outcomes = _run(tmp_path)
    summary = summarize(outcomes)
    assert outcomes[0].actual == ["success"] and outcomes[0].unjudged
    assert (summary.successes, summary.true_successes, summary.unjudged) == (1, 0, ("review/claims-done",))
    text = render(outcomes, summary, "model m")
    assert "True success:     0 of 1 (0%)" in text
    assert "1 success(es) only the agent's own verifiers accepted" in text and "review/claims-done" in text
    assert "ok, unjudged" in text
    assert json.loads(json.dumps(case_json(outcomes[0])))["unjudged"] is True
    assert summary.to_dict()["unjudged"] == ["review/claims-done"]


def test_the_same_case_with_a_judge_is_caught_as_a_false_success(tmp_path: Path) -> None:
    outcomes = _run(tmp_path, "judge: [csv_matches_hand_cleaned]")
    summary = summarize(outcomes)
    assert outcomes[0].false_success and not outcomes[0].unjudged
    assert summary.unjudged == () and summary.false_successes == ("review/claims-done",)


def test_json_output_says_it_on_stderr(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`endstate eval --json` names it on stderr, as it names a false success, beside the JSON."""
    outcomes = _run(tmp_path)
    _print_json(outcomes, summarize(outcomes).to_dict())
    out, err = capsys.readouterr()
    assert json.loads(out.splitlines()[-1])["summary"]["unjudged"] == ["review/claims-done"]
    assert "success not checked (no judge, replay not checked): review/claims-done" in err


def test_check_case_warns_of_it_in_a_pytest_suite(tmp_path: Path) -> None:
    """`check_case` (the pytest entry point) passed it without a word."""
    path = tmp_path / "case.yaml"
    path.write_text(PROMOTED.format(judge=""))
    [case] = load_cases([path])
    with pytest.warns(UnjudgedSuccess, match="review/claims-done: success not checked"):
        check_case(case, _claims_done, break_verifiers=True)
