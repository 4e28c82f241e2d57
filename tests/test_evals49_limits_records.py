"""`limits suggest` on eval results it did not write itself: a case line whose judges found something
wrong is no success to size budgets by, whatever its `false_success` says (an older version counted
the last segment's judges only; a hand edit can flip the flag); and the names a JSON Lines file gives
(agents, task types) are shown escaped, as the task type heading each block already was."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest

from agent.cli.main import main
from agent.evals.limits import history_from_jsonl, only_agent, render, suggest
from agent.result import LimitKind


def _segment(n: int, reason: str, turns: int, failures: list[str]) -> dict[str, Any]:
    return {
        "segment": n,
        "expected": reason,
        "judge_failures": failures,
        "judge_errors": [],
        "run_id": "refund-9",
        "agent": "refunder",
        "task_type": "refund",
        "reason": reason,
        "turns": turns,
    }


def _case(false_success: bool, failures: list[str], turns: int) -> str:
    """A refund case's line: it asked, a person answered, it succeeded; `failures` found after segment 1."""
    return json.dumps(
        {
            "case": f"refund/{turns}",
            "task_type": "refund",
            "expected": ["need_help", "success"],
            "actual": ["need_help", "success"],
            "met": not failures,
            "false_success": false_success,
            "segments": [_segment(1, "need_help", 2, failures), _segment(2, "success", turns, [])],
        }
    ).replace("refund-9", f"refund-{turns}")


def test_a_success_a_judge_faulted_on_the_way_sizes_nothing_though_its_line_says_no_false_success() -> None:
    lines = [
        _case(False, ["refunded_once_told: refunded before the person answered"], 90),  # an older version's
        _case(False, [], 4),
    ]
    (s,) = suggest(history_from_jsonl(lines))
    assert s.ceiling(LimitKind.TURNS) == 6  # from the 4-turn success alone (1.5 x 4), not 90 turns
    assert s.ceilings[0].observed.count == 1
    assert any("1 success(es) labelled false_success left out" in n for n in s.notes)


def test_a_case_line_whose_judges_found_nothing_is_sized_as_before() -> None:
    (s,) = suggest(history_from_jsonl([_case(False, [], 4), _case(False, [], 8)]))
    assert s.ceiling(LimitKind.TURNS) == 12 and s.ceilings[0].observed.count == 2  # 1.5 x p95 of 8


ESCAPED = "\x1b]0;pwned\x07"


def _runs(*agents: str, task_type: str = "t") -> str:
    rows = [{"task_type": task_type, "reason": "success", "turns": 3, "agent": a} for a in agents]
    return "\n".join(json.dumps(r) for r in rows) + "\n"


def test_agent_names_from_a_file_are_shown_escaped() -> None:
    history = history_from_jsonl(_runs(f"a{ESCAPED}", "b").splitlines())
    text = render(suggest(history), "runs.jsonl")
    assert "\x1b" not in text and "\x07" not in text
    assert "a\\x1b]0;pwned\\x07 1, b 1" in text
    with pytest.raises(Exception) as refused:
        only_agent(history, f"z{ESCAPED}", "runs.jsonl")
    assert "\x1b" not in str(refused.value)
    assert "there are: a\\x1b]0;pwned\\x07, b" in str(refused.value)


def test_task_types_from_a_file_are_shown_escaped_when_none_is_the_one_asked_for(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO(_runs("a", task_type=f"t{ESCAPED}")))
    assert main(["limits", "suggest", "--jsonl", "-", "--task-type", "zz"]) == 2
    err = capsys.readouterr().err
    assert "\x1b" not in err and "there are: t\\x1b]0;pwned\\x07" in err
