"""What every `endstate` command shows newcomers: defaults and environment variables in `--help`."""

from __future__ import annotations

import argparse
import getpass
import os
import sys
from collections.abc import Callable
from typing import Any

from agent.budget import shown_most
from agent.durable.store import DEFAULT_TIMEOUT
from agent.errors import ConfigError

OTEL = (
    "OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_EXPORTER_OTLP_PROTOCOL, OTEL_SERVICE_NAME and the other "
    "OTEL_* variables; ENDSTATE_TRACES_FILE (a file spans go to as JSON lines when no OTLP endpoint is "
    "set), ENDSTATE_REDACT_ENV (more variables whose values spans never show)"
)
STORE = "ENDSTATE_STORE (the run store, when --store is not given)"
STORE_TIMEOUT = "ENDSTATE_STORE_TIMEOUT (when --store-timeout is not given)"
TEMPORAL = "ENDSTATE_TEMPORAL (the Temporal server, when --temporal is not given)"
CATALOG = (
    "ENDSTATE_CATALOG (the agents, when --catalog is not given), "
    "ENDSTATE_WORLDS (the example agents' folders), "
    "ENDSTATE_PREPARE_TIMEOUT (seconds a catalog entry's prepare may take as a run starts; 300)"
)
MODEL_TABLE = "ANTHROPIC_API_KEY, ENDSTATE_MODELS (a model table file)"
MODELS = "ANTHROPIC_API_KEY, ENDSTATE_MODEL (the default model), ENDSTATE_MODELS (a model table file)"
GRACE = "ENDSTATE_SHUTDOWN_GRACE (seconds a run gets after SIGTERM)"
# the commands that open a store but take no --store-timeout still read its variable
OPENS_STORE = f"{STORE}; ENDSTATE_STORE_TIMEOUT (seconds a store call may wait; {DEFAULT_TIMEOUT:g})"
RUNS = f"{STORE}; {STORE_TIMEOUT}; {CATALOG}; {GRACE}; {OTEL}"
LISTS = f"{STORE}; {STORE_TIMEOUT}; {TEMPORAL}"
ENVIRONMENT = {  # by command, as `prog` names it after "endstate "
    "": f"{STORE}; {CATALOG}; {MODELS}; {OTEL}; and per command, in its --help",
    "demo": f"{MODEL_TABLE} (with --model); {OTEL} (the demo's default: .endstate/traces.jsonl)",
    "eval": f"{MODELS} (with --model); ENDSTATE_CATALOG (the agents of cases that name no catalog), "
    "ENDSTATE_CATALOG_TIMEOUT (seconds a catalog may take to load)",
    "limits": OPENS_STORE,
    "limits suggest": OPENS_STORE,
    "runs": LISTS,
    "pending": LISTS,
    "answer": f"{RUNS}; {TEMPORAL}",
    "approve": f"{RUNS}; {TEMPORAL}",
    "deny": f"{RUNS}; {TEMPORAL}",
    "start": f"{RUNS}; {TEMPORAL}",
    "resume": f"{RUNS}; {TEMPORAL}",
    "recover": RUNS,
    "end": f"{RUNS}; {TEMPORAL}",
    "audit": RUNS,
    "doctor": MODELS,
    "serve": f"{STORE}; {STORE_TIMEOUT}; {CATALOG}; {OTEL}; {TEMPORAL}; "
    "ENDSTATE_HOST, ENDSTATE_PORT (where to listen); "
    "ENDSTATE_READY_TIMEOUT, ENDSTATE_MAX_RUNNING, ENDSTATE_FIRST_SCRAPE_WAIT (as their options say); "
    "ENDSTATE_TOKEN or ENDSTATE_TOKEN_FILE (the API token); ENDSTATE_ALLOWED_HOSTS, ENDSTATE_READ_AUTH; "
    "ENDSTATE_CASES_DIR (where the inbox promotes eval cases); "
    "ENDSTATE_TRACE_URL (the trace link of the inbox's review pages)",
    "review": OPENS_STORE,
    "review label": OPENS_STORE,
    "review promote": f"{OPENS_STORE}; ENDSTATE_CATALOG (the catalog a run's agent comes from)",
    "prune": OPENS_STORE,
}


DRIVES = ("answer", "approve", "deny", "start", "resume")  # commands that wait for a run's segment to end
EXITS = (
    "exit status: 0 once the run's segment ends (whatever its stop reason: its line, or --json's reason, "
    "says which) or waits for a person; 3 when it ended cancelled (SIGTERM or Ctrl-C here, a workflow "
    "cancel over Temporal): the run is not over, and its line says what continues it; 2 when the command "
    "is refused."
)
RECOVER_EXITS = (
    "exit status: 0 once the runs it took up ended or wait for a person; 3 when one ended cancelled "
    "(SIGTERM or Ctrl-C here): it is not over, and its line says what continues it; 2 when the command is "
    "refused."
)


class DefaultsFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Shows each option's default, unless it has none or its help already says it."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        if (
            "default" in text
            or action.default in (None, False, argparse.SUPPRESS)
            or not action.option_strings
        ):
            return text
        return super()._get_help_string(action) or text


class HelpParser(argparse.ArgumentParser):
    """An `ArgumentParser` whose help shows defaults and the environment variables the command reads.

    Subcommand parsers are made of the same class (argparse passes it on), so every `--help` does.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", DefaultsFormatter)
        super().__init__(*args, **kwargs)
        command = self.prog.removeprefix("endstate").strip()
        if self.epilog is None and command in ENVIRONMENT:
            self.epilog = f"environment variables read: {ENVIRONMENT[command]}."
        if command in DRIVES:
            self.epilog = f"{self.epilog} {EXITS}"
        if command == "recover":
            self.epilog = f"{self.epilog} {RECOVER_EXITS}"

    def add_argument(self, *args: Any, **kwargs: Any) -> Any:
        """An option given no help still shows its default."""
        action = super().add_argument(*args, **kwargs)
        if action.help is None and action.option_strings and action.default not in (None, False):
            action.help = "(default: %(default)s)"
        return action


def above_zero(kind: type, zero: bool = False, most: float | None = None) -> Callable[[str], Any]:
    """An argparse type: a finite number above 0 (from 0 with `zero`), at most `most` when given, of
    `kind` (int or float), or a usage error saying so (a lease of 0 or a sweep every -1 s would be
    taken as given)."""
    what = ("whole number" if kind is int else "number") + (" from 0" if zero else " above 0")
    if most is not None:
        what += f" and at most {shown_most(most)}"

    def parse(text: str) -> Any:
        try:
            value = kind(text)
        except ValueError:
            value = None
        in_range = value is not None and (value >= 0 if zero else value > 0) and value < float("inf")
        if not in_range or (most is not None and value > most):
            raise argparse.ArgumentTypeError(f"{text!r} is not a {what}")
        return value

    return parse


METRICS_ADDR = "127.0.0.1"  # where --metrics-port serves /metrics unless --metrics-addr says


def metrics_addr(args: Any) -> None:
    """Fill in --metrics-addr; given without --metrics-port it is refused: no /metrics was served
    (the option was dropped unread)."""
    if args.metrics_addr is not None and not args.metrics_port:
        raise ConfigError(f"--metrics-addr {args.metrics_addr} serves /metrics only with --metrics-port PORT")
    args.metrics_addr = args.metrics_addr or METRICS_ADDR


STDIN = "-"  # a run's text given as this is read from standard input
MAX_STDIN_BYTES = 64 * 1024 * 1024  # what `-` reads at most: a pipe that never ends is refused, not held


def text_or_stdin(text: str) -> str:
    """An argparse type for a text given to a run (a task, an answer, a reason): `-` reads it from
    standard input, whole (`endstate start AGENT - < task.md`). Linux takes at most 128 KiB in one
    argument: a longer task given on the command line never reached Endstate (the shell's "Argument
    list too long"). Bytes that are not UTF-8 are kept as lone surrogates, which the command refuses
    by name (`refuse_undecodable`), as it refuses them in an argument."""
    if text != STDIN:
        return text
    read = sys.stdin.buffer.read(MAX_STDIN_BYTES + 1)
    if len(read) > MAX_STDIN_BYTES:
        raise argparse.ArgumentTypeError(
            f"standard input holds more than {MAX_STDIN_BYTES // 2**20} MiB: give a shorter text"
        )
    return read.decode("utf-8", "surrogateescape")


def model_id(text: str) -> str:
    """An argparse type: a `--model` id, never empty (`--model "$MODEL"` with MODEL unset ran the
    scripted models offline, or the default model, without a word)."""
    if not text.strip():
        raise argparse.ArgumentTypeError("must name a model, such as claude-sonnet-5-5 (it is empty)")
    return text


def current_user() -> str:
    """Who runs this command, for a label or an answer given without --by."""
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no name for this uid (a bare container)
        return f"uid {os.getuid()}"
