"""svc42: the JSON lists of runs hold bounded bodies, whatever the runs hold.

Before, `GET /runs?limit=1000` read every listed run whole from the store and sent each one's task,
output, note, summary, question and state whole: runs that carry a megabyte each made a body of a
gigabyte (and as much memory in the service). `/pending?limit=500` did the same with each waiting
run's task, question and call. Now `GET /runs` shows the first `LISTED_CHARS` characters of each
long text, cut in the store's own SQL, and names what it cut in `cut` (with its whole size), and a
`/pending` page ends once its runs' texts pass `PAGE_BYTES`, its `next` giving the rest: each run
still whole there, and in `GET /runs/{id}`.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.testclient import TestClient
from test_red41c_huge_values import HUGE, stored
from test_service_defences import LOCAL, TOKEN

from agent.durable.runner import Runner
from agent.durable.store import RunStore, open_store
from agent.examples.scenarios import example_catalog
from agent.models.scripted import call, finish
from agent.service import app as service_app
from agent.service.app import Service, create_app
from agent.service.auth import Token

LISTED_CHARS = 2_000  # what the list shows of a long text (`agent.service.app.LISTED_CHARS`)


@pytest.fixture
def api(store_url: str, tmp_path: Path) -> Iterator[tuple[TestClient, RunStore]]:
    store = open_store(store_url)
    service = Service(Runner(store, example_catalog(tmp_path / "worlds")), Token(TOKEN), sweep_interval=3600)
    try:
        with TestClient(create_app(service), base_url=LOCAL) as client:
            yield client, store
    finally:
        store.close()


def test_runs_with_megabyte_texts_are_listed_cut_and_read_whole_one_by_one(
    api: tuple[TestClient, RunStore],
) -> None:
    client, store = api
    assert getattr(service_app, "LISTED_CHARS", LISTED_CHARS) == LISTED_CHARS
    for n in range(4):
        stored(store, f"gave-up-{n}", [finish("give_up", HUGE)], task=HUGE)
    stored(store, "small", [finish("give_up", "no")], task="short")
    listed = client.get("/runs?limit=1000")
    assert listed.status_code == 200
    assert len(listed.content) < 100_000, len(listed.content)  # was 4 runs x 2 MB
    runs = {r["run_id"]: r for r in listed.json()["runs"]}
    assert len(runs) == 5
    cut = runs["gave-up-0"]
    assert cut["task"] == HUGE[:LISTED_CHARS] and cut["note"] == HUGE[:LISTED_CHARS]
    assert cut["cut"] == {"task": len(HUGE.encode()), "note": len(HUGE.encode())}
    assert cut["stop_reason"] == "gave_up" and cut["status"] == "finished" and cut["state"] == {}
    assert runs["small"]["cut"] == {} and runs["small"]["task"] == "short"
    whole = client.get("/runs/gave-up-0").json()
    assert whole["task"] == HUGE and whole["note"] == HUGE


def test_a_huge_state_and_call_are_left_out_of_the_list_and_named(
    api: tuple[TestClient, RunStore],
) -> None:
    client, store = api
    stored(store, "pays", [call("wire", memo=HUGE)])
    run = client.get("/runs").json()["runs"][0]
    assert run["pending"] is None and run["status"] == "waiting"
    assert run["cut"]["pending"] > len(HUGE)  # (its question, which names the call, is cut too)
    assert client.get("/runs/pays").json()["pending"]["arguments"]["memo"] == HUGE


def test_a_pending_page_of_huge_runs_ends_at_its_byte_budget_and_next_gives_the_rest(
    api: tuple[TestClient, RunStore], monkeypatch: pytest.MonkeyPatch
) -> None:
    client, store = api
    monkeypatch.setattr(service_app, "PAGE_BYTES", 3 * len(HUGE), raising=False)  # three runs a page
    for n in range(7):
        stored(store, f"asks-{n}", [finish("need_help", f"question {n}")], task=HUGE)
    seen: list[str] = []
    url: str | None = "/pending?limit=500"
    while url:
        page = client.get(url)
        assert page.status_code == 200
        assert len(page.content) < 4 * len(HUGE) + 50_000, len(page.content)  # was all 7 runs at once
        body = page.json()
        assert body["total"] == 7 and body["pending"]
        assert all(item["task"] == HUGE for item in body["pending"])  # each run whole on its page
        seen += [item["run_id"] for item in body["pending"]]
        url = body["next"]
    assert sorted(seen) == [f"asks-{n}" for n in range(7)]  # each once, none skipped
    assert len(seen) == len(set(seen))


def test_a_pending_page_of_small_runs_is_as_long_as_asked(api: tuple[TestClient, RunStore]) -> None:
    client, store = api
    for n in range(12):
        stored(store, f"asks-{n:02}", [finish("need_help", f"question {n}")])
    body = client.get("/pending?limit=11").json()
    assert len(body["pending"]) == 11 and body["next"] == "/pending?offset=11&limit=11"


class WholeReads:
    """A store that cannot cut in SQL (as Temporal's visibility): only `list_runs`."""

    def __init__(self, store: RunStore) -> None:
        self.list_runs = store.list_runs


def test_a_store_that_reads_whole_runs_is_listed_cut_the_same(api: tuple[TestClient, RunStore]) -> None:
    _, store = api
    stored(store, "gave-up", [finish("give_up", HUGE)], task="Ünïcode " + HUGE)
    stored(store, "pays", [call("wire", memo=HUGE)])
    stored(store, "small", [finish("give_up", "no")])
    in_sql, here = service_app.overview(store, None, 10), service_app.overview(WholeReads(store), None, 10)
    assert [service_app.listed(r, in_sql.cut.get(r.run_id, {})) for r in in_sql] == [
        service_app.listed(r, here.cut.get(r.run_id, {})) for r in here
    ]
    assert in_sql.cut["gave-up"]["task"] == len(("Ünïcode " + HUGE).encode())
