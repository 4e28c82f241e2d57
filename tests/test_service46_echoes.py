"""An error that repeats what was sent (a name, a field, an id) stays a few kilobytes.

A 50,000-character agent name, task type, field name or label came back whole in the 400 (the
body may hold 64 KiB), and a 10,000-character run id or inbox action in the address in the 404:
on the API and on the inbox's pages. Each error still says what was wrong and how to fix it.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterator
from html import unescape
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from agent.durable.runner import Runner
from agent.durable.store import open_store
from agent.examples.scenarios import example_catalog
from agent.service.app import Service, create_app
from agent.service.auth import Token
from agent.service.http import MAX_SAID

TOKEN = "test-token-0123456789abcdef"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
LOCAL = "http://127.0.0.1:8000"
HUGE = "x" * 50_000
LONG_ID = "a" * 10_000
RUN = "gave-up"
INVOICE = {"agent": "invoice-downloader", "task": "t", "state": {"scenario": "invoice/which-one"}}


@pytest.fixture
def api(tmp_path: Path) -> Iterator[TestClient]:
    """A client of a service whose store holds one finished run (`RUN`), signed in to the inbox."""
    store = open_store(str(tmp_path / "runs.db"))
    runner = Runner(store, example_catalog(tmp_path / "worlds"))
    state = {"scenario": "invoice/portal-offline"}
    asyncio.run(runner.start("invoice-downloader", "t", state=state, run_id=RUN))
    service = Service(runner, Token(TOKEN), sweep_interval=3600)
    try:
        with TestClient(create_app(service), base_url=LOCAL, headers={"Origin": LOCAL}) as client:
            signed_in = client.post("/inbox/login", data={"token": TOKEN}, follow_redirects=False)
            assert signed_in.status_code == 303
            yield client
    finally:
        runner.catalog.close()
        store.close()


def error_of(response: object) -> str:
    text: str = response.json()["error"]  # type: ignore[attr-defined]
    assert len(text) <= MAX_SAID, len(text)
    return text


@pytest.mark.parametrize(
    ("body", "says"),
    [
        ({**INVOICE, "agent": HUGE}, ["no agent named 'xxx", "known: ", "invoice-downloader"]),
        ({**INVOICE, "task_type": HUGE}, ["does not run task type 'xxx", "use one of"]),
        ({**INVOICE, HUGE: 1}, ["unknown field(s) 'xxx", "this endpoint takes"]),
        ({**INVOICE, "state": {"scenario": HUGE}}, ["no scenario 'xxx", "known: "]),
    ],
)
def test_a_400_that_repeats_a_huge_value_sent_is_cut_and_still_says_what_to_do(
    api: TestClient, body: dict[str, object], says: list[str]
) -> None:
    response = api.post("/runs", json=body, headers=AUTH)
    assert response.status_code == 400
    error = error_of(response)
    assert "characters in all" in error
    for words in says:
        assert words in error, (words, error)


@pytest.mark.parametrize(
    ("method", "path"),
    [("GET", f"/runs/{LONG_ID}"), ("POST", f"/runs/{LONG_ID}/answer"), ("POST", f"/runs/{LONG_ID}/resume")],
)
def test_a_404_for_a_huge_run_id_is_cut(api: TestClient, method: str, path: str) -> None:
    body = {"answer": "yes"} if path.endswith("/answer") else {}
    response = api.request(method, path, headers=AUTH, json=body)
    assert response.status_code == 404
    assert "no run with id 'aaa" in error_of(response)


def errors_on(page: str) -> list[str]:
    return [unescape(e) for e in re.findall(r'<p class="error" role="status">(.*?)</p>', page, re.S)]


@pytest.mark.parametrize(
    ("path", "form", "says"),
    [
        (f"/inbox/review/runs/{RUN}/label", {"label": HUGE, "by": "ana"}, "is not a label; use one of"),
        (f"/inbox/{LONG_ID}/answer", {"answer": "yes"}, "no run with id 'aaa"),
        (f"/inbox/{RUN}/{LONG_ID}", {}, "Unknown action 'aaa"),
    ],
)
def test_an_inbox_page_that_repeats_a_huge_value_sent_is_cut(
    api: TestClient, path: str, form: dict[str, str], says: str
) -> None:
    response = api.post(path, data=form, follow_redirects=False)
    assert response.status_code in (400, 404), response.status_code
    [error] = errors_on(response.text)
    assert says in error and len(error) <= MAX_SAID, (len(error), error[:300])
    assert len(response.text) < 40_000  # the page itself: its own few kilobytes, no echo


def test_a_method_no_endpoint_takes_is_not_repeated_whole(api: TestClient) -> None:
    """A 405's message named the method whole: a request line's 10,000-character method came back."""
    response = api.request("A" * 10_000, "/runs")
    assert response.status_code == 405
    error = error_of(response)
    assert "this endpoint does not take" in error and len(error) < 500, len(error)
