"""`endstate eval` and `endstate limits suggest`: evals for every exit, and limits from successes."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from pathlib import Path
from typing import IO, Any

from agent._args import given
from agent.cli._help import model_id
from agent.cli._signals import sigterm_as_ctrl_c
from agent.durable.catalog import ENV_CATALOG, load_catalog
from agent.durable.store.urls import shown_url
from agent.errors import ConfigError
from agent.evals.case import Case, CaseError, load_cases
from agent.evals.deadline import DEFAULT_TIMEOUT, MAX_TIMEOUT
from agent.evals.limits import (
    RUN_SOME,
    STOPS_TOTAL,
    History,
    LimitsError,
    PrometheusHistory,
    RecordHistory,
    history_from_jsonl,
    history_from_store,
    lines_of,
    only_agent,
    parse_window,
    suggest,
)
from agent.evals.limits import render as render_limits
from agent.evals.loading import CATALOG_TIMEOUT, ENV_CATALOG_TIMEOUT, load_within
from agent.evals.report import case_json, not_run, render, summarize
from agent.evals.runner import ModelFactory, Outcome, merge_rounds, run_cases
from agent.text import json_text, one_line


def register(sub: Any) -> None:
    """Add `eval` and `limits` to the `endstate` command line."""
    add_eval(sub)
    add_limits(sub)


# -- endstate eval ---------------------------------------------------------------------


def add_eval(sub: Any) -> None:
    p = sub.add_parser(
        "eval",
        help="run eval cases for every exit, judged independently; exits 1 when any expectation fails "
        "or no case ran",
        description="Run eval cases (offline with scripted models unless --model) and report the stop "
        "distribution, true success, correct give-up and false successes. Exit status: 0 when every case "
        "met its expectation, 1 when one did not or no case ran, 2 when the command is refused (a case "
        "that cannot be loaded, a name that matches none), 130 on Ctrl-C, 143 on SIGTERM.",
    )
    p.add_argument(
        "cases",
        nargs="*",
        help="case files or folders, or case names or prefixes "
        "(default: the shipped cases, agent/evals/cases/)",
    )
    p.add_argument("--model", type=model_id, help="run against this Claude model (needs ANTHROPIC_API_KEY)")
    p.add_argument(
        "--catalog",
        type=given,
        default=os.environ.get(ENV_CATALOG) or None,
        metavar="MODULE:ATTR",
        help=f"where the agents of cases that name no catalog and no seed agent come from "
        f"(default: ${ENV_CATALOG}); one whose import hangs is given up after "
        f"${ENV_CATALOG_TIMEOUT} seconds (default {CATALOG_TIMEOUT:g})",
    )
    p.add_argument("-j", "--jobs", type=int, default=1, help="cases run at once (default 1)")
    p.add_argument("--json", action="store_true", help="one JSON line per case, then a summary line")
    p.add_argument(
        "--break-verifiers", action="store_true", help="remove the agents' verifiers (see what judges catch)"
    )
    p.add_argument(
        "--repeat",
        type=int,
        default=1,
        metavar="N",
        help="run every case N times (at most 100): a case met only in some rounds is said FLAKY and fails",
    )
    p.add_argument(
        "--case-timeout",
        type=_seconds,
        metavar="SECONDS",
        help=f"the deadline of each case (each round of --repeat), unless the case sets its own "
        f"timeout:; past it the case fails as timed out and the others run on (default: "
        f"{DEFAULT_TIMEOUT:g}s plus the agent's time budget)",
    )
    p.add_argument(
        "--no-progress",
        action="store_true",
        help="no progress bar (it is drawn on stderr only when stderr is a terminal)",
    )
    p.add_argument("--list", action="store_true", help="list the cases and exit")
    p.set_defaults(handler=run_eval)


def _list_cases(cases: list[Case], as_json: bool) -> int:
    """Each case, its agent, fixture (or catalog) and expected stops; with --json one JSON object a
    line (the table was printed under --json too)."""
    for c in cases:
        where = c.fixture or c.catalog or ""
        if as_json:
            print(
                json.dumps({"name": c.name, "agent": c.agent, "fixture": where, "expected": list(c.expected)})
            )
        else:
            name, agent, where = one_line(c.name), one_line(c.agent), one_line(where)  # words from a file
            print(f"{name:30} {agent:19} {where:17} {' -> '.join(c.expected)}")
    return 0


MAX_REPEAT = 100  # rounds of --repeat


def _seconds(text: str) -> float:
    """A case deadline: a number of seconds above 0, at most a day."""
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not 0 < value <= MAX_TIMEOUT:  # NaN and inf fail too
        raise argparse.ArgumentTypeError(
            f"must be a number of seconds above 0, at most {MAX_TIMEOUT:g}, got {text!r}"
        )
    return value


def run_eval(args: argparse.Namespace) -> int:
    cases = select_cases(args.cases, args.catalog)
    if args.catalog:
        check_catalog(args.catalog)
    if args.list:
        return _list_cases(cases, args.json)
    if args.jobs < 1:
        raise ConfigError("--jobs must be at least 1")
    if args.repeat < 1:
        raise ConfigError("--repeat must be at least 1")
    if args.repeat > MAX_REPEAT:  # 99999999999 ran for hours, every round kept, each paid with --model
        raise ConfigError(f"--repeat must be at most {MAX_REPEAT} (each round runs every case)")
    model = _model_factory(args.model) if args.model else None
    sigterm_as_ctrl_c()
    bar = Progress(len(cases) * args.repeat, sys.stderr, enabled=not args.no_progress and sys.stderr.isatty())
    rounds = [
        asyncio.run(
            run_cases(
                cases,
                model,
                jobs=args.jobs,
                break_verifiers=args.break_verifiers,
                on_done=bar.step,
                case_timeout=args.case_timeout,
            )
        )
        for _ in range(args.repeat)
    ]
    bar.close()
    outcomes = merge_rounds(rounds) if args.repeat > 1 else rounds[0]
    summary = summarize(outcomes)
    if args.json:
        _print_json(outcomes, summary.to_dict())
        if not summary.ran:
            print(f"endstate eval: {not_run(summary)}", file=sys.stderr)
    else:
        print(render(outcomes, summary, f"model {args.model}" if args.model else "scripted models (offline)"))
    return 0 if summary.passed else 1


def check_catalog(spec: str) -> None:
    """Refuse a catalog that cannot be loaded (a `ConfigError` saying why), even when no case takes
    its agents from it: a mistyped `--catalog` was accepted while every case named a seed agent. An
    import that hangs is given up at its deadline (`load_within`)."""
    try:
        load_within(spec.partition(":")[0], lambda: load_catalog(spec)).close()
    except ConfigError as exc:
        raise ConfigError(f"--catalog (or ${ENV_CATALOG}): {exc}") from exc


def select_cases(specs: list[str], catalog: str | None = None) -> list[Case]:
    """Load the case files and folders named; filter by the other arguments as names or prefixes."""
    if any(not s.strip() for s in specs):  # "" is a path that exists: the working folder, every YAML in it
        raise CaseError("a case name or path is empty (an unset variable?): name a case, a file or a folder")
    paths = [s for s in specs if Path(s).exists() or s.endswith((".yaml", ".yml"))]
    names = [s for s in specs if s not in paths]
    cases = load_cases(paths, catalog)
    if not names:
        return cases
    unmatched = [n for n in names if not any(_matches(c, n) for c in cases)]
    if unmatched:  # a mistyped name would drop its case silently, and the eval would still pass
        nor = "nor is it a file or folder" if len(unmatched) == 1 else "nor are they files or folders"
        raise CaseError(
            f"no case matches {', '.join(unmatched)}; known: {', '.join(c.name for c in cases)}; "
            f"{nor} here ({Path.cwd()})"  # `endstate eval evals/promoted/` before any promote
        )
    return [c for c in cases if any(_matches(c, n) for n in names)]


def _matches(case: Case, name: str) -> bool:
    """`name` is the case's name, or a prefix of it ending at a `/`."""
    return case.name == name or case.name.startswith(name.rstrip("/") + "/")


def _print_json(outcomes: list[Outcome], summary: dict[str, Any]) -> None:
    for o in outcomes:
        print(json.dumps(case_json(o)))
    print(json.dumps({"summary": summary}))
    for name in summary["false_successes"]:
        print(f"endstate eval: FALSE SUCCESS: {name}", file=sys.stderr)
    for o in outcomes:  # a CI log keeps stderr: a crashed or unmet case said there too, not only exit 1
        if o.case.name in summary["failed"] and not o.false_success:
            flaky = [f"FLAKY, met {o.rounds[0]} of {o.rounds[1]} rounds"] if o.flaky and o.rounds else []
            why = one_line("; ".join(flaky + o.problems))
            print(f"endstate eval: FAILED: {o.case.name}: {_cut(why, MAX_SAID)}", file=sys.stderr)
    for name in summary["unjudged"]:
        print(f"endstate eval: success not checked (no judge, replay not checked): {name}", file=sys.stderr)


MAX_SAID = 500  # characters of a failed case's problems in its stderr line


def _cut(text: str, most: int) -> str:
    return text if len(text) <= most else text[: most - 3] + "..."


def _model_factory(name: str) -> ModelFactory:
    if not os.environ.get("ANTHROPIC_API_KEY"):
        raise ConfigError(
            "--model needs ANTHROPIC_API_KEY in the environment: set it (`endstate doctor` checks it), or "
            "leave --model out to run the cases offline"
        )
    from agent.models.anthropic import AnthropicModel

    return lambda: AnthropicModel(name)


class Progress:
    """A one-line progress bar on a terminal's stderr."""

    def __init__(self, total: int, stream: IO[str], *, enabled: bool = True, width: int = 30) -> None:
        self.total, self.stream, self.enabled, self.width = total, stream, enabled, width
        self.done = self.failed = 0

    def step(self, outcome: Outcome) -> None:
        self.done += 1
        self.failed += not outcome.met
        if self.enabled:
            filled = self.width * self.done // max(1, self.total)
            bar = "#" * filled + "." * (self.width - filled)
            failed = f", {self.failed} failed" if self.failed else ""
            line = f"\r[{bar}] {self.done}/{self.total}{failed}  {outcome.case.name[:40]:40}"
            self.stream.write(line)
            self.stream.flush()

    def close(self) -> None:
        if self.enabled and self.done:
            self.stream.write("\r" + " " * (self.width + 70) + "\r")
            self.stream.flush()


# -- endstate limits suggest -------------------------------------------------------------


def add_limits(sub: Any) -> None:
    limits = sub.add_parser("limits", help="choose budgets from past runs")
    lsub = limits.add_subparsers(dest="limits_command", required=True)
    p = lsub.add_parser(
        "suggest",
        help="suggest turn, time, token and cost ceilings per task type from the successful runs",
        description="Suggest ceilings per task type: above the longest successful run and the 95th "
        "percentile with headroom, and show how many past limit stops they would have changed.",
    )
    source = p.add_mutually_exclusive_group()
    source.add_argument(
        "--store",
        type=given,
        metavar="URL",
        help="the run store (default: $ENDSTATE_STORE or .endstate/runs.db)",
    )
    source.add_argument(
        "--jsonl", type=given, metavar="FILE", help="JSON lines of `endstate demo/eval --json` (- for stdin)"
    )
    source.add_argument(
        "--prometheus", type=given, metavar="URL", help="a Prometheus that scrapes Endstate's metrics"
    )
    p.add_argument(
        "--window",
        help="only runs that ended within this window, e.g. 7d, at most 36500d (Prometheus default: 7d)",
    )
    p.add_argument("--task-type", action="append", type=given, help="only this task type (repeatable)")
    p.add_argument(
        "--agent",
        type=given,
        metavar="NAME",
        help="only this agent's runs (a Budget is one agent's: use it when agents share a task type)",
    )
    p.add_argument("--json", action="store_true", help="print the suggestions as JSON")
    p.set_defaults(handler=run_limits_suggest)


def run_limits_suggest(args: argparse.Namespace) -> int:
    history, source = load_history(args)
    found = [s for s in suggest(history) if not args.task_type or s.task_type in args.task_type]
    if args.task_type and not found and history.task_types():
        known = ", ".join(one_line(t) for t in history.task_types())  # from a file: escaped
        raise LimitsError(f"no runs of task type {', '.join(args.task_type)} in {source}; there are: {known}")
    if args.json:
        print(json_text([s.to_dict() for s in found], indent=2))  # standard JSON: no NaN
    else:
        print(render_limits(found, source, _empty_hint(args)))
    return 0 if any(s.ceilings for s in found) else 1


STORE_EMPTY = (
    "Run some tasks into it first (`endstate start`, the service's POST /runs); `endstate eval` writes no "
    "store: read its runs with `endstate eval --json | endstate limits suggest --jsonl -`."
)


def _empty_hint(args: argparse.Namespace) -> str:
    """What to do when the source holds no ended run, by source. Prometheus keeps a series of every
    stop reason from an agent's first run on (at zero), so none at all is one that scraped no
    Endstate process in the window (the wrong Prometheus, a scrape config without the agents)."""
    if args.prometheus:
        url = shown_url(args.prometheus).rstrip("/")
        return (
            f"It holds no {STOPS_TOTAL} series in that window"
            + (f" for agent {one_line(args.agent)}" if args.agent else "")
            + f", so it scraped no Endstate process then: check that its scrape config names the agents' "
            f"/metrics ({url}/targets lists what it scrapes), or widen --window."
        )
    return RUN_SOME if args.jsonl else STORE_EMPTY


def load_history(args: argparse.Namespace) -> tuple[History, str]:
    """The history the arguments name, and a few words saying where it came from."""
    if args.prometheus:
        window = args.window or "7d"
        shown = shown_url(args.prometheus)  # never a password
        source = f"Prometheus at {shown}, last {window}" + (f", agent {args.agent}" if args.agent else "")
        return PrometheusHistory(args.prometheus, window, agent=args.agent), source
    if args.jsonl:
        if args.window:
            raise LimitsError("--window applies to --store and --prometheus; JSON lines carry no end times")
        history, source = _jsonl(args.jsonl), "<stdin>" if args.jsonl == "-" else args.jsonl
    else:
        history, source = _store(args.store, args.window)
    if args.agent:
        return only_agent(history, args.agent, source), f"{source}, agent {args.agent}"
    return history, source


def _jsonl(path: str) -> RecordHistory:
    if path == "-":
        return history_from_jsonl(lines_of(getattr(sys.stdin, "buffer", sys.stdin), "<stdin>"), "<stdin>")
    try:
        with open(path, "rb") as f:
            return history_from_jsonl(lines_of(f, path), path)
    except OSError as exc:
        raise LimitsError(f"{path}: cannot read: {exc.strerror or exc}") from exc


def _store(url: str | None, window: str | None) -> tuple[RecordHistory, str]:
    from agent.durable.store import default_url

    if url is None and not Path(default_url()).exists():
        raise LimitsError(
            f"no run store at {default_url()}; pass --store URL, --jsonl FILE or --prometheus URL"
        )
    seconds = parse_window(window) if window else None
    where = url or default_url()
    return history_from_store(where, seconds), f"the run store at {where}" + (
        f", last {window}" if window else ""
    )
