"""What the service serves and to whom: the runner, the token, the hosts it answers, its schedule."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import ipaddress
import logging
import threading
from collections.abc import AsyncIterator, Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import quote, urlsplit

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request

from agent.durable.review import UPKEEP_EVERY, Upkeep
from agent.durable.runner import Runner
from agent.errors import ConfigError
from agent.service.auth import Token
from agent.service.failing import Failing
from agent.service.http import BODY_TIMEOUT, PAGE_SIZE, Problem
from agent.service.throttle import Throttle, address_of

log = logging.getLogger("endstate.service")

LOOPBACK_HOSTS = frozenset({"localhost", "127.0.0.1", "::1"})

OPEN_PATHS = frozenset({"/healthz", "/readyz", "/metrics"})  # no run data: any host, no token

READ_AUTH_MODES = ("auto", "token", "open")

READY_TIMEOUT = 3.0  # seconds /readyz waits for the store before it says "not ready"
BUSY_RETRY_AFTER = 5  # seconds a request dropped from the queue to the store is told to wait

T = TypeVar("T")


@dataclass
class Service:
    """What the app serves: a runner over a store, the token, and metrics."""

    runner: Runner
    token: Token
    metrics: Callable[[str], tuple[bytes, str]] | None = None  # the /metrics page for an Accept header
    sweep_interval: float = 5.0
    grace: float = 10.0
    workload: Any = None  # a DemoWorkload, with --demo-workload
    allowed_hosts: frozenset[str] = LOOPBACK_HOSTS  # `Host` names served; "*" serves any
    reads_need_token: bool = False  # see `reads_need_token()`
    page_size: int = PAGE_SIZE  # runs per inbox page
    body_timeout: float = BODY_TIMEOUT
    retention: float | None = None  # seconds finished runs are kept (--retention); None: for ever
    label_counter: Any = None  # counts review labels into /metrics (telemetry's MetricsHooks)
    upkeep_interval: float = UPKEEP_EVERY
    cases_dir: Path | None = None  # where the inbox's promote writes eval cases (--cases-dir); None: nowhere
    catalog_spec: str | None = None  # the catalog as named (--catalog), written into promoted cases
    trace_url: str | None = None  # a run's trace link, `{trace_id}` in it (--trace-url, `trace_url`)
    # with metrics: whether /metrics was read yet (telemetry's MetricsHooks.scraped); recovery at start
    # waits for that up to `first_scrape_wait` seconds, so the counters are read at zero before it
    scraped: Callable[[], bool] | None = None
    first_scrape_wait: float = 0.0
    max_running: int | None = None  # runs in flight past which a start is a 503 (--max-running); None: no cap
    ready_timeout: float = READY_TIMEOUT  # seconds /readyz waits for the store (--ready-timeout)
    ready: bool = False
    signed_out: dict[str, float] = field(default_factory=dict)  # inbox sessions ended here: id -> when
    throttle: Throttle = field(default_factory=Throttle)  # failed token attempts per client address
    failing: Failing = field(default_factory=Failing)  # the periodic tasks failing now (logged sparingly)
    starting: int = 0  # starts admitted and not yet spawned (see `Api.start`)
    _tasks: list[asyncio.Task[None]] = field(default_factory=list)
    _calls: ThreadPoolExecutor | None = None  # see `off_loop`
    _probe: asyncio.Future[Any] | None = None  # see `store_answers`

    def __post_init__(self) -> None:
        if isinstance(self.runner, Runner):  # its checkpoints, too, wait for the store off the loop
            self.runner.checkpoints_on_loop = False

    async def off_loop(self, call: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """`call(*args, **kwargs)` on the service's one thread for the store calls of the runner's
        starts, claims, recovery and sweeps. A store that waits for a lock there (SQLite's busy
        timeout, PostgreSQL's lock_timeout) holds that thread, never the event loop: `/healthz` and
        every read still answer. One thread: those store calls go one at a time. A catalog's
        `prepare` and `build` (user code that may wait minutes on a clone, a lock, a slow server) run
        on threads of their own beside it (`Runner.abegin`, `aclaim`, `arecovery_jobs`,
        `aexpiry_jobs`), as the inbox's previews do: one agent's slow start holds no other request,
        and a catalog's `prepare` and `build` may each be called from two threads at once."""
        if self._calls is None:
            self._calls = ThreadPoolExecutor(max_workers=1, thread_name_prefix="endstate-service-calls")
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._calls, functools.partial(call, *args, **kwargs))

    async def for_request(self, call: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """`off_loop` for a request (a start, an answer, a resume). While a call to the store has
        waited `ready_timeout` s for its server (one that stopped answering: the store says, see
        `PostgresStore.waited`), a call still queued is dropped before it starts: a 503 with
        Retry-After that changed nothing, not a wait as long as every call queued before it. A long
        queue that moves is waited for, and so is a call that started (its store calls end within
        the store's timeout)."""
        gate = _Gate()
        done = asyncio.ensure_future(self.off_loop(gate.run, call, *args, **kwargs))
        done.add_done_callback(_retrieved)
        while True:
            try:
                return await asyncio.wait_for(asyncio.shield(done), self.ready_timeout)
            except TimeoutError:
                if self._stuck() and gate.abandon():
                    break
        raise Problem(
            503,
            f"this service's calls to its store are queued behind one the store has not answered for "
            f"{self.ready_timeout:g} s (see /readyz); nothing was changed. Send it again in a few seconds",
            headers={"Retry-After": str(BUSY_RETRY_AFTER)},
        )

    def _stuck(self) -> bool:
        """True when a call to the store has waited `ready_timeout` s or more for its server."""
        waited = getattr(self.runner.store, "waited", None)
        return waited is not None and waited() >= self.ready_timeout

    async def store_answers(self) -> None:
        """Return once the store answered a trivial call (its `answers`, else a read: a SQLite file
        another process keeps locked answers reads, not writes); raise `TimeoutError` when it has not
        within `ready_timeout` s, or its `StoreError`. One call at a time: while one waits on a store
        that hangs, each later check waits for that one (no pile of threads stuck on it)."""
        if self._probe is None or self._probe.done():
            store = self.runner.store
            probe = getattr(store, "answers", store.schema_version)
            self._probe = asyncio.ensure_future(run_in_threadpool(probe))
            self._probe.add_done_callback(_retrieved)
        await asyncio.wait_for(asyncio.shield(self._probe), self.ready_timeout)

    @contextlib.asynccontextmanager
    async def lifespan(self, app: Starlette) -> AsyncIterator[None]:
        """Recover runs at start (in the sweeper, once /metrics was read: see `first_scrape_wait`)
        and while up, sweep deadlines, checkpoint runs at shutdown. The service serves at once: a
        recovered run's build may take up to the prepare deadline, and a start that waited for each
        served nothing meanwhile (under a liveness probe, a restart loop)."""
        self.ready = True
        self._tasks.append(asyncio.create_task(self._sweep_forever(), name="sweeper"))
        if self.retention is not None or self.label_counter is not None:
            self._tasks.append(asyncio.create_task(self._upkeep_forever(), name="upkeep"))
        if self.workload is not None:
            self._tasks.append(asyncio.create_task(self.workload.run(self.off_loop), name="demo-workload"))
        try:
            yield
        finally:
            self.ready = False
            if self.workload is not None:
                self.workload.stop()
            for task in self._tasks:  # first: nothing starts new runs while they are checkpointed
                task.cancel()
            await asyncio.gather(*self._tasks, return_exceptions=True)
            await self.runner.shutdown(self.grace)
            if self._calls is not None:
                self._calls.shutdown(wait=False)
                self._calls = None

    async def _sweep_forever(self) -> None:
        """Expire runs past their deadline; take over runs whose worker died since the start."""
        if self.scraped is not None and self._waits_for_scrape():
            await first_scrape(self.scraped, self.first_scrape_wait, "recovering runs")
        await self._recover()
        self._tasks.append(asyncio.create_task(self._audit_forever(), name="audits"))
        while True:
            await asyncio.sleep(self.sweep_interval)
            try:
                for job in await self._jobs("aexpiry_jobs", "expiry_jobs"):
                    self.runner.spawn(job)
            except Exception as exc:  # one that escaped would end this loop, unseen, for good
                self.failing.failed("the deadline sweep", exc)
            else:
                self.failing.worked("the deadline sweep")
            await self._recover()

    async def _audit_forever(self) -> None:
        """Make the success audits that are due, beside the sweep: a check may take as long as its
        timeout (an evaluator model, a look at the outside world), and deadlines and recovery never
        wait for it."""
        while True:
            await asyncio.sleep(self.sweep_interval)
            try:
                await self.runner.audit_due()
            except Exception as exc:  # one that escaped would end this loop, unseen, for good
                self.failing.failed("making the due success audits", exc)
            else:
                self.failing.worked("making the due success audits")

    def throttled(self, request: Request) -> int:
        """Seconds the request's client must wait before offering a token again (0: it may now)."""
        return self.throttle.retry_after(address_of(request))

    def wrong_token(self, request: Request) -> None:
        """Count a wrong token the request's client offered (see `Throttle`)."""
        self.throttle.failed(address_of(request))

    def room(self) -> int | None:
        """How many more runs `max_running` lets this service hold; None: no cap."""
        if self.max_running is None:
            return None
        return max(0, self.max_running - getattr(self.runner, "in_flight", 0) - self.starting)

    def _waits_for_scrape(self) -> bool:
        return self.scraped is not None and self.first_scrape_wait > 0

    async def _upkeep_forever(self) -> None:
        """Count new review labels and prune finished runs past the retention (`Upkeep`)."""
        upkeep = Upkeep(self.runner.store, self.retention, self.label_counter, self.runner.clock.time)
        while True:
            try:
                await run_in_threadpool(upkeep.once)
            except Exception as exc:  # one that escaped would end this loop, unseen, for good
                self.failing.failed("pruning or counting labels", exc)
            else:
                self.failing.worked("pruning or counting labels")
            await asyncio.sleep(self.upkeep_interval)

    async def _jobs(self, made_async: str, made: str, *args: Any) -> list[Any]:
        """The runner's sweep or recovery jobs: a store's runner builds each run's agent on a thread of
        its own, its store calls on the thread of `off_loop` (a hung build holds no request meanwhile);
        another runner (Temporal's) makes them on that thread."""
        jobs_of = getattr(self.runner, made_async, None)
        if jobs_of is None:
            jobs: list[Any] = await self.off_loop(getattr(self.runner, made), *args)
            return jobs
        return list(await jobs_of(*args, calls=self.off_loop))

    async def _recover(self) -> None:
        """Take over runs of dead workers (on the thread of `off_loop`), as many as `max_running` has
        room for: the first service to sweep after a replica died would otherwise take all its runs at
        once. The others wait for the next sweep, here or in a replica with room."""
        room = self.room()
        if room == 0:
            return
        try:
            for job in await self._jobs("arecovery_jobs", "recovery_jobs", room):
                self.runner.spawn(job)
        except Exception as exc:
            self.failing.failed("recovering runs", exc)
        else:
            self.failing.worked("recovering runs")


class _Gate:
    """Runs a queued call unless it was abandoned first (`abandon` is True only then)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._state = "queued"

    def run(self, call: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        with self._lock:
            if self._state == "abandoned":  # its request was answered 503 already: nobody reads this
                raise RuntimeError("a call dropped from the queue was not run")
            self._state = "started"
        return call(*args, **kwargs)

    def abandon(self) -> bool:
        with self._lock:
            if self._state == "queued":
                self._state = "abandoned"
        return self._state == "abandoned"


def _retrieved(probe: asyncio.Future[Any]) -> None:
    """Read a probe's outcome, so one that failed after its caller stopped waiting logs nothing."""
    if not probe.cancelled():
        probe.exception()


async def first_scrape(scraped: Callable[[], bool], wait: float, then: str) -> None:
    """Until /metrics was read (its counters at zero, so `increase()` counts what comes next), at
    most `wait` seconds; the process serves /metrics meanwhile, and then goes on (`then`). No wait
    asked for (0) is none: nothing to warn of."""
    if wait <= 0:
        return
    deadline = asyncio.get_running_loop().time() + wait
    while not scraped():
        if asyncio.get_running_loop().time() >= deadline:
            log.warning("/metrics was not read within %g s of the start: %s now", wait, then)
            return
        await asyncio.sleep(0.1)


TRACE_ID = "{trace_id}"  # where a trace link template takes the run's trace id


def trace_url(template: str | None) -> str | None:
    """A trace link template (`serve --trace-url`, or `$ENDSTATE_TRACE_URL`) checked at start: an
    http(s) address with `{trace_id}` in it and no other braces (a Grafana Explore address has its
    JSON's braces percent-encoded: %7B, %7D). None (or empty): no link."""
    if not template:
        return None
    problem = _trace_url_problem(template)
    if problem:
        raise ConfigError(
            f"--trace-url (or $ENDSTATE_TRACE_URL) {template[:200]!r}: {problem}; give an http(s) address "
            f"with {TRACE_ID} where the run's trace id goes, e.g. https://tempo.example.com/trace/{TRACE_ID}"
        )
    return template


def _trace_url_problem(template: str) -> str:
    """What is wrong with a trace link template ('' when nothing is)."""
    try:
        parts = urlsplit(template)
    except ValueError as exc:  # a bracket left open: `http://[::1/trace`
        return f"it is not an address ({exc})"
    if parts.scheme.lower() not in ("http", "https") or not parts.netloc:
        return "it is not an http:// or https:// address with a host"
    if not template.isprintable() or any(c.isspace() for c in template):
        return "it holds spaces or control characters (percent-encode them: %20)"
    if TRACE_ID not in template:
        return f"it does not say where the trace id goes: put {TRACE_ID} in it"
    if "{" in parts.netloc:  # the link's host is the operator's, never one a run's trace id names
        return f"{TRACE_ID} is in its host: put it in the path or the query"
    if "{" in template.replace(TRACE_ID, "") or "}" in template.replace(TRACE_ID, ""):
        return f"it has braces other than {TRACE_ID} (percent-encode them: %7B and %7D)"
    return ""


def trace_link(template: str | None, trace_id: str) -> str | None:
    """The address of trace `trace_id`: `template` with the id percent-encoded in it; None: no template."""
    return None if template is None else template.replace(TRACE_ID, quote(trace_id, safe=""))


WILDCARDS = frozenset({"0.0.0.0", "::", ""})  # hosts that listen on every address of the machine


def allowed_hosts(listen_host: str, extra: Iterable[str] = ()) -> frozenset[str]:
    """The `Host` names to serve: loopback names, the address listened on (unless a wildcard
    such as 0.0.0.0), and `extra` (names clients use: `agent`, `inbox.example.com`; `*` for any)."""
    names = {host_name(h) for h in [listen_host, *extra] if h.strip()}
    return frozenset((names - WILDCARDS) | LOOPBACK_HOSTS)


def reads_need_token(listen_host: str, mode: str = "auto") -> bool:
    """Whether reads need the token: `token` always, `open` never, `auto` when the service
    listens beyond loopback (0.0.0.0, ::, a LAN address or a name other than localhost)."""
    if mode not in READ_AUTH_MODES:
        raise ConfigError(f"read auth must be one of {', '.join(READ_AUTH_MODES)}, not {mode!r}")
    return mode == "token" or (mode == "auto" and not is_loopback(listen_host))


def is_loopback(host: str) -> bool:
    """Whether `host` (a name or an address listened on) is this machine's loopback only."""
    name = host_name(host)
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def host_name(host: str) -> str:
    """`Host` header or address to a bare lower-case name: `[::1]:8000` -> `::1`, `A.B.:80` -> `a.b`."""
    host = host.strip().lower()
    if host.startswith("["):
        return host[1:].partition("]")[0]
    if host.count(":") == 1:
        host = host.partition(":")[0]
    return host.rstrip(".")
