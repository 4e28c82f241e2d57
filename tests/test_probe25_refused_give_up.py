"""An impossible task "given up" by the model API's refusal is no correct give-up.

A case `impossible: true, expect: gave_up` passed, and counted in "Correct give-up: 1 of 1 (100%)
impossible tasks gave up instead of inventing an answer", when the run ended on turn one because
the Messages API refused (`stop_reason: refusal`, stop cause `refusal`): the agent never looked,
so nothing shows it found the task impossible. The expected exit was met by another path.
"""

from __future__ import annotations

from pathlib import Path

from margin_case import run_margin_case

from agent.evals.report import summarize
from agent.models.scripted import finish, reply, say


def test_a_refusal_is_not_a_correct_give_up(tmp_path: Path) -> None:
    outcome = run_margin_case(tmp_path, reply(say("I can't help with that."), stop_reason="refusal"))
    assert outcome.actual == ["gave_up"] and str(outcome.final.cause) == "refusal"  # type: ignore[union-attr]
    assert not outcome.met and "gave up by refusal" in outcome.problems[0]
    assert summarize([outcome]).correct_give_ups == 0


def test_the_agents_own_give_up_still_is(tmp_path: Path) -> None:
    outcome = run_margin_case(
        tmp_path, reply(finish("give_up", "Acme is private: it publishes no accounts."))
    )
    assert outcome.met and summarize([outcome]).correct_give_ups == 1
