"""The agent service: a starlette app that starts, reads, answers and approves durable runs.

JSON API (bodies are standard JSON objects of at most `MAX_BODY` bytes; endpoints
that change a run need `Authorization: Bearer <token>`, and so do reads when the
service listens beyond loopback, see `reads_need_token`):

    POST /runs                    {"agent", "task", "task_type"?, "state"?, "run_id"?} -> 202
    GET  /runs[?status=&limit=]   recent runs
    GET  /runs/{id}               one run and its result
    GET  /pending[?limit=&offset=] runs waiting for a person, oldest first, a page at a time
    POST /runs/{id}/answer        {"answer"}   -> 202, the run continues here
    POST /runs/{id}/approve       {}           -> 202
    POST /runs/{id}/deny          {"reason"?}  -> 202
    GET  /metrics /healthz /readyz, and the help inbox at /inbox

Only requests whose `Host` is allowed are served (loopback names and the
configured ones: a web page cannot rebind its own name to this service);
`/healthz`, `/readyz` and `/metrics`, which hold no run data, answer any host.

Errors are `{"error": "..."}` with 400 (malformed), 401 (no valid token),
404 (unknown run), 408 (the body did not arrive in time), 409 (not waiting,
or claimed by another worker), 413 (body too large), 421 (a host not served
here), 422 (an answer that does not fit the question). None of them changes
the store.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import json
import logging
import re
import time
from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.middleware import Middleware
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, PlainTextResponse, RedirectResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from agent.errors import ConfigError, EndstateError
from agent.runner import AnswerError, Job, Runner
from agent.service import inbox
from agent.service.auth import Token
from agent.store import NotClaimable, RunExists, RunRecord, RunStatus, StoreError, UnknownRun
from agent.store.urls import scrub

log = logging.getLogger("endstate.service")

MAX_BODY = 64 * 1024
BODY_TIMEOUT = 30.0  # seconds a request body may take to arrive
PAGE_SIZE = 50  # runs per page of /pending and of the inbox
MAX_PAGE = 500
LOOPBACK_HOSTS = frozenset({"localhost", "127.0.0.1", "::1"})
OPEN_PATHS = frozenset({"/healthz", "/readyz", "/metrics"})  # no run data: any host, no token
READ_AUTH_MODES = ("auto", "token", "open")


class Problem(Exception):
    """An HTTP error with a message for the client."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


STATUS_OF: list[tuple[type[Exception], int]] = [
    (UnknownRun, 404),
    (NotClaimable, 409),
    (RunExists, 409),
    (AnswerError, 422),
    (ConfigError, 400),
    (StoreError, 503),
    (EndstateError, 400),
]


def status_of(exc: Exception) -> int:
    if isinstance(exc, Problem):
        return exc.status
    return next(code for kind, code in STATUS_OF if isinstance(exc, kind))


@dataclass
class Service:
    """What the app serves: a runner over a store, the token, and metrics."""

    runner: Runner
    token: Token
    registry: Any = None  # a prometheus_client registry, when telemetry is on
    sweep_interval: float = 5.0
    grace: float = 10.0
    workload: Any = None  # a DemoWorkload, with --demo-workload
    allowed_hosts: frozenset[str] = LOOPBACK_HOSTS  # `Host` names served; "*" serves any
    reads_need_token: bool = False  # see `reads_need_token()`
    page_size: int = PAGE_SIZE  # runs per inbox page
    body_timeout: float = BODY_TIMEOUT
    ready: bool = False
    _tasks: list[asyncio.Task[None]] = field(default_factory=list)

    @contextlib.asynccontextmanager
    async def lifespan(self, app: Starlette) -> AsyncIterator[None]:
        """Recover runs at start and while up, sweep deadlines, checkpoint runs at shutdown."""
        await self._recover()
        self.ready = True
        self._tasks.append(asyncio.create_task(self._sweep_forever(), name="sweeper"))
        if self.workload is not None:
            self._tasks.append(asyncio.create_task(self.workload.run(), name="demo-workload"))
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

    async def _sweep_forever(self) -> None:
        """Expire runs past their deadline; take over runs whose worker died since the start."""
        while True:
            await asyncio.sleep(self.sweep_interval)
            try:
                for job in self.runner.expiry_jobs():
                    self.runner.spawn(job)
            except EndstateError:
                log.exception("the deadline sweep failed; trying again later")
            await self._recover()

    async def _recover(self) -> None:
        """Take over runs of dead workers (in the loop, as catalogs need not be thread-safe)."""
        try:
            for job in self.runner.recovery_jobs():
                self.runner.spawn(job)
        except EndstateError:
            log.exception("recovering runs failed; trying again later")


def create_app(service: Service) -> Starlette:
    """The ASGI app for `service`."""
    api = Api(service)
    routes = [
        Route("/runs", api.start, methods=["POST"]),
        Route("/runs", api.list_runs, methods=["GET"]),
        Route("/runs/{run_id}", api.read_run, methods=["GET"]),
        Route("/runs/{run_id}/answer", api.answer, methods=["POST"]),
        Route("/runs/{run_id}/approve", api.approve, methods=["POST"]),
        Route("/runs/{run_id}/deny", api.deny, methods=["POST"]),
        Route("/pending", api.pending, methods=["GET"]),
        Route("/metrics", api.metrics, methods=["GET"]),
        Route("/healthz", api.healthz, methods=["GET"]),
        Route("/readyz", api.readyz, methods=["GET"]),
        Route("/", lambda _: RedirectResponse("/inbox", 307), methods=["GET"]),
        *inbox.routes(service),
    ]
    handlers = {Problem: api.problem, EndstateError: api.problem, ClientDisconnect: api.gone}
    app = Starlette(
        routes=routes,
        lifespan=service.lifespan,
        exception_handlers=handlers,  # type: ignore[arg-type]
        middleware=[Middleware(HostGuard, allowed=service.allowed_hosts)],
    )
    app.state.service = service
    return app


# -- who may ask: hosts and tokens ----------------------------------------------------------------


def allowed_hosts(listen_host: str, extra: Iterable[str] = ()) -> frozenset[str]:
    """The `Host` names to serve: loopback names, the address listened on (unless a wildcard
    such as 0.0.0.0), and `extra` (names clients use: `agent`, `inbox.example.com`; `*` for any)."""
    names = {_host_name(h) for h in [listen_host, *extra] if h.strip()}
    return frozenset((names - {"0.0.0.0", "::", ""}) | LOOPBACK_HOSTS)


def reads_need_token(listen_host: str, mode: str = "auto") -> bool:
    """Whether reads need the token: `token` always, `open` never, `auto` when the service
    listens beyond loopback (0.0.0.0, ::, a LAN address or a name other than localhost)."""
    if mode not in READ_AUTH_MODES:
        raise ConfigError(f"read auth must be one of {', '.join(READ_AUTH_MODES)}, not {mode!r}")
    return mode == "token" or (mode == "auto" and not _is_loopback(listen_host))


def _is_loopback(host: str) -> bool:
    name = _host_name(host)
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def _host_name(host: str) -> str:
    """`Host` header or address to a bare lower-case name: `[::1]:8000` -> `::1`, `A.B.:80` -> `a.b`."""
    host = host.strip().lower()
    if host.startswith("["):
        return host[1:].partition("]")[0]
    if host.count(":") == 1:
        host = host.partition(":")[0]
    return host.rstrip(".")


class HostGuard:
    """Serve only allowed `Host` headers (DNS rebinding); the open paths answer any host."""

    def __init__(self, app: ASGIApp, allowed: frozenset[str]) -> None:
        self.app = app
        self.allowed = allowed

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"] not in OPEN_PATHS and "*" not in self.allowed:
            raw = dict(scope["headers"]).get(b"host", b"").decode("latin-1")
            if _host_name(raw) not in self.allowed:
                message = (
                    f"host {raw[:100]!r} is not served here; serve it with --allowed-host "
                    "(or $ENDSTATE_ALLOWED_HOSTS)"
                )
                await JSONResponse({"error": message}, status_code=421)(scope, receive, send)
                return
        await self.app(scope, receive, send)


class Api:
    """The JSON endpoints."""

    def __init__(self, service: Service) -> None:
        self.service = service
        self.runner = service.runner

    async def problem(self, request: Request, exc: Exception) -> Response:
        return JSONResponse({"error": self.shown(str(exc))}, status_code=status_of(exc))

    async def gone(self, request: Request, exc: Exception) -> Response:
        """The client went away mid-body: one line in the log, nothing to answer."""
        log.info("%s %s: the client disconnected before its body arrived", request.method, request.url.path)
        return Response(status_code=400)

    def shown(self, message: str) -> str:
        """A message fit to show: no store password in it."""
        return scrub(message, getattr(self.runner.store, "url", None))

    async def start(self, request: Request) -> Response:
        self._authorize(request)
        body = await json_body(request, self.service.body_timeout)
        options = {
            "task_type": optional(body, "task_type", str),
            "state": optional(body, "state", dict),
            "run_id": optional(body, "run_id", str),
        }
        job = self.runner.begin(required(body, "agent"), required(body, "task"), **options)
        return self._accepted(job)

    async def list_runs(self, request: Request) -> Response:
        self._authorize_read(request)
        status = request.query_params.get("status")
        if status is not None and status not in {str(s) for s in RunStatus}:
            raise Problem(400, f"status must be one of {', '.join(RunStatus)}")
        limit = _int(request.query_params.get("limit", "100"), 1, 1000, "limit")
        records = await run_in_threadpool(
            self.runner.store.list_runs, RunStatus(status) if status else None, limit
        )
        return JSONResponse({"runs": [r.to_dict() for r in records]})

    async def read_run(self, request: Request) -> Response:
        self._authorize_read(request)
        record = await run_in_threadpool(self.runner.store.get, request.path_params["run_id"])
        if record is None:
            raise UnknownRun(f"no run with id {request.path_params['run_id']!r}")
        return JSONResponse(record.to_dict())

    async def pending(self, request: Request) -> Response:
        """Waiting runs, oldest first, `limit` from `offset`; `next` is the following page's URL."""
        self._authorize_read(request)
        limit = _int(request.query_params.get("limit", str(PAGE_SIZE)), 1, MAX_PAGE, "limit")
        offset = _int(request.query_params.get("offset", "0"), 0, 10**9, "offset")
        records, total = await waiting_page(self.runner.store, offset, limit)
        after = offset + len(records)
        more = f"/pending?{urlencode({'offset': after, 'limit': limit})}" if after < total else None
        items = [pending_item(r, time.time()) for r in records]
        return JSONResponse(
            {"pending": items, "total": total, "offset": offset, "limit": limit, "next": more}
        )

    async def answer(self, request: Request) -> Response:
        self._authorize(request)
        body = await json_body(request, self.service.body_timeout)
        return self._accepted(self.runner.claim(request.path_params["run_id"], required(body, "answer")))

    async def approve(self, request: Request) -> Response:
        self._authorize(request)
        await json_body(request, self.service.body_timeout, empty_ok=True)
        return self._accepted(self.runner.claim(request.path_params["run_id"], approved=True))

    async def deny(self, request: Request) -> Response:
        self._authorize(request)
        body = await json_body(request, self.service.body_timeout, empty_ok=True)
        reason = optional(body, "reason", str)
        return self._accepted(self.runner.claim(request.path_params["run_id"], reason, approved=False))

    async def metrics(self, request: Request) -> Response:
        if self.service.registry is None:
            raise Problem(404, "metrics are off: the telemetry package is not installed")
        from prometheus_client.exposition import choose_encoder

        encoder, content_type = choose_encoder(request.headers.get("accept", ""))
        body = await run_in_threadpool(encoder, self.service.registry)
        return Response(body, headers={"Content-Type": content_type})

    async def healthz(self, request: Request) -> Response:
        return PlainTextResponse("ok")

    async def readyz(self, request: Request) -> Response:
        if not self.service.ready:
            return PlainTextResponse("starting or stopping", status_code=503)
        try:
            await run_in_threadpool(self.runner.store.schema_version)
        except StoreError as exc:
            return PlainTextResponse(self.shown(f"store unreachable: {exc}"), status_code=503)
        return PlainTextResponse("ready")

    def _authorize(self, request: Request) -> None:
        scheme, _, offered = request.headers.get("authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not self.service.token.accepts(offered.strip()):
            raise Problem(401, "a valid token is required: Authorization: Bearer <token>")

    def _authorize_read(self, request: Request) -> None:
        if self.service.reads_need_token:
            self._authorize(request)

    def _accepted(self, job: Job) -> Response:
        self.runner.spawn(job)
        body = {"run_id": job.run_id, "status": "running", "url": f"/runs/{job.run_id}"}
        return JSONResponse(body, status_code=202)


# -- request helpers ----------------------------------------------------------------------------


async def read_body(request: Request, within: float = BODY_TIMEOUT, limit: int = MAX_BODY) -> bytes:
    """The request body, refusing one larger than `limit` (413) or slower than `within` s (408)."""
    declared = request.headers.get("content-length")
    if declared is not None and (not _DIGITS.fullmatch(declared) or int(declared) > limit):
        raise Problem(413, f"the body must be at most {limit} bytes")
    chunks: list[bytes] = []
    try:
        async with asyncio.timeout(within):
            await _read_into(request, chunks, limit)
    except TimeoutError:
        raise Problem(408, f"the body did not arrive within {within:g} s") from None
    return b"".join(chunks)


async def _read_into(request: Request, chunks: list[bytes], limit: int) -> None:
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise Problem(413, f"the body must be at most {limit} bytes")
        chunks.append(chunk)


async def json_body(request: Request, within: float = BODY_TIMEOUT, empty_ok: bool = False) -> dict[str, Any]:
    """The body as a standard JSON object (400 when it is not one)."""
    raw = await read_body(request, within)
    if empty_ok and not raw.strip():
        return {}
    data = parse_json(raw)
    if not isinstance(data, dict):
        raise Problem(400, "the body must be a JSON object")
    check_strings(data)
    return data


def parse_json(raw: bytes) -> Any:
    """Standard JSON only: no NaN or Infinity, no number too long to read (400 for each)."""
    try:
        return json.loads(raw, parse_constant=_refuse_constant)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise Problem(400, f"the body is not valid JSON: {exc}") from exc
    except RecursionError as exc:
        raise Problem(400, "the body is not valid JSON here: it is nested too deeply") from exc
    except ValueError as exc:  # an integer of more digits than Python reads (4300)
        raise Problem(400, f"the body holds a number too long to read: {str(exc)[:120]}") from exc


def _refuse_constant(name: str) -> Any:
    raise Problem(400, f"the body is not standard JSON: {name} is not a JSON number; send a number or null")


def check_strings(data: Any) -> None:
    """Every string and key is storable text: no lone surrogate, no NUL character (400)."""
    stack = [data]
    while stack:
        value = stack.pop()
        if isinstance(value, dict):
            stack.extend(value.keys())
            stack.extend(value.values())
        elif isinstance(value, list):
            stack.extend(value)
        elif isinstance(value, str):
            _check_text(value)


def _check_text(text: str) -> None:
    if "\x00" in text:
        raise Problem(400, "a string in the body holds a NUL character (\\u0000); remove it")
    if _SURROGATE.search(text):
        raise Problem(
            400, "a string in the body holds a lone surrogate (\\ud800-\\udfff); send valid UTF-16 pairs"
        )


def required(body: dict[str, Any], key: str) -> str:
    value = body.get(key)
    if not isinstance(value, str) or not value.strip():
        raise Problem(400, f"{key!r} is required and must be a non-empty string")
    return value


def optional(body: dict[str, Any], key: str, kind: type) -> Any:
    value = body.get(key)
    if value is not None and not isinstance(value, kind):
        raise Problem(400, f"{key!r} must be a {'JSON object' if kind is dict else 'string'}")
    return value


_DIGITS = re.compile(r"[0-9]{1,12}")  # ASCII digits only: `isdigit` also takes `²`
_SURROGATE = re.compile("[\ud800-\udfff]")


def _int(text: str, low: int, high: int, name: str) -> int:
    if not _DIGITS.fullmatch(text) or not low <= int(text) <= high:
        raise Problem(400, f"{name} must be a whole number from {low} to {high}")
    return int(text)


async def waiting_page(store: Any, offset: int, limit: int) -> tuple[list[RunRecord], int]:
    """One page of the runs waiting for a person, oldest first, and how many wait in all.

    The store is read on a worker thread, never on the event loop.
    """
    records = await run_in_threadpool(store.list_runs, RunStatus.WAITING, None)
    records.sort(key=lambda r: (r.suspended_at or 0.0, r.run_id))
    return records[offset : offset + limit], len(records)


def pending_item(r: RunRecord, now: float) -> dict[str, Any]:
    """A waiting run as the pending list shows it."""
    return {
        "run_id": r.run_id,
        "agent": r.agent,
        "task_type": r.task_type,
        "task": r.task,
        "question": r.question,
        "pending": {"name": r.pending.name, "arguments": r.pending.arguments} if r.pending else None,
        "suspended_at": r.suspended_at,
        "deadline": r.deadline,
        "waiting_seconds": round(max(0.0, now - (r.suspended_at or now)), 3),
    }
