"""An outlier among few successful runs is named. Among fewer than 20 runs the 95th percentile (by
nearest rank) is the longest run itself, so the outlier note (longest over 3 x the percentile) never
came: six runs of 5-7 turns and one of 200 gave max_turns=300 with no word of that run."""

from __future__ import annotations

from agent.evals.limits import Observed, PastRun, RecordHistory, suggest
from agent.result import LimitKind, StopReason

S = StopReason.SUCCESS


def _runs(turns: list[int]) -> RecordHistory:
    return RecordHistory([PastRun("t", S, None, n, 2.0, 1000, 0.01, f"r{i}") for i, n in enumerate(turns)])


def test_one_far_out_run_among_few_is_named_with_the_ceiling_the_others_give() -> None:
    (s,) = suggest(_runs([5, 6, 5, 7, 6, 5, 200]))
    assert s.ceiling(LimitKind.TURNS) == 300  # still above every successful run: a person decides
    [note] = [n for n in s.notes if "outlier" in n]
    assert note == (
        "turns: the longest successful run (200) is 29x the 95th percentile of the other successful runs "
        "(7): an outlier sets this ceiling. Look at that run (`endstate review`); from the 95th "
        "percentile of the other successful runs alone it would be 12"
    )


def test_two_runs_one_far_out() -> None:
    (s,) = suggest(_runs([4, 40]))
    assert any(n.startswith("turns: the longest successful run (40) is 10x") for n in s.notes), s.notes


def test_few_runs_close_together_or_two_long_ones_are_no_outlier() -> None:
    for turns in ([5, 6, 7, 9], [5, 190, 200], [5, 5], [200]):
        (s,) = suggest(_runs(turns))
        assert not any("outlier" in n for n in s.notes), (turns, s.notes)


def test_the_others_percentile_is_read_from_the_runs_but_the_longest() -> None:
    observed = _runs([5, 6, 5, 7, 6, 5, 200]).observed("t", LimitKind.TURNS, 0.95)
    assert observed == Observed(7, 200, 200, others=7)
    assert _runs([9]).observed("t", LimitKind.TURNS, 0.95) == Observed(1, 9, 9, others=None)
