"""A run's summary quotes the start of its last result without splitting the whole result into words."""

from __future__ import annotations

import random
import tracemalloc

from agent.budget import Spent
from agent.context import CallRecord, RunContext
from agent.result import StopReason
from agent.summary import _clip, summarize


def test_a_huge_last_result_is_not_split_whole() -> None:
    result = "row 1, a value\n" * 1_000_000  # 15 MB
    ctx = RunContext(run_id="r", agent="a", task="x", task_type="t")
    ctx.calls.append(CallRecord("read", {}, result, False))
    tracemalloc.start()
    try:
        summary = summarize(ctx, Spent(), StopReason.SUCCESS)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert "Last result (read): row 1, a value row 1" in summary and summary.endswith("...")
    assert peak < 1_000_000, peak  # was about 190 MB: a list of every word of the result


def test_the_clip_is_what_splitting_the_whole_gave() -> None:
    rng = random.Random(5)
    pieces = ["word", "x", " ", "  ", "\n", "\t\t", "\u00a0", "long" * 200, " " * 900, "é"]
    for _ in range(400):
        text = "".join(rng.choice(pieces) for _ in range(rng.randrange(0, 400)))
        whole = " ".join(text.split())
        expected = whole if len(whole) <= 300 else whole[:297] + "..."
        assert _clip(text) == expected, repr(text[:80])
