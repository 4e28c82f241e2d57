"""`endstate eval` with a case name after an option, as one adds a name to a command already typed
(`endstate eval evals/ --model claude-sonnet-5-5 triage/urgent`): argparse refused it,
"unrecognized arguments: triage/urgent", as it takes positionals only before the options."""

from __future__ import annotations

import json

import pytest

from agent.cli.main import main


def test_names_before_and_after_an_option_both_count(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["eval", "invoice/portal-offline", "--json", "csv/clean"]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert sorted(line["case"] for line in lines if "case" in line) == ["csv/clean", "invoice/portal-offline"]


def test_an_unknown_option_is_still_refused(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["eval", "--json", "--bogus", "csv/clean"])
    assert exited.value.code == 2
    assert "unrecognized arguments: --bogus" in capsys.readouterr().err


def test_another_commands_extra_word_is_still_refused(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["pending", "--json", "stray"])
    assert exited.value.code == 2
    assert "unrecognized arguments: stray" in capsys.readouterr().err
