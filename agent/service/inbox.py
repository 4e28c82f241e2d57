"""The help inbox: one server-rendered page of runs waiting for a person. No build step, no script.

Sign in once with the service token (the page keeps an HttpOnly, SameSite=Strict
cookie of that sign-in, signed with the token, for `SESSION_SECONDS`, Secure when the page was
reached over https: `over_tls`; Sign out ends it on this process); then answer a question, or
approve or deny a pending tool call. Every form posts to `/inbox/...` and comes back to the page.

Questions and tool arguments come from the model: every value is HTML-escaped,
and the page forbids scripts and framing (CSP), so markup in them stays text.
A form posted from another origin is refused, cookie or not (its `Origin`,
`Sec-Fetch-Site` or, when only that is sent, its `Referer` says so).

The page lists the waiting runs oldest first, `page_size` at a time
(`/inbox?page=2`), of one agent or task type when asked (`?agent=ci-fixer&task_type=fix_ci`).
Each shows what the agent did before asking (its summary and last tool calls) and, for an
approval, what the call would do (the tool's own `preview`, see `briefing`). A request past
its deadline shows as expired, without buttons; an answer or deny reason refused (someone
answered first, the deadline passed, the sign-in ended) is shown back, unrefreshed, to copy.
An answer holds at most `ANSWER_CHARS` characters of any script and a reason `REASON_CHARS` (the boxes
say so; a longer one is refused and shown back); a form too large to read is a page saying so.
A task, a question or a call's arguments past `SHOWN_CHARS` characters (a model's megabyte)
shows its start and a note linking `/runs/ID`.
The page reloads itself every `REFRESH_SECONDS` with a `<meta http-equiv="refresh">` (no
script), unless `?refresh=off`.
When reads need the token, only a signed-in person sees the runs.

The review queue (`/inbox/review`, see `review_pages`) shares this page's frame, sign-in and
form defences; links at the top of both move between them.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from dataclasses import dataclass, replace
from importlib import resources
from string import Template
from typing import Any
from urllib.parse import SplitResult, parse_qs, quote, unquote, urlencode, urlsplit

from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Route

from agent.durable.runner import given_reason
from agent.durable.store import RunRecord
from agent.durable.store.base import ANSWERER_CHARS, answerer, when
from agent.errors import EndstateError
from agent.service.auth import CLOCK_SKEW, COOKIE, ENV_TOKEN, ENV_TOKEN_FILE, SESSION_SECONDS
from agent.service.briefing import Briefing, Preview, Step, brief, waited_seconds
from agent.service.config import Service, trace_link
from agent.service.http import (
    MAX_BODY,
    NO_PAGE,
    Problem,
    check_strings,
    claimed,
    int_param,
    notice_of,
    notice_params,
    read_body,
    run_filter,
    said,
    status_of,
    waiting_page,
)
from agent.service.throttle import shared_note
from agent.service.visible import escape, visible_json
from agent.text import lookalikes

REFRESH_SECONDS = 30  # long enough to read a request, short enough that on-call sees new ones
ANSWER_CHARS = 20_000  # the longest answer the page's box takes (its maxlength), checked here too
REASON_CHARS = 2_000  # the longest deny reason, likewise
# a reply form's bytes as sent: the longest answer, each character up to 4 bytes of UTF-8 and each byte
# percent-encoded (3), with room for the other fields. The API's 64 KiB refused 8,000 Chinese characters
# the box took, as raw JSON, the answer lost
FORM_BYTES = ANSWER_CHARS * 4 * 3 + 16 * 1024
SHOWN_CHARS = 20_000  # of a task, a question or a call's arguments the list shows (a megabyte: cut, and said)
FILTERS = ("agent", "task_type")
VIEWS = (  # the inbox's views: (key, address, link text)
    ("waiting", "/inbox", "Waiting for a person"),
    ("review", "/inbox/review", "To review"),
    ("labelled", "/inbox/review/labelled", "Labelled"),
)

PAGE = Template(resources.files("agent.service").joinpath("inbox.html").read_text())
HEADERS = {
    "Cache-Control": "no-store",
    "Content-Security-Policy": (
        "default-src 'none'; style-src 'unsafe-inline'; script-src 'none'; form-action 'self'; "
        "frame-ancestors 'none'; base-uri 'none'"
    ),
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
}


def routes(service: Service) -> list[Route]:
    inbox = Inbox(service)
    return [
        Route("/inbox", inbox.page, methods=["GET"]),
        Route("/inbox/login", inbox.login, methods=["POST"]),
        Route("/inbox/logout", inbox.logout, methods=["POST"]),
        Route("/inbox/{run_id}/{action}", inbox.act, methods=["POST"]),
    ]


REVIEWER_COOKIE = "endstate_reviewer"  # the name last given with a label or answer, to fill forms in again


def reviewer(request: Request) -> str:
    """The name the forms are filled in with: the one last given here, when it is a name an answer
    takes ('' otherwise: the field starts empty, and an answer without a name still goes)."""
    try:
        return answerer(unquote(request.cookies.get(REVIEWER_COOKIE, ""))) or ""
    except ValueError:
        return ""


def remember(response: Response, request: Request, name: str) -> None:
    """Keep the name given for the next form (a year, this site only)."""
    response.set_cookie(REVIEWER_COOKIE, quote(name), max_age=365 * 86400, httponly=True, samesite="strict",
                        secure=over_tls(request))  # fmt: skip


def over_tls(request: Request) -> bool:
    """The browser reached the page over https: this request came so (uvicorn reads a loopback proxy's
    `X-Forwarded-Proto`), or the page that posted it says so (its `Origin`, else `Referer`): behind a
    TLS proxy on another host the request itself is plain http. A cookie set then is `Secure`, so the
    browser never sends it over plain http (a link or a network attacker's `http://` to this host)."""
    origin = split(request.headers.get("origin") or request.headers.get("referer") or "")
    return request.url.scheme == "https" or (origin is not None and origin.scheme == "https")


def split(url: str) -> SplitResult | None:
    """`url` split into its parts; None for one that cannot be (`http://[`: an IPv6 host never closed),
    which `urlsplit` raises ValueError for: from an `Origin` or `Referer` header, a 500 to anyone."""
    try:
        return urlsplit(url)
    except ValueError:
        return None


class Inbox:
    def __init__(self, service: Service) -> None:
        self.service = service

    async def page(self, request: Request) -> Response:
        return await self.render(request, message=notice_of(request, self.service.token))

    async def render(
        self, request: Request, message: str = "", error: str = "", status: int = 200, kept: str = ""
    ) -> Response:
        """The page; with `kept` (a refused post's own text, HTML) shown under the error, unrefreshed."""
        signed_in = self._signed_in(request)
        view = replace(View.of(request), refresh=False) if kept else View.of(request)
        size = self.service.page_size
        waiting = NO_PAGE
        if self.service.reads_need_token and not signed_in:
            error = error or "Sign in with the service token to see the runs waiting for a person."
        else:
            store = self.service.runner.store
            waiting = await waiting_page(store, (view.page - 1) * size, size, view.agent, view.task_type)
        now = self.service.runner.clock.time()  # the store's, as deadlines are set and judged
        briefs = await brief(waiting.records, self.service.runner.store, self.service.runner.catalog, now)
        refresh, refresh_note = _refresh(view)
        body = page_html(
            "waiting",
            title=f"Endstate help inbox ({waiting.total} waiting)",
            heading="Runs waiting for a person:",
            count=waiting.total,
            refresh=refresh,
            refresh_note=refresh_note,
            notice=notice(message, "notice") + notice(error, "error") + kept,
            session=session(signed_in),
            filters=filters(waiting.counts, view),
            items="\n".join(
                item(b, now, signed_in, view, reviewer(request), self.service.trace_url) for b in briefs
            )
            or _empty(view, waiting.total),
            pages=pages(view, size, waiting.total),
        )
        return HTMLResponse(body, status_code=status, headers=HEADERS)

    async def login(self, request: Request) -> Response:
        same_origin(request)
        form = await form_of(request)
        # asked after the form is read, with no wait before the token is counted: asked before, every
        # sign-in sent while the others' forms were read passed, and had its token checked
        if wait := self.service.throttled(request):
            return await self._paused(request, wait)
        if not self.service.token.accepts(form.get("token")):
            if form.get("token"):
                self.service.wrong_token(request)
            return await self.render(request, error="That token is not valid.", status=401)
        signed = urlencode(notice_params(self.service.token, "Signed in."))
        response = RedirectResponse(f"/inbox?{signed}", status_code=303)
        response.set_cookie(
            COOKIE,
            self.service.token.session_cookie(time.time()),
            max_age=SESSION_SECONDS,
            httponly=True,
            samesite="strict",
            secure=over_tls(request),
        )
        return response

    async def _paused(self, request: Request, wait: int) -> Response:
        """The page saying sign-in from this address is paused (429), the token not checked."""
        error = (
            f"Too many wrong tokens were tried from your address: sign-in from it is paused for {wait} s "
            "(the token you sent was not checked). Try again then." + shared_note(request)
        )
        response = await self.render(request, error=error, status=429)
        response.headers["Retry-After"] = str(wait)
        return response

    async def logout(self, request: Request) -> Response:
        same_origin(request)
        sign_out(self.service, request)
        response = RedirectResponse("/inbox", status_code=303)
        # its ending is set as the cookie was: HttpOnly, SameSite=Strict, and Secure over https
        response.delete_cookie(COOKIE, httponly=True, samesite="strict", secure=over_tls(request))
        return response

    async def act(self, request: Request) -> Response:
        same_origin(request)
        view = View.of(request)  # the page to go back to: one it cannot show is refused before any claim
        run_id, action = request.path_params["run_id"], request.path_params["action"]
        if not self._signed_in(request):
            posted = await written(request, FORM_BYTES) if action in ("answer", "deny") else {}
            return await self.render(
                request, error="Sign in with the service token first.", status=401, kept=not_sent(posted)
            )
        if action not in ("answer", "approve", "deny"):
            return await self.render(request, error=f"Unknown action {action!r}.", status=404)
        try:
            form = await form_of(request, FORM_BYTES)
        except Problem as exc:  # a page, as every refusal here: never the API's JSON in a browser
            return await self.render(request, error=unread(exc), status=exc.status)
        if action == "answer" and not form.get("answer", "").strip():  # as the API: a blank answer is none
            return await self.render(
                request, error="Write an answer first: a blank one is not sent.", status=400
            )
        if problem := too_long(form):
            return await self.render(request, error=problem, status=400, kept=not_sent(form))
        try:
            by = answerer(form.get("by"))
        except ValueError as exc:
            return await self.render(request, error=f"Your name: {exc}.", status=400, kept=not_sent(form))
        try:
            job = await self._claim(run_id, action, form, by)
        except (EndstateError, Problem) as exc:
            return await self.render(request, error=str(exc), status=status_of(exc), kept=not_sent(form))
        self.service.runner.spawn(job)
        done = {"answer": "Answered", "approve": "Approved", "deny": "Denied"}[action]
        named = f" as {by}" if by else ""
        said = notice_params(self.service.token, f"{done} run {run_id}{named}; it runs again.")
        response = RedirectResponse(view.url(page=None, **said), 303)
        if by:
            remember(response, request, by)
        return response

    async def _claim(self, run_id: str, action: str, form: dict[str, str], by: str | None) -> Any:
        """Claim the run as the page showed it (its `segments`): a form left open while someone
        else answered never approves the call, or answers the question, that came next. `by`: the
        name the form gave (None: none). As the API's: `claimed`."""
        runner, shown = self.service.runner, form.get("segments")
        read = int_param(shown, 0, 2**62, "the form's segments") if shown is not None else None
        answer: str | None = form["answer"] if action == "answer" else None
        approved = None if action == "answer" else action == "approve"
        if approved is False:
            answer = given_reason(form.get("reason"))
        return await claimed(self.service.for_request, runner, run_id, answer, approved, read, by)

    def _signed_in(self, request: Request) -> bool:
        return signed_in(self.service, request)


def signed_in(service: Service, request: Request) -> bool:
    """The request carries an inbox cookie this service's token signed, made less than
    `SESSION_SECONDS` ago and not signed out since."""
    session = service.token.session_of(request.cookies.get(COOKIE), time.time())
    return session is not None and session not in service.signed_out


def sign_out(service: Service, request: Request) -> None:
    """End the request's session here: its cookie, kept or copied, no longer signs anyone in (to
    this service process; at `SESSION_SECONDS` on every one). Ended ones past that age are forgotten."""
    now = time.time()
    session = service.token.session_of(request.cookies.get(COOKIE), now)
    ended = service.signed_out
    for old in [k for k, at in ended.items() if now - at > SESSION_SECONDS + CLOCK_SKEW]:
        del ended[old]
    if session is not None:
        ended[session] = now


async def written(request: Request, limit: int = MAX_BODY) -> dict[str, str]:
    """The form a signed-out person posted (a session ended at 12 h), to show back; {} if unreadable."""
    try:
        return await form_of(request, limit)
    except Problem:
        return {}


def unread(exc: Problem) -> str:
    """Why a reply's form could not be read, for the person who sent it: nothing was sent."""
    if exc.status == 413:
        return (
            f"Your form is more than {FORM_BYTES:,} bytes as sent, too large to read: nothing was sent. Send "
            f"a shorter answer (at most {ANSWER_CHARS:,} characters) or reason (at most {REASON_CHARS:,})."
        )
    return f"Your form could not be read ({exc}): nothing was sent."


SHORTEN = "shorten it (it is kept below to copy)"


def too_long(form: dict[str, str]) -> str:
    """Why a reply's text is longer than its box on the page takes ('' when it is not): the API takes
    what fits in its body, and is offered only for a text that does; the page says how much it
    takes, and holds to it."""
    for field, most in (("answer", ANSWER_CHARS), ("reason", REASON_CHARS)):
        if (size := len(text := form.get(field, ""))) > most:
            said = f"Your {field} is {size:,} characters long; the inbox takes at most {most:,} characters"
            if fits_the_api(field, text):
                return f"{said}: {SHORTEN}, or send it whole through the API."
            return f"{said}, and the API a body of at most {MAX_BODY:,} bytes, too small for it: {SHORTEN}."
    return ""


def fits_the_api(field: str, text: str) -> bool:
    """Whether `text` fits in the body of a reply sent to the API (`{"answer": ...}`, with its
    `segments` and a name), written as compactly as JSON writes it."""
    body = json.dumps({field: text, "segments": 0, "by": ""}, ensure_ascii=False).encode()
    return len(body) + 4 * ANSWERER_CHARS + 20 <= MAX_BODY


def not_sent(form: dict[str, str], fields: tuple[str, ...] = ("answer", "reason")) -> str:
    """A refused form's text (its answer or deny reason, a label's note), shown back whole so the
    person can copy it (to the run's next question, to whoever answered first) rather than lose it."""
    what = next((f for f in fields if f in form), fields[0])
    text = form.get(what, "")
    if not text.strip():
        return ""
    return (
        f'<div class="kept"><p><strong>Not sent:</strong> your {what}, kept here to copy '
        "(this page does not refresh while it shows it):</p>"
        f'<pre class="kept-text">{escape(text)}</pre></div>'
    )


def same_origin(request: Request) -> None:
    """Refuse a form posted from another origin (the cookie is SameSite=Strict too).

    A browser says where a form came from in `Sec-Fetch-Site` and `Origin`, or
    (older ones, some privacy settings) only in `Referer`; an opaque origin
    (`null`: a sandboxed frame, a data: page) is refused too, and so is a plain-http page
    posting to this service reached over https (a network attacker's page on the same name).
    """
    site = request.headers.get("sec-fetch-site")
    origin = request.headers.get("origin") or request.headers.get("referer")
    cross = site is not None and site not in ("same-origin", "none")
    if cross or (origin is not None and not _this_origin(request, split(origin))):
        raise Problem(403, "cross-site form posts are refused: use the inbox page itself")


def _this_origin(request: Request, origin: SplitResult | None) -> bool:
    """`origin` is this service's: its host, and https when this request is known to be (a scheme
    the request cannot know, behind a TLS proxy on another host, is taken from the page). One that
    cannot be read (None) is not."""
    if origin is None:
        return False
    downgraded = request.url.scheme == "https" and origin.scheme != "https"
    return origin.netloc == request.headers.get("host") and not downgraded


def page_html(current: str, **parts: Any) -> str:
    """The inbox page frame around `parts`, with the links between its views (`current` marked)."""
    frame = {"refresh": "", "refresh_note": "", "filters": "", "pages": "", "count": ""}
    return PAGE.substitute(frame | parts, views=views(current))


def error_page(path: str, status: int, error: str, headers: dict[str, str] | None = None) -> HTMLResponse:
    """A refusal of a page's address (a page number or a filter the inbox does not have, a path it
    does not serve) as a page a browser shows, with the links to the inbox's views: never the API's
    JSON in a browser."""
    current = next((key for key, url, _ in reversed(VIEWS) if path.startswith(url)), "waiting")
    heading = "This address of the inbox cannot be shown:"
    body = page_html(current, title="Endstate help inbox", heading=heading, notice=notice(error, "error"),
                     session="", items="")  # fmt: skip
    return HTMLResponse(body, status_code=status, headers=HEADERS | (headers or {}))


def views(current: str) -> str:
    """The links between the pending list and the review queue."""
    links = [link(url, text, key == current) for key, url, text in VIEWS]
    return f'<nav class="views">{" ".join(links)}</nav>'


def session(is_signed_in: bool) -> str:
    """The sign-out button, or the sign-in form and where the token comes from."""
    return _SIGN_OUT if is_signed_in else _SIGN_IN + _TOKEN_HELP


async def form_of(request: Request, limit: int = MAX_BODY) -> dict[str, str]:
    """An urlencoded form (no multipart dependency): the first value of each field, read within the
    service's `--body-timeout` (408) and `limit` bytes (413), as the JSON API reads its bodies."""
    if request.headers.get("content-type", "").split(";")[0].strip() != "application/x-www-form-urlencoded":
        raise Problem(415, "post the form as application/x-www-form-urlencoded")
    raw = await read_body(request, request.app.state.service.body_timeout, limit)
    try:
        fields = parse_qs(raw.decode(), keep_blank_values=True, errors="strict")
    except UnicodeDecodeError as exc:
        raise Problem(400, "the form is not UTF-8") from exc
    form = {k: v[0] for k, v in fields.items()}
    check_strings(form)
    return form


@dataclass(frozen=True)
class View:
    """What the page shows: the filters (agent, task type; the review queue's stop reason too), the
    page number, whether it refreshes."""

    agent: str | None = None
    task_type: str | None = None
    page: int = 1
    refresh: bool = True
    path: str = "/inbox"  # the list shown: the pending list or the review queue
    reason: str | None = None  # the review queue's runs that stopped for this reason only
    order: str | None = None  # the review queue's "newest" first (None: oldest first)

    @classmethod
    def of(cls, request: Request, path: str = "/inbox") -> View:
        q = request.query_params
        number = int_param(q.get("page", "1"), 1, 10**6, "page")
        refresh = q.get("refresh") != "off"
        agent, task_type = (run_filter(k, v) if (v := q.get(k)) else None for k in ("agent", "task_type"))
        return cls(agent, task_type, number, refresh, path)

    def url(self, path: str | None = None, /, **changes: Any) -> str:
        """This view's address (or `path`'s) with `changes` (a None drops a parameter); page 1 and
        refresh on are left out, so the plain view is its bare path."""
        path = path or self.path
        params = {
            "agent": self.agent,
            "task_type": self.task_type,
            "page": self.page if self.page > 1 else None,
            "refresh": None if self.refresh else "off",
            "reason": self.reason,
            "order": self.order,
        } | changes
        query = urlencode({k: v for k, v in params.items() if v is not None})
        return f"{path}?{query}" if query else path


def item(
    b: Briefing, now: float, signed_in: bool, view: View, name: str = "", trace_url: str | None = None
) -> str:
    """One waiting run: what it asks, what it did before, what the call would do, who answered it
    last, its trace (linked with `trace_url`), and its forms (their name field filled in with `name`)."""
    e, r = escape, b.record
    deadline = when(r.deadline or now)
    times = f"""Waiting <span class="waited">{span(waited_seconds(r, now))}</span>;
  deadline {e(deadline)} (<span class="left">{span((r.deadline or now) - now)}</span> left)"""
    kind = "run damaged" if r.damage else "run expired" if b.expired else "run"
    return f"""<article class="{kind}" id="run-{e(r.run_id)}" data-run-id="{e(r.run_id)}">
  <header><a class="agent" href="{e(view.url(agent=r.agent, page=None))}">{e(r.agent)}</a>
  <a class="type" href="{e(view.url(task_type=r.task_type, page=None))}">{e(r.task_type)}</a>
  <span class="id">{e(r.run_id)}</span></header>
  <p class="task">{e(r.task[:SHOWN_CHARS])}</p>{_whole_in_api(r, "the task's", len(r.task), "it")}
  {_question(r)}
  {_refused(r)}{_last_answer(r)}{_call(r, b.preview) or _look_closely(r)}
  {_before(r, b.steps)}{notice(b.unreadable, "journal-error")}
  <p class="times">{times}</p>{trace_line(r, trace_url)}
  {_actions(b, now, signed_in, view, name)}
</article>"""


def trace_line(r: RunRecord, template: str | None) -> str:
    """The run's trace id, linked to `template`'s address of it when one is set; nothing without an id."""
    if not r.trace_id:
        return ""
    e, url = escape, trace_link(template, r.trace_id)
    shown = f'<code class="trace-id">{e(r.trace_id)}</code>'
    opened = f' <a class="trace-link" href="{e(url)}" rel="noreferrer">Open the trace</a>' if url else ""
    return f'\n  <p class="trace">Trace: {shown}{opened}</p>'


def _actions(b: Briefing, now: float, signed_in: bool, view: View, name: str) -> str:
    """What a person can do about the run: nothing but fix a damaged one or wait out an expired one;
    else answer it (signed in)."""
    r = b.record
    if r.damage:
        return f'<p class="damaged-note"><strong>Damaged:</strong> {escape(r.damage)}</p>'
    if b.expired:
        return _expired(r, now)
    return _forms(r, view, name) if signed_in else _SIGN_IN_TO_ANSWER


def _question(r: RunRecord) -> str:
    """What the run asks, its first `SHOWN_CHARS` characters when it is longer (the note says so)."""
    text = r.question or ""
    shown = f'<p class="question">{escape(text[:SHOWN_CHARS])}</p>'
    return shown + _whole_in_api(r, "the question's", len(text), "it")


def _whole_in_api(r: RunRecord, whose: str, length: int, it: str, first: str = "") -> str:
    """Under a text of `r` cut to `SHOWN_CHARS` of its `length`, that it was and where it is whole."""
    if length <= SHOWN_CHARS:
        return ""
    whole = escape(f"/runs/{quote(r.run_id, safe='')}")
    return cut_note(
        whose, SHOWN_CHARS, length, f'{first}<a href="{whole}">{whole}</a> (the API) holds {it} whole.'
    )


def cut_note(whose: str, shown: int, length: int, rest: str, kind: str = "cut") -> str:
    """That only the first `shown` of `whose` `length` characters are on the page, then `rest` (HTML):
    outside the text, whose own words could fake the line."""
    return (
        f'\n  <p class="{kind}"><strong>Cut:</strong> only the first {shown:,} of {whose} {length:,} '
        f"characters are shown; {rest}</p>"
    )


def _refused(r: RunRecord) -> str:
    """Why the last answer given was not taken, for the person who gave it (the run waits again)."""
    if not r.refused:
        return ""
    return f'<p class="refused"><strong>Not taken:</strong> {escape(r.refused)}</p>\n  '


def _last_answer(r: RunRecord) -> str:
    """Who answered the run last (an earlier question, or an answer not taken), when, and what."""
    if not r.answered_note:
        return ""
    return f'<p class="last-answer"><strong>Last answer:</strong> {escape(r.answered_note)}</p>\n  '


def _call(r: RunRecord, preview: Preview | None) -> str:
    """The pending call, its arguments and what it would do, for an approval."""
    if not r.pending or preview is None:
        return ""
    e = escape
    args = visible_json(r.pending.arguments, indent=2, sort_keys=True)
    arguments = f'<pre class="arguments">{e(args[:SHOWN_CHARS])}</pre>' + _whole_in_api(
        r, "the call's arguments'", len(args), "them", "the call gets them all; "
    )
    shown = (
        f'<pre class="preview">{e(preview.text)}</pre>{_cut(preview)}'
        if preview.text
        else f'<p class="no-preview">{e(preview.missing)}</p>'
    )
    return f"""<p class="call">Pending tool call <code>{e(r.pending.name)}</code></p>
  {arguments}{_look_closely(r)}
  <section class="will-do"><h3>What the call will do</h3>
  {shown}</section>"""


def _look_closely(r: RunRecord) -> str:
    """The words of a run's question and call whose letters mix scripts (a Cyrillic a, U+0430, in an
    address shows as the Latin one) or pass for Latin, outside the boxes the model may have written."""
    words = lookalikes(r.asked)
    if not words:
        return ""
    items = "".join(f"<li>{escape(w)}</li>" for w in words)
    return (
        '\n  <div class="lookalikes" role="alert"><strong>Look closely:</strong> letters of other scripts '
        f"that a page shows as the ones you expect:<ul>{items}</ul></div>"
    )


def _cut(preview: Preview) -> str:
    """Under a preview cut short, that it was, outside the preview (whose text could fake the line)."""
    if not preview.length:
        return ""
    rest = "the call does all that the rest says."
    return cut_note("the preview's", len(preview.text), preview.length, rest, "preview-cut")


def _before(r: RunRecord, steps: list[Step]) -> str:
    """What the agent did before asking: the run's summary and its last tool calls."""
    return steps_section(r.summary, steps, "Before asking", "before")


def steps_section(summary: str, steps: list[Step], when: str, kind: str) -> str:
    """A run's summary and its last tool calls (arguments and results shortened), under `when`."""
    e = escape
    rows = "\n".join(
        f"""<li><code class="tool">{e(s.name)}</code> <code class="args">{e(s.arguments)}</code>
    <span class="{"result error" if s.is_error else "result"}">{e(s.result)}</span></li>"""
        for s in steps
    )
    calls = f'<ol class="steps">{rows}</ol>' if rows else '<p class="steps-none">No tool call ran yet.</p>'
    heading = f"{when}: the last {len(steps)} tool calls" if len(steps) > 1 else when
    return f"""<section class="{kind}"><h3>{heading}</h3>
  <p class="summary">{e(summary)}</p>
  {calls}</section>"""


def _expired(r: RunRecord, now: float) -> str:
    return f"""<p class="expired-note"><strong>Expired</strong> {span(now - (r.deadline or now))} ago:
  no answer is taken any more. At its next deadline sweep the service ends the run as
  <code>help_timeout</code> (or goes on with the default answer its help policy sets).</p>"""


def _forms(r: RunRecord, view: View, name: str = "") -> str:
    """The buttons, each saying what it does, and each with the (optional) name it is given under."""
    e = escape
    rid = quote(r.run_id, safe="")
    to = {a: e(view.url(f"/inbox/{rid}/{a}", page=None, refresh=None)) for a in ("answer", "approve", "deny")}
    read = f'<input type="hidden" name="segments" value="{r.segments}">'  # the request as shown
    read += f"""
    <label class="by">Your name <input name="by" type="text" maxlength="{ANSWERER_CHARS}"
      value="{e(name)}" placeholder="optional: kept with the answer"></label>"""
    if r.pending:
        return f"""<div class="actions"><form method="post" action="{to["approve"]}" class="approve">
    {read}<button type="submit">Approve</button>
    <span class="effect">the call runs as shown, then the agent continues.</span></form>
  <form method="post" action="{to["deny"]}" class="deny">
    {read}<label>Reason <input name="reason" type="text" maxlength="{REASON_CHARS}"></label>
    <button type="submit">Deny</button>
    <span class="effect">the call does not run; the agent is told it was denied, with your reason,
    and goes on from there.</span></form></div>"""
    return f"""<div class="actions"><form method="post" action="{to["answer"]}" class="answer">
    {read}<label>Answer
      <textarea name="answer" required maxlength="{ANSWER_CHARS}" rows="2"></textarea></label>
    <button type="submit">Send answer</button>
    <span class="effect">the agent gets your answer as the reply to its question and continues.</span>
  </form></div>"""


def filters(found: list[tuple[str, str, int]], view: View) -> str:
    """Links to the runs of one agent or task type, with how many there are; the current one marked."""
    if not found:
        return ""
    parts = []
    for index, key, label in ((0, "agent", "Agent"), (1, "task_type", "Task type")):
        counts: Counter[str] = Counter()
        for row in found:
            counts[str(row[index])] += row[2]
        current = getattr(view, key)
        links = [link(view.url(**{key: None, "page": None}), "all", current is None)]
        links += [
            link(view.url(**{key: name, "page": None}), f"{name} ({n})", current == name)
            for name, n in sorted(counts.items())
        ]
        parts.append(f'<span class="filter-{key}">{label}: {" ".join(links)}</span>')
    return f'<nav class="filters">{" &middot; ".join(parts)}</nav>'


def link(url: str, text: str, current: bool) -> str:
    mark = ' aria-current="page" class="on"' if current else ""
    return f'<a href="{escape(url)}"{mark}>{escape(text)}</a>'


def _empty(view: View, total: int) -> str:
    """An empty page: nobody waits (of this filter), or this page is past the last (an old link)."""
    return past_last(view, f"{total} waiting") if total else _EMPTY


def past_last(view: View, holds: str, what: str = "run") -> str:
    """An empty page past the last (an old link): it says so and links the first page."""
    first = link(view.url(page=None), "the first page", False)
    return f'<p class="empty past-last">No {what} on page {view.page}: {holds}; go to {first}.</p>'


def pages(view: View, size: int, total: int) -> str:
    """Links to the older and newer pages, when there are any (page 1 holds the oldest requests; the
    newest, in the review queue's `order=newest`)."""
    newest = view.order == "newest"
    links, (before, after) = [], ("Newer", "Older") if newest else ("Older", "Newer")
    if view.page > 1:
        links.append(f'<a href="{escape(view.url(page=view.page - 1))}" rel="prev">{before}</a>')
    if view.page * size < total:
        links.append(f'<a href="{escape(view.url(page=view.page + 1))}" rel="next">{after}</a>')
    if not links:
        return ""
    first, last = min(total, (view.page - 1) * size + 1), min(total, view.page * size)
    held = f"Runs {first}-{last} of {total}, {'newest' if newest else 'oldest'} first"
    return f'<nav class="pages">{held}: {" ".join(links)}</nav>'


def _refresh(view: View) -> tuple[str, str]:
    """The meta refresh (to this view, without a one-time message) and the link that pauses it."""
    if not view.refresh:
        resume = escape(view.url(refresh=None))
        return "", f'<p class="refresh">Refresh paused. <a href="{resume}">Refresh again</a></p>'
    target = escape(view.url())
    pause = escape(view.url(refresh="off"))
    return (
        f'<meta http-equiv="refresh" content="{REFRESH_SECONDS}; url={target}">',
        f'<p class="refresh">This page refreshes every {REFRESH_SECONDS} s; '
        f'<a href="{pause}">pause it</a> while you write an answer.</p>',
    )


def span(seconds: float) -> str:
    if seconds < 0:
        return "none"
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def notice(text: str, kind: str) -> str:
    """A notice or an error on a page, at most `MAX_SAID` characters of it (`said`)."""
    return f'<p class="{kind}" role="status">{escape(said(text))}</p>' if text else ""


_SIGN_IN = """<form method="post" action="/inbox/login" class="login">
  <label>Service token <input name="token" type="password" autocomplete="current-password" required></label>
  <button type="submit">Sign in</button></form>"""
_SIGN_OUT = """<form method="post" action="/inbox/logout" class="logout">
  <span>Signed in.</span> <button type="submit">Sign out</button></form>"""
_TOKEN_HELP = f"""<p class="token-help">The token is the service's own, from where <code>endstate serve</code>
  took it (it prints which at start): <code>${ENV_TOKEN}</code> in its environment, the file given with
  <code>--token-file</code> (or <code>${ENV_TOKEN_FILE}</code>), or else the file <code>token</code> it made
  beside its SQLite store (<code>.endstate/token</code> by default).</p>"""
_SIGN_IN_TO_ANSWER = '<p class="sign-in-to-answer">Sign in to answer.</p>'
_EMPTY = '<p class="empty">No run is waiting for a person.</p>'
