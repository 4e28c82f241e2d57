"""newcomer52: what the inbox tells a person, held to what the other faces then do.

- The inbox told whoever wrote a longer answer (or deny reason) than its box takes to "send it whole
  through the API", whatever its length; the API takes a body of at most 64 KiB and answered a longer
  one 413, so the advice led a person with a long answer to a second refusal. Now the inbox offers the
  API only for a text that fits in its body, and says the API's bound otherwise.
- Sign out ended the inbox's cookie with Starlette's defaults (SameSite=lax, no HttpOnly, no Secure).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from test_faces49_replies import ANSWER_CHARS, Faces, faces_over
from test_service_defences import AUTH, LOCAL, TOKEN

from agent.durable.store import RunStatus
from agent.service.http import MAX_BODY


@pytest.fixture
def faces(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Faces]:
    yield from faces_over(tmp_path, monkeypatch)


def test_an_answer_too_long_for_the_inbox_is_sent_to_the_api_only_when_the_api_takes_it(faces: Faces) -> None:
    faces.waiting("q")
    fits = "x" * (ANSWER_CHARS + 1)
    refused = faces.inbox("q", "answer", answer=fits, segments="1")
    assert refused.status_code == 400 and "send it whole through the API" in refused.text
    taken = faces.api.post("/runs/q/answer", json={"answer": fits, "segments": 1}, headers=AUTH)
    assert taken.status_code == 202, taken.text[:300]  # as the inbox said
    assert faces.settled("q").last_answer == fits


def test_an_answer_too_long_for_the_api_too_is_not_sent_there(faces: Faces) -> None:
    faces.waiting("q")
    too_long = "x" * MAX_BODY
    refused = faces.inbox("q", "answer", answer=too_long, segments="1")
    assert refused.status_code == 400 and too_long in refused.text  # kept to copy
    assert "through the API" not in refused.text
    assert f"the API a body of at most {MAX_BODY:,} bytes" in refused.text
    sent = faces.api.post("/runs/q/answer", json={"answer": too_long, "segments": 1}, headers=AUTH)
    assert sent.status_code == 413  # what the old advice led to
    assert faces.record("q").status is RunStatus.WAITING


@pytest.mark.parametrize("origin", [LOCAL, "https://127.0.0.1:8000"])
def test_sign_out_ends_the_cookie_as_it_was_set(faces: Faces, origin: str) -> None:
    """README: "The inbox's cookies are HttpOnly and SameSite=Strict, and Secure when the page was
    reached over https". Sign out's Set-Cookie that ends the session said neither (Starlette's
    defaults: SameSite=lax, no HttpOnly, no Secure), unlike the one sign-in set."""
    signed_in = faces.api.post("/inbox/login", data={"token": TOKEN}, headers={"Origin": origin})
    ended = faces.api.post("/inbox/logout", headers={"Origin": origin}, follow_redirects=False)
    assert ended.status_code == 303
    for response in (signed_in.history[0] if signed_in.history else signed_in, ended):
        attributes = {a.strip().lower() for a in response.headers["set-cookie"].split(";")[1:]}
        assert {"httponly", "samesite=strict"} <= attributes, response.headers["set-cookie"]
        assert ("secure" in attributes) is origin.startswith("https:"), response.headers["set-cookie"]


@pytest.mark.parametrize(
    ("address", "status", "says"),
    [
        ("/inbox?page=0", 400, "page must be a whole number from 1 to 1000000"),
        ("/inbox/review/labelled?page=x", 400, "page must be a whole number from 1 to 1000000"),
        ("/inbox/review?reason=success", 400, "is not a stop the review queue holds"),
        ("/inbox/nope", 404, "no such endpoint here"),
    ],
)
def test_an_inbox_address_refused_is_a_page_not_the_apis_json(
    faces: Faces, address: str, status: int, says: str
) -> None:
    """A page number or a filter the inbox does not have (an edited link, an old bookmark) was answered
    with the API's bare JSON in the browser, against the inbox's own rule; it is a page with the error,
    its safe headers and the links to the inbox's views."""
    page = faces.api.get(address)
    assert page.status_code == status
    assert page.headers["content-type"].startswith("text/html"), page.text[:200]
    assert says in page.text and 'href="/inbox/review"' in page.text
    assert "script-src 'none'" in page.headers["content-security-policy"]
    api = faces.api.get("/pending?limit=0")  # the API's own refusals stay JSON
    assert api.status_code == 400 and "from 1 to 500" in api.json()["error"]
