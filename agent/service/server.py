"""`endstate serve`: wire a store, a catalog, telemetry and the token into uvicorn."""

from __future__ import annotations

import argparse
import logging
import math
import os
import signal
import socket
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent._args import given, given_path
from agent.durable import review
from agent.durable._storetime import pending_by_store_clock
from agent.durable.catalog import ENV_CATALOG, SEED_CATALOG, Catalog, load_catalog
from agent.durable.runner import Runner, runner_with_telemetry
from agent.durable.store import default_url, open_store
from agent.durable.store.urls import sqlite_path
from agent.errors import ConfigError
from agent.service.auth import ENV_TOKEN, ENV_TOKEN_FILE, Token, load_token
from agent.service.config import READY_TIMEOUT, WILDCARDS, Service, is_loopback, trace_url
from agent.service.throttle import FAILED_LIMIT, FAILED_WINDOW, Throttle
from agent.text import one_line

if TYPE_CHECKING:
    from collections.abc import Callable
    from types import FrameType

    import uvicorn

    from telemetry import Telemetry

ENV_HOST = "ENDSTATE_HOST"
ENV_PORT = "ENDSTATE_PORT"
ENV_ALLOWED_HOSTS = "ENDSTATE_ALLOWED_HOSTS"
ENV_READ_AUTH = "ENDSTATE_READ_AUTH"
ENV_CASES_DIR = "ENDSTATE_CASES_DIR"
ENV_FIRST_SCRAPE_WAIT = "ENDSTATE_FIRST_SCRAPE_WAIT"
ENV_MAX_RUNNING = "ENDSTATE_MAX_RUNNING"
ENV_READY_TIMEOUT = "ENDSTATE_READY_TIMEOUT"
ENV_TRACE_URL = "ENDSTATE_TRACE_URL"

READ_AUTH_HELP = (
    "who may read runs, the pending list and the inbox: 'token' (the token is needed), 'open' "
    "(anyone who reaches the port), or 'auto' (default: the token is needed unless --host is a "
    f"loopback address); or set ${ENV_READ_AUTH}"
)
ALLOWED_HOST_HELP = (
    "a Host name clients use to reach the service (repeatable; or comma-separated in "
    f"${ENV_ALLOWED_HOSTS}). Loopback names and --host are always served; '*' serves any host"
)


def port_number(text: str) -> int:
    """An argparse type: a TCP port, 1-65535."""
    return _whole(text, 65535, "a port number from 1 to 65535")


def page_size(text: str) -> int:
    """An argparse type: runs per inbox page, 1-500."""
    return _whole(text, 500, "a page size from 1 to 500")


def positive_int(text: str) -> int:
    """An argparse type: a whole number from 1."""
    return _whole(text, math.inf, "a whole number from 1")


def _whole(text: str, most: float, what: str) -> int:
    """`text` as a whole number from 1 to `most`, ASCII digits only, or a usage error saying `what`."""
    if not text.isascii() or not text.isdigit() or not 1 <= int(text) <= most:
        raise argparse.ArgumentTypeError(f"{text!r} is not {what}")
    return int(text)


def seconds(text: str) -> float:
    """An argparse type: a finite number of seconds above 0 (a sweep every 0 s would spin)."""
    value = _seconds(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds above 0")
    return value


def seconds_from_zero(text: str) -> float:
    """An argparse type: a finite number of seconds from 0."""
    value = _seconds(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds from 0")
    return value


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds")
    return value


def add_serve_args(p: argparse.ArgumentParser) -> None:
    host = os.environ.get(ENV_HOST) or "127.0.0.1"  # set but empty bound every interface
    p.add_argument(
        "--host",
        type=given,
        default=host,
        help=f"address to listen on (default: ${ENV_HOST}, else 127.0.0.1)",
    )
    p.add_argument(
        "--port",
        type=port_number,
        default=os.environ.get(ENV_PORT) or "8000",
        help=f"port (1-65535) (default: ${ENV_PORT}, else 8000)",
    )
    p.add_argument("--allowed-host", action="append", default=None, metavar="NAME", help=ALLOWED_HOST_HELP)
    p.add_argument(
        "--read-auth", choices=("auto", "token", "open"), default=os.environ.get(ENV_READ_AUTH) or "auto",
        help=READ_AUTH_HELP,
    )  # fmt: skip
    p.add_argument(
        "--body-timeout", type=seconds, default=30.0,
        help="seconds a request body may take, and a client may take none of its response",
    )  # fmt: skip
    p.add_argument(
        "--header-timeout", type=seconds, default=10.0, help="seconds a request's headers may take"
    )
    p.add_argument(
        "--token-file",
        type=given,
        default=None,
        help=f"file holding the API token, mode 0600 (default: ${ENV_TOKEN} holds the token itself, else "
        f"${ENV_TOKEN_FILE} names its file, else the file `token` beside a SQLite store, or in .endstate/, "
        "made at the first start)",
    )
    p.add_argument("--demo-workload", action="store_true", help="keep playing the example scenarios")
    p.add_argument("--demo-interval", type=seconds, default=15.0, help="seconds between workload rounds")
    p.add_argument(
        "--demo-answer-after", type=seconds_from_zero, default=20.0, help="seconds before the demo answers"
    )
    p.add_argument("--sweep-interval", type=seconds, default=5.0, help="seconds between deadline sweeps")
    p.add_argument(
        "--grace", type=seconds_from_zero, default=10.0, help="seconds runs get to checkpoint at shutdown"
    )
    p.add_argument("--page-size", type=page_size, default=50, help="runs per inbox page (1-500)")
    p.add_argument(
        "--ready-timeout",
        type=seconds,
        default=os.environ.get(ENV_READY_TIMEOUT) or str(READY_TIMEOUT),
        metavar="SECONDS",
        help="seconds /readyz waits for the store before it answers 503 'not ready' "
        f"(default: ${ENV_READY_TIMEOUT}, else {READY_TIMEOUT:g})",
    )
    p.add_argument(
        "--max-running",
        type=positive_int,
        default=os.environ.get(ENV_MAX_RUNNING) or "500",
        metavar="N",
        help="runs this service drives at once; past it a start is a 503 with Retry-After (answers, "
        f"recovery and the demo workload are not refused) (default: ${ENV_MAX_RUNNING}, else 500)",
    )
    p.add_argument(
        "--token-failures",
        type=positive_int,
        default=str(FAILED_LIMIT),
        metavar="N",
        help="wrong tokens (API or inbox sign-in) a client address may send within --token-window; "
        f"past them its token attempts are a 429 with Retry-After, unchecked (default: {FAILED_LIMIT})",
    )
    p.add_argument(
        "--token-window",
        type=seconds,
        default=str(FAILED_WINDOW),
        metavar="SECONDS",
        help=f"seconds the wrong tokens of --token-failures are counted over (default: {FAILED_WINDOW:g})",
    )
    first_scrape_arg(p, "recovers the runs of dead workers")
    p.add_argument(
        "--retention",
        metavar="DURATION",
        help="prune finished runs older than this, e.g. 30d, every hour (default: none, runs are kept)",
    )
    p.add_argument(
        "--cases-dir",
        type=given_path,
        default=os.environ.get(ENV_CASES_DIR) or None,
        metavar="DIR",
        help="folder the inbox's promote button writes eval cases into (made when missing; an existing "
        f"case file is never overwritten); without it the inbox only shows and downloads cases "
        f"(default: ${ENV_CASES_DIR}, else none)",
    )
    p.add_argument(
        "--trace-url",
        type=given,
        default=os.environ.get(ENV_TRACE_URL) or None,
        metavar="TEMPLATE",
        help="link each run's trace id on the inbox's pages (waiting runs, review) to this http(s) "
        "address, {trace_id} in it standing for the id (percent-encoded), e.g. a Grafana Explore address "
        f"of your Tempo data source (see README); without it the pages show the id alone (default: "
        f"${ENV_TRACE_URL}, else none)",
    )


class _Given(argparse.Action):
    """Store an option's value and mark it given on the command line (`DEST_given`), not defaulted
    from the environment."""

    def __call__(self, parser: Any, namespace: Any, values: Any, option_string: str | None = None) -> None:
        setattr(namespace, self.dest, values)
        setattr(namespace, f"{self.dest}_given", True)


def first_scrape_arg(p: argparse.ArgumentParser, what: str) -> None:
    """`--first-scrape-wait`: how long the process waits for Prometheus's first read of /metrics
    before it `what` (so a new pod's counters are read at zero first); `first_scrape_wait_given`
    says whether the command line gave it (its default is `$ENDSTATE_FIRST_SCRAPE_WAIT`, which
    `serve` and `worker` share)."""
    p.set_defaults(first_scrape_wait_given=False)
    p.add_argument(
        "--first-scrape-wait",
        action=_Given,
        type=seconds_from_zero,
        default=os.environ.get(ENV_FIRST_SCRAPE_WAIT) or "0",
        metavar="SECONDS",
        help=f"at start, wait up to this long for the first scrape of /metrics before the process {what}, "
        "so Prometheus reads its counters at zero first and increase() counts those runs; a new pod "
        "(a new instance label) needs it: a scrape interval, plus the service discovery's refresh "
        "interval for a process Prometheus finds by discovery "
        f"(default: ${ENV_FIRST_SCRAPE_WAIT}, else 0)",
    )


def declared_pairs(catalog: Catalog) -> set[tuple[str, str]]:
    """(agent, task type) of each task type the catalog's entries declare."""
    return {(name, t) for name in catalog.names() for t in catalog.entry(name).task_types}


def runs_known_at_start(runner: Runner) -> set[tuple[str, str]]:
    """(agent, task type) of the runs a process may resume or recover first: the catalog's declared
    task types, the runs recovery takes over, the runs waiting for a person."""
    pairs = declared_pairs(runner.catalog) | {(r.agent, r.task_type) for r in runner.recoverable()}
    return pairs | {(agent, task_type) for agent, task_type, *_ in runner.store.pending_groups()}


def serve(args: argparse.Namespace) -> int:
    """Run the service until SIGTERM or Ctrl-C; in-flight runs are checkpointed as cancelled."""
    import uvicorn

    from agent.service.app import create_app, reads_need_token
    from agent.service.guard import accept_backlog, guarded_h11
    from telemetry import Telemetry

    read_token = reads_need_token(args.host, args.read_auth)  # bad settings said before anything is made
    trace_url(args.trace_url)
    check_port_free(args.host, args.port)
    log_for_operators()  # in place of the command line's one-line handler
    store = open_store(args.store, timeout=args.store_timeout)
    catalog = load_catalog(args.catalog, default=SEED_CATALOG)
    telemetry = Telemetry.from_env(pending=pending_by_store_clock(store)).for_service()  # a fresh registry
    try:
        runner = runner_with_telemetry(store, catalog, telemetry, args.lease)
        telemetry.metrics.prepare_runs(runs_known_at_start(runner))  # at zero before any recovery
        token, source = load_token(args.token_file, _state_dir(args.store))
        print(f"endstate serve: store {store.shown}; token from {source}", flush=True)
        service = _service(args, runner, token, telemetry, read_token)
        say_serving(service, args)
        config = uvicorn.Config(
            create_app(service), host=args.host, port=args.port, lifespan="on", log_level="info",
            timeout_graceful_shutdown=max(1, int(args.grace)), backlog=accept_backlog(),
            http=guarded_h11(args.header_timeout, write_timeout=args.body_timeout),
        )  # fmt: skip
        run_until_stopped(config, lambda: runner.stop_soon(args.grace))
    finally:
        catalog.close()
        telemetry.shutdown()
        store.close()
    return 0


def _service(
    args: argparse.Namespace, runner: Runner, token: Token, telemetry: Telemetry, read_token: bool
) -> Service:
    """The service `serve`'s arguments ask for, over `runner`."""
    from agent.service.app import allowed_hosts
    from agent.service.workload import DemoWorkload

    workload = None
    if args.demo_workload:
        workload = DemoWorkload(runner, args.demo_interval, args.demo_answer_after)
    return Service(
        runner,
        token,
        metrics=telemetry.exposition,
        sweep_interval=args.sweep_interval,
        grace=args.grace,
        workload=workload,
        retention=review.duration("--retention", args.retention) if args.retention else None,
        label_counter=telemetry.metrics,
        allowed_hosts=allowed_hosts(args.host, _extra_hosts(args)),
        reads_need_token=read_token,
        body_timeout=args.body_timeout,
        page_size=args.page_size,
        cases_dir=cases_dir(args.cases_dir),
        catalog_spec=args.catalog or os.environ.get(ENV_CATALOG) or None,
        trace_url=trace_url(args.trace_url),
        scraped=telemetry.metrics.scraped,
        first_scrape_wait=args.first_scrape_wait,
        max_running=args.max_running,
        ready_timeout=args.ready_timeout,
        throttle=Throttle(args.token_failures, args.token_window),
    )


class OperatorLog(logging.Formatter):
    """A service's log line: time, level, logger and message, the message on one line with what a
    terminal acts on escaped (`one_line`). It quotes what came from outside (a run id in a row edited by
    hand, an exception's words): a line break there would forge a log line of its own, an escape
    sequence drive the terminal of whoever tails the log. A traceback follows the line as usual."""

    def __init__(self) -> None:
        super().__init__("%(asctime)s %(levelname)s %(name)s: %(message)s")

    def formatMessage(self, record: logging.LogRecord) -> str:
        return one_line(super().formatMessage(record))


def log_for_operators() -> None:
    """Log INFO and above to stderr in `OperatorLog` lines (`serve`, `serve --temporal`)."""
    handler = logging.StreamHandler()
    handler.setFormatter(OperatorLog())
    logging.basicConfig(level=logging.INFO, handlers=[handler], force=True)


def say_serving(service: Service, args: argparse.Namespace) -> None:
    """Who may read, the hosts served, the inbox's address and where it promotes cases: one line each."""
    hosts = ", ".join(sorted(service.allowed_hosts))
    print(f"endstate serve: {who_reads(service, args.host)}; hosts served: {hosts}", flush=True)
    print(f"endstate serve: inbox: {inbox_url(args.host, args.port)}", flush=True)
    if service.cases_dir is not None:
        print(f"endstate serve: the inbox promotes eval cases into {service.cases_dir}", flush=True)


def who_reads(service: Service, host: str) -> str:
    """Who may read the runs, as the start line says it: open reads beyond loopback (`--read-auth
    open` on 0.0.0.0) are said to be open to the network, never "(loopback)"."""
    if service.reads_need_token:
        return "reads need the token"
    if is_loopback(host):
        return "reads are open (loopback)"
    where = "any of this machine's addresses" if host in WILDCARDS else host
    return f"reads are open to whoever reaches {where} (--read-auth open): the runs, /pending and the inbox"


def check_port_free(host: str, port: int) -> None:
    """Refuse an address this service cannot listen on (a port another process holds, a host not
    of this machine) in one line, before a store or a token is made: uvicorn would log its own lines
    and exit 3. The port is bound as uvicorn binds it (IPv6 for a host with a colon), then let go."""
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError as exc:  # socket.gaierror too: a host name that does not resolve
            raise ConfigError(
                f"cannot listen on {host}:{port} ({exc.strerror or exc}): another process holds the port, "
                "or the address is not this machine's; choose another --port or --host"
            ) from None


def cases_dir(given: Path | str | None) -> Path | None:
    """The folder promoted cases go to, checked at start: a folder, or a path one can be made at."""
    if given is None:
        return None
    path = Path(given).expanduser().resolve()
    if path.exists() and not path.is_dir():
        raise ConfigError(
            f"--cases-dir {given}: that is a file, not a folder; name a folder for the eval cases"
        )
    return path


def inbox_url(host: str, port: int) -> str:
    """The inbox's address as a browser on this machine opens it (a wildcard means loopback)."""
    name = {"0.0.0.0": "127.0.0.1", "": "127.0.0.1", "::": "::1"}.get(host, host)
    return f"http://{f'[{name}]' if ':' in name else name}:{port}/inbox"


def run_until_stopped(config: uvicorn.Config, stopping: Callable[[], None] | None = None) -> None:
    """Serve `config` until SIGTERM or Ctrl-C. uvicorn re-raises the SIGTERM it handled once it has
    shut down (the process would die by it); this handler lets the caller go on to close what it
    opened and flush telemetry, then exit 0. A SIGTERM that comes before uvicorn has put in its
    handler stops the server too (it was ignored, and the service ran on).

    `stopping()` is called at the signal itself (a runner's `stop_soon`): uvicorn shuts the app down
    only once its connections are drained (a request still in flight holds it up to its graceful
    timeout), and runs went on taking new turns and starting tools meanwhile, their grace counted
    only from then."""
    import uvicorn

    class Server(uvicorn.Server):
        def handle_exit(self, sig: int, frame: FrameType | None) -> None:
            if stopping is not None:
                stopping()
            super().handle_exit(sig, frame)

    server = Server(config)

    def stop(*_: object) -> None:  # before uvicorn's own handler is in: it would have been lost
        if stopping is not None:
            stopping()
        server.should_exit = True

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        server.run()
    finally:
        signal.signal(signal.SIGTERM, previous)


def _extra_hosts(args: argparse.Namespace) -> list[str]:
    given: list[str] = args.allowed_host or []
    if any(not name.strip() for name in given):  # an empty flag is an error (an empty variable: unset)
        raise ConfigError(
            "--allowed-host needs a name clients put in the Host header, such as inbox.example.com"
        )
    extra = given + [h for h in os.environ.get(ENV_ALLOWED_HOSTS, "").split(",") if h.strip()]
    for name in extra:  # `http://inbox.example.com` allowed the host "http", never inbox.example.com
        if "/" in name or "@" in name:
            raise ConfigError(
                f"--allowed-host (or ${ENV_ALLOWED_HOSTS}) takes the names clients put in the Host "
                f"header, such as inbox.example.com, not {name.strip()!r}: leave out the scheme and path"
            )
    return extra


def _state_dir(store_url: str | None) -> Path:
    """Where a made token is kept: beside a SQLite store, else ./.endstate."""
    path = sqlite_path(store_url or default_url())
    return Path(".endstate") if path is None else path.parent
