"""`limits suggest` writes ceilings to paste into `Budget(...)`. From a history holding a run that
claims an absurd use (a year of active seconds and more: a corrupt or forged line), it suggested
ceilings past what a Budget takes (seconds at most a year), so the code it printed raised a
ConfigError when pasted. Such a ceiling is now left out, with a note (tests/test_evals47_limits_absurd.py);
a count past 64 bits is no run record at all, refused naming the line."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from agent.budget import MAX_COUNT, MAX_SECONDS, Budget

RUN = {
    "run_id": "r1",
    "task_type": "csv_clean",
    "reason": "success",
    "limit": None,
    "turns": 5,
    "input_tokens": 1000,
    "output_tokens": 210,
    "cost_usd": 0.01,
    "active_seconds": 3.0,
}


def suggest(tmp_path: Path, **used: float) -> tuple[dict[str, float], str]:
    path = tmp_path / "runs.jsonl"
    path.write_text(json.dumps(RUN | used) + "\n")
    args = [sys.executable, "-m", "agent.cli", "limits", "suggest", "--jsonl", str(path)]
    done = subprocess.run([*args, "--json"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    [found] = json.loads(done.stdout)
    shown = subprocess.run(args, capture_output=True, text=True, timeout=120)
    assert shown.returncode == 0, shown.stderr
    code = next(line for line in shown.stdout.splitlines() if "as code:" in line).split("as code: ")[1]
    return {k: v["suggested"] for k, v in found["ceilings"].items()}, code


def test_a_suggestion_from_an_absurd_run_stays_within_what_a_budget_takes(tmp_path: Path) -> None:
    ceilings, code = suggest(tmp_path, turns=MAX_COUNT, active_seconds=1e12)
    assert "seconds" not in ceilings and "turns" not in ceilings
    budget = eval(code, {"Budget": Budget})  # the line a user pastes
    assert budget.max_seconds <= MAX_SECONDS and budget.max_tokens == 2_000


def test_ordinary_runs_are_suggested_as_before(tmp_path: Path) -> None:
    ceilings, code = suggest(tmp_path)
    assert ceilings == {"turns": 8, "seconds": 5.0, "tokens": 2000, "cost": 0.015}
    assert code == "Budget(max_turns=8, max_seconds=5, max_tokens=2_000, max_cost_usd=0.015)"
