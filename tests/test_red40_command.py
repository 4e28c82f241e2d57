"""red40: a whole command line given to `command()` as one word is refused when made."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from agent import Agent, command
from agent.errors import ConfigError
from agent.models.scripted import ScriptedModel, finish


@pytest.mark.parametrize(
    ("line", "words"),
    [
        ("python -m pytest -q", "command('python', '-m', 'pytest', '-q')"),
        ("ruff check 'a b'", "command('ruff', 'check', 'a b')"),
        ("ruff check 'a b", "command('ruff', 'check', \"'a\", 'b')"),
    ],
)
def test_a_command_line_in_one_word_is_refused(line: str, words: str) -> None:
    """Before: `command("python -m pytest -q")` was taken, and the model's first `done` ended the run
    `error` (verifier_error: FileNotFoundError 'python -m pytest -q'), after its paid turns."""
    with pytest.raises(ConfigError, match=re.escape(f"give the command's words apart: {words}")):
        command(line)


def test_a_program_whose_name_holds_a_space_still_runs(tmp_path: Path) -> None:
    program = tmp_path / "check it"
    program.write_text(f"#!{sys.executable}\nraise SystemExit(0)\n")
    program.chmod(0o755)
    verifier = command("./check it", cwd=tmp_path)
    agent = Agent(name="checked", model=ScriptedModel([[finish("done", "ok")]]), verifiers=[verifier])
    result = agent.run("go")
    assert (result.reason, result.verified) == ("success", True)
    assert command(sys.executable, "-c", "pass").argv[0] == sys.executable
