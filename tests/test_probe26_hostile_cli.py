"""What an attacker who controls a web page the agent reads can make the command line print: the
commands run as an operator runs them (`endstate` in a subprocess), their output checked for any
character a terminal would act on (escape sequences, OSC 52 clipboard writes, carriage returns)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import yaml
from test_runner_agents import env_with_tests

CATALOG = "hostile_agents:catalog"


def _endstate(*args: str, cwd: Path, check: bool = True) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "agent.cli", *args],
        cwd=cwd, env=env_with_tests(), capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert not check or done.returncode == 0, done.stdout + done.stderr
    return done.stdout + done.stderr


def _unprintable(output: str) -> list[str]:
    return [line for line in output.splitlines() if not line.isprintable()]


def test_a_failed_replay_of_a_call_the_page_named_prints_the_name_escaped(tmp_path: Path) -> None:
    """A model led to call a tool named with escape sequences (no such tool): promoted, the case
    failed once the tool's answer changed, and `endstate eval` printed the call's name as it is:
    its OSC 52 sequence wrote the operator's clipboard, its escapes cleared the screen."""
    store = str(tmp_path / "runs.db")
    state = f'{{"dir": "{tmp_path}", "script": "bad_tool"}}'
    start = ["start", "mailer", "mail alice", "--state", state, "--run-id", "r5"]
    _endstate(*start, "--catalog", CATALOG, "--store", store, cwd=tmp_path)
    promote = ["review", "promote", "r5", "--expect", "gave_up", "--catalog", CATALOG, "--out", "cases"]
    _endstate(*promote, "--store", store, cwd=tmp_path)
    case_file = tmp_path / "cases" / "r5.yaml"
    cases = yaml.safe_load(case_file.read_text())
    cases["cases"][0]["results"][0]["text"] = "an answer the agent no longer gives"  # the agent changed since
    case_file.write_text(yaml.safe_dump(cases, allow_unicode=True))
    said = _endstate("eval", "cases", cwd=tmp_path, check=False)
    assert "FAILED review/r5" in said
    assert _unprintable(said) == []
    assert "replay: call 1 (read\\x1b]0;owned\\x07\\x1b[2J" in said
