"""A success the case did not expect is no true success.

The summary's true successes are the runs marked success "that every judge and the case's
expectations accept", but only the judges were asked. A promoted case labelled `false_success`
expects `gave_up`; given a judge that finds nothing wrong (or offline, its replay), while the agent
still claims success the report said "True success: 1 of 1 (100%)" beside the case's own FAILED row.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from agent.evals.case import load_cases
from agent.evals.report import render, summarize
from agent.evals.runner import run_cases
from agent.models.scripted import ScriptedModel, finish, reply

CASE = """\
cases:
  - name: review/said-clean
    agent: csv-cleaner
    fixture: dirty_orders
    task: Clean orders.csv into orders_clean.csv.
    expect: {expect}
    judge: [{{file_absent: {{path: invoices}}}}]  # a judge that finds nothing wrong here
    replay:
      - content: [{{type: tool_use, id: t1, name: finish, input: {{kind: done, note: all clean}}}}]
"""


def _run(tmp_path: Path, expect: str) -> str:
    (tmp_path / "case.yaml").write_text(CASE.format(expect=expect))
    model = lambda: ScriptedModel([reply(finish("done", "all clean"))])  # noqa: E731
    outcomes = asyncio.run(run_cases(load_cases([tmp_path / "case.yaml"]), model, break_verifiers=True))
    assert outcomes[0].actual == ["success"]
    return render(outcomes, summarize(outcomes), "model m")


def test_a_success_where_the_case_expects_a_give_up_is_not_a_true_success(tmp_path: Path) -> None:
    text = _run(tmp_path, "gave_up")
    assert "True success:     0 of 1 (0%)" in text
    assert "FAILED: 1 of 1 cases" in text
