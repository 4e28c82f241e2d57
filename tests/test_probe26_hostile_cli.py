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


def test_a_promoted_case_writes_the_pages_hidden_characters_as_escapes_and_passes(tmp_path: Path) -> None:
    """The page's right-to-left override and zero-width characters went into the case file as they
    are (YAML calls them printable): in an editor, a terminal or a code review of the case, the
    line read reordered. They are escapes now, the case reads back the same and passes."""
    from hostile_agents import PAGE

    store = str(tmp_path / "runs.db")
    state = f'{{"dir": "{tmp_path}", "script": "give_up"}}'
    start = ["start", "mailer", "mail alice", "--state", state, "--run-id", "r1"]
    _endstate(*start, "--catalog", CATALOG, "--store", store, cwd=tmp_path)
    promote = ["review", "promote", "r1", "--expect", "gave_up", "--catalog", CATALOG, "--out", "cases"]
    _endstate(*promote, "--store", store, cwd=tmp_path)
    written = (tmp_path / "cases" / "r1.yaml").read_text()
    assert "\u202e" not in written and "\\u202etxt.exe\\u202c" in written
    assert _unprintable(written) == []
    [case] = yaml.safe_load(written)["cases"]
    assert case["results"][0]["text"] == PAGE
    said = _endstate("eval", "cases", cwd=tmp_path)
    assert "PASSED: 1 of 1 cases" in said


def test_an_audits_note_is_printed_on_one_line_with_its_escapes_shown() -> None:
    """`endstate audit` printed the check's failures as they are: a test command's output, from
    files the model wrote, could clear the screen, retitle the terminal or fake the next line."""
    from agent.audit import Audit, AuditOutcome
    from agent.cli.runs import audit_line

    note = "`pytest -q` exited 1:\n\x1b[2J\x1b]0;all good\x07\rrun r9 (ci): confirmed"
    audit = Audit("r1", "ci-fixer", "fix_ci", 0.0, AuditOutcome.FALSE_SUCCESS, note)
    assert audit_line(audit) == (
        "run r1 (ci-fixer): false_success (`pytest -q` exited 1: \\x1b[2J\\x1b]0;all good\\x07\\x0d"
        "run r9 (ci): confirmed)"
    )


def test_pending_shows_the_zero_width_and_tag_characters_of_a_question_as_escapes(tmp_path: Path) -> None:
    """`endstate pending` printed a question's zero-width space and Unicode tag character as they
    are (only controls and bidi overrides were escaped): "May I mail alice@example.com?" read clean
    in the terminal while the address asked about was another."""
    store = str(tmp_path / "runs.db")
    state = f'{{"dir": "{tmp_path}", "script": "ask"}}'
    start = ["start", "mailer", "mail alice", "--state", state, "--run-id", "r2"]
    _endstate(*start, "--catalog", CATALOG, "--store", store, cwd=tmp_path)
    said = _endstate("pending", "--store", store, cwd=tmp_path)
    assert "alice@example.com\\u200b\\u202e\\U000e0041?" in said
    assert "\u200b" not in said and "\U000e0041" not in said


def test_one_line_writes_every_hidden_character_as_an_escape_that_names_it() -> None:
    from agent.text import one_line

    assert one_line("a\u200bb\u00adc\ufeff\U000e0041\ufe0f") == "a\\u200bb\\xadc\\ufeff\\U000e0041\\ufe0f"
    assert one_line("caf\u00e9 \U0001f600\nnext\tcol") == "caf\u00e9 \U0001f600 next col"  # shown as it is
