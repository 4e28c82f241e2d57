"""The agent service: a starlette app that starts, reads, answers and approves durable runs.

JSON API (bodies are JSON objects of at most `MAX_BODY` bytes; endpoints that
change a run need `Authorization: Bearer <token>`):

    POST /runs                  {"agent", "task", "task_type"?, "state"?, "run_id"?} -> 202
    GET  /runs[?status=&limit=] recent runs
    GET  /runs/{id}             one run and its result
    GET  /pending               runs waiting for a person
    POST /runs/{id}/answer      {"answer"}   -> 202, the run continues here
    POST /runs/{id}/approve     {}           -> 202
    POST /runs/{id}/deny        {"reason"?}  -> 202
    GET  /metrics /healthz /readyz, and the help inbox at /inbox

Errors are `{"error": "..."}` with 400 (malformed), 401 (no valid token),
404 (unknown run), 409 (not waiting, or claimed by another worker), 413 (body
too large), 422 (an answer that does not fit the question). None of them
changes the store.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, RedirectResponse, Response
from starlette.routing import Route

from agent.errors import ConfigError, EndstateError
from agent.review import UPKEEP_EVERY, Upkeep
from agent.runner import AnswerError, Job, Runner
from agent.service import inbox
from agent.service.auth import Token
from agent.store import NotClaimable, RunExists, RunRecord, RunStatus, StoreError, UnknownRun

log = logging.getLogger("endstate.service")

MAX_BODY = 64 * 1024


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
    retention: float | None = None  # seconds finished runs are kept (--retention); None: for ever
    label_counter: Any = None  # counts review labels into /metrics (telemetry's MetricsHooks)
    upkeep_interval: float = UPKEEP_EVERY
    ready: bool = False
    _tasks: list[asyncio.Task[None]] = field(default_factory=list)

    @contextlib.asynccontextmanager
    async def lifespan(self, app: Starlette) -> AsyncIterator[None]:
        """Recover runs at start and while up, sweep deadlines, checkpoint runs at shutdown."""
        await self._recover()
        self.ready = True
        self._tasks.append(asyncio.create_task(self._sweep_forever(), name="sweeper"))
        if self.retention is not None or self.label_counter is not None:
            self._tasks.append(asyncio.create_task(self._upkeep_forever(), name="upkeep"))
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

    async def _upkeep_forever(self) -> None:
        """Count new review labels and prune finished runs past the retention (agent.review.Upkeep)."""
        upkeep = Upkeep(self.runner.store, self.retention, self.label_counter)
        while True:
            try:
                await run_in_threadpool(upkeep.once)
            except EndstateError:
                log.exception("pruning or counting labels failed; trying again later")
            await asyncio.sleep(self.upkeep_interval)

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
    handlers = {Problem: api.problem, EndstateError: api.problem}
    return Starlette(routes=routes, lifespan=service.lifespan, exception_handlers=handlers)  # type: ignore[arg-type]


class Api:
    """The JSON endpoints."""

    def __init__(self, service: Service) -> None:
        self.service = service
        self.runner = service.runner

    async def problem(self, request: Request, exc: Exception) -> Response:
        return JSONResponse({"error": str(exc)}, status_code=status_of(exc))

    async def start(self, request: Request) -> Response:
        self._authorize(request)
        body = await json_body(request)
        options = {
            "task_type": optional(body, "task_type", str),
            "state": optional(body, "state", dict),
            "run_id": optional(body, "run_id", str),
        }
        job = self.runner.begin(required(body, "agent"), required(body, "task"), **options)
        return self._accepted(job)

    async def list_runs(self, request: Request) -> Response:
        status = request.query_params.get("status")
        if status is not None and status not in {str(s) for s in RunStatus}:
            raise Problem(400, f"status must be one of {', '.join(RunStatus)}")
        limit = _int(request.query_params.get("limit", "100"), 1, 1000, "limit")
        records = self.runner.store.list_runs(RunStatus(status) if status else None, limit)
        return JSONResponse({"runs": [r.to_dict() for r in records]})

    async def read_run(self, request: Request) -> Response:
        record = self.runner.store.get(request.path_params["run_id"])
        if record is None:
            raise UnknownRun(f"no run with id {request.path_params['run_id']!r}")
        return JSONResponse(record.to_dict())

    async def pending(self, request: Request) -> Response:
        records = self.runner.store.list_runs(RunStatus.WAITING, limit=None)
        return JSONResponse({"pending": [pending_item(r, time.time()) for r in records]})

    async def answer(self, request: Request) -> Response:
        self._authorize(request)
        body = await json_body(request)
        return self._accepted(self.runner.claim(request.path_params["run_id"], required(body, "answer")))

    async def approve(self, request: Request) -> Response:
        self._authorize(request)
        await json_body(request, empty_ok=True)
        return self._accepted(self.runner.claim(request.path_params["run_id"], approved=True))

    async def deny(self, request: Request) -> Response:
        self._authorize(request)
        body = await json_body(request, empty_ok=True)
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
            return PlainTextResponse(f"store unreachable: {exc}", status_code=503)
        return PlainTextResponse("ready")

    def _authorize(self, request: Request) -> None:
        scheme, _, offered = request.headers.get("authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not self.service.token.accepts(offered.strip()):
            raise Problem(401, "a valid token is required: Authorization: Bearer <token>")

    def _accepted(self, job: Job) -> Response:
        self.runner.spawn(job)
        body = {"run_id": job.run_id, "status": "running", "url": f"/runs/{job.run_id}"}
        return JSONResponse(body, status_code=202)


# -- request helpers ----------------------------------------------------------------------------


async def read_body(request: Request, limit: int = MAX_BODY) -> bytes:
    """The request body, refusing (413) one larger than `limit` before reading it all."""
    declared = request.headers.get("content-length")
    if declared is not None and (not declared.isdigit() or int(declared) > limit):
        raise Problem(413, f"the body must be at most {limit} bytes")
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise Problem(413, f"the body must be at most {limit} bytes")
        chunks.append(chunk)
    return b"".join(chunks)


async def json_body(request: Request, empty_ok: bool = False) -> dict[str, Any]:
    """The body as a JSON object (400 when it is not one)."""
    raw = await read_body(request)
    if empty_ok and not raw.strip():
        return {}
    try:
        data = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise Problem(400, f"the body is not valid JSON: {exc}") from exc
    except RecursionError as exc:
        raise Problem(400, "the body is not valid JSON here: it is nested too deeply") from exc
    if not isinstance(data, dict):
        raise Problem(400, "the body must be a JSON object")
    return data


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


def _int(text: str, low: int, high: int, name: str) -> int:
    if not text.isdigit() or not low <= int(text) <= high:
        raise Problem(400, f"{name} must be a whole number from {low} to {high}")
    return int(text)


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
