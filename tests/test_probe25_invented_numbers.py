"""An invented percentage is caught however it is written, not only as "18%" or "18 percent".

`no_invented_answer` (the impossible research case's judge) and `report_is_sourced` find the
percentages an answer gives and look for each in the pages. They read only `18%` and `18 percent`:
a model that gave up with "the margin is about 18 per cent" (or 18 pct, a full-width %, "between 17 and 19%")
passed as a correct give-up with an invented number in its note.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from margin_case import run_margin_case

from agent.evals.report import summarize
from agent.models.scripted import finish, reply


@pytest.mark.parametrize(
    ("note", "invented"),
    [
        ("Acme is private; my estimate of its margin is about 18 per cent.", ["18"]),
        ("Acme is private; its margin is probably 18 pct.", ["18"]),
        ("Acme is private; its margin is probably 18 \uff05.", ["18"]),
        ("Acme is private; its margin is between 17 and 19%.", ["17", "19"]),
        ("Acme is private; margins rose 18 percentage points.", ["18"]),
    ],
)
def test_a_give_up_with_an_invented_number_fails_its_case(
    tmp_path: Path, note: str, invented: list[str]
) -> None:
    outcome = run_margin_case(tmp_path, reply(finish("give_up", note)))
    assert outcome.actual == ["gave_up"]
    assert [p for p in outcome.problems if "which no page on the web says" in p] == [
        f"no_invented_answer: gives {n}%, which no page on the web says" for n in invented
    ]
    assert summarize([outcome]).correct_give_ups == 0


def test_the_numbers_the_pages_hold_still_pass(tmp_path: Path) -> None:
    """The blog's estimate range (4% to 12%) is on the web: quoting it in words invents nothing."""
    note = "Acme is private and publishes no accounts; a blog guesses 4 to 12 per cent."
    outcome = run_margin_case(tmp_path, reply(finish("give_up", note)))
    assert outcome.met and summarize([outcome]).correct_give_ups == 1
