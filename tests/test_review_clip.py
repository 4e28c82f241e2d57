"""review: the inbox's and review queue's steps quote the start of each result as the run's summary
does, without splitting the whole result into words. The scale audit mended the summary's own copy of
the clip; the inbox's `clip`, which every step of every waiting run on a page goes through at each
refresh, still split a 15 MB result whole for its first 300 characters."""

from __future__ import annotations

import random
import tracemalloc

from agent.service.briefing import RESULT_CHARS, clip
from agent.summary import _clip


def test_a_huge_result_in_a_step_is_not_split_whole() -> None:
    result = "row 1, a value\n" * 1_000_000  # 15 MB
    tracemalloc.start()
    try:
        shown = clip(result, RESULT_CHARS)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert shown.startswith("row 1, a value row 1") and shown.endswith("...") and len(shown) == RESULT_CHARS
    assert peak < 1_000_000, peak  # about 190 MB: a list of every word of the result


def test_the_inbox_and_the_summary_clip_alike_as_splitting_the_whole_did() -> None:
    rng = random.Random(7)
    pieces = ["word", "x", " ", "  ", "\n", "\t\t", "\u00a0", "long" * 200, " " * 900, "é"]
    for _ in range(300):
        text = "".join(rng.choice(pieces) for _ in range(rng.randrange(0, 400)))
        whole = " ".join(text.split())
        for limit in (20, 200, 300):
            expected = whole if len(whole) <= limit else whole[: limit - 3] + "..."
            assert clip(text, limit) == expected, (limit, repr(text[:80]))
        assert _clip(text) == clip(text, 300)
    assert clip("a\n  b", 10, flat=False) == "a\n  b"
