"""The help inbox: one server-rendered page of runs waiting for a person. No build step, no script.

Sign in once with the service token (the page keeps an HttpOnly, SameSite=Strict
cookie derived from it); then answer a question, or approve or deny a pending
tool call. Every form posts to `/inbox/...` and comes back to the page.

Questions and tool arguments come from the model: every value is HTML-escaped,
and the page forbids scripts and framing (CSP), so markup in them stays text.
A form posted from another origin is refused, cookie or not (its `Origin`,
`Sec-Fetch-Site` or, when only that is sent, its `Referer` says so).

The page lists the waiting runs oldest first, `page_size` at a time
(`/inbox?page=2`). When reads need the token, only a signed-in person sees them.
"""

from __future__ import annotations

import html
import json
import time
from importlib import resources
from string import Template
from typing import Any
from urllib.parse import parse_qs, quote, urlsplit

from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Route

from agent.errors import EndstateError
from agent.service.config import Service
from agent.service.http import Problem, check_strings, int_param, read_body, status_of, waiting_page
from agent.store import RunRecord
from agent.store.base import when

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


class Inbox:
    def __init__(self, service: Service) -> None:
        self.service = service

    async def page(self, request: Request) -> Response:
        return await self.render(request, message=request.query_params.get("message", ""))

    async def render(
        self, request: Request, message: str = "", error: str = "", status: int = 200
    ) -> Response:
        signed_in = self._signed_in(request)
        number = int_param(request.query_params.get("page", "1"), 1, 10**6, "page")
        size = self.service.page_size
        records: list[RunRecord] = []
        total = 0
        if self.service.reads_need_token and not signed_in:
            error = error or "Sign in with the service token to see the runs waiting for a person."
        else:
            records, total = await waiting_page(self.service.runner.store, (number - 1) * size, size)
        now = time.time()
        body = PAGE.substitute(
            count=total,
            notice=_notice(message, "notice") + _notice(error, "error"),
            session=_SIGN_OUT if signed_in else _SIGN_IN,
            items="\n".join(item(r, now, signed_in) for r in records) or _EMPTY,
            pages=_pages(number, size, total),
        )
        return HTMLResponse(body, status_code=status, headers=HEADERS)

    async def login(self, request: Request) -> Response:
        self._same_origin(request)
        form = await _form(request)
        if not self.service.token.accepts(form.get("token")):
            return await self.render(request, error="That token is not valid.", status=401)
        response = RedirectResponse("/inbox?message=" + quote("Signed in."), status_code=303)
        response.set_cookie(
            "endstate_inbox",
            self.service.token.cookie_value,
            httponly=True,
            samesite="strict",
            secure=request.url.scheme == "https",
        )
        return response

    async def logout(self, request: Request) -> Response:
        self._same_origin(request)
        response = RedirectResponse("/inbox", status_code=303)
        response.delete_cookie("endstate_inbox")
        return response

    async def act(self, request: Request) -> Response:
        self._same_origin(request)
        run_id, action = request.path_params["run_id"], request.path_params["action"]
        if not self._signed_in(request):
            return await self.render(request, error="Sign in with the service token first.", status=401)
        if action not in ("answer", "approve", "deny"):
            return await self.render(request, error=f"Unknown action {action!r}.", status=404)
        form = await _form(request)
        try:
            job = self._claim(run_id, action, form)
        except EndstateError as exc:
            return await self.render(request, error=str(exc), status=status_of(exc))
        self.service.runner.spawn(job)
        done = {"answer": "Answered", "approve": "Approved", "deny": "Denied"}[action]
        return RedirectResponse("/inbox?message=" + quote(f"{done} run {run_id}; it runs again."), 303)

    def _claim(self, run_id: str, action: str, form: dict[str, str]) -> Any:
        runner = self.service.runner
        if action == "answer":
            return runner.claim(run_id, form.get("answer", ""))
        if action == "approve":
            return runner.claim(run_id, approved=True)
        return runner.claim(run_id, form.get("reason") or None, approved=False)

    def _signed_in(self, request: Request) -> bool:
        return self.service.token.accepts_cookie(request.cookies.get("endstate_inbox"))

    def _same_origin(self, request: Request) -> None:
        """Refuse a form posted from another origin (the cookie is SameSite=Strict too).

        A browser says where a form came from in `Sec-Fetch-Site` and `Origin`, or
        (older ones, some privacy settings) only in `Referer`; an opaque origin
        (`null`: a sandboxed frame, a data: page) is refused too.
        """
        site = request.headers.get("sec-fetch-site")
        origin = request.headers.get("origin") or request.headers.get("referer")
        cross = site is not None and site not in ("same-origin", "none")
        if cross or (origin is not None and urlsplit(origin).netloc != request.headers.get("host")):
            raise Problem(403, "cross-site form posts are refused: use the inbox page itself")


async def _form(request: Request) -> dict[str, str]:
    """An urlencoded form (no multipart dependency): the first value of each field."""
    if request.headers.get("content-type", "").split(";")[0].strip() != "application/x-www-form-urlencoded":
        raise Problem(415, "post the form as application/x-www-form-urlencoded")
    raw = await read_body(request)
    try:
        fields = parse_qs(raw.decode(), keep_blank_values=True, errors="strict")
    except UnicodeDecodeError as exc:
        raise Problem(400, "the form is not UTF-8") from exc
    form = {k: v[0] for k, v in fields.items()}
    check_strings(form)
    return form


def item(r: RunRecord, now: float, signed_in: bool) -> str:
    """One waiting run, with its forms when signed in."""
    e = html.escape
    waited = now - (r.suspended_at or now)
    left = (r.deadline or now) - now
    call = ""
    if r.pending:
        args = json.dumps(r.pending.arguments, indent=2, sort_keys=True)
        call = f'<p class="call">Pending tool call <code>{e(r.pending.name)}</code></p><pre>{e(args)}</pre>'
    deadline = when(r.deadline or now)
    return f"""<article class="run" id="run-{e(r.run_id)}" data-run-id="{e(r.run_id)}">
  <header><strong class="agent">{e(r.agent)}</strong> <span class="type">{e(r.task_type)}</span>
  <span class="id">{e(r.run_id)}</span></header>
  <p class="task">{e(r.task)}</p>
  <p class="question">{e(r.question or "")}</p>
  {call}
  <p class="times">Waiting <span class="waited">{_span(waited)}</span>; deadline {e(deadline)}
  (<span class="left">{_span(left)}</span> left)</p>
  {_forms(r) if signed_in else ""}
</article>"""


def _forms(r: RunRecord) -> str:
    rid = html.escape(quote(r.run_id, safe=""))
    if r.pending:
        return f"""<form method="post" action="/inbox/{rid}/approve" class="approve">
    <button type="submit">Approve</button></form>
  <form method="post" action="/inbox/{rid}/deny" class="deny">
    <label>Reason <input name="reason" type="text" maxlength="2000"></label>
    <button type="submit">Deny</button></form>"""
    return f"""<form method="post" action="/inbox/{rid}/answer" class="answer">
    <label>Answer <textarea name="answer" required maxlength="20000" rows="2"></textarea></label>
    <button type="submit">Send answer</button></form>"""


def _pages(number: int, size: int, total: int) -> str:
    """Links to the newer and older pages, when there are any."""
    links = []
    if number > 1:
        links.append(f'<a href="/inbox?page={number - 1}" rel="prev">Older</a>')
    if number * size < total:
        links.append(f'<a href="/inbox?page={number + 1}" rel="next">Newer</a>')
    if not links:
        return ""
    first, last = min(total, (number - 1) * size + 1), min(total, number * size)
    return f'<nav class="pages">Runs {first}-{last} of {total}, oldest first: {" ".join(links)}</nav>'


def _span(seconds: float) -> str:
    if seconds < 0:
        return "none"
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def _notice(text: str, kind: str) -> str:
    return f'<p class="{kind}" role="status">{html.escape(text)}</p>' if text else ""


_SIGN_IN = """<form method="post" action="/inbox/login" class="login">
  <label>Service token <input name="token" type="password" autocomplete="current-password" required></label>
  <button type="submit">Sign in</button></form>"""
_SIGN_OUT = """<form method="post" action="/inbox/logout" class="logout">
  <span>Signed in.</span> <button type="submit">Sign out</button></form>"""
_EMPTY = '<p class="empty">No run is waiting for a person.</p>'
