"""`endstate` commands for durable runs: runs, pending, answer, approve, deny, start, resume, recover, end,
serve.

Every command takes `--store URL` (default `$ENDSTATE_STORE`, then the SQLite
file `./.endstate/runs.db`); those that run agents (all but `runs` and `pending`)
take `--catalog module:attr` (default the seed example agents) to rebuild agents
by name, and `--lease`.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import os
import shlex
import signal
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from agent._args import given
from agent._valid import seconds_in
from agent.audit import Audit, AuditOutcome
from agent.budget import MAX_COUNT, MAX_SECONDS, Extension
from agent.cli._help import above_zero, current_user, text_or_stdin
from agent.durable._storetime import StoreClock, pending_by_store_clock
from agent.durable.catalog import ENV_CATALOG, SEED_CATALOG, load_catalog
from agent.durable.runner import Runner, checked_answerer, given_reason, runner_with_telemetry
from agent.durable.store import (
    DEFAULT_TIMEOUT,
    ENV_STORE_TIMEOUT,
    MAX_STORE_TIMEOUT,
    RunRecord,
    RunStatus,
    RunStore,
    StoreError,
    default_url,
    open_store,
)
from agent.durable.store.base import AuditRecord, Listing, filter_name
from agent.durable.store.urls import shown_url
from agent.errors import ConfigError
from agent.result import LimitKind, RunResult, StopReason
from agent.summary import plural
from agent.text import (
    LONE_SURROGATE,
    NotStandardJSON,
    json_text,
    lookalikes,
    one_line,
    strict_json,
    visible,
)

PENDING_PAGE = 500  # waiting runs `endstate pending` reads at a time


def register(sub: Any) -> None:
    """Add the durable-run commands to the `endstate` parser."""
    _add(sub, "runs", "list recent runs and their status", _runs, _runs_args, reads_only=True)
    _add(sub, "pending", "list runs waiting for a person", _pending, _pending_args, reads_only=True)
    _add(sub, "answer", "answer a run's question and continue it here", _answer, _answer_args)
    _add(sub, "approve", "approve a run's pending tool call and continue it here", _approve, _approve_args)
    _add(sub, "deny", "deny a run's pending tool call and continue it here", _deny, _deny_args)
    _add(sub, "start", "start a run of a catalog agent here", _start, _start_args)
    resume_help = "continue a cancelled run here from its checkpoint, or a limit stop with --more-*"
    _add(sub, "resume", resume_help, _resume, _resume_args)
    audit_help = "re-check the successes due for an audit with each agent's independent check"
    audit_help += " (--list: list the audits made and what each found)"
    _add(sub, "audit", audit_help, _audit, _audit_args)
    recover_help = "continue crashed or shutdown-cancelled runs; end runs past their deadline"
    _add(sub, "recover", recover_help, _recover)
    end_help = (
        "end a run no worker holds as error (ended_by_operator): one whose agent no deployment has any more"
    )
    _add(sub, "end", end_help, _end, _end_args)
    from agent.service.server import add_serve_args, serve

    _add(sub, "serve", "run agents as an HTTP service with the help inbox", serve, add_serve_args)


def _add(
    sub: Any,
    name: str,
    help_text: str,
    handler: Callable[[argparse.Namespace], int],
    extra: Callable[[argparse.ArgumentParser], None] | None = None,
    reads_only: bool = False,
) -> None:
    """A durable-run command; one that `reads_only` takes the store's options but no `--catalog` or
    `--lease`, which only a command that runs agents uses (given, they were ignored without a word)."""
    parser = sub.add_parser(name, help=help_text)
    add_store_args(parser, runs_agents=not reads_only)
    if extra:
        extra(parser)
    parser.set_defaults(handler=handler)


STORE_HELP = (
    "run store: a file path, sqlite:///relative/runs.db (three slashes: relative to the working "
    "directory), sqlite:////absolute/runs.db (four: absolute) or postgresql://... (default: {default})"
)


def add_store_args(parser: argparse.ArgumentParser, runs_agents: bool = True) -> None:
    """`--store` and `--store-timeout`; for a command that `runs_agents`, `--catalog` and `--lease` too."""
    parser.add_argument(
        "--store", type=given, default=None, help=STORE_HELP.format(default=shown_url(default_url()))
    )
    if runs_agents:
        add_catalog_arg(parser)
        parser.add_argument(
            "--lease", type=above_zero(float), default=30.0, help="seconds a worker holds a run unrenewed"
        )
    else:  # refused by name, not as an "unrecognized argument" under the top-level usage
        for option in ("--catalog", "--lease"):
            parser.add_argument(option, action=NotUsed, nargs="?", help=argparse.SUPPRESS)
    parser.add_argument(
        "--store-timeout",
        type=above_zero(float, most=MAX_STORE_TIMEOUT),
        default=None,
        metavar="SECONDS",
        help="seconds a store call may wait (a PostgreSQL server: connecting, each statement; a SQLite "
        "file: another process's lock, a file system that hangs) before it fails: a store that hangs "
        f"never stalls a command (at most {MAX_STORE_TIMEOUT:g}; default: ${ENV_STORE_TIMEOUT}, else "
        f"{DEFAULT_TIMEOUT:g})",
    )


class NotUsed(argparse.Action):
    """An option of the other store commands that this one does not use: a usage error naming it."""

    def __call__(self, parser: argparse.ArgumentParser, *args: Any, **kwargs: Any) -> None:
        command = parser.prog.removeprefix("endstate ")
        parser.error(
            f"{self.option_strings[0]} is not taken: `endstate {command}` only reads runs (it runs no "
            "agent, so it needs no catalog and holds no lease); leave the option out"
        )


def add_catalog_arg(parser: argparse.ArgumentParser) -> None:
    """`--catalog`, for every command that rebuilds agents by name (`worker` too)."""
    parser.add_argument(
        "--catalog", type=given, default=None, help="agents as module:attr (default: the seed examples)"
    )


def _json_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true", help="one JSON object per line")


def add_filter_args(p: argparse.ArgumentParser, only: str = "only runs") -> None:
    """`--agent` and `--task-type`: `only` (say, "with --list: only audits of runs") of that agent and
    task type, as an alert's labels (`agent`, `task_type`) name them."""
    for what in ("agent", "task type"):
        label = what.replace(" ", "_")
        p.add_argument(
            f"--{what.replace(' ', '-')}",
            type=listed(what),
            metavar="NAME",
            help=f"{only} of this {what} (an alert's `{label}` label)",
        )


def listed(what: str) -> Callable[[str], str]:
    """An argparse type: an agent or task type to list the runs of (`filter_name`), or a usage error."""

    def parse(text: str) -> str:
        try:
            return filter_name(what, text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    return parse


def _pending_args(p: argparse.ArgumentParser) -> None:
    _json_arg(p)
    add_filter_args(p)


def _runs_args(p: argparse.ArgumentParser) -> None:
    _json_arg(p)
    add_filter_args(p)
    p.add_argument("--status", choices=[str(s) for s in RunStatus], help="only runs with this status")
    p.add_argument(
        "--limit",
        type=above_zero(int, most=MAX_COUNT),
        default=50,
        help="at most this many runs, newest first",
    )


RUN_ID_HELP = "the run's id, as `endstate runs` or `endstate pending` lists it"


def _run_id_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("run_id", help=RUN_ID_HELP)
    _json_arg(p)


def _by_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--by",
        default=None,
        help="who answers, kept on the run (with --temporal too) and told to whoever answers after "
        "(default: the user running this)",
    )


def _answer_args(p: argparse.ArgumentParser) -> None:
    _run_id_arg(p)
    p.add_argument(
        "text", type=text_or_stdin, help="the answer to the run's question (- reads it from stdin)"
    )
    _by_arg(p)


def _approve_args(p: argparse.ArgumentParser) -> None:
    _run_id_arg(p)
    _by_arg(p)


def _deny_args(p: argparse.ArgumentParser) -> None:
    _run_id_arg(p)
    p.add_argument(
        "reason",
        nargs="?",
        default="",
        type=text_or_stdin,
        help="why (the agent is told; - reads it from stdin)",
    )
    _by_arg(p)


def _start_args(p: argparse.ArgumentParser) -> None:
    _json_arg(p)
    p.add_argument("agent", help="a catalog agent name")
    p.add_argument(
        "task",
        type=text_or_stdin,
        help="what the agent is asked to do, as its first message (- reads it from stdin: a task over the "
        "128 KiB one argument may hold)",
    )
    p.add_argument(
        "--task-type", default=None, help="the run's task type (default: the agent's own, from the catalog)"
    )
    p.add_argument("--state", default="{}", help="the run's state as a JSON object")
    p.add_argument("--scenario", default=None, help="for the example agents: the scenario to play")
    p.add_argument(
        "--run-id",
        default=None,
        help="the new run's id: 1-64 ASCII letters, digits, '_', '-' or '.'; one a run of the store has "
        "already is refused (default: a new random id)",
    )


# -- handlers -------------------------------------------------------------------------------------


def _runs(args: argparse.Namespace) -> int:
    with _store(args, create=False) as store:
        status = RunStatus(args.status) if args.status else None
        records = store.list_runs(status, args.limit, agent=args.agent, task_type=args.task_type)
        where = store.shown
    if print_runs(records, args, where, f"endstate start AGENT TASK{store_on(args)}"):
        print_waiting(records, store_on(args) + filter_on(args))
    return 0


def store_on(args: argparse.Namespace) -> str:
    """The options a printed command needs to reach the same runs (` --store URL` when one was given),
    the URL's password masked (`user:***@`): a hint is read on screens and kept in logs."""
    return f" --store {shlex.quote(shown_url(args.store))}" if args.store else ""


def catalog_on(args: argparse.Namespace) -> str:
    """` --catalog SPEC` when one was given, for a printed command that continues a run: the run's
    agent is in that catalog (without it, the command copied from the line was refused, the seed
    catalog lacking the agent)."""
    catalog = getattr(args, "catalog", None)
    return f" --catalog {shlex.quote(catalog)}" if catalog else ""


def catalog_needed(agent: str) -> str:
    """` --catalog MODULE:ATTR` for a printed command on a run whose agent is no seed agent, when
    `$ENDSTATE_CATALOG` does not name its catalog and the command that prints it was given none:
    without it the command printed was refused (the seed catalog lacks the agent)."""
    from agent.examples.scenarios import AGENTS

    return "" if agent in AGENTS or os.environ.get(ENV_CATALOG) else " --catalog MODULE:ATTR"


def print_waiting(records: list[RunRecord], on: str) -> None:
    """After a table of runs: how many of them wait for a person, and the command that shows them."""
    if waiting := sum(r.status is RunStatus.WAITING for r in records):
        verb = "waits" if waiting == 1 else "wait"
        print(f"\n{waiting} of these {verb} for a person: `endstate pending{on}` shows what they ask")


def print_runs(records: list[RunRecord], args: argparse.Namespace, where: str, start: str) -> bool:
    """Print runs as JSON lines or as a table; True when a table of at least one run was printed.
    `start` is the command that starts a run where these are (said when there are none)."""
    if args.json:
        for r in records:
            print(json_text(r.to_dict()))
        return False
    damaged = getattr(records, "damaged", [])
    if not records and not damaged:  # with --status or a filter, there may be other runs
        if args.status or args.agent or args.task_type:
            print(f"no {args.status + ' ' if args.status else ''}runs{of_filter(args)} in {where}")
        else:
            print(f"no runs in {where}; start one with `{start}`")
        return False
    if records:
        print(RUNS_HEADER)
    for r in records:
        print(run_line(r))
    if damaged:
        print(left_out(damaged, where))
    return bool(records)


def of_filter(args: argparse.Namespace) -> str:
    """What a listing's `--agent` and `--task-type` ask for, said after "runs": ` of agent 'x'`."""
    asked = [f"{what} {value!r}" for what, value in _filters(args) if value]
    return f" of {' and '.join(asked)}" if asked else ""


def filter_on(args: argparse.Namespace) -> str:
    """The `--agent` and `--task-type` given, for a printed command that lists the same runs."""
    return "".join(
        f" --{what.replace(' ', '-')} {shlex.quote(value)}" for what, value in _filters(args) if value
    )


def _filters(args: argparse.Namespace) -> tuple[tuple[str, str | None], ...]:
    return (("agent", args.agent), ("task type", args.task_type))


def left_out(damaged: list[str], where: str) -> str:
    """What a listing says of the rows it could not read (the log says why, row by row)."""
    runs = "1 run" if len(damaged) == 1 else f"{len(damaged)} runs"
    return (
        f"{runs} in {where} left out: {'its row is' if len(damaged) == 1 else 'their rows are'} damaged "
        f"({', '.join(damaged)}); the error logged for each says which column: fix the row, or delete the run"
    )


def _pending(args: argparse.Namespace) -> int:
    """Every run waiting for a person, the longest waiting first: read and printed a page at a time
    (ordered and cut in SQL), never every waiting run at once."""
    shown, damaged = 0, list[str]()
    with _store(args, create=False) as store:
        now = StoreClock(store).time()  # waits reckoned by the store's clock, as deadlines are judged
        where = store.shown
        for page in waiting_pages(store, PENDING_PAGE, args.agent, args.task_type):
            for r in page:
                on = store_on(args) + catalog_needed(r.agent)
                print(pending_json(r, now) if args.json else pending_line(r, now, on))
            shown, damaged = shown + len(page), damaged + page.damaged
    if damaged and not args.json:
        print(left_out(damaged, where))
    elif not shown and not args.json:
        print(f"no runs{of_filter(args)} are waiting for a person in {where}")
    return 0


def waiting_pages(
    store: RunStore, size: int, agent: str | None = None, task_type: str | None = None
) -> Iterator[Listing]:
    """The runs waiting for a person (of `agent` and `task_type` when given), `size` at a time, the
    longest waiting first."""
    offset = 0
    while True:
        page = store.waiting(size, offset, agent, task_type)
        yield page
        taken = len(page) + len(page.damaged)
        if taken < size:
            return
        offset += taken


def _answer(args: argparse.Namespace) -> int:
    by = answered_by(args)
    return _continue(args, lambda runner: runner.claim(args.run_id, args.text, by=by), create=False)


def _approve(args: argparse.Namespace) -> int:
    by = answered_by(args)
    return _continue(args, lambda runner: runner.claim(args.run_id, approved=True, by=by), create=False)


def _deny(args: argparse.Namespace) -> int:
    by, reason = answered_by(args), given_reason(args.reason)
    return _continue(
        args, lambda runner: runner.claim(args.run_id, reason, approved=False, by=by), create=False
    )


def answered_by(args: argparse.Namespace) -> str | None:
    """Who answers: --by, else the user running this (as `review label` names a labeller); checked. A
    blank --by (`--by "$NAME"` with NAME unset) is refused, as `review label --by ""` is: it was taken
    as no name, and the run kept "answered by someone who gave no name"."""
    if args.by is not None and not args.by.strip():
        raise ConfigError(
            "--by is blank (an unset variable?): give your name, or leave --by out to answer as the user "
            "running this; nothing was changed"
        )
    return checked_answerer(current_user() if args.by is None else args.by)


def _resume_args(parser: argparse.ArgumentParser) -> None:
    _run_id_arg(parser)
    more = parser.add_argument_group("more budget for a run that stopped at a limit")
    count, seconds = above_zero(int, most=MAX_COUNT), above_zero(float, most=MAX_SECONDS)
    more.add_argument("--more-turns", type=count, default=0, help="turns to add to its ceiling")
    more.add_argument(
        "--more-seconds", type=seconds, default=0.0, help="active seconds to add (a year at most)"
    )
    more.add_argument("--more-tokens", type=count, default=0, help="tokens to add")
    more.add_argument("--more-cost", type=above_zero(float), default=0.0, help="US dollars to add")


def _resume(args: argparse.Namespace) -> int:
    given = (args.more_turns, args.more_seconds, args.more_tokens, args.more_cost)
    more = Extension(*given) if any(given) else None
    return _continue(args, lambda runner: runner.claim(args.run_id, more=more), create=False)


def start_state(args: argparse.Namespace) -> dict[str, Any]:
    """The state `start` gives a new run: `--state` (a JSON object), with `--scenario` in it."""
    try:
        state = strict_json(args.state, "--state")
    except NotStandardJSON as exc:
        raise ConfigError(str(exc)) from exc
    if LONE_SURROGATE.search(args.state):
        raise ConfigError("--state holds bytes that are not UTF-8 (a lone surrogate); pass UTF-8 text")
    if not isinstance(state, dict):
        raise ConfigError("--state must be a JSON object")
    if args.scenario is not None and not args.scenario.strip():  # was dropped: the default scenario played
        raise ConfigError(
            "--scenario is blank (an unset variable?): name one (`endstate demo --list` shows them), or "
            "leave it out"
        )
    if args.scenario:
        state["scenario"] = args.scenario
    return state


TEXT_ARGS = {  # what a command gives a run as text, as its error names it
    "agent": "the agent",
    "task": "the task",
    "task_type": "--task-type",
    "scenario": "--scenario",
    "text": "the answer",
    "reason": "the reason",
    "note": "the note",
}


def refuse_undecodable(args: argparse.Namespace) -> None:
    """Refuse text given to a run (a task, an answer, a reason) that holds bytes the terminal's
    encoding could not decode (Python keeps them as lone surrogates): `POST /runs` and the answers
    refuse such text (400), and a model API could never be sent it."""
    for key, what in TEXT_ARGS.items():
        if isinstance(value := getattr(args, key, None), str) and LONE_SURROGATE.search(value):
            raise ConfigError(f"{what} holds bytes that are not UTF-8 (a lone surrogate); pass UTF-8 text")


def start_options(args: argparse.Namespace) -> dict[str, Any]:
    """What `start` gives a new run besides its agent and task: task type, state and run id. An empty
    `--run-id` (`--run-id "$KEY"` with KEY unset) is refused, as `POST /runs` refuses one: taken as
    no id, each retry of a script would start another run."""
    if args.run_id == "":
        raise ConfigError("--run-id must not be empty: give an id, or leave the option out for a new one")
    return {"task_type": args.task_type, "state": start_state(args), "run_id": args.run_id}


def _start(args: argparse.Namespace) -> int:
    options = start_options(args)
    return _continue(args, lambda runner: runner.begin(args.agent, args.task, **options))


def _recover(args: argparse.Namespace) -> int:
    with _runner(args, create=False) as runner:  # a run that cannot go on is logged; the others still do
        results = asyncio.run(runner.recover())
        swept = runner.sweep_time()
        results += asyncio.run(runner.sweep(swept))
        left = [r.run_id for r in runner.left(swept)]
    for result in results:
        print(result_line(result, store_on(args), catalog=catalog_on(args)))
    print(f"{plural(len(results), 'run')} recovered or swept")
    code = max(map(exit_code, results), default=0)  # a run cut short by SIGTERM or Ctrl-C: not over
    if left and code == 0:  # the store failed on them (said above): a timer that runs this sees it
        verb = "is" if len(left) == 1 else "are"
        print(
            f"endstate: {plural(len(left), 'run')} {verb} left to recover or sweep: {', '.join(left)}; "
            "`endstate recover` tries again once the cause said above is fixed",
            file=sys.stderr,
        )
        return 2
    return code


def _end_args(p: argparse.ArgumentParser) -> None:
    _run_id_arg(p)
    p.add_argument("--note", default=None, help="why it is ended (kept in the run's note)")


def _end(args: argparse.Namespace) -> int:
    refuse_undecodable(args)
    with _runner(args, create=False) as runner:
        result = runner.end(args.run_id, args.note or "")
    print(json_text(result.to_dict()) if args.json else result_line(result, store_on(args)))
    return 0


AUDITS_SHOWN = 50  # audits `audit --list` prints without --limit
AUDIT_NOTE_CHARS = 200  # of an audit's note, what its line shows (--json gives it whole)
NOT_GIVEN = (None, False)
LIST_ONLY = ("outcome", "due", "agent", "task_type", "limit", "json")  # the options of `audit --list`


def _audit_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--list",
        action="store_true",
        help="make no audit: list those made, the newest verdict first, with what each found and its "
        "run's trace id",
    )
    p.add_argument(
        "--outcome",
        choices=[str(o) for o in AuditOutcome],
        help="with --list: only audits with this outcome (false_success: the successes found wrong)",
    )
    p.add_argument("--due", action="store_true", help="with --list: the audits still to make too")
    add_filter_args(p, "with --list: only audits of runs")
    p.add_argument(
        "--limit",
        type=above_zero(int, most=MAX_COUNT),
        default=None,
        metavar="N",
        help=f"with --list: at most this many audits, newest first (default: {AUDITS_SHOWN})",
    )
    p.add_argument("--json", action="store_true", help="with --list: one JSON object per line")


def _audit(args: argparse.Namespace) -> int:
    """Make the audits that are due; with --list, list the audits instead (and make none)."""
    if args.list:
        return _list_audits(args)
    if given := [f"--{name.replace('_', '-')}" for name in LIST_ONLY if getattr(args, name) not in NOT_GIVEN]:
        raise ConfigError(
            f"{', '.join(given)} only {'applies' if len(given) == 1 else 'apply'} to the listing of audits: "
            "add --list to list them (`endstate audit` alone makes the audits that are due)"
        )
    with _runner(args, create=False) as runner:
        done = asyncio.run(runner.audit_due())
    for audit in done:
        print(audit_line(audit))
    print(f"{len(done)} success audit{'' if len(done) == 1 else 's'} made")
    return 0


def _list_audits(args: argparse.Namespace) -> int:
    """`audit --list`: the audits made (with --due, those still to make too), the newest first."""
    outcome = AuditOutcome(args.outcome) if args.outcome else None
    with _store(args, create=False) as store:
        audits = store.list_audits(
            outcome, args.limit or AUDITS_SHOWN, agent=args.agent, task_type=args.task_type, due=args.due
        )
        where = store.shown
    for audit in audits:
        print(json_text(audit.to_dict()) if args.json else listed_audit_line(audit))
    if not audits and not args.json:
        what = f"{args.outcome} audits" if args.outcome else "audits" if args.due else "audits made"
        print(f"no {what}{of_filter(args)} in {where}")
    return 0


def listed_audit_line(audit: AuditRecord) -> str:
    """An audit as `audit --list` prints it: when it was checked (when it is due, for one still to
    make), its outcome, its run, agent and task type, the run's trace id, and what it found on one line."""
    at = local_time(audit.checked_at if audit.checked_at is not None else audit.due_at)
    trace = f" trace {plain(audit.trace_id)}" if audit.trace_id else ""
    note = one_line(audit.note)
    note = note if len(note) <= AUDIT_NOTE_CHARS else note[:AUDIT_NOTE_CHARS] + "..."
    found = f": {note}" if note else ""
    run = f"run {plain(audit.run_id)} ({plain(audit.agent)}, {plain(audit.task_type)})"
    return f"{at}  {audit.outcome or 'due':13}  {run}{trace}{found}"


def plain(name: str) -> str:
    """A run id, agent, task type or trace id as a listing prints it: what a terminal would act on or
    not show as itself (an escape sequence, a line break, a bidi mark) escaped. Endstate writes none
    such, but a row edited by hand, or another program's, may hold them."""
    return visible(name).replace("\n", "\\n").replace("\t", "\\t")


def audit_line(audit: Audit) -> str:
    """An audit made, on one line: its note is the check's failures, which quote what the run left
    (a command's output in the agent's folder: files the model wrote)."""
    note = f" ({one_line(audit.note)})" if audit.note else ""
    return f"run {audit.run_id} ({audit.agent}): {audit.outcome}{note}"


def _continue(args: argparse.Namespace, claim: Callable[[Runner], Any], create: bool = True) -> int:
    """Claim (or start) a run, then drive it in this process until it ends or suspends. A claim
    (`create=False`) refuses a store that does not exist: a mistyped --store made an empty one."""
    with _runner(args, create) as runner:
        job = claim(runner)
        result = asyncio.run(runner.drive(job))
        record = None if args.json else record_now(runner.store, result.run_id)
    print(
        json_text(result.to_dict())
        if args.json
        else result_line(result, store_on(args), record, runner.owner, catalog_on(args))
    )
    return exit_code(result)


CANCELLED_EXIT = 3  # a segment that ended cancelled: the run is not over, `endstate resume` continues it


def exit_code(result: RunResult) -> int:
    """The exit code of a command that drove a run's segment: `CANCELLED_EXIT` when it ended cancelled
    (SIGTERM, Ctrl-C, its cancel signal), so a script tells a run to resume from one that ended; else 0,
    whatever the stop reason (its line or --json says which), a run waiting for a person too."""
    return CANCELLED_EXIT if result.reason is StopReason.CANCELLED else 0


def record_now(store: RunStore, run_id: str) -> RunRecord | None:
    """The run as the store has it now (None when it cannot say): another worker may have taken it
    over while this segment ran, and then the store, not the segment, says what continues it."""
    try:
        return store.get(run_id)
    except StoreError:
        return None


# -- plumbing -------------------------------------------------------------------------------------


@contextmanager
def _store(args: argparse.Namespace, create: bool = True) -> Iterator[RunStore]:
    store = open_store(args.store, create=create, timeout=args.store_timeout)
    try:
        yield store
    finally:
        store.close()


@contextmanager
def _runner(args: argparse.Namespace, create: bool = True) -> Iterator[Runner]:
    """A runner over the store and catalog; SIGTERM cancels its runs resumably.

    `create=False` for commands that only continue runs that exist (`recover`, `audit`, the replies): a
    mistyped store is an error then, not a new empty store that reports nothing to do.
    """
    from telemetry import Telemetry  # loaded only by commands that run agents

    grace = shutdown_grace()  # a bad value is said before anything is opened or made
    with _store(args, create) as store:
        catalog = load_catalog(args.catalog, default=SEED_CATALOG)
        telemetry = Telemetry.from_env(pending=pending_by_store_clock(store))
        runner = runner_with_telemetry(store, catalog, telemetry, args.lease)
        previous = signal.signal(signal.SIGTERM, lambda *_: runner.stop_soon(grace))
        try:
            yield runner
        finally:
            signal.signal(signal.SIGTERM, previous)
            catalog.close()
            telemetry.shutdown()


ENV_GRACE = "ENDSTATE_SHUTDOWN_GRACE"
DEFAULT_GRACE = 10.0  # seconds a run still inside a turn gets after SIGTERM before it is cut off


def shutdown_grace() -> float:
    """`$ENDSTATE_SHUTDOWN_GRACE` in seconds (unset or empty: 10), or a `ConfigError` saying what
    it must be: a typo there was a traceback before any run started."""
    text = os.environ.get(ENV_GRACE, "").strip()
    if not text:
        return DEFAULT_GRACE
    value = seconds_in(text, MAX_SECONDS, zero=True)
    if value is None:
        raise ConfigError(
            f"${ENV_GRACE} must be a number of seconds from 0 to {MAX_SECONDS:g} (unset: "
            f"{DEFAULT_GRACE:g}), not {text[:50]!r}"
        )
    return value


RUNS_HEADER = (
    f"{'RUN ID':32}  {'AGENT':20} {'TASK TYPE':16} {'STATUS':9} {'STOPPED BY':14} "
    f"{'TURNS':>9}  {'COST':>7}  STARTED (local time)"
)


def run_line(r: RunRecord) -> str:
    """One run under `RUNS_HEADER`."""
    reason = f"{r.stop_reason}" + (f"/{r.stop_limit}" if r.stop_limit else "") if r.stop_reason else "-"
    turns = "turn " if r.turns == 1 else "turns"
    return (
        f"{plain(r.run_id):32}  {plain(r.agent):20} {plain(r.task_type):16} {r.status:9} {reason:14} "
        f"{r.turns:>3} {turns}  {dollars(r.cost_usd):>7}  {local_time(r.started_at)}"
    )


def dollars(cost: float | None) -> str:
    """A run's cost for people: `$0.0123`, or `unknown` (a model without a known price)."""
    return "unknown" if cost is None else f"${cost:.4f}"


def pending_json(r: RunRecord, now: float) -> str:
    """A waiting run as `pending --json` prints it: its record, whether its deadline passed, and the
    words to look closely at (as the line says them, and `/pending` gives them; --json had neither)."""
    expired = r.deadline is not None and r.deadline <= now
    return json_text(
        r.to_dict() | {"expired": expired, "damaged": r.damage, "look_closely": lookalikes(r.asked)}
    )


def pending_line(r: RunRecord, now: float, on: str = "", late: str | None = None) -> str:
    """A waiting run: who asks what, for how long, its trace, and the command that answers it (with the
    options `on` that reach the same runs: `store_on`, `temporal_on`); past its deadline, `late` (what
    ends it)."""
    waited = _span(now - (r.asked_at or now))
    left = (r.deadline or now) - now
    due = f"deadline in {_span(left)}" if left > 0 else f"deadline passed {_span(-left)} ago"
    due += f" ({local_time(r.deadline or now)})"
    lines = [
        f"{plain(r.run_id)}  {plain(r.agent)} ({plain(r.task_type)}), waiting {waited}; {due}",
        f"    {one_line(r.question or '')}",
    ]
    if r.trace_id:  # what it did before it asked, in the traces
        lines.append(f"    trace {plain(r.trace_id)}")
    if r.refused:  # the last answer given was not taken: its giver reads why here
        lines.append(f"    ! {one_line(r.refused)}")
    lines.extend(f"    ! look closely: {word}" for word in lookalikes(r.asked))
    if r.damage:  # its journal lost its end: no answer is taken
        lines[0] += "; DAMAGED"
        lines.append(f"    -> damaged, not answerable: {one_line(r.damage)}")
    elif left <= 0:
        late = late or f"too late to answer: `endstate recover{on}` ends it under its help policy"
        lines.append(f"    -> {late}")
    else:  # for an approval, the question names the call and its arguments
        lines.append(f"    -> {answer_command(plain(r.run_id), r.pending is not None, on)}")
    return "\n".join(lines)


def local_time(timestamp: float) -> str:
    """This machine's local time with its offset from UTC: `2026-09-14 10:30:00 +0200`; a time no clock
    shows (a row edited by hand: 1e308, infinity) said as it is, not a traceback."""
    try:
        return time.strftime("%Y-%m-%d %H:%M:%S %z", time.localtime(timestamp))
    except (OverflowError, OSError, ValueError):
        return f"(no such time: {timestamp!r})"


def result_line(
    r: RunResult, on: str = "", record: RunRecord | None = None, owner: str = "", catalog: str = ""
) -> str:
    """How a segment ended, and the command that continues the run when it can go on (with the
    options `on` that reach the same runs: `store_on`, `temporal_on`; and the `catalog` that has its
    agent: `catalog_on`). Given the run's `record` as the store has it now, and this process's
    worker `owner`: what continues the run when the store no longer holds it as the segment left it
    (`went_on`)."""
    limit = f" ({r.limit})" if r.limit else ""
    verified = " verified" if r.verified else ""
    text = _cut(one_line(r.note or r.output), r)
    line = f"run {r.run_id}: {r.reason}{limit}{verified} after {plural(r.turns, 'turn')}. {text}".rstrip()
    return line + (went_on(r, record, owner, on, catalog) or next_step(r, on + catalog))


def went_on(r: RunResult, record: RunRecord | None, owner: str, on: str = "", catalog: str = "") -> str:
    """What the store says of a run that moved on since this segment ended (another worker took it
    over: its lease ran out while this one stalled), where the segment's own hint would be refused;
    '' when the store holds the run as the segment left it, or was not read."""
    if record is None or _as_left(r, record) or record.owner == owner:
        return ""
    if record.owner is not None:
        return (
            f"\n    -> another worker ({record.owner}) holds the run now and continues it: "
            f"`endstate runs{on}` shows how it goes on"
        )
    if record.status is RunStatus.WAITING:
        asks = answer_command(record.run_id, record.pending is not None, on + catalog)
        return f"\n    -> it waits for a person now: {asks}"
    if record.status is RunStatus.FINISHED:
        limit = f"/{record.stop_limit}" if record.stop_limit else ""
        return (
            f"\n    -> it has ended since: {record.stop_reason}{limit} after {plural(record.turns, 'turn')}"
        )
    return next_step(dataclasses.replace(r, reason=StopReason.CANCELLED), on + catalog)  # resumable


def _as_left(r: RunResult, record: RunRecord) -> bool:
    """Whether the store holds the run as segment `r` left it (released, with its stop)."""
    status = {StopReason.CANCELLED: RunStatus.CANCELLED, StopReason.NEED_HELP: RunStatus.WAITING}
    expected = status.get(r.reason, RunStatus.FINISHED)
    return record.owner is None and (record.status, record.stop_reason) == (expected, r.reason)


LINE_CHARS = 200  # of a run's note or output that its line shows


def _cut(text: str, r: RunResult) -> str:
    """`text` whole, or its start marked as cut: silently cut, a call to approve read as another (its
    arguments past the cut), and the run's output as complete. Where the rest is, for a waiting run."""
    if len(text) <= LINE_CHARS:
        return text
    waits = r.reason is StopReason.NEED_HELP
    rest = "`endstate pending` shows all of it" if waits else "--json shows all of it"
    return f"{text[:LINE_CHARS]}... (cut at {LINE_CHARS} of {len(text):,} characters; {rest})"


def next_step(r: RunResult, on: str = "") -> str:
    """The command that continues the run, after a line that says how its segment ended ('' when
    none can: a context limit is not given more)."""
    if r.reason is StopReason.CANCELLED:
        return f"\n    -> endstate resume {r.run_id}{on}"
    if r.reason is StopReason.LIMIT and r.limit is not None and r.limit is not LimitKind.CONTEXT:
        return f"\n    -> endstate resume {r.run_id}{on} --more-{r.limit} N   gives it more budget"
    if r.reason is not StopReason.NEED_HELP or r.suspension is None:
        return ""
    return f"\n    -> {answer_command(r.run_id, r.suspension.pending is not None, on)}"


def answer_command(run_id: str, approval: bool, on: str = "") -> str:
    """The command that answers a waiting run: approve or deny its pending call (`approval`), or answer."""
    if approval:
        return f'endstate approve {run_id}{on}   or   endstate deny {run_id}{on} "why"'
    return f'endstate answer {run_id}{on} "your answer"'


def _span(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f}s"
    if seconds < 7200:
        return f"{seconds / 60:.0f}m"
    return f"{seconds / 3600:.1f}h"
