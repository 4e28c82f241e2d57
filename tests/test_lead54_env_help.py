"""lead54: an option whose default an environment variable gives names that variable in its `--help`.
`serve --help` showed `--host`'s default as the value of $ENDSTATE_HOST ("default: 10.0.0.1") with no
word of where it came from, and `--port`'s likewise (newcomer54's finding)."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest
from test_newcomer54_help import commands

from agent.cli.main import build_parser

AGENT = Path(__file__).parent.parent / "agent"
VARIABLES = sorted(
    {name for path in AGENT.rglob("*.py") for name in re.findall(r"\bENDSTATE_[A-Z_]+\b", path.read_text())}
)


def taking(variable: str, monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, argparse.Action]]:
    """The options whose default is the value `variable` is set to, by the command they belong to."""
    marker = "7"  # a value each of them takes (a port, a number of seconds, a name, a path)
    monkeypatch.setenv(variable, marker)
    return [
        (name, action)
        for name, parser in commands(build_parser())
        for action in parser._actions
        if action.option_strings and action.default == marker
    ]


def test_the_variables_and_the_options_they_give_are_found(monkeypatch: pytest.MonkeyPatch) -> None:
    assert {"ENDSTATE_HOST", "ENDSTATE_PORT", "ENDSTATE_STORE"} <= set(VARIABLES)
    found = {(name, action.dest) for name, action in taking("ENDSTATE_HOST", monkeypatch)}
    assert ("endstate serve", "host") in found


@pytest.mark.parametrize("variable", VARIABLES)
def test_an_option_whose_default_a_variable_gives_names_it(
    variable: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    silent = [
        f"{name} {'/'.join(action.option_strings)}"
        for name, action in taking(variable, monkeypatch)
        if variable not in (action.help or "")
    ]
    assert silent == []


@pytest.mark.parametrize("option", ["--token-file", "--retention"])
def test_serve_says_what_happens_without_the_option(option: str) -> None:
    parser = dict(commands(build_parser()))["endstate serve"]
    (action,) = [a for a in parser._actions if option in a.option_strings]
    assert "default:" in (action.help or "")
