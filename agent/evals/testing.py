"""Eval cases in a pytest suite: one test per case, failing with the case's problems.

    from agent.evals.testing import case_params, check_case

    @pytest.mark.parametrize("case", case_params("evals/"))
    def test_eval(case):
        check_case(case)

With no path, the cases shipped for the seed agents. Cases of your own agents that name no
`catalog:` take it from `case_params(..., catalog="mypkg.agents:catalog")` or `$ENDSTATE_CATALOG`.
"""

from __future__ import annotations

import asyncio
import os
import warnings
from pathlib import Path
from typing import Any

from agent.durable.catalog import ENV_CATALOG
from agent.evals.case import Case, load_cases
from agent.evals.runner import ModelFactory, Outcome, run_case


def case_params(*paths: str | Path, catalog: str | None = None) -> list[Any]:
    """A `pytest.param` per case, with the case name as its id. `catalog` (module:attr, default
    `$ENDSTATE_CATALOG`, as for `endstate eval`) is where cases that name no catalog of their own
    and no seed agent find their agent."""
    import pytest  # only a test suite calls this

    catalog = catalog or os.environ.get(ENV_CATALOG) or None
    return [pytest.param(case, id=case.name) for case in load_cases(paths, catalog)]


def check_case(
    case: Case,
    model: ModelFactory | None = None,
    *,
    break_verifiers: bool = False,
    case_timeout: float | None = None,
) -> Outcome:
    """Run one case; raise `AssertionError` naming every unmet expectation (false success first).
    `case_timeout` is the case's deadline in seconds when it sets none (as `endstate eval --case-timeout`):
    past it the test fails saying the case timed out, and in which phase."""
    outcome = asyncio.run(run_case(case, model, break_verifiers=break_verifiers, case_timeout=case_timeout))
    if outcome.skipped:
        import pytest

        pytest.skip(f"{case.name}: {outcome.skipped}")
    if not outcome.met:
        loud = ["FALSE SUCCESS"] if outcome.false_success else []
        raise AssertionError(f"{case.name} ({case.source}): " + "; ".join(loud + outcome.problems))
    if outcome.unjudged:
        warnings.warn(UnjudgedSuccess(f"{case.name}: {UNJUDGED}"), stacklevel=2)
    return outcome


UNJUDGED = (
    "success not checked: the case names no judge, and its replay is not checked against a model; "
    "only the agent's own verifiers accepted it. Give the case a judge"
)


class UnjudgedSuccess(UserWarning):
    """A case met with a success that nothing but the agent's own verifiers checked."""
