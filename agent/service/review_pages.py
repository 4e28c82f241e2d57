"""The review queue in the inbox: the finished runs a person should look at, their labels, and
the eval cases promoted from them. Server-rendered like the pending list, no script.

`/inbox/review` lists what `endstate review` lists (unlabelled runs that stopped as gave_up,
limit, no_progress or error, and a sample of the successes), oldest first, a page at a time,
of one agent, task type or stop reason when asked (`?reason=limit`: the runs that stopped at a
limit, and no sampled success; the alerts on those stops link their runs so). Each run shows
what it did (its stop, the cause, its summary and its last tool calls) and, to a signed-in
person, a form with the labels that fit its stop; a label is stored with the name the person
gives and takes the run out of the queue.
`/inbox/review/labelled` lists the latest labels, latest first. A run's own page
(`/inbox/review/runs/RUN_ID`) shows its labels and the eval case a promote writes: shown on the
page, downloadable, and written into the service's cases folder (`serve --cases-dir`) by the
promote button, never over an existing file. The download is the case file (`case.yaml`), or,
when the run's tools returned images or PDFs, a zip of it and its `blobs/` (`case.zip`): the
case names those by digest, and without their bytes it cannot be replayed.

Forms post with the inbox's defences: the cookie made from the service token, and refused when
posted from another origin.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from dataclasses import replace
from typing import IO, Any
from urllib.parse import quote, unquote, urlencode

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response, StreamingResponse
from starlette.routing import Route

from agent.durable import review
from agent.durable.review import CaseFiles, Label
from agent.durable.runner import RUN_ID
from agent.durable.store import RunRecord
from agent.durable.store.base import Review, when
from agent.errors import EndstateError
from agent.service.briefing import Step, journal_end, last_steps, steps_of
from agent.service.config import Service
from agent.service.http import Problem, notice_of, notice_params, status_of
from agent.service.inbox import (
    HEADERS,
    REVIEWER_COOKIE,
    View,
    cut_note,
    filters,
    form_of,
    link,
    not_sent,
    notice,
    page_html,
    pages,
    past_last,
    remember,
    same_origin,
    session,
    signed_in,
    span,
    steps_section,
    trace_line,
    written,
)
from agent.service.visible import escape
from agent.stops import StopReason

QUEUE = "/inbox/review"
LABELLED = "/inbox/review/labelled"
MAX_NAME = review.NAME_CHARS  # of a labeller's name: an answerer's
MAX_NOTE = review.NOTE_CHARS
NOTE = ("note",)  # the label form's own text, shown back when the label is refused
CARD_CHARS = 2000  # of a task or a stop's cause (a model's final text) a queue's card shows; its page: all
LABEL_TEXT = {  # what each label says and what it does
    Label.CORRECT_GIVE_UP: (
        "Correct give-up",
        "it was right to stop; a promoted case expects the stop it had",
    ),
    Label.SHOULD_HAVE_SUCCEEDED: (
        "Should have succeeded",
        "the task was possible: a regression to fix; a promoted case expects success",
    ),
    Label.LIMIT_TOO_LOW: (
        "Limit too low",
        "it was on its way when a ceiling cut it off; limits suggest puts that ceiling above this run",
    ),
    Label.FALSE_SUCCESS: (
        "False success",
        "it said success but the work is wrong; limits suggest leaves it out; a case expects gave_up",
    ),
    Label.FINE: ("Fine", "nothing to act on; a promoted case expects the exit it had"),
}


PATHS = (  # the review pages: (path, ReviewPages' handler, method)
    (QUEUE, "queue", "GET"),
    (LABELLED, "labelled", "GET"),
    ("/inbox/review/runs/{run_id}", "run", "GET"),
    ("/inbox/review/runs/{run_id}/case.yaml", "case_file", "GET"),
    ("/inbox/review/runs/{run_id}/case.zip", "case_archive", "GET"),
    ("/inbox/review/runs/{run_id}/label", "label", "POST"),
    ("/inbox/review/runs/{run_id}/promote", "promote", "POST"),
)


def routes(service: Service) -> list[Route]:
    """The review pages; over a store that keeps no labels (`serve --temporal`), each a page saying so."""
    if not hasattr(service.runner.store, "review_counts"):
        return [Route(path, _no_review, methods=[method]) for path, _, method in PATHS]
    pages_ = ReviewPages(service)
    return [Route(path, getattr(pages_, name), methods=[method]) for path, name, method in PATHS]


async def _no_review(request: Request) -> Response:
    """The review queue over Temporal (a 501, not a bare 500): labels and cases live in a run store."""
    body = page_html(
        "review",
        title="Endstate review queue: not on Temporal",
        heading="Runs to review:",
        notice=notice(_NO_REVIEW, "error"),
        session="",
        items="",
    )
    return HTMLResponse(body, status_code=501, headers=HEADERS)


_NO_REVIEW = (
    "The review queue is not served over Temporal (yet): labels and eval cases are kept in a run store "
    "(SQLite or PostgreSQL, `endstate serve --store ...`), and this service reads Temporal's runs, which "
    "keep neither. Answers to waiting runs are served here as usual."
)


def run_url(run_id: str, action: str = "") -> str:
    return f"/inbox/review/runs/{quote(run_id, safe='')}" + (f"/{action}" if action else "")


class ReviewPages:
    """The review queue, the labelled runs, and one run's page with its eval case."""

    def __init__(self, service: Service) -> None:
        self.service = service
        self.store = service.runner.store

    # -- pages ----------------------------------------------------------------------------------

    async def queue(self, request: Request) -> Response:
        return await self.render_queue(request, message=notice_of(request, self.service.token))

    async def render_queue(
        self, request: Request, message: str = "", error: str = "", status: int = 200, kept: str = ""
    ) -> Response:
        """The queue; with `kept` (a refused label's own note, HTML) shown under the error."""
        view = queue_view(request)
        reasons = (StopReason(view.reason),) if view.reason else review.QUEUE_REASONS
        share = 0.0 if view.reason else review.DEFAULT_SUCCESS_SHARE  # "limit": limit stops, no success
        is_in, size = signed_in(self.service, request), self.service.page_size
        counts: list[tuple[str, str, int]] = []
        records: list[RunRecord] = []
        if self._reads_refused(request):
            error = error or "Sign in with the service token to see the runs to review."
        else:
            counts = await run_in_threadpool(review.queue_counts, self.store, reasons, share)
            offset = (view.page - 1) * size
            records = await run_in_threadpool(
                lambda: review.queue(
                    self.store,
                    reasons,
                    share,
                    limit=size,
                    offset=offset,
                    agent=view.agent,
                    task_type=view.task_type,
                    order=view.order or "oldest",
                )
            )
        total = sum(n for a, t, n in counts if view.agent in (None, a) and view.task_type in (None, t))
        steps = await run_in_threadpool(lambda: [steps_of(self.store, r)[0] for r in records])
        reviewer, traces, now = _reviewer(request), self.service.trace_url, self.service.runner.clock.time()
        items = [
            run_card(r, s, view, CARD_CHARS, traces, now=now)
            + (label_form(r, view, reviewer) if is_in else _SIGN_IN_TO_LABEL)
            for r, s in zip(records, steps, strict=True)
        ]
        body = page_html(
            "review",
            title=f"Endstate review queue ({total} to review)",
            heading="Runs to review:",
            count=total,
            notice=notice(message, "notice") + _done_link(request, message) + notice(error, "error") + kept,
            session=session(is_in),
            refresh_note=_queue_intro(view),
            filters=filters(counts, view) + reason_filter(view) + order_switch(view),
            items="\n".join(
                f'<article class="run review" {_ids(r)}>{i}</article>'
                for r, i in zip(records, items, strict=True)
            )
            or _empty(view, total),
            pages=pages(view, size, total),
        )
        return HTMLResponse(body, status_code=status, headers=HEADERS)

    async def labelled(self, request: Request) -> Response:
        view = View.of(request, LABELLED)
        size = self.service.page_size
        error = ""
        found: list[Review] = []
        if self._reads_refused(request):
            error = "Sign in with the service token to see the labelled runs."
        else:
            offset = (view.page - 1) * size
            found = await run_in_threadpool(
                lambda: self.store.labelled(size + 1, offset, view.agent, view.task_type)
            )
        body = page_html(
            "labelled",
            title="Endstate review: labelled runs",
            heading="Labelled runs, latest first",
            notice=notice(notice_of(request, self.service.token), "notice") + notice(error, "error"),
            session=session(signed_in(self.service, request)),
            refresh_note=_filtered_note(view, found),
            items=self._labelled_table(found[:size], view) if found else _none_labelled(view),
            pages=_later_earlier(view, more=len(found) > size),
        )
        return HTMLResponse(body, headers=HEADERS)

    async def run(self, request: Request) -> Response:
        return await self.render_run(request, message=notice_of(request, self.service.token))

    async def render_run(
        self, request: Request, message: str = "", error: str = "", status: int = 200
    ) -> Response:
        run_id = request.path_params["run_id"]
        is_in = signed_in(self.service, request)
        content = ""
        if self._reads_refused(request):
            error = error or "Sign in with the service token to see this run."
        elif not RUN_ID.fullmatch(run_id):  # shown as it is, a link's words would read as the page's
            run_id, error, status = "", error or _NOT_AN_ID, 404
        else:
            try:
                found = await self._run_page(run_id, is_in, _reviewer(request))
            except EndstateError as exc:  # its row or its journal cannot be read: the page says so
                found, error, status = "", f"Run {run_id} cannot be shown: {exc}", status_of(exc)
            if found is None:
                error, status = f"No run with id {run_id!r}.", 404
            content = found or ""
        body = page_html(
            "review",
            title=f"Endstate review: run {escape(run_id)}",
            heading="Review of run",
            count=escape(run_id),
            notice=notice(message, "notice") + notice(error, "error"),
            session=session(is_in),
            items=content,
        )
        return HTMLResponse(body, status_code=status, headers=HEADERS)

    async def _run_page(self, run_id: str, is_in: bool, reviewer: str) -> str | None:
        """The run's review, or None when there is no such run."""
        record = await run_in_threadpool(self.store.get, run_id)
        return None if record is None else await self._run_content(record, is_in, reviewer)

    async def _run_content(self, record: RunRecord, is_in: bool, reviewer: str) -> str:
        run_id = record.run_id
        steps = await run_in_threadpool(lambda: last_steps(journal_end(self.store, run_id)))
        labels = await run_in_threadpool(self.store.reviews, 0, [run_id])
        view = View(path=QUEUE)
        form = label_form(record, view, reviewer, again=bool(labels)) if is_in else ""
        now = self.service.runner.clock.time()
        card = run_card(record, steps, view, trace_url=self.service.trace_url, now=now) + _history(labels)
        card += form if record.status == "finished" else ""
        case = await self._case_section(record, labels, is_in)
        return f'<article class="run review" {_ids(record)}>{card}</article>\n{case}'

    async def _case_section(self, record: RunRecord, labels: list[Review], is_in: bool) -> str:
        """The eval case a promote writes for the run: shown, downloadable, and the promote button."""
        e = escape
        if record.status != "finished":
            return _case(f'<p class="case-note">Run {e(record.run_id)} is {e(record.status)}: only '
                         "finished runs are reviewed and promoted.</p>")  # fmt: skip
        if not labels:
            return _case('<p class="case-note">Label the run first: its eval case expects the exit '
                         "its label chooses.</p>")  # fmt: skip
        try:
            files = await run_in_threadpool(
                review.case_files, self.store, record.run_id, None, self.service.catalog_spec
            )
        except EndstateError as exc:
            return _case(f'<p class="case-error error">No eval case can be made: {e(str(exc))}</p>')
        expects = e(" -> ".join(_expected(files.case)))
        return _case(f"""<p class="case-note">The case replays the run's recorded model replies and
  expects <code>{expects}</code>; <code>endstate eval</code> fails it when the agent now behaves otherwise.
  {_download_link(files)}</p>
  {self._promote_part(record.run_id, is_in)}
  <pre class="case-yaml">{e(review.case_yaml(files.case))}</pre>""")

    def _promote_part(self, run_id: str, is_in: bool) -> str:
        e, folder = escape, self.service.cases_dir
        if folder is None:
            return (
                '<p class="case-note no-cases-dir">To promote from here, start the service with '
                "<code>--cases-dir DIR</code> (or <code>$ENDSTATE_CASES_DIR</code>); or download the file "
                "into your eval folder.</p>"
            )
        path = folder / review.case_file(run_id)
        if path.exists():
            return (
                f'<p class="promoted">Promoted: <code>{e(str(path))}</code>. Run it with '
                f"<code>endstate eval {e(str(folder))}</code>.</p>"
            )
        if not is_in:
            return '<p class="sign-in-to-label">Sign in to promote.</p>'
        return f"""<form method="post" action="{e(run_url(run_id, "promote"))}" class="promote">
    <button type="submit">Promote</button>
    <span class="effect">writes <code>{e(str(path))}</code> (never over an existing file);
    <code>endstate eval {e(str(folder))}</code> runs it.</span></form>"""

    def _labelled_table(self, found: list[Review], view: View) -> str:
        e, folder = escape, self.service.cases_dir
        rows = []
        for r in found:
            promoted = folder is not None and (folder / review.case_file(r.run_id)).exists()
            case = "promoted" if promoted else "not promoted"
            rows.append(f"""<tr class="labelled-run" data-run-id="{e(r.run_id)}">
  <td><a class="id" href="{e(run_url(r.run_id))}">{e(r.run_id)}</a></td>
  <td>{link(view.url(agent=r.agent, page=None), r.agent, False)}</td>
  <td>{link(view.url(task_type=r.task_type, page=None), r.task_type, False)}</td>
  <td class="label">{e(r.label)}</td><td class="by">{e(r.by or "(not recorded)")}</td>
  <td class="when">{e(when(r.labelled_at))}</td><td class="note">{e(r.note)}</td>
  <td class="case">{case}</td></tr>""")
        head = "".join(f"<th>{h}</th>" for h in _COLUMNS)
        head = f"<tr>{head}</tr>"
        return f'<table class="labelled">{head}\n{"".join(rows)}</table>'

    # -- downloads and forms ----------------------------------------------------------------------

    async def case_file(self, request: Request) -> Response:
        """The case file alone (a run with images or PDFs needs its blobs too: `case_archive`)."""
        files = await self._case_files(request)
        if isinstance(files, Response):
            return files
        headers = HEADERS | {"Content-Disposition": f'attachment; filename="{files.name}"'}
        return Response(review.case_yaml(files.case), media_type="application/yaml", headers=headers)

    async def case_archive(self, request: Request) -> Response:
        """The case file and its `blobs/` as a zip, written to a spooled file (a run of screenshots
        can hold many megabytes) and streamed from it."""
        files = await self._case_files(request)
        if isinstance(files, Response):
            return files
        spool = await run_in_threadpool(_zipped, files)
        headers = HEADERS | {"Content-Disposition": f'attachment; filename="{files.archive}"'}
        return StreamingResponse(_chunks(spool), media_type="application/zip", headers=headers)

    async def _case_files(self, request: Request) -> CaseFiles | Response:
        """The run's case files, or the run's page saying why there are none to download."""
        run_id = request.path_params["run_id"]
        if self._reads_refused(request):
            return await self.render_run(request, error="Sign in with the service token first.", status=401)
        if not RUN_ID.fullmatch(run_id):
            return await self.render_run(request)  # a 404 that repeats no words of the address
        try:
            files: CaseFiles = await run_in_threadpool(
                review.case_files, self.store, run_id, None, self.service.catalog_spec
            )
        except EndstateError as exc:
            return await self.render_run(request, error=str(exc), status=status_of(exc))
        return files

    async def label(self, request: Request) -> Response:
        same_origin(request)
        run_id = request.path_params["run_id"]
        if not signed_in(self.service, request):
            kept = not_sent(await written(request), NOTE)
            return await self.render_queue(
                request, error="Sign in with the service token first.", status=401, kept=kept
            )
        form = await form_of(request)
        back = queue_view(request)  # the queue as it was shown (its order too); a bad one: 400, no label
        kept, by, note = not_sent(form, NOTE), form.get("by", "").strip(), form.get("note", "")
        if not by:  # a name too long, or a note, is refused by `review.label`, as `endstate review label` is
            problem = f"Say who you are (your name, at most {MAX_NAME} characters) with the label."
            return await self.render_queue(request, error=problem, status=400, kept=kept)
        try:
            given = await run_in_threadpool(
                review.label, self.store, run_id, form.get("label", ""), note, None, by
            )
        except review.LabelMismatch as exc:  # understood, but not a label for how this run stopped
            return await self.render_queue(request, error=str(exc), status=422, kept=kept)
        except EndstateError as exc:
            return await self.render_queue(request, error=str(exc), status=status_of(exc), kept=kept)
        said = f"Labelled run {given.run_id} {given.label} (by {given.by}); it left the queue."
        signed = notice_params(self.service.token, said)
        response = RedirectResponse(back.url(done=given.run_id, **signed), 303)
        remember(response, request, by)
        return response

    async def promote(self, request: Request) -> Response:
        same_origin(request)
        run_id = request.path_params["run_id"]
        if not signed_in(self.service, request):
            return await self.render_run(request, error="Sign in with the service token first.", status=401)
        await form_of(request)  # the form is empty; its type and size are checked all the same
        folder = self.service.cases_dir
        if folder is None:
            problem = (
                "This service writes no case files: start it with --cases-dir DIR (or $ENDSTATE_CASES_DIR), "
                "or download the case and commit it to your eval folder."
            )
            return await self.render_run(request, error=problem, status=409)
        try:
            done = await run_in_threadpool(
                lambda: review.promote(
                    self.store, run_id, None, folder, catalog=self.service.catalog_spec, overwrite=False
                )
            )
        except review.CaseExists as exc:
            return await self.render_run(request, error=str(exc), status=409)
        except EndstateError as exc:
            return await self.render_run(request, error=str(exc), status=status_of(exc))
        expects = " -> ".join(done.expected)
        said = f"Wrote {done.path}: case {done.name!r}, expects {expects}. Run it: endstate eval {folder}"
        signed = urlencode(notice_params(self.service.token, said))
        return RedirectResponse(f"{run_url(run_id)}?{signed}", 303)

    def _reads_refused(self, request: Request) -> bool:
        return self.service.reads_need_token and not signed_in(self.service, request)


# -- pieces ------------------------------------------------------------------------------------------


def queue_view(request: Request) -> View:
    """The queue's view: the inbox's filters, `reason` (one of the queue's stop reasons) when given,
    and `order=newest` for the latest runs first."""
    view = View.of(request, QUEUE)
    reason = request.query_params.get("reason") or None
    if reason is not None and reason not in _REASONS:
        known = ", ".join(_REASONS)
        raise Problem(400, f"reason {reason[:40]!r} is not a stop the review queue holds: use one of {known}")
    order = request.query_params.get("order") or "oldest"
    if order not in ORDERS:
        raise Problem(400, f"order {order[:40]!r} is not an order of the review queue: use oldest or newest")
    return replace(view, reason=reason, order=None if order == "oldest" else order)


def order_switch(view: View) -> str:
    """Links to the queue oldest first (the queue, the default) and newest first (as in an incident)."""
    newest = view.order == "newest"
    links = [
        link(view.url(order=None, page=None), "oldest first", not newest),
        link(view.url(order="newest", page=None), "newest first", newest),
    ]
    return f'<nav class="filters filter-order">Order: {" ".join(links)}</nav>'


def reason_filter(view: View) -> str:
    """Links to the queue's runs of one stop reason (`endstate review --reason`), the current one marked."""
    links = [link(view.url(reason=None, page=None), "all", view.reason is None)]
    links += [link(view.url(reason=r, page=None), r, view.reason == r) for r in _REASONS]
    return f'<nav class="filters filter-reason">Stop: {" ".join(links)}</nav>'


def run_card(
    r: RunRecord,
    steps: list[Step],
    view: View,
    most: int | None = None,
    trace_url: str | None = None,
    *,
    now: float,
) -> str:
    """A finished run: who, the task, how it stopped and why, its trace (linked with `trace_url`),
    what it did (of the task and the cause, the first `most` characters when given: `_shown`). How
    long ago it ended is reckoned from `now`, by the clock that stamped its end (the runner's: the
    store's)."""
    e = escape
    stop = f"{r.stop_reason}" + (f" ({r.stop_limit})" if r.stop_limit else "")
    ended = r.ended_at or r.updated_at
    ago = span(now - ended)
    cause = r.note or r.output or (f"its {r.stop_limit} budget ran out" if r.stop_limit else "")
    error = f" <code>{e(r.error_type)}</code>" if r.error_type else ""
    task, task_cut = _shown(r, r.task, most)
    cause, cause_cut = _shown(r, cause, most)
    return f"""<header><a class="agent" href="{e(view.url(agent=r.agent, page=None))}">{e(r.agent)}</a>
  <a class="type" href="{e(view.url(task_type=r.task_type, page=None))}">{e(r.task_type)}</a>
  <a class="id" href="{e(run_url(r.run_id))}">{e(r.run_id)}</a></header>
  <p class="task">{e(task)}</p>{task_cut}
  <p class="stop">Stopped: <code>{e(stop)}</code> after {r.turns} turn{"" if r.turns == 1 else "s"},
  ended {e(when(ended))} ({ago} ago)</p>
  <p class="cause">Cause:{error} {e(cause) or "(the run gave none)"}</p>{cause_cut}{trace_line(r, trace_url)}
  {steps_section(r.summary, steps, "What it did", "did")}"""


def _shown(r: RunRecord, text: str, most: int | None) -> tuple[str, str]:
    """`text` of run `r` as a card in a list shows it: its first `most` characters (a pasted log, a
    model's megabyte) and a note saying so, when it is longer; else whole, without a note."""
    if most is None or len(text) <= most:
        return text, ""
    whole = f'<a href="{escape(run_url(r.run_id))}">the run\'s page</a> shows them all.'
    return text[:most], cut_note("its", most, len(text), whole)


def label_form(r: RunRecord, view: View, reviewer: str, again: bool = False) -> str:
    """The labels that fit the run's stop, a note, who is labelling, and what saving does
    (`again`: the run has a label; a new one replaces it)."""
    e = escape
    legend = "Label it again (the new label replaces the last)" if again else "What did you find?"
    fits = review.labels_for(r.stop_reason)
    choices = "\n".join(
        f"""<label><input type="radio" name="label" value="{lab}" required>
      <span class="label-name">{LABEL_TEXT[lab][0]}</span>
      <span class="label-effect">{e(LABEL_TEXT[lab][1])}</span></label>"""
        for lab in fits
    )
    action = e(view.url(run_url(r.run_id, "label"), refresh=None))
    return f"""<form method="post" action="{action}" class="label">
    <fieldset class="labels"><legend>{legend}</legend>
    {choices}</fieldset>
    <label>Note <input name="note" type="text" maxlength="{MAX_NOTE}" size="40"></label>
    <label>Your name
      <input name="by" type="text" required maxlength="{MAX_NAME}" value="{e(reviewer)}"></label>
    <button type="submit">Save label</button>
    <span class="effect">the run leaves the queue; the label is counted and feeds
    <code>limits suggest</code>.</span></form>"""


def _history(labels: list[Review]) -> str:
    """The labels a run was given, latest first (the latest counts)."""
    if not labels:
        return '<p class="labels-none">Not labelled yet.</p>'
    e = escape
    rows = "\n".join(
        f"""<li><strong class="label">{e(r.label)}</strong>
    <span class="labelled-by">by {e(r.by or "(not recorded)")}, {e(when(r.labelled_at))}</span>
    {f'<span class="note">{e(r.note)}</span>' if r.note else ""}</li>"""
        for r in reversed(labels)
    )
    return f'<section class="labels-given"><h3>Labels (the latest counts)</h3><ol>{rows}</ol></section>'


def _download_link(files: CaseFiles) -> str:
    """The download: the case file, or, when the run's results hold images or PDFs, a zip of it and
    of `blobs/` with their bytes, the link saying which."""
    e = escape
    if not files.blobs:
        href = e(run_url(files.run_id, "case.yaml"))
        return f'<a class="download" href="{href}" download="{e(files.name)}">Download {e(files.name)}</a>'
    href = e(run_url(files.run_id, "case.zip"))
    link_ = f'<a class="download" href="{href}" download="{e(files.archive)}">Download {e(files.archive)}</a>'
    return (
        f'{link_}: <span class="download-holds">{e(files.name)} and, in <code>blobs/</code>, the '
        f"{e(files.held())} its tools returned, which the replay checks; unzip it into your eval "
        "folder (keep <code>blobs/</code> beside the case).</span>"
    )


SPOOLED = 16 * 1024 * 1024  # bytes of a zip kept in memory; a larger one goes to a temporary file
CHUNK = 1024 * 1024


def _zipped(files: CaseFiles) -> IO[bytes]:
    spool = tempfile.SpooledTemporaryFile(max_size=SPOOLED)  # noqa: SIM115  # closed by _chunks
    try:
        files.write_zip(spool)
    except BaseException:
        spool.close()
        raise
    spool.seek(0)
    return spool


def _chunks(spool: IO[bytes]) -> Iterator[bytes]:
    """The spooled zip, a chunk at a time, closed when read (or when the client left)."""
    with spool:
        while chunk := spool.read(CHUNK):
            yield chunk


def _case(inner: str) -> str:
    return f'<section class="case"><h2>Eval case</h2>\n  {inner}</section>'


def _expected(case: dict[str, Any]) -> list[str]:
    then = case.get("then")
    return [case["expect"]] + ([then["expect"]] if then else [])


def _ids(r: RunRecord) -> str:
    e = escape
    return f'id="run-{e(r.run_id)}" data-run-id="{e(r.run_id)}"'


def _reviewer(request: Request) -> str:
    return unquote(request.cookies.get(REVIEWER_COOKIE, ""))[:MAX_NAME]


def _done_link(request: Request, message: str) -> str:
    """After a label: the way to the run's page, where its case is promoted. Only under the
    service's signed notice of that label (`message`): a link someone else wrote
    (`?done=Your session expired...`) shows nothing."""
    done = request.query_params.get("done")
    if not done or not message.startswith(f"Labelled run {done} "):
        return ""
    url = escape(run_url(done))
    opened = f'<a href="{url}">Open run {escape(done)}</a>'
    return f'<p class="notice next" role="status">{opened} to see or promote its eval case.</p>'


def _empty(view: View, total: int) -> str:
    """An empty page: the queue is empty, or this page is past its last."""
    return past_last(view, f"the queue holds {total}") if total else _EMPTY_QUEUE


def _none_labelled(view: View) -> str:
    if view.page == 1:
        return _NONE_LABELLED
    first = link(view.url(page=None), "the first page", False)
    return f'<p class="empty past-last">No labels on page {view.page}; go to {first}.</p>'


def _filtered_note(view: View, found: list[Review]) -> str:
    """What a filtered list holds, named from the labels `found` (each of that agent and task type),
    never from the address: a link someone else wrote (`?agent=Your session expired. Sign in at
    ...`) puts none of its words on the page."""
    if not (view.agent or view.task_type):
        return ""
    show_all = link(LABELLED, "Show all", False)
    if not found:
        return f'<p class="intro">No label here of the agent or task type this link asks for. {show_all}</p>'
    r = found[0]
    asked = (("agent", r.agent, view.agent), ("task type", r.task_type, view.task_type))
    shown = ", ".join(f"{k} {v}" for k, v, filtered in asked if filtered)
    return f'<p class="intro">Only {escape(shown)}. {show_all}</p>'


def _later_earlier(view: View, more: bool) -> str:
    links = []
    if view.page > 1:
        links.append(f'<a href="{escape(view.url(page=view.page - 1))}" rel="prev">Later labels</a>')
    if more:
        links.append(f'<a href="{escape(view.url(page=view.page + 1))}" rel="next">Earlier labels</a>')
    return f'<nav class="pages">{" ".join(links)}</nav>' if links else ""


_REASONS = tuple(str(r) for r in review.QUEUE_REASONS)
ORDERS = ("oldest", "newest")  # of the queue (`?order=`, `endstate review --order`)


def _queue_intro(view: View) -> str:
    first = "newest first" if view.order == "newest" else "oldest first"
    return (
        '<p class="intro">Finished runs no one has labelled yet that stopped as <code>gave_up</code>, '
        "<code>limit</code>, <code>no_progress</code> or <code>error</code>, and a steady sample of "
        f"{review.DEFAULT_SUCCESS_SHARE:.0%} of the successes (a success can be false too); {first}. "
        "A label takes a run out of the queue; <code>endstate review</code> lists the same runs.</p>"
    )


_COLUMNS = ("Run", "Agent", "Task type", "Label", "By", "When", "Note", "Case")
_NOT_AN_ID = (
    "No run has the id this address names: a run id is 1-64 ASCII letters, digits, '_', '-' or '.'. "
    "Open the run from the review queue or the labelled runs."
)
_SIGN_IN_TO_LABEL = '<p class="sign-in-to-label">Sign in to label.</p>'
_EMPTY_QUEUE = '<p class="empty">Nothing to review: every run that needs a look is labelled.</p>'
_NONE_LABELLED = '<p class="empty">No run is labelled yet.</p>'
