"""What a newcomer reads in `--help`: every argument says what it is, and every variable a command
reads is named in its help (found walking the README on a first day)."""

from __future__ import annotations

import argparse
from collections.abc import Iterator

import pytest

from agent.cli.main import build_parser

Parsers = Iterator[tuple[str, argparse.ArgumentParser]]


def commands(parser: argparse.ArgumentParser, name: str = "endstate") -> Parsers:
    """Every command and subcommand parser, by its full name."""
    yield name, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub, subparser in action.choices.items():
                yield from commands(subparser, f"{name} {sub}")


def unexplained(parser: argparse.ArgumentParser) -> list[str]:
    """The arguments of one parser that `--help` lists with no word on what they are."""
    quiet = (argparse._HelpAction, argparse._VersionAction, argparse._SubParsersAction)
    return [
        "/".join(a.option_strings) or a.dest
        for a in parser._actions
        if not isinstance(a, quiet) and a.help is not argparse.SUPPRESS and not a.help
    ]


def test_every_argument_of_every_command_says_what_it_is() -> None:
    # `endstate start --help` listed `task`, `--task-type` and `--run-id` bare; answer, approve, deny,
    # resume, end and review's label and promote listed `run_id` (and `LABEL`) bare
    bare = {name: found for name, parser in commands(build_parser()) if (found := unexplained(parser))}
    assert bare == {}


@pytest.mark.parametrize(
    "command", ["review", "review label", "review promote", "prune", "limits", "limits suggest"]
)
def test_the_commands_that_open_a_store_name_its_timeout_variable(command: str) -> None:
    # they read $ENDSTATE_STORE_TIMEOUT (a bad value refuses them) but their help named only
    # $ENDSTATE_STORE
    parser = dict(commands(build_parser()))[f"endstate {command}"]
    assert "ENDSTATE_STORE_TIMEOUT" in parser.format_help()


def test_doctor_help_says_its_default_model_and_its_exit_status() -> None:
    text = " ".join(dict(commands(build_parser()))["endstate doctor"].format_help().split())
    assert "else claude-sonnet-5-5)" in text.replace("claude- sonnet", "claude-sonnet")
    assert "0 when every check holds" in text and "1 when one fails or could not run" in text


@pytest.mark.parametrize("command", ["demo", "eval"])
def test_demo_and_eval_help_say_their_exit_status(command: str) -> None:
    text = " ".join(dict(commands(build_parser()))[f"endstate {command}"].format_help().split())
    assert "Exit status: 0 when every" in text and "130 on Ctrl-C, 143 on SIGTERM" in text
