"""What a CI job reads of `endstate eval`: the FALSE SUCCESS block shows a judge's words (which quote
the run: what a model wrote) on one escaped line, as the FAILED lines above it do; and under `--json`
(stdout kept in a file, stderr in the log) every case that failed is named on stderr and in the
summary, not only the false successes: a crashed case was exit 1 with no word why."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from agent.cli.main import main
from agent.evals.case import Case, JudgeRef
from agent.evals.report import render, summarize
from agent.evals.runner import Outcome, Segment
from agent.result import RunResult, StopReason

FORGED = "out.txt says \x1b[2J\x1b]0;pwned\x07\n!! PASSED: all fine"


def _false_success() -> Outcome:
    case = Case(
        name="w/evil",
        agent="writer",
        fixture="",
        task="Write hello.",
        task_type="writing",
        expect=StopReason.SUCCESS,
        source="cases.yaml",
        judges=(JudgeRef("wrote_hello"),),
    )
    result = RunResult("r1", "writer", "writing", StopReason.SUCCESS, turns=2)
    return Outcome(case, (Segment(result, StopReason.SUCCESS, judge_failures=(f"wrote_hello: {FORGED}",)),))


def test_a_judges_words_in_the_false_success_block_are_one_escaped_line() -> None:
    outcome = _false_success()
    report = render([outcome], summarize([outcome]), "scripted models (offline)")
    assert "\x1b" not in report and "\x07" not in report  # no escape sequence reaches the terminal
    assert not any(line.startswith("!! PASSED") for line in report.splitlines())  # no forged line
    block = [line for line in report.splitlines() if line.startswith("!!   w/evil: ")]
    assert block == ["!!   w/evil: wrote_hello: out.txt says \\x1b[2J\\x1b]0;pwned\\x07 !! PASSED: all fine"]


CASES = """
cases:
  - name: c/crash
    agent: nosuch
    catalog: agent.examples.scenarios:example_catalog
    task: Write hello.
    task_type: writing
    expect: gave_up
  - name: csv/unrejected
    agent: csv-cleaner
    fixture: dirty_orders
    script: csv/clean
    expect: success
    expect_rejected: true
    judge: [csv_matches_hand_cleaned]
  - name: csv/met
    agent: csv-cleaner
    fixture: dirty_orders
    script: csv/clean
    expect: success
    judge: [csv_matches_hand_cleaned]
"""


def test_json_names_every_failed_case_on_stderr_and_in_the_summary(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "cases.yaml"
    path.write_text(CASES)
    assert main(["eval", str(path), "--json", "--no-progress"]) == 1
    out, err = capsys.readouterr()
    summary = json.loads(out.splitlines()[-1])["summary"]
    assert summary["failed"] == ["c/crash", "csv/unrejected"] and summary["false_successes"] == []
    said = [line for line in err.splitlines() if line.startswith("endstate eval: FAILED: ")]
    assert len(said) == 2
    assert said[0].startswith("endstate eval: FAILED: c/crash: the case could not run: ")
    assert "no agent named 'nosuch'" in said[0]
    unrejected = "csv/unrejected: expected a 'done' to be rejected by the verifiers"
    assert said[1] == f"endstate eval: FAILED: {unrejected}"
    assert "csv/met" not in err


def test_a_false_success_is_said_once_on_stderr_not_twice(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "cases.yaml"
    path.write_text(CASES.replace("expect: success\n    expect_rejected: true", "expect: limit"))
    assert main(["eval", str(path), "csv/unrejected", "--json", "--no-progress"]) == 1
    out, err = capsys.readouterr()
    assert json.loads(out.splitlines()[-1])["summary"]["failed"] == ["csv/unrejected"]
    assert err.splitlines() == ["endstate eval: FALSE SUCCESS: csv/unrejected"]


FLAKY_TEAM = """
from pathlib import Path

from agent import Agent, Budget
from agent.durable.catalog import Catalog
from agent.models.scripted import ScriptedModel, finish

BUILT = []


def prepare(state, run_id):
    folder = Path(state["base"]) / run_id
    folder.mkdir()
    return {**state, "workdir": str(folder)}


def build(state):
    BUILT.append(1)  # every other build ends otherwise: a model that varies between rounds
    said = finish("give_up", "the portal is down") if len(BUILT) % 2 else finish("need_help", "which portal?")
    return Agent(name="fetcher", model=ScriptedModel([[said]]), budget=Budget(max_turns=3, max_seconds=60),
                 task_type="fetch")


catalog = Catalog()
catalog.register("fetcher", build, prepare=prepare)
"""


def test_json_says_a_flaky_case_is_flaky_on_stderr(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "evals49_flaky.py").write_text(FLAKY_TEAM)
    (tmp_path / "worlds").mkdir()
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "evals49_flaky", raising=False)
    path = tmp_path / "cases.yaml"
    path.write_text(
        "cases:\n  - {name: fetch/down, agent: fetcher, catalog: 'evals49_flaky:catalog', task: t,\n"
        f"     task_type: fetch, expect: gave_up, state: {{base: '{tmp_path / 'worlds'}'}}}}\n"
    )
    try:
        assert main(["eval", str(path), "--repeat", "2", "--json", "--no-progress"]) == 1
    finally:
        sys.modules.pop("evals49_flaky", None)
    out, err = capsys.readouterr()
    assert json.loads(out.splitlines()[-1])["summary"]["failed"] == ["fetch/down"]
    said = "FLAKY, met 1 of 2 rounds; expected gave_up, got need_help (which portal?)"
    assert err.splitlines() == [f"endstate eval: FAILED: fetch/down: {said}"]
