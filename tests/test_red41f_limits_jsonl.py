"""A JSON line nested thousands deep (a corrupt or hostile history) ended `limits suggest --jsonl`
in a RecursionError traceback; it is refused in one line naming the file and the line."""

from __future__ import annotations

import json
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from agent.evals.limits import MAX_LINE

RUN = {"task_type": "csv_clean", "reason": "success", "turns": 5, "active_seconds": 3.0}


@pytest.mark.parametrize(
    "deep", ["[" * 100_000 + "]" * 100_000, '{"turns": ' + "[" * 100_000 + "]" * 100_000 + "}"]
)
def test_a_line_nested_too_deep_is_named(tmp_path: Path, deep: str) -> None:
    path = tmp_path / "runs.jsonl"
    path.write_text(json.dumps(RUN) + "\n" + deep + "\n")
    done = subprocess.run(
        [sys.executable, "-m", "agent.cli", "limits", "suggest", "--jsonl", str(path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2, done.stderr[-2000:]
    assert done.stderr.strip() == f"endstate: {path}, line 2: not a run record: nested too deeply"


def test_a_line_that_never_ends_is_refused() -> None:
    """/dev/zero is one line without end: it was read until memory ran out."""

    def cap_memory() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (2**31, 2**31))

    done = subprocess.run(
        [sys.executable, "-m", "agent.cli", "limits", "suggest", "--jsonl", "/dev/zero"],
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=cap_memory,
    )
    assert done.returncode == 2, done.stderr[-2000:]
    said = f"endstate: /dev/zero, line 1: longer than {MAX_LINE} bytes: not a run record"
    assert done.stderr.strip() == said


def test_runs_piped_on_stdin_still_count() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "agent.cli", "limits", "suggest", "--jsonl", "-"],
        input=json.dumps(RUN) + "\n" + json.dumps(RUN),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("csv_clean: 2 runs ended (success 2)")
