"""who43: the inbox's forms carry an optional name, filled in from the last one given there (the
review label's cookie), and a person whose answer came second is told whose came first.

Before, the forms had no name field: an inbox answer kept no name, and the second person read only
that the run had moved on.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from html import unescape
from pathlib import Path

import httpx
import pytest
from test_inbox import _signed_in, _start
from test_service_support import Server, wait_status

pytestmark = pytest.mark.slow


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    with Server(str(tmp_path / "runs.db"), tmp_path) as s:
        yield s


def _same(server: Server) -> dict[str, str]:
    return {"Origin": server.url, "Sec-Fetch-Site": "same-origin"}


def _read(client: httpx.Client) -> dict[str, str]:
    return {"segments": re.findall(r'name="segments" value="(\d+)"', client.get("/inbox").text)[0]}


def test_the_first_answer_keeps_its_name_and_the_second_is_told_whose_won(server: Server) -> None:
    run_id = _start(server, "invoice-downloader", "invoice/which-one")
    with contextlib.closing(_signed_in(server)) as first, contextlib.closing(_signed_in(server)) as second:
        first.cookies.set("endstate_reviewer", "ana%20lee")  # as a label given in the inbox left it
        page = first.get("/inbox").text
        assert re.search(r'name="by" type="text" maxlength="100"\s+value="ana lee"', page), page
        read = _read(first)
        taken = first.post(f"/inbox/{run_id}/answer", data={"answer": "INV-0913", "by": "ana lee"} | read,
                           headers=_same(server))  # fmt: skip
        assert taken.status_code == 303 and "as+ana+lee" in taken.headers["location"]
        late = second.post(f"/inbox/{run_id}/answer", data={"answer": "INV-0912", "by": "bo"} | read,
                           headers=_same(server))  # fmt: skip
    assert late.status_code == 409
    said = unescape(late.text)
    assert "answered by ana lee at " in said and "answer 'INV-0913'" in said, said
    with server.client() as api:
        shown = wait_status(api, run_id, "finished")
    assert (shown["last_answer_by"], shown["last_answer"]) == ("ana lee", "INV-0913")


def test_an_answer_without_a_name_still_goes_and_a_bad_name_is_refused(server: Server) -> None:
    named, anonymous = (_start(server, "ci-fixer", "ci/approved-push") for _ in range(2))
    with contextlib.closing(_signed_in(server)) as browser:
        for bad in ("ana\u202egnp.exe", "x" * 101):
            refused = browser.post(f"/inbox/{named}/approve", data={"by": bad}, headers=_same(server))
            assert refused.status_code == 400 and "Your name: the answerer" in unescape(refused.text)
        approved = browser.post(f"/inbox/{anonymous}/approve", data={"by": "  "}, headers=_same(server))
        assert approved.status_code == 303 and "endstate_reviewer" not in approved.headers.get(
            "set-cookie", ""
        )
    with server.client() as api:
        assert api.get(f"/runs/{named}").json()["status"] == "waiting"
        shown = wait_status(api, anonymous, "finished")
    assert (shown["last_answer_by"], shown["last_answer_kind"]) == (None, "approved")


def test_a_waiting_run_shows_who_answered_it_last_as_text() -> None:
    from agent.durable.store import RunRecord, RunStatus
    from agent.service.inbox import _last_answer

    record = RunRecord("r1", "a", "t", "t", RunStatus.WAITING, {}, 0.0, 0.0)
    assert _last_answer(record) == ""
    record = RunRecord(
        "r1", "a", "t", "t", RunStatus.WAITING, {}, 0.0, 0.0,
        last_answer_by="<b>ana</b>", last_answer_at=1796029999.0, last_answer_kind="denied", last_answer="no",
    )  # fmt: skip
    shown = _last_answer(record)
    assert "<b>" not in shown and "&lt;b&gt;ana&lt;/b&gt;" in shown
    assert unescape(shown).startswith(
        '<p class="last-answer"><strong>Last answer:</strong> answered by <b>ana</b>'
    )
    assert "at 2026-11-30 09:13:19 UTC: denied 'no'" in unescape(shown)
