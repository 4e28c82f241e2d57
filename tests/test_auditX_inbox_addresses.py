"""The inbox's addresses and posts, refused as `/pending` refuses them, before anything changes, as pages.

Three things the audit found, in this process through the ASGI app:

- `/pending?agent=...` checks its filter (`filter_name`: a 400 for a control character, or a name past
  any run's length); the inbox, which the README says takes the same filters "on both", took any text:
  `/inbox?agent=%00` listed "0 waiting" as if nobody waited, and a 60,000-character name came back four
  times over (a 240 KB page from a 60 KB address) after a store query with it.
- An answer posted to an inbox address whose view it could not read (`?page=0`, a form's action edited)
  was taken, the run went on, and only then was the post refused 400: an error that had changed the run.
- A refused post of the inbox (a form from another origin, a body not a form) was the API's JSON in the
  browser, where each refused address of the inbox is a page.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from agent.durable.runner import Runner
from agent.durable.store import open_store
from agent.examples.scenarios import example_catalog
from agent.service.app import Service, create_app
from agent.service.auth import COOKIE, Token

TOKEN = "test-token-0123456789abcdef"
LOCAL = "http://127.0.0.1:8000"
INVOICE = {
    "agent": "invoice-downloader",
    "task": "Get the invoice",
    "state": {"scenario": "invoice/which-one"},
}
FORM = {"Origin": LOCAL, "Content-Type": "application/x-www-form-urlencoded"}


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[TestClient, Runner]]:
    """A client of a service over a SQLite store holding one run waiting for an answer, signed in."""
    store = open_store(str(tmp_path / "runs.db"))
    runner = Runner(store, example_catalog(tmp_path / "worlds"))
    asyncio.run(runner.start(**INVOICE))
    service = Service(runner, Token(TOKEN), sweep_interval=3600)
    client = TestClient(create_app(service), base_url=LOCAL, raise_server_exceptions=False)
    client.cookies.set(COOKIE, Token(TOKEN).cookie_value)
    try:
        with client:
            yield client, runner
    finally:
        runner.catalog.close()
        store.close()


def waiting(runner: Runner) -> Any:
    [record] = runner.store.list_runs(None, 10)
    return record


@pytest.mark.parametrize("path", ["/inbox", "/inbox/review", "/inbox/review/labelled"])
@pytest.mark.parametrize(
    ("query", "said"),
    [
        ("agent=%00", "control or invisible"),
        ("task_type=a%E2%80%AEb", "control or invisible"),  # a bidi override
        ("agent=" + "a" * 60_000, "longer than any"),
    ],
)
def test_a_filter_pending_refuses_is_refused_by_the_inbox_as_a_page(
    served: tuple[TestClient, Runner], path: str, query: str, said: str
) -> None:
    client, _ = served
    api = client.get(f"/pending?{query}")
    assert api.status_code == 400 and said in api.json()["error"]  # the API's own refusal, as before
    page = client.get(f"{path}?{query}")
    assert page.status_code == 400, (path, query[:40], page.status_code)
    assert page.headers["content-type"].startswith("text/html") and said in page.text
    assert len(page.content) < 40_000  # the name is said cut, not echoed whole four times


def test_the_inbox_lists_a_plain_filter_as_before(served: tuple[TestClient, Runner]) -> None:
    client, _ = served
    for query in ("agent=invoice-downloader", "agent=&task_type=", "agent=nobody"):
        assert client.get(f"/inbox?{query}").status_code == 200, query


def test_an_answer_posted_to_an_address_the_inbox_cannot_read_changes_nothing(
    served: tuple[TestClient, Runner],
) -> None:
    client, runner = served
    run = waiting(runner)
    form = f"segments={run.segments}&answer=INV-0913"
    for query in ("page=0", "agent=%00"):
        refused = client.post(f"/inbox/{run.run_id}/answer?{query}", content=form, headers=FORM)
        now = waiting(runner)
        assert (str(now.status), now.segments, now.last_answer) == ("waiting", run.segments, None), query
        assert refused.status_code == 400, (query, refused.status_code, refused.text[:300])
        assert refused.headers["content-type"].startswith("text/html")


@pytest.mark.parametrize(
    ("path", "headers", "status"),
    [
        ("/inbox/login", {"Origin": "http://evil.example", "Content-Type": FORM["Content-Type"]}, 403),
        ("/inbox/logout", {"Sec-Fetch-Site": "cross-site"}, 403),
        ("/inbox/RUN/answer", {"Origin": "http://evil.example", "Content-Type": FORM["Content-Type"]}, 403),
        ("/inbox/login", {"Origin": LOCAL, "Content-Type": "text/plain"}, 415),
        ("/inbox/review/runs/RUN/label", {"Origin": LOCAL, "Content-Type": "multipart/form-data"}, 415),
        ("/inbox/review/runs/RUN/promote", {"Origin": LOCAL, "Content-Type": "text/plain"}, 415),
    ],
)
def test_a_refused_post_of_the_inbox_is_a_page_not_json(
    served: tuple[TestClient, Runner], path: str, headers: dict[str, str], status: int
) -> None:
    client, runner = served
    run = waiting(runner)
    refused = client.post(path.replace("RUN", run.run_id), content="answer=x", headers=headers)
    assert refused.status_code == status, refused.text[:300]
    assert refused.headers["content-type"].startswith("text/html"), refused.text[:300]
    assert 'href="/inbox"' in refused.text  # the page links back to the inbox's views
    assert str(waiting(runner).status) == "waiting"
