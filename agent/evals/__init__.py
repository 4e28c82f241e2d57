"""Eval cases for every exit: load them from YAML, run them, judge them, report.

    from agent.evals import load_cases, run_cases, summarize
    outcomes = asyncio.run(run_cases(load_cases()))   # the shipped cases, offline
    assert summarize(outcomes).passed

`endstate eval` is the command line; `agent.evals.testing` puts cases in a
team's own pytest suite.
"""

from agent.evals.case import Case, CaseError, FollowUpSpec, JudgeRef, load_cases, load_file, shipped_cases_dir
from agent.evals.fixtures import FIXTURES, Fixture
from agent.evals.judges import JUDGES, Judged, judge
from agent.evals.report import Summary, render, summarize
from agent.evals.runner import Outcome, Segment, run_case, run_cases

__all__ = [
    "FIXTURES",
    "JUDGES",
    "Case",
    "CaseError",
    "Fixture",
    "FollowUpSpec",
    "JudgeRef",
    "Judged",
    "Outcome",
    "Segment",
    "Summary",
    "judge",
    "load_cases",
    "load_file",
    "render",
    "run_case",
    "run_cases",
    "shipped_cases_dir",
    "summarize",
]
