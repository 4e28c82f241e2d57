"""A case file is read whole: given a device that never ends (/dev/zero) `endstate eval` read
until memory ran out. A case file is read up to MAX_FILE bytes; past that it is refused in one
line naming the file; a file of cases piped on stdin still loads."""

from __future__ import annotations

import resource
import subprocess
import sys
from pathlib import Path

from agent.evals.case import MAX_FILE

CASE = """\
cases:
  - name: t/offline
    agent: invoice-downloader
    fixture: portal_offline
    script: invoice/portal-offline
    expect: gave_up
    impossible: true
    judge: [nothing_downloaded]
"""


def eval_of(path: str, given: str | None = None) -> subprocess.CompletedProcess[str]:
    def cap_memory() -> None:  # the old code read /dev/zero until memory ran out
        resource.setrlimit(resource.RLIMIT_AS, (2**31, 2**31))

    return subprocess.run(
        [sys.executable, "-m", "agent.cli", "eval", "--no-progress", path],
        input=given,
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=cap_memory,
    )


def test_a_device_that_never_ends_is_refused(tmp_path: Path) -> None:
    done = eval_of("/dev/zero")
    assert done.returncode == 2, done.stderr[-2000:]
    assert done.stderr.strip() == f"endstate: /dev/zero: larger than {MAX_FILE} bytes: not a case file"


def test_a_file_past_the_most_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "big.yaml"
    path.write_text(CASE + "#" * MAX_FILE + "\n")
    done = eval_of(str(path))
    assert done.returncode == 2 and "larger than" in done.stderr, done.stderr[-2000:]


def test_cases_piped_on_stdin_still_load() -> None:
    done = eval_of("/dev/stdin", CASE)
    assert done.returncode == 0, done.stderr
    assert "PASSED: 1 of 1" in done.stdout
