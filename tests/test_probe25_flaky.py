"""`endstate eval --repeat N`: a case met in some rounds and not in others is said FLAKY and fails.

A CI job gating on `endstate eval --model ...` had one round per case: a case that a model meets
half the time passed or failed by luck, and nothing said so.
"""

from __future__ import annotations

import asyncio
import json
from itertools import count
from pathlib import Path

import pytest
from margin_case import margin_cases

from agent.cli.main import main
from agent.evals.report import case_json, render, summarize
from agent.evals.runner import merge_rounds, run_cases
from agent.models.scripted import ScriptedModel, finish, reply


def test_a_case_met_in_one_round_of_two_is_flaky_and_fails(tmp_path: Path) -> None:
    cases = margin_cases(tmp_path)
    calls = count()
    notes = ["Acme is private: no accounts.", "Acme is private; its margin is about 18%."]
    model = lambda: ScriptedModel([reply(finish("give_up", notes[next(calls) % 2]))])  # noqa: E731
    rounds = [asyncio.run(run_cases(cases, model)) for _ in range(2)]
    assert [r[0].met for r in rounds] == [True, False]
    [outcome] = merge_rounds(rounds)
    assert outcome.flaky and not outcome.met and outcome.rounds == (1, 2)
    summary = summarize([outcome])
    assert not summary.passed and summary.flaky == ("research/margin",)
    text = render([outcome], summary, "model m")
    assert "FLAKY (met 1 of 2 rounds)" in text
    assert "FAILED: 1 of 1 cases did not meet their expectations (1 flaky: met in some rounds only)." in text
    assert case_json(outcome)["flaky"] is True and case_json(outcome)["rounds_met"] == [1, 2]


def test_repeat_on_the_command_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["eval", "--repeat", "2", "--json", "--no-progress", "invoice/portal-offline"]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert lines[0]["rounds_met"] == [2, 2] and not lines[0]["flaky"]
    assert lines[-1]["summary"]["flaky"] == [] and lines[-1]["summary"]["passed"]


def test_repeat_below_one_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["eval", "--repeat", "0", "csv/clean"]) == 2
    assert capsys.readouterr().err.strip() == "endstate: --repeat must be at least 1"
