"""fuzz: generated argument vectors for every `endstate` subcommand, run in this process.

Invariants: a command line the parser refuses exits 2 with a usage message; any other ends with an
exit status and at most a message of its own; never an exception out of `main`, never a traceback.
The commands that serve, run workers, demos, evals or call the API (`serve`, `worker`, `demo`, `eval`,
`doctor`) are parsed and checked but not carried out: taken, they would run until stopped.
"""

from __future__ import annotations

import argparse
import importlib
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

FUZZ = settings(
    max_examples=int(os.environ.get("FUZZ_EXAMPLES", "300")),  # more while hunting
    deadline=None,
    database=None,
    derandomize=os.environ.get("FUZZ_RANDOM") is None,  # FUZZ_RANDOM=1: new examples each run, while hunting
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
cli_main = importlib.import_module("agent.cli.main")  # the module (`agent.cli.main` names its function)
NOT_CARRIED_OUT = {"serve", "worker", "demo", "eval", "doctor"}
LEFT_ALONE = {"--store", "--temporal", "--catalog", "--help", "-h", "--version"}  # given fixed, or not


def commands() -> dict[tuple[str, ...], argparse.ArgumentParser]:
    """Every (sub)command's parser, by its words."""
    found: dict[tuple[str, ...], argparse.ArgumentParser] = {}

    def walk(parser: argparse.ArgumentParser, words: tuple[str, ...]) -> None:
        found[words] = parser
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    walk(sub, (*words, name))

    walk(cli_main.build_parser(), ())
    return {words: parser for words, parser in found.items() if words}


COMMANDS = commands()
VALUES = (
    st.text(st.characters(exclude_categories=("Cs",), exclude_characters="\x00"), max_size=12).filter(
        lambda s: not s.startswith("/")  # no absolute path: what a command writes stays in the test's folder
    )
    | st.integers(-(10**20), 10**20).map(str)
    | st.floats().map(repr)
    | st.sampled_from(
        ["", "-", "--", "0", "-1", "1e999", "nan", "inf", "1_000", "٣", "invoice-downloader", "x" * 500]
    )
)


PLAIN = st.sampled_from(["run-1", "Go", "invoice-downloader", "5", "0.5", "1h", "30d", "waiting", "json"])


@st.composite
def argvs(draw: st.DrawFn) -> list[str]:
    """A command's words, its positionals, then some of its options (or one it lacks), each value odd
    or plausible, in any order."""
    words = draw(st.sampled_from(sorted(COMMANDS)))
    actions = [a for a in COMMANDS[words]._actions if not isinstance(a, argparse._SubParsersAction)]
    given = [draw(VALUES | PLAIN) for a in actions if not a.option_strings]
    options = [a for a in actions if a.option_strings and not LEFT_ALONE & set(a.option_strings)]
    for action in draw(st.lists(st.sampled_from(options), max_size=4)) if options else []:
        given.append(action.option_strings[-1])
        if action.nargs != 0:
            given.append(
                draw(st.sampled_from(sorted(map(str, action.choices))) if action.choices else VALUES | PLAIN)
            )
    if draw(st.integers(0, 4)) == 0:  # one more: an option it lacks, or a word too many
        given.insert(
            draw(st.integers(0, len(given))), draw(st.sampled_from(["--nosuch", "-x", "--json=1"]) | VALUES)
        )
    return [*words, *given]


def parser_not_carrying_out(build: Any) -> Any:
    """`build_parser`, its long-running commands parsed, checked, then left (exit 0)."""

    def built() -> argparse.ArgumentParser:
        parser = build()
        for words, sub in commands_of(parser).items():
            if words[0] in NOT_CARRIED_OUT:
                sub.set_defaults(handler=lambda args: 0)
        return parser

    return built


def commands_of(parser: argparse.ArgumentParser) -> dict[tuple[str, ...], argparse.ArgumentParser]:
    found: dict[tuple[str, ...], argparse.ArgumentParser] = {}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found[(name,)] = sub
    return found


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)  # a relative path a command writes lands here
    monkeypatch.setenv("ENDSTATE_STORE_TIMEOUT", "2")
    monkeypatch.delenv("ENDSTATE_TEMPORAL", raising=False)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.setattr(cli_main, "build_parser", parser_not_carrying_out(cli_main.build_parser))
    return tmp_path


@FUZZ
@given(argv=argvs())
def test_any_command_line_is_taken_or_refused_with_usage_never_a_traceback(
    folder: Path, capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    store = ["--store", str(folder / "runs.db")] if "--store" in option_names(argv) else []
    capsys.readouterr()
    try:
        code = cli_main.main([*argv, *store])
    except SystemExit as exit_:
        code = exit_.code if isinstance(exit_.code, int) else 2
    out, err = capsys.readouterr()
    event(f"{argv[0]} exit {code}")
    assert isinstance(code, int), code
    assert "Traceback" not in out + err, err[-3000:]
    if code == 2 and "usage:" not in err:
        assert err.startswith("endstate: ") and len(err) > 20, err[-3000:]


def option_names(argv: list[str]) -> set[str]:
    """The options the command of `argv` takes."""
    for n in range(len(argv), 0, -1):
        if (words := tuple(argv[:n])) in COMMANDS:
            return {o for a in COMMANDS[words]._actions for o in a.option_strings}
    return set()
