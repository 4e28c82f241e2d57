"""`endstate eval --repeat 99999999999` (a slip of the keyboard) ran rounds for hours, each kept in
memory, and with --model paid for every one. --repeat is at most MAX_REPEAT, said at once."""

from __future__ import annotations

import subprocess
import sys

from agent.cli.evals import MAX_REPEAT


def test_a_repeat_past_the_most_is_refused_at_once() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "agent.cli", "eval", "--no-progress", "--repeat", "99999999999"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2, done.stderr
    said = f"endstate: --repeat must be at most {MAX_REPEAT} (each round runs every case)"
    assert done.stderr.strip() == said


def test_a_repeat_of_the_most_is_taken_for_one_case() -> None:
    args = ["eval", "--no-progress", "--repeat", str(MAX_REPEAT), "invoice/portal-offline"]
    command = [sys.executable, "-m", "agent.cli", *args]
    done = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert "PASSED: 1 of 1" in done.stdout
