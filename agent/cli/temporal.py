"""`endstate worker`, and `--temporal HOST:PORT` on the durable-run commands.

With `--temporal` (or `$ENDSTATE_TEMPORAL`), `start`, `runs`, `pending`,
`answer`, `approve`, `deny`, `resume` and `end` do what they do over a store, with
the same output, against runs that are Temporal workflows; `endstate worker`
runs them. `start` waits for the first segment's end (`--no-wait` prints the
run id at once); `answer`, `approve` and `deny` wait for the next segment's end. A start the
workers refuse (no such agent) ends as an `error` run: printed, with exit 2 as over a store.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import json
import math
import os
import re
import shlex
import signal
import sys
import time
from collections.abc import Awaitable, Callable
from datetime import timedelta
from typing import TYPE_CHECKING, Any, TypeVar

from agent._args import given
from agent.budget import MAX_SECONDS
from agent.cli._help import CATALOG, METRICS_ADDR, OTEL, TEMPORAL, metrics_addr
from agent.cli._signals import sigterm_as_ctrl_c
from agent.cli.runs import add_catalog_arg, answered_by, refuse_undecodable, start_options
from agent.durable.runner import given_reason
from agent.durable.store import ENV_STORE
from agent.errors import ConfigError
from agent.result import RunResult, StopReason
from agent.service.server import first_scrape_arg, port_number, seconds, seconds_from_zero
from agent.summary import plural
from agent.text import one_line

if TYPE_CHECKING:  # Temporal is an extra: the CLI starts without it
    from agent.temporal.worker import InHand

ENV_TEMPORAL = "ENDSTATE_TEMPORAL"
STOP_SLACK_S = 5.0  # seconds past --grace a failed worker's shutdown may take before the process exits anyway
FLUSH_ON_EXIT_S = 2.0  # seconds a second signal gives telemetry (spans and events queued) to be sent
CATALOG_WAIT_S = 0.0  # `_wire.CATALOG_WAIT`: the CLI starts without Temporal's SDK
NOTE_AFTER_S = 10.0  # seconds a command waits for a segment before it says what it waits for
T = TypeVar("T")
STORE_ONLY = {  # commands with no Temporal form: what does their work there
    "recover": "each run's timers and Temporal's retries recover it, with nothing to run",
    "audit": "success audits are not made (yet)",
    "review": "runs are not reviewed, labelled or promoted (yet): the review queue and its labels are "
    "kept in a run store, with the runs a store's runner ran",
}
WRAPPED = ("start", "runs", "pending", "answer", "approve", "deny", "resume", "end", "serve")


def register(sub: Any) -> None:
    """Add `worker`, and `--temporal` to the durable-run commands (registered before this module)."""
    worker = sub.add_parser(
        "worker",
        help="run a Temporal worker for the catalog's agents (pip install 'endstate[temporal]')",
        epilog=f"environment variables read: {TEMPORAL}; {CATALOG}; ENDSTATE_FIRST_SCRAPE_WAIT (with "
        f"--metrics-port, when --first-scrape-wait is not given); {OTEL}.",
    )
    _temporal_args(worker, required=True)
    add_catalog_arg(worker)
    worker.add_argument(
        "--heartbeat",
        type=heartbeat,
        default=30.0,
        help="seconds before a silent activity is retried (its worker taken for dead; 0.001 to a year)",
    )
    worker.add_argument(
        "--grace",
        type=grace,
        default=10.0,
        help="seconds the activities in hand get to end on SIGTERM or SIGINT (to a year; default: 10)",
    )
    worker.add_argument(
        "--continue-after",
        type=events,
        default=10_000,
        metavar="EVENTS",
        help="history events of a run's execution past which it continues as new at its next turn "
        "(or when Temporal suggests it; default: 10000, at most 40000)",
    )
    worker.add_argument(
        "--catalog-wait",
        type=grace,
        default=CATALOG_WAIT_S,
        metavar="SECONDS",
        help="seconds a call of a run whose agent (or task type) this worker's catalog lacks is tried again, "
        "on whichever worker of the queue takes it, before the run ends as error (0 to a year; a rolling "
        f"deploy: 300, say; default: {CATALOG_WAIT_S:g}, at once, as a store refuses it)",
    )
    worker.add_argument("--metrics-port", type=port_number, help="serve Prometheus /metrics on this port")
    worker.add_argument("--metrics-addr", help=f"address to serve /metrics on (default: {METRICS_ADDR})")
    first_scrape_arg(worker, "polls the task queue (with --metrics-port)")
    worker.set_defaults(handler=_worker)
    for name in STORE_ONLY:
        parser = sub.choices[name]
        parser.set_defaults(handler=_store_only(parser.get_default("handler"), name))
    for name in WRAPPED:
        parser = sub.choices[name]
        _temporal_args(parser)
        if name == "start":
            parser.add_argument(
                "--no-wait", action="store_true", help="with --temporal: print the run id at once"
            )
        parser.set_defaults(handler=_either(parser.get_default("handler"), name))


def heartbeat(text: str) -> float:
    """An argparse type: a worker's heartbeat timeout, above 0 and at most a year (NaN, 0 or a negative
    one failed or never ended the runs whose activities it took; `build_worker` refuses under 1 ms)."""
    value = seconds(text)
    if value > MAX_SECONDS:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds above 0 and at most a year")
    return value


def events(text: str) -> int:
    """An argparse type: a whole number of history events from 1 to the bound where a run stops
    `history_too_large` (refused here, before the worker connects to Temporal)."""
    most = _most_events()
    try:
        value = int(text)
    except ValueError:
        value = 0
    if not 1 <= value <= most:
        bound = f" to {most}" if most < math.inf else ""
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of history events from 1{bound}")
    return value


def _most_events() -> int | float:
    """The history events past which a run stops `history_too_large` (no bound here without temporalio:
    the worker then says what to install)."""
    try:
        from agent.temporal._wire import MAX_HISTORY_EVENTS
    except ImportError:
        return math.inf
    return MAX_HISTORY_EVENTS


def grace(text: str) -> float:
    """An argparse type: seconds from 0 to a year (a longer one is no time Temporal can wait)."""
    value = seconds_from_zero(text)
    if value > MAX_SECONDS:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds from 0 to a year")
    return value


def name(text: str) -> str:
    """An argparse type: a namespace or task queue, never empty (Temporal refuses a start on one)."""
    if not text.strip():
        raise argparse.ArgumentTypeError("must not be empty")
    return text


ADDRESS = re.compile(r"(?P<host>\[[0-9A-Fa-f:.]+\]|[^\s:/\[\]]+):(?P<port>[0-9]{1,5})")


def temporal_address(text: str) -> str:
    """An argparse type: Temporal's frontend as HOST:PORT (`[V6]:PORT` too). A host without a port went to
    port 80 and a URL's scheme drew a warning from the SDK, each said only after its retries."""
    text = given(text)
    example = "127.0.0.1:7233 (7233: Temporal's own port)"
    if "://" in text:
        raise argparse.ArgumentTypeError(f"{text!r}: give HOST:PORT with no scheme, such as {example}")
    found = ADDRESS.fullmatch(text)
    if found is None:
        problem = "no host" if text.startswith(":") else "no port" if ":" not in text.strip("[]") else ""
        said = f" has {problem}" if problem else " is not"
        raise argparse.ArgumentTypeError(f"{text!r}{said}: give HOST:PORT, such as {example}")
    if not 1 <= int(found["port"]) <= 65535:
        raise argparse.ArgumentTypeError(
            f"{text!r}: the port of HOST:PORT must be from 1 to 65535, such as {example}"
        )
    return text


def _temporal_args(parser: argparse.ArgumentParser, required: bool = False) -> None:
    default = os.environ.get(ENV_TEMPORAL) or None
    parser.add_argument(
        "--temporal",
        type=temporal_address,
        default=default,
        required=required and default is None,
        metavar="HOST:PORT",
        help=f"run on this Temporal server (the temporal extra) (default: ${ENV_TEMPORAL})",
    )
    # None until `on_temporal` fills in the defaults, knowing then whether one was given
    parser.add_argument("--namespace", type=name, default=None, help="Temporal namespace (default: default)")
    parser.add_argument(
        "--task-queue", type=name, default=None, help="Temporal task queue (default: endstate)"
    )


def on_temporal(args: argparse.Namespace) -> None:
    """Fill in the default namespace and task queue; without --temporal, refuse either given: the
    command went to the run store, the Temporal option unread (a run started there, not on Temporal)."""
    given = [
        flag for flag, value in (("--namespace", args.namespace), ("--task-queue", args.task_queue)) if value
    ]
    if given and not args.temporal:
        raise ConfigError(
            f"{' and '.join(given)} {'needs' if len(given) == 1 else 'need'} --temporal HOST:PORT (or "
            f"${ENV_TEMPORAL}): without it the command acts on the run store, which has neither; nothing "
            "was done"
        )
    args.namespace, args.task_queue = args.namespace or "default", args.task_queue or "endstate"


def _store_only(
    store_handler: Callable[[argparse.Namespace], int], name: str
) -> Callable[[argparse.Namespace], int]:
    """`name` acts on a run store only. With `$ENDSTATE_TEMPORAL` set and no store named, it made (or
    swept) a local SQLite store and said "0 runs recovered": on Temporal, Temporal does this itself."""

    def handler(args: argparse.Namespace) -> int:
        refuse_without_store(args, name)
        return store_handler(args)

    return handler


def refuse_without_store(args: argparse.Namespace, name: str) -> None:
    """Refuse `name`, a command of the run store only (`STORE_ONLY`), with `$ENDSTATE_TEMPORAL` set
    and no store named: it would act on a local store, not on the runs on Temporal."""
    if os.environ.get(ENV_TEMPORAL) and args.store is None and not os.environ.get(ENV_STORE):
        raise ConfigError(
            f"`endstate {name}` works on a run store, and ${ENV_TEMPORAL} is set with no store named: on "
            f"Temporal {STORE_ONLY[name]}. To act on a store, pass --store (or set ${ENV_STORE})"
        )


def _either(
    store_handler: Callable[[argparse.Namespace], int], name: str
) -> Callable[[argparse.Namespace], int]:
    def handler(args: argparse.Namespace) -> int:
        refuse_undecodable(args)
        on_temporal(args)
        if args.temporal and name == "serve":
            from agent.temporal.service import serve

            return serve(args)
        if args.temporal:
            sigterm_as_ctrl_c()  # the wait stops; the run is Temporal's
            return asyncio.run(_collected(_COMMANDS[name](args)))
        if getattr(args, "no_wait", False):
            raise ConfigError("--no-wait needs --temporal: a run on a store goes on in this process")
        return store_handler(args)

    return handler


async def _collected(command: Awaitable[int]) -> int:
    """Run a command, then free its Temporal client inside the loop: a client still alive
    while the interpreter shuts down can crash it (the SDK's runtime threads)."""
    code = await command
    gc.collect()
    return code


# -- commands over Temporal ---------------------------------------------------------------------------


async def _runs_client(args: argparse.Namespace) -> Any:
    from agent.temporal import TemporalRuns

    return await TemporalRuns.connect(args.temporal, args.namespace, args.task_queue)


def _print_result(args: argparse.Namespace, result: Any) -> int:
    """Print how a segment ended; its exit code (`exit_code`: a cancelled run's is not a success's)."""
    from agent.cli.runs import exit_code, result_line

    print(json.dumps(result.to_dict()) if args.json else result_line(result, temporal_on(args)))
    return exit_code(result)


async def _noted(args: argparse.Namespace, call: Awaitable[T]) -> T:
    """`call`'s result (a segment's end). When it has not come within `NOTE_AFTER_S`, one line on
    stderr says what is waited for: with no worker polling (a deploy, a crash) the command waited
    in silence for ever."""
    task = asyncio.ensure_future(call)
    try:
        try:
            return await asyncio.wait_for(asyncio.shield(task), NOTE_AFTER_S)
        except TimeoutError:
            _say(
                f"still waiting after {NOTE_AFTER_S:g} s for the run's segment to end: a long one, or no "
                f"`endstate worker` polls task queue {args.task_queue!r} of namespace {args.namespace!r} "
                "(start one), or none that polls it has the run's agent (its calls are tried again for the "
                "workers' --catalog-wait). Ctrl-C stops waiting here; what was sent stays with Temporal"
            )
            return await asyncio.shield(task)
    except asyncio.CancelledError:  # Ctrl-C or SIGTERM
        await _dropped(task)
        _say("stopped waiting; the run goes on with Temporal")
        raise


def _say(text: str) -> None:
    print(f"endstate: {text}", file=sys.stderr, flush=True)


async def _dropped(task: asyncio.Future[Any]) -> None:
    """Cancel `task` and wait for its end, its error unsaid (the SDK's "cancelled waiting for update"):
    left running, `asyncio.run` reported it as an unhandled exception at shutdown."""
    task.cancel()
    await asyncio.wait({task})
    if not task.cancelled():
        task.exception()


async def _start(args: argparse.Namespace) -> int:
    options = start_options(args)
    runs = await _runs_client(args)
    starting = runs.start(args.agent, args.task, wait=not args.no_wait, **options)
    started = await (starting if args.no_wait else _noted(args, starting))  # --no-wait waits for no segment
    if isinstance(started, str):
        print(json.dumps({"run_id": started}) if args.json else started)
        return 0
    code = _print_result(args, started)
    return 2 if _refused(started) else code


def _refused(result: RunResult) -> bool:
    """A run the workers could not begin (no agent of its name, a task type it does not run): over a
    store `start` refuses it before any run is made, with exit 2; here the run exists and has ended
    as error, so its line is printed and the same exit code and reason go to stderr."""
    if (result.reason, result.error_type, result.turns) != (StopReason.ERROR, "ConfigError", 0):
        return False
    note = one_line(result.note or "")  # the workers' words, which quote the request's
    print(f"endstate: the workers could not begin run {result.run_id}: {note}", file=sys.stderr)
    return True


async def _answer(args: argparse.Namespace) -> int:
    by = answered_by(args)
    return _print_result(
        args, await _noted(args, (await _runs_client(args)).answer(args.run_id, args.text, by=by))
    )


async def _approve(args: argparse.Namespace) -> int:
    by = answered_by(args)
    return _print_result(args, await _noted(args, (await _runs_client(args)).approve(args.run_id, by=by)))


async def _deny(args: argparse.Namespace) -> int:
    by, reason = answered_by(args), given_reason(args.reason) or ""  # blank: none, as over a store
    runs = await _runs_client(args)
    return _print_result(args, await _noted(args, runs.deny(args.run_id, reason, by=by)))


async def _resume(args: argparse.Namespace) -> int:
    from agent.budget import Extension

    given = (args.more_turns, args.more_seconds, args.more_tokens, args.more_cost)
    more = Extension(*given) if any(given) else None
    return _print_result(args, await _noted(args, (await _runs_client(args)).resume(args.run_id, more)))


async def _end(args: argparse.Namespace) -> int:
    """`end --temporal`: as over a store, the run's line (its end, `ended_by_operator`) and exit 0. Who
    ends it (the user running this) is named on a run that no worker polls for (see `TemporalRuns.end`)."""
    from agent.cli._help import current_user
    from agent.cli.runs import result_line

    runs = await _runs_client(args)
    result = await _noted(args, runs.end(args.run_id, args.note or "", by=_operator(current_user())))
    print(json.dumps(result.to_dict()) if args.json else result_line(result, temporal_on(args)))
    return 0


def _operator(name: str) -> str | None:
    """The operator's name as a run keeps one, or None (the client's Temporal identity then) when the
    system's name for this user is not one (too long, or with characters a name may not hold)."""
    from agent.durable.runner import checked_answerer

    try:
        return checked_answerer(name)
    except ConfigError:
        return None


async def _runs(args: argparse.Namespace) -> int:
    from agent.cli.runs import filter_on, print_runs, print_waiting
    from agent.durable.store import RunStatus

    runs = await _runs_client(args)
    status = RunStatus(args.status) if args.status else None
    records = await runs.runs(status, args.limit, args.agent, args.task_type)
    if print_runs(records, args, runs.shown, f"endstate start AGENT TASK{temporal_on(args)}"):
        print_waiting(records, temporal_on(args) + filter_on(args))
    return 0


def temporal_on(args: argparse.Namespace) -> str:
    """The options a printed command needs to reach the same runs: the server (unless it is
    `$ENDSTATE_TEMPORAL`, which that command reads too), and a namespace or task queue not the default."""
    given = [
        ("--temporal", args.temporal, os.environ.get(ENV_TEMPORAL) or None),
        ("--namespace", args.namespace, "default"),
        ("--task-queue", args.task_queue, "endstate"),
    ]
    return "".join(f" {flag} {shlex.quote(value)}" for flag, value, default in given if value != default)


async def _pending(args: argparse.Namespace) -> int:
    from agent.cli.runs import of_filter, pending_json, pending_line

    runs = await _runs_client(args)
    records = await runs.pending(args.agent, args.task_type)
    now = time.time()
    late = (  # no `recover` on Temporal: the run's own timer ends it, once a worker runs its workflow
        "too late to answer: its deadline's timer ends it under its help policy once an `endstate "
        f"worker` polls task queue {args.task_queue!r}"
    )
    for r in records:
        print(pending_json(r, now) if args.json else pending_line(r, now, temporal_on(args), late))
    if not records and not args.json:
        print(f"no runs{of_filter(args)} are waiting for a person in {runs.shown}")
    return 0


_COMMANDS: dict[str, Callable[[argparse.Namespace], Awaitable[int]]] = {
    "start": _start,
    "runs": _runs,
    "pending": _pending,
    "answer": _answer,
    "approve": _approve,
    "deny": _deny,
    "resume": _resume,
    "end": _end,
}


# -- the worker ---------------------------------------------------------------------------------------


async def _waiting_pairs(pending: Callable[[], list[tuple[str, str, float]]]) -> set[tuple[str, str]]:
    """(agent, task type) of the runs waiting for a person, whose answers this worker may resume
    first; none when visibility cannot say (their series then appear at their first resume)."""
    try:
        return {(agent, task_type) for agent, task_type, _ in await asyncio.to_thread(pending)}
    except Exception as exc:
        listed = one_line(str(exc))
        print(f"endstate worker: the runs waiting for a person could not be listed ({listed})", flush=True)
        return set()


class WorkerFailed(ConfigError):
    """Temporal failed the worker for good: said in one line, exit 2; the SDK's tasks may be left."""


class StoppedShort(ConfigError):
    """A signal stopped the worker with activities in hand past `--grace` (cut: Temporal runs them again on
    another worker), or its shutdown did not end within `--grace` + `STOP_SLACK_S`: said in one line, exit 2;
    the SDK's tasks may be left."""


class Stop:
    """The signals that stop `endstate worker`: the first a graceful stop, said in one line; a second exits
    at once (exit 2), the activities in hand cut, once `flush` has sent what telemetry holds (it bounds
    itself: `FLUSH_ON_EXIT_S`)."""

    def __init__(self, args: argparse.Namespace, hand: InHand, flush: Callable[[], object]) -> None:
        self.args, self.hand, self.flush = args, hand, flush
        self.by: str | None = None  # the first signal's name
        self.asked = asyncio.Event()

    def signalled(self, sig: signal.Signals) -> None:
        if self.by is None:
            self.by = sig.name
            self.asked.set()
            grace = f"--grace {self.args.grace:g} s"
            said = (
                f"calls in hand ({self.hand.count}) get up to {grace} to end (a second signal exits at once)"
            )
            print(f"endstate worker: stopping on {sig.name}: polling no more; {said}", flush=True)
            return
        said = (
            f"a second signal ({sig.name}): the worker exits once telemetry is sent (at most "
            f"{FLUSH_ON_EXIT_S:g} s); {self._cut(self.hand.count)}"
        )
        print(f"endstate: {said}", file=sys.stderr, flush=True)
        with contextlib.suppress(Exception):  # telemetry failing never holds the exit
            self.flush()
        with contextlib.suppress(OSError, ValueError):
            sys.stdout.flush()
            sys.stderr.flush()
        os._exit(2)  # the SDK's shutdown is not waited for: it may never end

    def short(self, cut: int, ended: bool) -> StoppedShort:
        """What a stop that cut `cut` activities, or whose shutdown never `ended`, says."""
        grace = f"--grace {self.args.grace:g} s"
        if ended:
            said = f"the worker stopped on {self.by} past {grace} (a longer one lets calls end)"
        else:
            said = (
                f"the worker did not stop within {grace} + {STOP_SLACK_S:g} s of {self.by}: it exits anyway"
            )
        return StoppedShort(f"{said}: {self._cut(cut)}")

    def _cut(self, n: int) -> str:
        if not n:
            return "no call was in hand"
        return (
            f"{plural(n, 'call')} in hand cut; Temporal runs {'it' if n == 1 else 'them'} again on another "
            f"worker (at the latest once its heartbeat times out, --heartbeat {self.args.heartbeat:g} s)"
        )


def _worker(args: argparse.Namespace) -> int:
    """`_run_worker` on an event loop of its own. A failed worker's loop is left as it is: closing it
    would cancel and wait for the tasks Temporal's SDK left, which may never end (a poll that never
    returns), and the process ends without them (`main.run` exits without the interpreter's teardown)."""
    on_temporal(args)
    metrics_addr(args)
    if args.first_scrape_wait_given and not args.metrics_port:  # $ENDSTATE_FIRST_SCRAPE_WAIT is serve's too
        raise ConfigError(
            f"--first-scrape-wait {args.first_scrape_wait:g} waits for a scrape of /metrics, which the "
            "worker serves only with --metrics-port PORT: give it one, or leave the option out"
        )
    runner = asyncio.Runner()
    try:
        code = runner.run(_run_worker(args))
    except (WorkerFailed, StoppedShort):
        raise
    except BaseException:
        runner.close()
        raise
    runner.close()
    return code


async def _run_worker(args: argparse.Namespace) -> int:
    """Poll the task queue until SIGTERM or SIGINT; then finish the activities in hand and stop."""
    from agent.durable.catalog import SEED_CATALOG, load_catalog
    from agent.service.server import declared_pairs
    from agent.temporal import TemporalRuns, ensure_search_attributes
    from agent.temporal.pending import TemporalPending
    from telemetry import Telemetry

    runs = await TemporalRuns.connect(args.temporal, args.namespace, args.task_queue)
    await ensure_search_attributes(runs.client, args.namespace)  # before the waiting runs are listed
    catalog = load_catalog(args.catalog, default=SEED_CATALOG)
    pending = TemporalPending(args.temporal, args.namespace, args.task_queue)
    telemetry = Telemetry.from_env(pending=pending).for_service()  # /metrics shaped as `serve`'s
    try:
        telemetry.metrics.prepare_runs(declared_pairs(catalog) | await _waiting_pairs(pending))
        if args.metrics_port:
            await _serve_metrics(args, telemetry)
        await _poll(args, runs, catalog, telemetry)
    finally:
        with contextlib.suppress(Exception):
            pending.close()
        catalog.close()
        telemetry.shutdown()
    return 0


async def _serve_metrics(args: argparse.Namespace, telemetry: Any) -> None:
    """/metrics on --metrics-addr:--metrics-port, once read (see --first-scrape-wait)."""
    from agent.service.config import first_scrape
    from telemetry.metrics import serve_metrics

    try:
        serve_metrics(args.metrics_port, telemetry.registry, addr=args.metrics_addr)
    except OSError as exc:  # the port taken, an address not of this host: one line, exit 2
        raise ConfigError(
            f"cannot serve /metrics on {args.metrics_addr}:{args.metrics_port}: {exc.strerror or exc}; "
            "pick another --metrics-port or --metrics-addr"
        ) from exc
    await first_scrape(telemetry.metrics.scraped, args.first_scrape_wait, "polling the task queue")


async def _poll(args: argparse.Namespace, runs: Any, catalog: Any, telemetry: Any) -> None:
    """Poll until SIGTERM or SIGINT (the activities in hand end first, within --grace: `StoppedShort` when
    they did not), or until Temporal fails the worker for good (`WorkerFailed`); either way the process
    exits within --grace + `STOP_SLACK_S` of it. A second signal exits at once (`Stop`)."""
    from agent.temporal import build_worker
    from agent.temporal.worker import InHand

    failures: list[BaseException] = []
    failed = asyncio.Event()
    hand = InHand()
    worker = await build_worker(
        runs.client,
        catalog,
        task_queue=args.task_queue,
        hooks=telemetry.hooks,
        heartbeat_seconds=args.heartbeat,
        continue_after_events=args.continue_after,
        catalog_wait=args.catalog_wait,
        graceful_shutdown_timeout=timedelta(seconds=args.grace),  # the activities in hand end first
        on_fatal_error=_kept_in(failures, failed),
        interceptors=[hand],
    )
    stop = Stop(args, hand, lambda: telemetry.shutdown(FLUSH_ON_EXIT_S))
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.signalled, sig)
    print(
        f"endstate worker: polling task queue {args.task_queue!r} of namespace {args.namespace!r} "
        f"at {args.temporal} for agents {', '.join(catalog.names())}",
        flush=True,
    )
    running = asyncio.create_task(worker.run())  # ends once shut down, or early when the worker failed
    await _first(stop.asked.wait(), failed.wait(), running)
    limit = (
        loop.time() + args.grace + STOP_SLACK_S
    )  # the SDK may never end a shutdown (a poll that never returns)
    stopping = asyncio.create_task(worker.shutdown())
    cut = 0
    if not (failures or running.done()):  # a signal: a graceful stop, unless the worker fails meanwhile
        await _first(running, failed.wait(), asyncio.sleep(args.grace))
        cut = 0 if failures or running.done() else hand.count  # past the grace, the SDK cancels them
    if not running.done():
        await asyncio.wait({running}, timeout=max(0.0, limit - loop.time()))
    ran = _failure_of(running)  # read even when `failures` say more: an exception never read is logged
    failure = failures[0] if failures else ran
    if failure is not None:
        raise WorkerFailed(_worker_failed(args, failure)) from failure
    if cut or not running.done():
        raise stop.short(cut, running.done())
    await stopping


async def _first(*waits: Awaitable[Any]) -> None:
    """Until the first of `waits` ends (the others cancelled, tasks among them left running)."""
    tasks = [w if isinstance(w, asyncio.Task) else asyncio.ensure_future(w) for w in waits]
    await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    for task, wait in zip(tasks, waits, strict=True):
        if task is not wait:
            task.cancel()


def _failure_of(running: asyncio.Task[None]) -> BaseException | None:
    """What the worker's run failed with (none while it runs, or when it ended as told)."""
    if not running.done():
        return None
    return None if running.cancelled() else running.exception()


def _kept_in(
    failures: list[BaseException], failed: asyncio.Event
) -> Callable[[BaseException], Awaitable[None]]:
    """A worker's `on_fatal_error`: keeps the failure and sets `failed`, to stop the worker."""

    async def fail(exc: BaseException) -> None:
        failures.append(exc)
        failed.set()

    return fail


def _worker_failed(args: argparse.Namespace, exc: BaseException) -> str:
    """One line for a worker that Temporal stopped serving (its namespace gone, its rights revoked)."""
    chain = f"{exc}: {exc.__cause__}" if exc.__cause__ else str(exc)
    said = re.search(r'message: "([^"]*)"', chain)
    reason = said.group(1) if said else chain[:300]
    if "namespace" in reason.lower() and "not found" in reason.lower():
        then = (
            "If the namespace is gone (a development server restarted in memory loses those made on "
            f"it), create it again (`temporal operator namespace create {args.namespace}`); then start "
            "the worker again"
        )
    else:
        then = "Start the worker again once Temporal serves it (the lines above say more)"
    return (
        f"the worker stopped: Temporal failed its polling of namespace {args.namespace!r} at "
        f"{args.temporal} ({reason}). {then}"
    )
