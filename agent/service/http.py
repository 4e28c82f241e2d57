"""HTTP plumbing the API and the inbox share: bodies read within limits, strict JSON, errors, pages."""

from __future__ import annotations

import asyncio
import itertools
import re
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse

from agent._valid import is_text
from agent.durable.runner import AgentUnavailable, AnswerError
from agent.durable.store import (
    DamagedRun,
    NotClaimable,
    RunExists,
    RunRecord,
    RunStatus,
    StoreError,
    UnknownRun,
)
from agent.durable.store.base import filter_name
from agent.errors import ConfigError, EndstateError
from agent.service.auth import Token
from agent.service.visible import shown_json
from agent.text import LONE_SURROGATE, NotStandardJSON, json_text, strict_json

MAX_BODY = 64 * 1024

BODY_TIMEOUT = 30.0  # seconds a request body may take to arrive

PAGE_SIZE = 50  # runs per page of /pending and of the inbox

MAX_PAGE = 500

MAX_SAID = 2000  # characters of an error message a response carries (`said`)

SAFE_HEADERS = (  # on every response that does not set its own (the inbox's pages set more)
    (b"x-content-type-options", b"nosniff"),  # a JSON error echoing `<script>` is never read as HTML
    (b"cache-control", b"no-store"),  # a run's data is not kept in a browser's or a proxy's cache
)


class StandardJSON(JSONResponse):
    """A JSON response any parser reads, whatever a run holds: NaN and the infinities (a state
    set in Python) as null, lone surrogates (a path read with `surrogateescape`) as U+FFFD; and
    shown as it is to a person who reads it in a terminal (`shown_json`: a model's bidi override or
    C1 control is a JSON escape)."""

    def render(self, content: Any) -> bytes:
        return shown_json(json_text(content, ensure_ascii=False, separators=(",", ":"))).encode("utf-8")


class Problem(Exception):
    """An HTTP error with a message for the client."""

    def __init__(self, status: int, message: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.headers = headers


STATUS_OF: list[tuple[type[Exception], int]] = [
    (UnknownRun, 404),
    (NotClaimable, 409),
    (RunExists, 409),
    (DamagedRun, 409),  # its stored rows disagree: no retry mends it, the message says what does
    (AnswerError, 422),
    (AgentUnavailable, 503),  # the deployment's catalog failed, not the request
    (ConfigError, 400),
    (StoreError, 503),
    (EndstateError, 400),
]


def said(message: str, most: int = MAX_SAID) -> str:
    """`message` as a response carries it: whole up to `most` characters; past them, its start and its
    end (what was wrong, and how to fix it) around a note of how long it was. An error that
    repeats what was sent (a name, a field, an id of 50,000 characters) stays a few kilobytes."""
    if len(message) <= most:
        return message
    note = f" [... cut: {len(message):,} characters in all ...] "
    head = (most - len(note)) * 2 // 5
    return message[:head] + note + message[len(message) - (most - len(note) - head) :]


def status_of(exc: Exception) -> int:
    if isinstance(exc, Problem):
        return exc.status
    return next(code for kind, code in STATUS_OF if isinstance(exc, kind))


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
        return strict_json(raw, "the body")
    except NotStandardJSON as exc:
        raise Problem(400, str(exc)) from exc


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
    if LONE_SURROGATE.search(text):
        raise Problem(
            400, "a string in the body holds a lone surrogate (\\ud800-\\udfff); send valid UTF-16 pairs"
        )


def notice_params(token: Token, text: str) -> dict[str, str]:
    """The query parameters of a one-time notice in a redirect: the text and its signature."""
    return {"message": text, "sig": token.notice_sig(text)}


def notice_of(request: Request, token: Token) -> str:
    """The one-time notice in this page's address, when the service signed it; else none: a link
    someone else wrote (`/inbox?message=Your session expired, sign in at ...`) shows no notice."""
    text = request.query_params.get("message", "")
    return text if token.signed_notice(text, request.query_params.get("sig")) else ""


def known_fields(body: dict[str, Any], *fields: str) -> dict[str, Any]:
    """The body, refused (400) when it holds a field this endpoint does not take: a misspelt
    `reason` or `task_type` must not be dropped without a word."""
    unknown = sorted(set(body) - set(fields))
    if unknown:
        takes = ", ".join(repr(f) for f in fields) if fields else "no field"
        raise Problem(400, f"unknown field(s) {', '.join(map(repr, unknown))}: this endpoint takes {takes}")
    return body


def query_of(request: Request, *taken: str) -> dict[str, str]:
    """A listing's query parameters, each one it takes (`taken`) at most once: 400 for another (a
    filter misspelt, `task-type`, would list every run) or one given twice (`agent=a&agent=b`: which
    one a proxy that scopes the listing with its own `agent=` and the service each read differs).
    `known_fields` is its counterpart for a body."""
    params = request.query_params
    if other := sorted(set(params) - set(taken)):
        raise Problem(
            400, f"{said(other[0])!r} is no parameter of {request.url.path}: it takes {', '.join(taken)}"
        )
    if twice := sorted(k for k in set(params) if len(params.getlist(k)) > 1):
        raise Problem(400, f"{twice[0]!r} is given {len(params.getlist(twice[0]))} times: give it once")
    return dict(params)


def required(body: dict[str, Any], key: str) -> str:
    value = body.get(key)
    if not is_text(value):
        raise Problem(400, f"{key!r} is required and must be a non-empty string")
    return value


def optional(body: dict[str, Any], key: str, kind: type) -> Any:
    value = body.get(key)
    if value is not None and not isinstance(value, kind):
        raise Problem(400, f"{key!r} must be a {'JSON object' if kind is dict else 'string'}")
    return value


_DIGITS = re.compile(r"[0-9]{1,12}")  # ASCII digits only: `isdigit` also takes `²`


def claim(
    runner: Any,
    run_id: str,
    answer: str | None = None,
    approved: bool | None = None,
    segments: int | None = None,
    by: str | None = None,
) -> Any:
    """The runner's claim of a waiting run; with `segments` (the count the person read), only while
    the run still waits at that count: a stale page or a retried request never answers the next
    question. The runner checks it as it takes the reply (the store's in the claim itself, Temporal's
    workflow in the update's validator), so no reply can land between a check and the claim. `by`
    names who answers (None: no name)."""
    named = {} if by is None else {"by": by}
    if segments is None:
        return runner.claim(run_id, answer, approved=approved, **named)
    return runner.claim(run_id, answer, approved=approved, segments=segments, **named)


async def claimed(
    calls: Callable[..., Awaitable[Any]],
    runner: Any,
    run_id: str,
    answer: str | None = None,
    approved: bool | None = None,
    segments: int | None = None,
    by: str | None = None,
    more: Any = None,
) -> Any:
    """`claim` (with `more`: a resume with more budget), its store calls made through `calls` (the
    service's `for_request`) and, with a store's runner, the agent's catalog build on a thread of its
    own (`Runner.aclaim`): one agent's slow build holds no other request."""
    aclaim = getattr(runner, "aclaim", None)
    if aclaim is not None:
        return await aclaim(run_id, answer, approved, more, segments, by, calls=calls)
    if more is not None:
        return await calls(runner.claim, run_id, more=more)
    return await calls(claim, runner, run_id, answer, approved, segments, by)


def run_filter(key: str, value: str) -> str:
    """An `agent` or `task_type` parameter of a listing (`GET /runs`, `/pending`, the inbox's pages),
    checked (`filter_name`): 400 saying what is wrong."""
    try:
        return filter_name(key.replace("_", " "), value)
    except ValueError as exc:
        raise Problem(400, f"{key}: {exc}") from None


def int_param(text: str, low: int, high: int, name: str) -> int:
    if not _DIGITS.fullmatch(text) or not low <= int(text) <= high:
        raise Problem(400, f"{name} must be a whole number from {low} to {high}")
    return int(text)


@dataclass(frozen=True)
class WaitingPage:
    """One page of the runs waiting for a person, and what the whole list holds."""

    records: list[RunRecord]
    damaged: list[str]  # the ids of this page's rows that could not be read (logged, left out)
    counts: list[tuple[str, str, int]]  # how many wait by (agent, task type): all of them, unfiltered
    total: int  # how many wait of the agent and task type asked for

    @property
    def rows(self) -> int:
        """The rows this page took from the list (the next page starts after them)."""
        return len(self.records) + len(self.damaged)


NO_PAGE = WaitingPage([], [], [], 0)


async def waiting_page(
    store: Any,
    offset: int,
    limit: int,
    agent: str | None = None,
    task_type: str | None = None,
    budget: int | None = None,
) -> WaitingPage:
    """One page of the runs waiting for a person, oldest request first, `limit` from `offset` (of
    `agent` and `task_type`, when given), and the counts (read on a worker thread, never on the
    event loop). A store that pages in SQL reads only the page and the counts; another (Temporal's
    visibility) is read whole and cut here. With a `budget` (bytes), the page ends early once its
    runs' texts pass it (the first run is always on it): a page of huge runs stays a few megabytes."""
    read = _paged if hasattr(store, "waiting") else _cut
    return await run_in_threadpool(read, store, offset, limit, Only(agent, task_type), budget)


@dataclass(frozen=True)
class Only:
    """The agent and task type a page is of (None: any)."""

    agent: str | None = None
    task_type: str | None = None


Rows = tuple[list[RunRecord], list[str]]  # a page's records, and the ids of its damaged rows

READ_CHUNK = 10  # rows a budgeted page reads at a time: a run may hold megabytes


def _paged(store: Any, offset: int, limit: int, only: Only, budget: int | None) -> WaitingPage:
    counts = store.waiting_counts()
    if budget:
        records, damaged = _within(store, offset, limit, only, budget)
    else:
        records, damaged = _all(store, offset, limit, only)
    return WaitingPage(records, damaged, counts, _total(counts, only.agent, only.task_type))


def _all(store: Any, offset: int, limit: int, only: Only) -> Rows:
    listing = store.waiting(limit, offset, only.agent, only.task_type)
    return list(listing), listing.damaged


def _within(store: Any, offset: int, limit: int, only: Only, budget: int) -> Rows:
    """Up to `limit` rows from `offset`, read a few at a time, until the runs' texts pass `budget`
    bytes: a chunk that would pass it is read again a row at a time, so the page ends at a row."""
    records: list[RunRecord] = []
    damaged: list[str] = []
    size, step = 0, READ_CHUNK
    while (taken := len(records) + len(damaged)) < limit and size < budget:
        asked = min(step, limit - taken)
        listing = store.waiting(asked, offset + taken, only.agent, only.task_type)
        weight = sum(map(text_bytes, listing))
        if step > 1 and size + weight > budget:
            step = 1  # this chunk passes the budget: take its rows one by one
            continue
        records.extend(listing)
        damaged.extend(listing.damaged)
        size += weight
        if len(listing) + len(listing.damaged) < asked:
            break  # the end of the list
    return records, damaged


def text_bytes(record: RunRecord) -> int:
    """About how many bytes a waiting run's texts take in a page: its task, question and call, and the
    last answer it was given and why one was refused (an earlier question's answer: megabytes, maybe)."""
    call = json_text(record.pending.arguments) if record.pending else ""
    texts = (record.task, record.question, call, record.last_answer, record.refused)
    return sum(len(t.encode("utf-8", "surrogatepass")) for t in texts if t)


def _cut(store: Any, offset: int, limit: int, only: Only, budget: int | None) -> WaitingPage:
    records = sorted(
        store.list_runs(RunStatus.WAITING, None), key=lambda r: (r.suspended_at or 0.0, r.run_id)
    )
    counts = sorted(Counter((r.agent, r.task_type) for r in records).items())
    chosen = [r for r in records if only.agent in (None, r.agent) and only.task_type in (None, r.task_type)]
    page = chosen[offset : offset + limit]
    if budget:
        sizes = itertools.accumulate(map(text_bytes, page))
        page = page[: max(1, sum(1 for n in sizes if n <= budget))]
    return WaitingPage(page, [], [(a, t, n) for (a, t), n in counts], len(chosen))


def _total(counts: list[tuple[str, str, int]], agent: str | None, task_type: str | None) -> int:
    """How many of `counts` are of `agent` and `task_type` (either None: any)."""
    return sum(n for a, t, n in counts if agent in (None, a) and task_type in (None, t))
