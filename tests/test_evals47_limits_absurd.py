"""`limits suggest` from a history holding a run record no run could have: a fraction of a turn or
a token (2.5 turns), a count past 64 bits, or a use past what a Budget holds (1e12 active seconds,
some 31,700 years). Before, 2.5 turns sized a ceiling, and a ceiling past a Budget's bound was cut
to it and printed as advice: max_turns=9_223_372_036_854_775_807 (a ceiling no run meets: none)
or max_seconds=31_536_000, below the run it claims to sit above. Now a count that is no whole
number from 0 to 2**63 - 1 is refused naming the line, and a ceiling past what a Budget holds is
not suggested: a note names the budget and the run's use, and says to look at that record."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agent.evals.limits import LimitsError, history_from_jsonl, suggest
from agent.result import LimitKind

RUN = {"task_type": "sync", "reason": "success", "turns": 5, "active_seconds": 3.0, "input_tokens": 1000}


def _history(*runs: dict[str, Any]) -> list[str]:
    return [json.dumps(RUN | {"run_id": f"r{i}"} | r) for i, r in enumerate(runs)]


@pytest.mark.parametrize(
    ("used", "field"),
    [
        ({"turns": 2.5}, "turns"),
        ({"turns": 10**30}, "turns"),
        ({"turns": -1}, "turns"),
        ({"input_tokens": 0.00001}, "input_tokens"),
        ({"output_tokens": 2**63}, "output_tokens"),
    ],
)
def test_a_count_no_run_could_have_is_refused_naming_the_line(used: dict[str, Any], field: str) -> None:
    with pytest.raises(LimitsError, match=rf"line 2: not a run record: {field} must be a whole number"):
        history_from_jsonl(_history({}, used))


def test_whole_counts_written_as_floats_are_read() -> None:
    (s,) = suggest(history_from_jsonl(_history({"turns": 5.0, "input_tokens": 1000.0})))
    assert s.ceiling(LimitKind.TURNS) == 8 and s.ceiling(LimitKind.TOKENS) == 1500


def test_a_ceiling_past_what_a_budget_holds_is_no_advice() -> None:
    (s,) = suggest(
        history_from_jsonl(
            _history({"active_seconds": 1e12}, {"input_tokens": 2**63 - 1, "output_tokens": 2**63 - 1})
        )
    )
    assert s.ceiling(LimitKind.SECONDS) is None and s.ceiling(LimitKind.TOKENS) is None
    assert s.ceiling(LimitKind.TURNS) == 8
    notes = "\n".join(s.notes)
    assert "seconds: the longest successful run used 1,000,000,000,000, more than a Budget holds" in notes
    assert "tokens: the longest successful run used 1.84e+19, more than a Budget holds" in notes
    assert "no suggestion for cost: not recorded in this history" in notes  # seconds, tokens were


def test_the_command_prints_no_such_ceiling_as_code(tmp_path: Path) -> None:
    path = tmp_path / "runs.jsonl"
    path.write_text("\n".join(_history({}, {"active_seconds": 1e12})) + "\n")
    args = [sys.executable, "-m", "agent.cli", "limits", "suggest", "--jsonl", str(path)]
    done = subprocess.run(args, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    code = next(line for line in done.stdout.splitlines() if "as code:" in line)
    assert code.endswith("as code: Budget(max_turns=8, max_tokens=1_500)")
    assert "more than a Budget holds" in done.stdout


def test_a_limit_too_low_run_past_what_a_budget_holds_is_not_said_to_be_under_the_ceiling() -> None:
    from agent.evals.limits import PastRun, RecordHistory
    from agent.result import StopReason

    runs = [PastRun("sync", StopReason.SUCCESS, None, 5, 3.0, 1000, 0.01, f"s{i}") for i in range(3)]
    cut = PastRun("sync", StopReason.LIMIT, LimitKind.SECONDS, 9, 1e12, 1000, 0.01, "cut", "limit_too_low")
    (s,) = suggest(RecordHistory([*runs, cut]))
    assert s.ceiling(LimitKind.SECONDS) == 5  # from the successes; no cut-down 31,536,000 as advice
    said = "runs labelled limit_too_low used up to 1,000,000,000,000: more than a Budget holds"
    assert any(n.startswith(said) for n in s.notes), s.notes
