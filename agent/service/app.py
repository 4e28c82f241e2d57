"""The agent service: a starlette app that starts, reads, answers and approves durable runs.

JSON API (bodies are standard JSON objects of at most `MAX_BODY` bytes; endpoints
that change a run need `Authorization: Bearer <token>`, and so do reads when the
service listens beyond loopback, see `reads_need_token`):

    POST /runs                    {"agent", "task", "task_type"?, "state"?, "run_id"?} -> 202
                                  (the same request again with its run_id: 200 and that run;
                                  while that one is still being started, 409)
    GET  /runs[?status=&limit=&agent=&task_type=]
                                  recent runs, each long text cut (`cut` names what, with its size)
    GET  /runs/{id}               one run and its result
    GET  /pending[?limit=&offset=&agent=&task_type=]
                                  runs waiting for a person, oldest first, a page at a time
                                  (one that passes `PAGE_BYTES` of texts ends early: see `next`);
                                  an empty `agent` or `task_type` means all (the inbox's forms
                                  send one), any other is checked as `GET /runs` checks it (400)
    POST /runs/{id}/answer        {"answer", "segments"?, "by"?}   -> 202, the run continues here
    POST /runs/{id}/approve       {"segments"?, "by"?}             -> 202
    POST /runs/{id}/deny          {"reason"?, "segments"?, "by"?}  -> 202 (a blank reason is none)
    POST /runs/{id}/resume        {"more_turns"?, "more_seconds"?, "more_tokens"?, "more_cost"?} -> 202
                                  a cancelled run continues; a limit stop, with that much more budget

`segments` is the run's count as read (from `/pending` or `/runs/{id}`): given, the
answer lands only on the question or call that was read, and is a 409 once the run
has moved on (a retried request, a stale page), never an answer to the next one. An answer
taken (202) that the run's agent then cannot resume with (another framework's saved state it
cannot load) is given back: the run waits again and says why in `refused` (`/runs/{id}`,
`/pending`, the inbox) until it moves on.
    GET  /metrics /healthz /readyz, the help inbox at /inbox and its review queue at /inbox/review

Only requests whose `Host` is allowed are served (loopback names and the
configured ones: a web page cannot rebind its own name to this service);
`/healthz`, `/readyz` and `/metrics`, which hold no run data, answer any host.

Errors are `{"error": "..."}` with 400 (malformed, a field the endpoint does not take, or
a query parameter of `GET /runs` or `/pending` it does not take or given twice: `http.query_of`),
401 (no valid token), 404 (unknown run or path), 405 (a method the path does not take), 408
(the body did not arrive in time), 409 (not waiting,
claimed by another worker, or damaged: its stored rows disagree, which no retry mends, and the
message says how to fix it), 413 (body too large), 421 (a host not served
here), 422 (an answer that does not fit the question), 429 (too many wrong tokens from
this client address: `agent.service.throttle`, with Retry-After), 503 (the service cannot
serve it now: the store or Temporal does not answer, a start past --max-running, or this
deployment lacks what the run needs to go on, its agent, its task type or the approved call's
tool: `NotInCatalog`, the same over a store and over Temporal; where, or once, that is
deployed, the same request is taken). None of them changes the store. A message that
repeats what was sent (a name, a field, an id) is cut to its start and end past `MAX_SAID`
characters (`said`; the inbox's pages too). A refused GET of an inbox address (a page number or
filter it does not have, a path it does not serve) is a page with the error, not this JSON
(`browsed`, `inbox.error_page`). A bug in the
service (an exception that is no EndstateError) is a 500 with an error id, its traceback
in the server's log and never in the response (`Api.crashed`).

Every response, a 500 included, says `X-Content-Type-Options: nosniff` and, unless it sets
its own, `Cache-Control: no-store` (`SafeHeaders`, around the whole app: `ServiceApp`).
"""

from __future__ import annotations

import json
import logging
import math
import uuid
from typing import Any
from urllib.parse import urlencode

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import ClientDisconnect, Request
from starlette.responses import PlainTextResponse, RedirectResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from agent._valid import is_count
from agent.budget import MAX_COUNT, MAX_FLOAT, MAX_SECONDS, Extension
from agent.budget import shown_most as shown
from agent.durable.runner import Job, given_reason
from agent.durable.store import RunExists, RunRecord, RunStatus, StartingNow, StoreError, UnknownRun
from agent.durable.store.base import (
    CUT_OBJECTS,
    CUT_TEXTS,
    Listing,
    PrunedRunId,
    answerer,
    dumps,
)
from agent.durable.store.urls import scrub
from agent.errors import EndstateError
from agent.service import inbox, review_pages
from agent.service.briefing import waited_seconds
from agent.service.config import (
    LOOPBACK_HOSTS,
    OPEN_PATHS,
    READ_AUTH_MODES,
    Service,
    allowed_hosts,
    host_name,
    reads_need_token,
)
from agent.service.http import (
    BODY_TIMEOUT,
    MAX_BODY,
    MAX_PAGE,
    PAGE_SIZE,
    SAFE_HEADERS,
    Problem,
    StandardJSON,
    check_strings,
    claimed,
    int_param,
    json_body,
    known_fields,
    optional,
    parse_json,
    query_of,
    read_body,
    required,
    run_filter,
    said,
    status_of,
    waiting_page,
)
from agent.service.throttle import shared_note
from agent.summary import plural
from agent.text import lookalikes

log = logging.getLogger("endstate.service")

START_FIELDS = ("agent", "task", "task_type", "state", "run_id")  # what POST /runs takes

PAGE_BYTES = 4 * 1024 * 1024  # of texts a page of `/pending` holds: past them, `next` has the rest
LISTED_CHARS = 2_000  # of each long text a run in `GET /runs` shows (the whole: `GET /runs/{id}`)
CUT = (*CUT_TEXTS, *CUT_OBJECTS)

ADMIT_RETRY_AFTER = 5  # seconds a start refused past --max-running is told to wait

__all__ = [  # what other modules and tests import from here
    "BODY_TIMEOUT",
    "LOOPBACK_HOSTS",
    "MAX_BODY",
    "MAX_PAGE",
    "OPEN_PATHS",
    "PAGE_SIZE",
    "READ_AUTH_MODES",
    "Problem",
    "Service",
    "allowed_hosts",
    "check_strings",
    "create_app",
    "json_body",
    "optional",
    "parse_json",
    "read_body",
    "reads_need_token",
    "required",
    "status_of",
]


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
        Route("/runs/{run_id}/resume", api.resume, methods=["POST"]),
        Route("/pending", api.pending, methods=["GET"]),
        Route("/metrics", api.metrics, methods=["GET"]),
        Route("/healthz", api.healthz, methods=["GET"]),
        Route("/readyz", api.readyz, methods=["GET"]),
        Route("/", lambda _: RedirectResponse("/inbox", 307), methods=["GET"]),
        *review_pages.routes(service),
        *inbox.routes(service),
    ]
    handlers = {
        Problem: api.problem,
        EndstateError: api.problem,
        ClientDisconnect: api.gone,
        HTTPException: api.no_route,
        Exception: api.crashed,  # Starlette's ServerErrorMiddleware answers with it, then re-raises
    }
    app = ServiceApp(
        routes=routes,
        lifespan=service.lifespan,
        exception_handlers=handlers,  # type: ignore[arg-type]
        middleware=[Middleware(HostGuard, allowed=service.allowed_hosts)],
    )
    app.state.service = service
    return app


# -- who may ask: hosts and tokens ----------------------------------------------------------------


class HostGuard:
    """Serve only allowed `Host` headers (DNS rebinding); the open paths answer any host."""

    def __init__(self, app: ASGIApp, allowed: frozenset[str]) -> None:
        self.app = app
        self.allowed = allowed

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"] not in OPEN_PATHS and "*" not in self.allowed:
            raw = dict(scope["headers"]).get(b"host", b"").decode("latin-1")
            if host_name(raw) not in self.allowed:
                message = (
                    f"host {raw[:100]!r} is not served here; serve it with --allowed-host "
                    "(or $ENDSTATE_ALLOWED_HOSTS)"
                )
                await StandardJSON({"error": message}, status_code=421)(scope, receive, send)
                return
        await self.app(scope, receive, send)


class SafeHeaders:
    """Add `SAFE_HEADERS` to every HTTP response (errors, the 421 of `HostGuard` and 404s too)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_safe(message: Message) -> None:
            if message["type"] == "http.response.start":
                names = {name.lower() for name, _ in message.get("headers", [])}
                extra = [(k, v) for k, v in SAFE_HEADERS if k not in names]
                message = {**message, "headers": [*message.get("headers", []), *extra]}
            await send(message)

        await self.app(scope, receive, send_safe)


class ServiceApp(Starlette):
    """The app, its every response under `SafeHeaders`: a 500 from an unexpected exception too, which
    Starlette's ServerErrorMiddleware sends from outside all the middleware given to the app."""

    def build_middleware_stack(self) -> ASGIApp:
        return SafeHeaders(super().build_middleware_stack())


def browsed(request: Request) -> bool:
    """An address of the inbox (a page, or a form a page posts: under /inbox): its refusals are pages
    too, a form's from another origin or not a form included, never the API's JSON in a browser."""
    path = request.url.path
    return path == "/inbox" or path.startswith("/inbox/")


class Api:
    """The JSON endpoints."""

    def __init__(self, service: Service) -> None:
        self.service = service
        self.runner = service.runner

    async def problem(self, request: Request, exc: Exception) -> Response:
        headers = getattr(exc, "headers", None)
        message = said(self.shown(str(exc)))  # scrubbed whole, then cut: no password is half cut
        if browsed(request):
            return inbox.error_page(request.url.path, status_of(exc), message, headers)
        return StandardJSON({"error": message}, status_code=status_of(exc), headers=headers)

    async def no_route(self, request: Request, exc: Exception) -> Response:
        """No such path (404) or method (405): JSON saying so, like every other error."""
        status, detail = getattr(exc, "status_code", 404), getattr(exc, "detail", "")
        where = asked(request)
        message = {
            404: f"{where}: no such endpoint here (the API: /runs, /runs/{{id}}, /pending, /inbox)",
            405: f"{where}: this endpoint does not take {request.method[:20]}",
        }.get(status, f"{where}: {detail}")
        if browsed(request):
            return inbox.error_page(request.url.path, status, message, getattr(exc, "headers", None))
        return StandardJSON({"error": message}, status_code=status, headers=getattr(exc, "headers", None))

    async def crashed(self, request: Request, exc: Exception) -> Response:
        """An exception that is no EndstateError (a bug, a store failing in a way it does not name):
        a 500 saying so under an error id, and that id in the log with what failed. Neither the
        exception's text nor its traceback is sent (they may hold a store URL, a path, a state);
        Starlette re-raises it after this, and the server logs its traceback. The server then closes
        the connection, which the 500 says (a client reusing it got a reset on its next request)."""
        error_id = uuid.uuid4().hex[:12]
        where = asked(request)
        log.error("%s failed (error id %s): %s; its traceback follows", where, error_id, type(exc).__name__)
        message = (
            f"{where} failed in a way the service does not expect (a bug, or a store failing in a way "
            f"it does not name); error id {error_id}, logged on the server with its traceback. Whether "
            "the request took effect is unknown: read the run (GET /runs/{id}) before sending it again, "
            "and give the error id to whoever runs the service"
        )
        return StandardJSON({"error": message}, status_code=500, headers={"Connection": "close"})

    async def gone(self, request: Request, exc: Exception) -> Response:
        """The client went away mid-body: one line in the log, nothing to answer."""
        log.info("%s: the client disconnected before its body arrived", asked(request))
        return Response(status_code=400)

    def shown(self, message: str) -> str:
        """A message fit to show: no store password in it."""
        return scrub(message, getattr(self.runner.store, "url", None))

    async def start(self, request: Request) -> Response:
        self._authorize(request)
        body = known_fields(await json_body(request, self.service.body_timeout), *START_FIELDS)
        options = {
            "task_type": optional(body, "task_type", str),
            "state": optional(body, "state", dict),
            "run_id": optional(body, "run_id", str),
        }
        if options["run_id"] == "":  # an empty id is not "no id": a client's retry key went missing
            raise Problem(400, "'run_id' must not be empty: give an id, or leave the field out for a new one")
        agent, task = required(body, "agent"), required(body, "task")
        self._admit()
        self.service.starting += 1
        try:
            job = await self._begun(agent, task, options)
        except (PrunedRunId, StartingNow):
            raise  # no run has the id: a pruned one's review label or audit is kept under it, or its
            # start is under way, here or in another process (409)
        except RunExists:
            return await self._started_before(agent, task, options)
        finally:
            self.service.starting -= 1
        return self._accepted(job)

    async def _begun(self, agent: str, task: str, options: dict[str, Any]) -> Job:
        """The start's job: its store calls on the service's one thread for them (`for_request`), its
        catalog's `prepare` and `build` on a thread of their own (`Runner.abegin`), so that one agent's
        slow prepare holds no other request. (Over Temporal, workers prepare and build: `begin`.)"""
        begin = getattr(self.runner, "abegin", None)
        if begin is None:
            return await self.service.for_request(self.runner.begin, agent, task, **options)
        job: Job = await begin(agent, task, calls=self.service.for_request, **options)
        return job

    def _admit(self) -> None:
        """Refuse a new run (503, nothing stored) while `max_running` runs are in flight here: a
        flood of starts would otherwise make every one a run of this process at once."""
        if self.service.room() == 0:
            raise Problem(
                503,
                f"this service has {plural(self.service.max_running or 0, 'run')} in flight, its "
                "--max-running; nothing was started. Send the start again in a few seconds (answers to "
                "waiting runs are still taken), or raise --max-running or add a replica",
                headers={"Retry-After": str(ADMIT_RETRY_AFTER)},
            )

    async def _started_before(self, agent: str, task: str, options: dict[str, Any]) -> Response:
        """A run id that is taken: the same request sent again (a retry after a lost reply) gets the
        run it started (200), never a second one; a different request with that id is a 409."""
        store = self.runner.store  # one whose records hold no state (Temporal's) reads it apart
        record = await run_in_threadpool(getattr(store, "started", store.get), options["run_id"])
        if record is None or not same_start(record, agent, task, options):
            raise RunExists(
                f"run id {options['run_id']!r} is taken by a different run (its agent, task, task type or "
                "state differ); nothing was changed. Send the same request to get that run, or use a new id"
            )
        body = {"run_id": record.run_id, "status": str(record.status), "url": f"/runs/{record.run_id}"}
        return StandardJSON(body | {"started_before": True})

    async def list_runs(self, request: Request) -> Response:
        self._authorize_read(request)
        query = query_of(request, "status", "limit", "agent", "task_type")
        status = query.get("status")
        if status is not None and status not in {str(s) for s in RunStatus}:
            raise Problem(400, f"status must be one of {', '.join(RunStatus)}")
        limit = int_param(query.get("limit", "100"), 1, 1000, "limit")
        only = RunStatus(status) if status else None
        names = {k: run_filter(k, v) for k in ("agent", "task_type") if (v := query.get(k)) is not None}
        records = await run_in_threadpool(overview, self.runner.store, only, limit, **names)
        body: dict[str, object] = {"runs": [listed(r, records.cut.get(r.run_id, {})) for r in records]}
        if damaged := getattr(records, "damaged", None):  # rows it could not read: logged, and named
            body["damaged"] = damaged
        return StandardJSON(body)

    async def read_run(self, request: Request) -> Response:
        self._authorize_read(request)
        record = await run_in_threadpool(self.runner.store.get, request.path_params["run_id"])
        if record is None:
            raise UnknownRun(f"no run with id {request.path_params['run_id']!r}")
        return StandardJSON(record.to_dict())

    async def pending(self, request: Request) -> Response:
        """Waiting runs, oldest first, `limit` from `offset`; `next` is the following page's URL."""
        self._authorize_read(request)
        query = query_of(request, "limit", "offset", "agent", "task_type")
        limit = int_param(query.get("limit", str(PAGE_SIZE)), 1, MAX_PAGE, "limit")
        offset = int_param(query.get("offset", "0"), 0, 10**9, "offset")
        only = {k: run_filter(k, v) for k in ("agent", "task_type") if (v := query.get(k))}
        page = await waiting_page(self.runner.store, offset, limit, **only, budget=PAGE_BYTES)
        after = offset + page.rows
        more = urlencode({**only, "offset": after, "limit": limit}) if after < page.total else None
        now = self.runner.clock.time()  # the store's, as deadlines are set and judged
        body: dict[str, Any] = {
            "pending": [pending_item(r, now) for r in page.records],
            **{"total": page.total, "offset": offset, "limit": limit},
            "next": f"/pending?{more}" if more else None,
        }
        if page.damaged:  # rows of this page it could not read: logged, and named (as in /runs)
            body["damaged"] = page.damaged
        return StandardJSON(body)

    async def answer(self, request: Request) -> Response:
        self._authorize(request)
        body = known_fields(await json_body(request, self.service.body_timeout), "answer", "segments", "by")
        return await self._claimed(request, required(body, "answer"), None, body)

    async def approve(self, request: Request) -> Response:
        self._authorize(request)
        body = known_fields(
            await json_body(request, self.service.body_timeout, empty_ok=True), "segments", "by"
        )
        return await self._claimed(request, None, True, body)

    async def deny(self, request: Request) -> Response:
        self._authorize(request)
        body = known_fields(
            await json_body(request, self.service.body_timeout, empty_ok=True), "reason", "segments", "by"
        )
        reason = given_reason(optional(body, "reason", str))  # blank: none, as every face keeps it
        return await self._claimed(request, reason, False, body)

    async def resume(self, request: Request) -> Response:
        """A cancelled run continues; one that stopped at a limit, with the `more_*` budget given."""
        self._authorize(request)
        body = known_fields(await json_body(request, self.service.body_timeout, empty_ok=True), *MORE)
        more = extension(body)
        run_id = request.path_params["run_id"]
        return self._accepted(await claimed(self.service.for_request, self.runner, run_id, more=more))

    async def _claimed(
        self, request: Request, answer: str | None, approved: bool | None, body: dict[str, Any]
    ) -> Response:
        """Claim the run named in the path with this answer (as read, when `segments` is given), under
        the name `by` gives (none: an answer without a name)."""
        run_id, segments, by = request.path_params["run_id"], read_at(body), answered_by(body)
        job = await claimed(self.service.for_request, self.runner, run_id, answer, approved, segments, by)
        return self._accepted(job)

    async def metrics(self, request: Request) -> Response:
        if self.service.metrics is None:
            raise Problem(404, "metrics are off: this service was started without telemetry")
        accept = request.headers.get("accept", "")  # telemetry reads any, see telemetry.metrics.negotiable
        body, content_type = await run_in_threadpool(self.service.metrics, accept)
        return Response(body, headers={"Content-Type": content_type})

    async def healthz(self, request: Request) -> Response:
        return PlainTextResponse("ok")

    async def readyz(self, request: Request) -> Response:
        if not self.service.ready:
            return PlainTextResponse("starting or stopping", status_code=503)
        try:
            await self.service.store_answers()
        except TimeoutError:
            waited = self.service.ready_timeout
            why = f"store not answering: no reply within {waited:g} s (a database that hangs or that another"
            return PlainTextResponse(
                f"{why} process keeps locked, or a network that drops packets)", status_code=503
            )
        except StoreError as exc:
            return PlainTextResponse(self.shown(f"store unreachable: {exc}"), status_code=503)
        return PlainTextResponse("ready")

    def _authorize(self, request: Request) -> None:
        """A valid token in the one Authorization header (two are refused: which one counted depended
        on their order, so a request with a wrong token beside the right one was taken); from an
        address past its failed attempts, a 429 with Retry-After before any token is looked at."""
        if (n := len(request.headers.getlist("authorization"))) > 1:
            raise Problem(400, f"send one Authorization header, not {n}: Authorization: Bearer <token>")
        if wait := self.service.throttled(request):
            raise Problem(
                429,
                f"too many wrong tokens came from your address; tokens from it are not checked for "
                f"{wait} s (nothing was read or changed). Send the right token after Retry-After."
                + shared_note(request),
                headers={"Retry-After": str(wait)},
            )
        scheme, _, offered = request.headers.get("authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not self.service.token.accepts(offered.strip()):
            if offered.strip():  # a token offered and wrong: a guess (none at all is not one)
                self.service.wrong_token(request)
            challenge = 'Bearer realm="endstate"' + (', error="invalid_token"' if offered.strip() else "")
            raise Problem(
                401,
                "a valid token is required: Authorization: Bearer <token>",
                headers={"WWW-Authenticate": challenge},  # RFC 6750: what a 401 of a bearer token says
            )

    def _authorize_read(self, request: Request) -> None:
        if self.service.reads_need_token:
            self._authorize(request)

    def _accepted(self, job: Job) -> Response:
        self.runner.spawn(job)
        body = {"run_id": job.run_id, "status": "running", "url": f"/runs/{job.run_id}"}
        if note := getattr(job, "note", ""):  # over Temporal: what happens, when a 202 does not say it
            body["note"] = note
        return StandardJSON(body, status_code=202)


# -- request helpers ----------------------------------------------------------------------------


def asked(request: Request) -> str:
    """`METHOD /path` for a message, each cut (a request line may hold kilobytes of either)."""
    return f"{request.method[:20]} {request.url.path[:200]}"


def answered_by(body: dict[str, Any]) -> str | None:
    """Who gives the answer, from the body's optional `by` (400 when it is no name)."""
    try:
        return answerer(body.get("by"))
    except ValueError as exc:
        raise Problem(400, f"'by': {exc}") from None


def read_at(body: dict[str, Any]) -> int | None:
    """The claim's `segments` precondition, when the body gives the count it read (409 once the run
    has moved on: a retried or stale answer never lands on the next question)."""
    if "segments" not in body:
        return None
    value = body["segments"]
    if not is_count(value):
        raise Problem(400, "'segments' must be the run's segments count as read (a whole number)")
    return value


MORE = {"more_turns": int, "more_seconds": float, "more_tokens": int, "more_cost": float}  # POST .../resume
# see agent.budget; a cost past what a float holds (an int of 400 digits) raised OverflowError: a bare 500
MOST = {
    "more_turns": MAX_COUNT,
    "more_seconds": MAX_SECONDS,
    "more_tokens": MAX_COUNT,
    "more_cost": MAX_FLOAT,
}


def extension(body: dict[str, Any]) -> Extension | None:
    """The budget a resume adds (None: none given), each amount a finite number above 0 (400)."""
    if not body:
        return None
    amounts = [_amount(body, key, kind) for key, kind in MORE.items()]
    return Extension(int(amounts[0]), amounts[1], int(amounts[2]), amounts[3])


def _amount(body: dict[str, Any], key: str, kind: type) -> float:
    if key not in body:
        return 0
    value = body[key]
    if kind is int and isinstance(value, float) and value.is_integer():
        value = int(value)  # JSON's 2.0 is the whole number 2 (was refused as "not a whole number")
    fits = isinstance(value, kind | int) and not isinstance(value, bool)
    most = MOST.get(key)
    if not fits or not 0 < value < math.inf or (most is not None and value > most):
        what = "whole number" if kind is int else "number"
        bound = "" if most is None else f" and at most {shown(most)}"
        raise Problem(400, f"{key!r} must be a {what} above 0{bound}, not {json.dumps(value)[:40]}")
    return float(value) if kind is float else int(value)


def same_start(record: RunRecord, agent: str, task: str, options: dict[str, Any]) -> bool:
    """`record` is the run this start request made (the state it gave is within the run's, which
    its catalog entry may have added to)."""
    state, task_type = options.get("state") or {}, options.get("task_type")
    return (
        (record.agent, record.task) == (agent, task)
        and task_type in (None, record.task_type)
        and all(k in record.state and record.state[k] == v for k, v in state.items())
    )


def overview(store: Any, status: RunStatus | None, limit: int, **only: str) -> Listing:
    """The newest `limit` runs for `GET /runs` (of the `agent` and `task_type` in `only`), each long
    text cut to `LISTED_CHARS` characters: by the store in SQL when it can (what it reads is bounded
    too), else here."""
    if hasattr(store, "overview"):
        return store.overview(status, limit, LISTED_CHARS, **only)
    records = store.list_runs(status, limit, **only)
    listing = Listing(records, getattr(records, "damaged", ()))
    for record in listing:
        if sizes := too_long(record):
            listing.cut[record.run_id] = sizes
    return listing


def too_long(record: RunRecord) -> dict[str, int]:
    """The fields of `record` an overview cuts, each with its whole size in bytes (as stored)."""
    data = record.to_dict()
    texts = {k: dumps(data[k]) if k in CUT_OBJECTS else data[k] or "" for k in CUT}
    return {k: len(t.encode("utf-8", "surrogatepass")) for k, t in texts.items() if len(t) > LISTED_CHARS}


def listed(record: RunRecord, cut: dict[str, int]) -> dict[str, Any]:
    """A run as `GET /runs` lists it: each field named in `cut` (with its whole size in bytes) shows
    its first `LISTED_CHARS` characters, or for a JSON one (`state`, `pending`) null; `GET /runs/{id}`
    holds them whole."""
    data = record.to_dict()
    for key in cut:
        data[key] = None if key in CUT_OBJECTS else (data[key] or "")[:LISTED_CHARS]
    return data | {"cut": cut}


def pending_item(r: RunRecord, now: float) -> dict[str, Any]:
    """A waiting run as the pending list shows it."""
    return {
        "run_id": r.run_id,
        "segments": r.segments,  # send it back with the answer: it lands on this question only
        "agent": r.agent,
        "task_type": r.task_type,
        "task": r.task,
        "question": r.question,
        "pending": {"name": r.pending.name, "arguments": r.pending.arguments} if r.pending else None,
        "suspended_at": r.suspended_at,
        "deadline": r.deadline,
        "expired": r.deadline is not None and r.deadline <= now,  # no answer is taken any more
        "waiting_seconds": round(waited_seconds(r, now), 3),
        "refused": r.refused,  # why the last answer given was not taken (the run waits for another)
        "damaged": r.damage,  # why it cannot be answered: its stored journal lost its end (else null)
        # who answered it last (an earlier question, or an answer not taken), when and what
        **{k: getattr(r, k) for k in ("last_answer_by", "last_answer_at", "last_answer_kind", "last_answer")},
        "look_closely": lookalikes(r.asked),  # words whose letters mix scripts: a Cyrillic a in an address
    }
