"""A judge returns the list of what is wrong. One that returns anything else could not judge, and
says what it returned: a text was read a letter at a time (each letter a problem, and an empty text
passed the run), `return path.exists()` and an `async def` judge raised a bare TypeError."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import pytest

from agent.evals.case import load_file
from agent.evals.judges import JUDGES, Judged, judge, judge_verdict
from agent.evals.report import summarize
from agent.evals.runner import run_cases

RUN = cast(Judged, None)  # these judges do not look at the run


async def _later(run: Judged) -> list[str]:
    return []


@pytest.fixture
def returning() -> Iterator[Any]:
    def register(value: Any) -> str:
        judge("evals45_returns")(lambda run: value() if callable(value) else value)
        return "evals45_returns"

    yield register
    JUDGES.pop("evals45_returns", None)


@pytest.mark.parametrize(
    ("value", "said"),
    [
        ("order 43 was not refunded", "returned str 'order 43 was not refunded'"),
        ("", "returned str ''"),
        (True, "returned bool True"),
        (None, "returned NoneType None"),
        ({"order": "missing"}, "returned dict"),
        (42, "returned int"),
    ],
)
def test_a_judge_returning_no_list_could_not_judge(returning: Any, value: Any, said: str) -> None:
    found, error = judge_verdict(returning(value), {}, RUN)
    assert found == []
    assert error is not None and said in error and "not a list of what is wrong" in error


def test_an_async_judge_could_not_judge_and_leaves_no_coroutine_unawaited(
    returning: Any, recwarn: pytest.WarningsRecorder
) -> None:
    found, error = judge_verdict(returning(lambda: _later(RUN)), {}, RUN)
    assert found == [] and error is not None and "a coroutine" in error and "not async def" in error
    assert not [w for w in recwarn if "never awaited" in str(w.message)]


@pytest.mark.parametrize("value", [[], (), ["wrong"], ("wrong",), lambda: (p for p in ["wrong"])])
def test_a_list_a_tuple_or_a_generator_of_problems_is_read_as_before(returning: Any, value: Any) -> None:
    found, error = judge_verdict(returning(value), {}, RUN)
    wanted = [] if value in ([], ()) else ["evals45_returns: wrong"]
    assert (found, error) == (wanted, None)


CASE = """
cases:
  - name: mine/clean
    agent: csv-cleaner
    fixture: dirty_orders
    script: csv/clean
    expect: success
    judge: [evals45_returns]
"""


def test_a_success_judged_by_an_empty_text_is_no_true_success(returning: Any, tmp_path: Path) -> None:
    returning("")
    (tmp_path / "mine.yaml").write_text(CASE)
    (outcome,) = asyncio.run(run_cases(load_file(tmp_path / "mine.yaml")))
    assert not outcome.met and not outcome.false_success
    assert any("could not judge: evals45_returns: the judge returned str ''" in p for p in outcome.problems)
    summary = summarize([outcome])
    assert (summary.successes, summary.true_successes, summary.passed) == (1, 0, False)
