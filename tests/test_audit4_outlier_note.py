"""The outlier note says "an outlier sets this ceiling"; it came also where the ceiling is the same
without that run (a time ceiling held at its 1-second floor, or both rounding to one round number),
and sent a person to review a run that changed nothing."""

from __future__ import annotations

from agent.evals.limits import PastRun, RecordHistory, suggest
from agent.result import LimitKind, StopReason

S = StopReason.SUCCESS


def _runs(seconds: list[float], turns: int = 5) -> RecordHistory:
    runs = [PastRun("t", S, None, turns, s, 1000, 0.01, f"r{i}") for i, s in enumerate(seconds)]
    return RecordHistory(runs)


def test_no_outlier_note_when_the_floor_sets_the_ceiling_either_way() -> None:
    (s,) = suggest(_runs([0.01, 0.012, 0.064]))  # 0.064 is 5x the others, but every ceiling is 1 s
    assert s.ceiling(LimitKind.SECONDS) == 1
    assert not any("outlier" in n for n in s.notes), s.notes


def test_an_outlier_that_raises_the_ceiling_is_still_named() -> None:
    (s,) = suggest(_runs([2.0, 2.1, 30.0]))
    assert s.ceiling(LimitKind.SECONDS) == 50
    [note] = [n for n in s.notes if "outlier" in n]
    assert note.startswith("seconds: the longest successful run (30) is 14x"), note
    assert note.endswith("alone it would be 4"), note
