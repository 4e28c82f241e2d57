"""The `endstate` command line."""

from __future__ import annotations

import argparse
import asyncio
import atexit
import contextlib
import json
import logging
import os
import signal
import sys
import threading
from collections.abc import Sequence
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any, NoReturn

from agent.cli._help import METRICS_ADDR, HelpParser, metrics_addr, model_id
from agent.cli._signals import interrupted_exit, sigterm_as_ctrl_c
from agent.cli.demo import Played, play, select
from agent.errors import ConfigError, EndstateError
from agent.examples.scenarios import SCENARIOS, Scenario
from agent.service.server import port_number, positive_int
from agent.summary import plural
from agent.text import one_line

# modules with `register(subparsers)` adding more commands
OFFLINE_TRACES = ".endstate/traces.jsonl"  # where demo spans go when no OTLP endpoint is set
COMMAND_MODULES: list[str] = [
    "agent.cli.evals",
    "agent.cli.runs",
    "agent.cli.doctor",
    "agent.cli.review",
    "agent.cli.temporal",
]


def main(argv: Sequence[str] | None = None) -> int:
    try:  # Ctrl-C while the command line is built (its modules load) ends it as quietly as later
        args = parsed(build_parser(), argv)
        say_logs_in_lines()
        return int(args.handler(args))
    except EndstateError as exc:
        print(f"endstate: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return interrupted_exit()
    except BrokenPipeError:  # `endstate runs | head`: the reader has what it wanted
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no second error at exit
        return 141


class OneLine(logging.Formatter):
    """A log record as a person at the terminal reads it: `endstate: warning: what happened: why`,
    the exception's own words and no traceback, on one line: what it quotes from a store's row (a run
    id edited by hand) may hold line breaks or escape sequences, printed escaped (`one_line`)."""

    def format(self, record: logging.LogRecord) -> str:
        text = f"endstate: {record.levelname.lower()}: {record.getMessage()}"
        if record.exc_info and (exc := record.exc_info[1]) is not None:
            text += f": {exc}" if str(exc) else f": {type(exc).__name__}"
        return one_line(text)


def say_logs_in_lines() -> None:
    """Warnings and errors of a command go to stderr as one line each (`OneLine`), not through
    Python's last-resort handler, which prints tracebacks. Logging set up already is left alone
    (`serve` sets up its own, for operators' logs)."""
    root = logging.getLogger()
    if not root.handlers:
        handler = logging.StreamHandler()
        handler.setFormatter(OneLine())
        root.addHandler(handler)


def run() -> NoReturn:
    """The `endstate` process: `main`, then exit with its code.

    A process that loaded Temporal's client ends without the interpreter's teardown, once the
    exit handlers ran (spans flushed) and the output is flushed: the client's Rust threads may
    call into Python while it finalizes, which aborts the process (SIGABRT, exit -6) after the
    command did its work (temporalio/sdk-python#300).
    """
    modules_from_here()
    code = main()
    if "temporalio.bridge" not in sys.modules:
        sys.exit(code)
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    os._exit(code)


def parsed(parser: argparse.ArgumentParser, argv: Sequence[str] | None) -> argparse.Namespace:
    """The command line's arguments; `endstate eval`'s case names may also follow its options
    (`endstate eval evals/ --model M refund/late`: argparse refused the name after an option)."""
    args, extra = parser.parse_known_args(argv)
    if extra and args.command == "eval" and not any(word.startswith("-") for word in extra):
        args.cases = [*args.cases, *extra]
    elif extra:
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    return args


def modules_from_here() -> None:
    """Find a catalog module in the working directory (`--catalog mypkg.agents:catalog` run
    beside `mypkg/`), as `python -m agent.cli` and uvicorn do; the console script alone would not.
    It goes last on the path: an installed package is never shadowed by a file here."""
    here = os.getcwd()
    if here not in sys.path and "" not in sys.path:
        sys.path.append(here)


def build_parser() -> argparse.ArgumentParser:
    parser = HelpParser(prog="endstate", description=__doc__)
    parser.add_argument("--version", action="version", version=f"endstate {installed_version()}")
    sub = parser.add_subparsers(dest="command", required=True)
    add_demo(sub)
    for module in COMMAND_MODULES:
        __import__(module, fromlist=["register"]).register(sub)
    return parser


def installed_version() -> str:
    """The version of the installed `endstate` distribution ("unknown" when run from a bare checkout)."""
    try:
        return version("endstate")
    except PackageNotFoundError:
        return "unknown (not installed: pip install -e .)"


def add_demo(sub: Any) -> None:
    demo = sub.add_parser(
        "demo",
        help="run the seed agents' scenarios offline; every stop reason",
        description="Play the seed agents' scenarios and print each run segment's result. Exit status: 0 "
        "when every segment ended as its scenario expects, 1 when one did not, 2 when the command is "
        "refused, 130 on Ctrl-C, 143 on SIGTERM (the run playing ends cancelled).",
    )
    demo.add_argument("scenarios", nargs="*", help="scenario names or prefixes (default: all)")
    demo.add_argument("--json", action="store_true", help="print one JSON object per run segment")
    demo.add_argument("--repeat", type=positive_int, default=1, help="play the scenarios this many times")
    demo.add_argument(
        "--model", type=model_id, help="run the tasks against this Claude model (needs ANTHROPIC_API_KEY)"
    )
    demo.add_argument("--metrics-port", type=port_number, help="serve Prometheus /metrics on this port")
    demo.add_argument(
        "--metrics-addr",
        help=f"address to serve /metrics on (0.0.0.0 in a container; default: {METRICS_ADDR})",
    )
    demo.add_argument(
        "--hold", action="store_true", help="keep serving /metrics until interrupted (with --metrics-port)"
    )
    demo.add_argument("--list", action="store_true", help="list the scenarios and exit")
    demo.set_defaults(handler=run_demo)


def run_demo(args: argparse.Namespace) -> int:
    if args.list:
        return _list_scenarios(args.json)
    if args.hold and not args.metrics_port:
        raise ConfigError("--hold keeps /metrics served: give it --metrics-port PORT")
    metrics_addr(args)
    try:
        scenarios = select(args.scenarios)
    except ValueError as exc:
        raise ConfigError(f"{exc}; `endstate demo --list` shows them") from exc
    model = _model(args.model) if args.model else None
    sigterm_as_ctrl_c()
    telemetry = _telemetry(args)
    try:
        played = _play_all(scenarios, args, telemetry.hooks, model)
        if args.hold:
            _hold(args.metrics_addr, args.metrics_port)
    finally:
        telemetry.shutdown()
    return 0 if all(p.met for p in played) else 1


def _list_scenarios(as_json: bool = False) -> int:
    """Each scenario, its agent and the stops it expects; with --json, one JSON object a line (the
    table was printed under --json too)."""
    for s in SCENARIOS:
        then = {"then": s.follow_up.action, "expect_after": s.expect_after} if s.follow_up else {}
        if as_json:
            print(json.dumps({"name": s.name, "agent": s.agent, "expect": s.expect, **then}))
            continue
        after = f" then {then['then']} -> {then['expect_after']}" if then else ""
        print(f"{s.name:28} {s.agent:20} {s.expect}{after}")
    return 0


def _play_all(scenarios: list[Scenario], args: argparse.Namespace, hooks: Any, model: Any) -> list[Played]:
    played: list[Played] = []
    if not args.json:
        print(HEADER)
    for _ in range(args.repeat):
        for scenario in scenarios:
            segments = asyncio.run(play(scenario, hooks=hooks, model=model))
            played.extend(segments)
            for p in segments:
                print(json.dumps(p.row()) if args.json else _line(p), flush=True)
    if not args.json:
        print(_footer(played))
    return played


def _telemetry(args: argparse.Namespace) -> Any:
    from telemetry import Telemetry  # telemetry is optional for the library, not for the CLI
    from telemetry.setup import with_offline_default

    Path(OFFLINE_TRACES).parent.mkdir(parents=True, exist_ok=True)
    telemetry = Telemetry.from_env(with_offline_default(os.environ, OFFLINE_TRACES))
    if args.metrics_port:
        from telemetry.metrics import serve_metrics

        try:
            serve_metrics(args.metrics_port, telemetry.registry, addr=args.metrics_addr)
        except (OSError, OverflowError) as exc:  # the port is taken, the address is not this host's
            telemetry.shutdown()
            where = f"{args.metrics_addr}:{args.metrics_port}"
            raise ConfigError(
                f"cannot serve /metrics on {where}: {exc}: "
                "choose a free --metrics-port and an address of this host (--metrics-addr)"
            ) from exc
    return telemetry


def _model(name: str) -> Any:
    from agent.models.anthropic import AnthropicModel

    return AnthropicModel(name)  # without ANTHROPIC_API_KEY: a ConfigError that says so


HEADER = (
    f"{'scenario':26} {'seg':>3} {'stop':12} {'limit':7} {'verified':8} "
    f"{'turns':>5} {'tokens':>7} {'cost $':>8}  note"
)


def _line(p: Played) -> str:
    r = p.result
    mark = "" if p.met else f"  <-- expected {p.expected}"
    note = (r.note or r.output or r.summary).replace("\n", " ")
    note = note if len(note) <= 70 else note[:67] + "..."
    tokens = r.usage.tokens
    return (
        f"{p.scenario.name:26} {p.segment:>3} {r.reason:12} {r.limit or '-':7} {str(r.verified).lower():8} "
        f"{r.turns:>5} {tokens:>7} {_dollars(r.cost_usd):>8}  {note}{mark}"
    )


def _footer(played: list[Played]) -> str:
    reached = sorted({str(p.result.reason) for p in played})
    missed = [p for p in played if not p.met]
    status = "all as expected" if not missed else f"{len(missed)} NOT as expected"
    return f"\n{plural(len(played), 'run segment')}; stop reasons reached: {', '.join(reached)}; {status}."


def _hold(addr: str, port: int) -> None:
    print(f"serving http://{addr}:{port}/metrics until interrupted (Ctrl-C)", flush=True)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    with contextlib.suppress(KeyboardInterrupt):
        stop.wait()


if __name__ == "__main__":
    sys.exit(main())


def _dollars(cost: float | None) -> str:
    return "unknown" if cost is None else f"{cost:.4f}"
