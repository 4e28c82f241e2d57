"""A success where the case expects the agent to leave the decision to a person is a false success:
a run that should have asked (need_help) but decided alone and said done, or that went on where
nobody answered (help_timeout). Before, it was a plain FAILED beside 'True success: 0 of 1' and
'False successes: 0' (the counts did not add up), and `limits suggest` sized ceilings by it."""

from __future__ import annotations

import asyncio
import json
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent.evals.case import load_file
from agent.evals.limits import history_from_jsonl
from agent.evals.report import case_json, render, summarize
from agent.evals.runner import Outcome, Segment, run_cases
from agent.result import LimitKind, StopReason

TEAM = '''
from agent import Agent, Budget, tool
from agent.durable.catalog import Catalog
from agent.evals.judges import judge
from agent.models.scripted import ScriptedModel, call, finish

SCRIPTS = {
    "decides": [[call("refund", order="9", to="buyer")], [finish("done", "refunded the buyer")]],
    "asks": [[finish("need_help", "order 9 is a gift: refund the buyer or the receiver?")],
             [call("refund", order="9", to="buyer")], [finish("done", "refunded the buyer")]],
}
REFUNDS = []


def build(state):
    @tool
    def refund(order: str, to: str) -> str:
        """Refund an order to someone."""
        REFUNDS.append((order, to))
        return "ok"

    return Agent(name="refunder", model=ScriptedModel(SCRIPTS[state["script"]]), tools=[refund],
                 budget=Budget(max_turns=6, max_seconds=60), task_type="refund")


@judge("evals45_refunded")
def refunded(run):
    return [] if not run.succeeded or REFUNDS else ["nothing was refunded"]


catalog = Catalog()
catalog.register("refunder", build)
'''

CASE = """
cases:
  - name: refund/{name}
    agent: refunder
    catalog: evals45_gift:catalog
    state: {{script: {script}}}
    task: Refund order 9, a gift.
    task_type: refund
    expect: need_help
    then: {then}
    judge: [evals45_refunded]
"""


@pytest.fixture
def team(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    (tmp_path / "evals45_gift.py").write_text(textwrap.dedent(TEAM))
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path
    sys.modules.pop("evals45_gift", None)
    from agent.evals.judges import JUDGES

    JUDGES.pop("evals45_refunded", None)


def _run(folder: Path, name: str, script: str, then: str) -> Outcome:
    path = folder / f"{name}.yaml"
    path.write_text(CASE.format(name=name, script=script, then=then))
    (outcome,) = asyncio.run(run_cases(load_file(path)))
    return outcome


ANSWER = '{action: answer, text: "the buyer", expect: success}'
DENY = '{action: answer, text: "neither", expect: gave_up}'


@pytest.mark.parametrize("then", [ANSWER, DENY])
def test_a_run_that_decided_what_a_person_was_to_decide_is_a_false_success(team: Path, then: str) -> None:
    outcome = _run(team, "decides", "decides", then)
    assert outcome.actual == ["success"] and outcome.false_success
    summary = summarize([outcome])
    assert summary.false_successes == ("refund/decides",) and summary.true_successes == 0
    out = render([outcome], summary, "offline")
    assert "refund/decides: the case expects it to ask a person (need_help), not to decide alone" in out
    assert "FALSE SUCCESS" in out and not summary.passed


def test_the_same_task_asked_and_answered_is_a_true_success(team: Path) -> None:
    outcome = _run(team, "asks", "asks", ANSWER)
    assert outcome.actual == ["need_help", "success"] and outcome.met and not outcome.false_success
    assert summarize([outcome]).true_successes == 1


def test_limits_do_not_size_by_a_run_that_skipped_its_person(team: Path) -> None:
    decided, asked = _run(team, "decides", "decides", ANSWER), _run(team, "asks", "asks", ANSWER)
    history = history_from_jsonl([json.dumps(case_json(o)) for o in (decided, asked)])
    assert history.reviewed("refund").false_successes == 1
    observed = history.observed("refund", LimitKind.TURNS, 0.95)
    assert observed is not None and observed.count == 1


def test_a_run_that_went_on_where_nobody_answered_is_a_false_success(team: Path) -> None:
    asked = _run(team, "asks", "asks", ANSWER).segments[0].result  # need_help
    decided = _run(team, "decides", "decides", ANSWER).segments[0].result  # success
    path = team / "expire.yaml"
    path.write_text(CASE.format(name="expire", script="asks", then="{action: expire, expect: help_timeout}"))
    (case,) = load_file(path)
    outcome = Outcome(case, (Segment(asked, StopReason.NEED_HELP), Segment(decided, StopReason.HELP_TIMEOUT)))
    assert outcome.false_success
    out = render([outcome], summarize([outcome]), "offline")
    assert "refund/expire: the case expects it to wait for a person who never answers (help_timeout)" in out
