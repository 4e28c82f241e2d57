"""`endstate limits suggest --prometheus` when successful runs went past a histogram's largest bucket.

The promise (issue 4, agent/evals/limits.py): a ceiling above the longest successful run. Prometheus
keeps buckets; a run past the largest finite bound (200 turns, 3600 s) sits in +Inf, whose size no
one can read. The longest was taken as that bound, so successes of 300 turns and 2 hours got
ceilings of 300 turns (250 x 1.2) and 6000 s: each cut the very runs it was read from, and nothing
said so. Now no number is suggested for such a budget, and a note says why and where to read it.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from test_limits_prometheus import Metrics, scraped

from agent.cli.main import main
from agent.evals.limits import PrometheusHistory, suggest
from agent.result import LimitKind

pytestmark = pytest.mark.slow

# 20 successes of a long-running agent: 150-300 turns, 40 min to 2 h of active time, 50k-100k tokens.
LONG = [(150 + 15 * (i % 11), 2400.0 + 240 * (i % 21), 50_000 + 2_500 * (i % 21)) for i in range(20)]


def seed_long(m: Metrics) -> None:
    for turns, seconds, tokens in LONG:
        m.run("migrate", "success", turns, seconds, tokens)


@pytest.fixture(scope="module")
def prom(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, float]]:
    count = 'sum(agent_run_turns_count{task_type="migrate"})'
    with scraped(
        tmp_path_factory.mktemp("prom"), lambda m: m.touch("migrate", "success"), seed_long, count, len(LONG)
    ) as found:
        yield found


def test_no_ceiling_below_successes_past_the_largest_bucket(prom: tuple[str, float]) -> None:
    url, last = prom
    (s,) = suggest(PrometheusHistory(url, "10m", at=last))

    longest_turns = max(t for t, _, _ in LONG)  # 300
    longest_seconds = max(sec for _, sec, _ in LONG)  # 7200
    for kind, longest in ((LimitKind.TURNS, longest_turns), (LimitKind.SECONDS, longest_seconds)):
        ceiling = s.ceiling(kind)
        assert ceiling is None or ceiling > longest, f"{kind}: {ceiling} cuts a success of {longest}"
    past_turns = sum(t > 200 for t, _, _ in LONG)
    past_seconds = sum(sec > 3600 for _, sec, _ in LONG)
    notes = "\n".join(s.notes)
    past = "successful run(s) went past the histogram's largest bucket"
    assert f"turns: {past_turns} {past} (200)" in notes
    assert f"seconds: {past_seconds} {past} (3600)" in notes
    assert "--store" in notes
    # they were recorded, only their size is unknown (cost: Prometheus has no per-run cost histogram)
    assert "no suggestion for cost: not recorded in this history" in notes
    assert "no suggestion for turns" not in notes and "no suggestion for seconds" not in notes

    # Tokens stay inside their buckets (largest 10M): that ceiling is still read as before,
    # above the longest (100k tokens, in the (50k, 100k] bucket): 1.25 x 100k = 125k -> 150k.
    assert s.ceiling(LimitKind.TOKENS) == 150_000


def test_the_command_says_it_too(prom: tuple[str, float], capsys: pytest.CaptureFixture[str]) -> None:
    url, _ = prom
    assert main(["limits", "suggest", "--prometheus", url, "--window", "10m"]) == 0
    out = capsys.readouterr().out
    assert "as code: Budget(max_tokens=" in out and "max_turns" not in out and "max_seconds" not in out
    assert "went past the histogram's largest bucket" in out
