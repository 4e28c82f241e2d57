"""red40: a turn begun inside a turn of `observe_run` is refused, not counted twice."""

from __future__ import annotations

import pytest

from agent import observe_run
from agent.errors import ConfigError
from agent.hooks import NoHooks


def test_a_turn_inside_a_turn_is_refused_and_the_run_ends_error() -> None:
    """Before: `with run.turn(): with run.turn(): ...` counted 2 turns for one (its span nested in the
    other's), and the run ended `success` with turns=2."""
    observed = observe_run(NoHooks(), agent="triage", task_type="ticket", model="m")
    with (
        pytest.raises(ConfigError, match=r"run.turn\(\) inside a turn"),
        observed as run,
        run.turn(),
        run.turn(),
    ):
        pass
    assert run.result is not None and (run.result.reason, run.result.turns) == ("error", 1)


def test_turns_one_after_another_count_each() -> None:
    with observe_run(NoHooks(), agent="triage", task_type="ticket", model="m") as run:
        for _ in range(3):
            with run.turn():
                pass
    assert run.result is not None and (run.result.reason, run.result.turns) == ("success", 3)
