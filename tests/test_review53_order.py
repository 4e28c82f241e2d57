"""The review queue newest first, as in an incident: `endstate review --order newest`, the inbox's
`/inbox/review?order=newest` and the store's `review_queue(order="newest")`; the default stays the
queue, oldest first. `endstate review` prints each run's trace id on its line.

Before, the queue was oldest first only: in an incident the runs that just failed came last, past
`--limit` and on the inbox's last page.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.testclient import TestClient
from test_service_defences import LOCAL, TOKEN

from agent import Agent, Budget, StopReason
from agent.cli.main import main
from agent.durable.runner import Runner
from agent.durable.store import Lease, NewRun, Outcome, RunStore, open_store
from agent.examples.scenarios import example_catalog
from agent.models.scripted import ScriptedModel, finish
from agent.service.app import Service, create_app
from agent.service.auth import Token

NOW = 1_800_000_000.0
HEX = "4bf92f3577b34da6a3ce929d0e0e4736"


def ended(
    store: RunStore, run_id: str, at: float, task_type: str = "fix_ci", trace_id: str | None = None
) -> None:
    """A give-up of `ci-fixer` stored as ended at `at`."""
    agent = Agent(
        model=ScriptedModel([[finish("give_up", "cannot")]]), name="ci-fixer", budget=Budget(max_turns=3)
    )
    result = dataclasses.replace(agent.run("fix the build", run_id=run_id), trace_id=trace_id)
    store.create(NewRun(run_id, "ci-fixer", "fix the build", task_type, {}), Lease("w1", 30), at)
    store.record(run_id, Outcome.of(result), Lease("w1", 30), at)


def four(store: RunStore) -> None:
    """Runs ending in the order a, b, c, d; c and b end at the same time (the run id breaks the tie)."""
    ended(store, "a", NOW)
    ended(store, "c", NOW + 10, task_type="csv")
    ended(store, "b", NOW + 10)
    ended(store, "d", NOW + 20, trace_id=HEX)


def test_the_store_lists_the_queue_newest_first_when_asked_on_sqlite_and_postgresql(store: RunStore) -> None:
    four(store)
    gave_up = [StopReason.GAVE_UP]

    def ids(**page: object) -> list[str]:
        return [r.run_id for r in store.review_queue(gave_up, 0.0, **page)]  # type: ignore[arg-type]

    assert ids() == ["a", "b", "c", "d"] == ids(order="oldest")  # the queue, as before
    assert ids(order="newest") == ["d", "c", "b", "a"]  # its exact reverse, ties too
    assert ids(order="newest", limit=2) == ["d", "c"]
    assert ids(order="newest", limit=2, offset=2) == ["b", "a"]
    assert ids(order="newest", limit=None, offset=1) == ["c", "b", "a"]
    assert ids(order="newest", task_type="fix_ci") == ["d", "b", "a"]
    with pytest.raises(ValueError, match="'oldest' or 'newest', not 'latest'"):
        ids(order="latest")


@pytest.fixture
def sqlite(tmp_path: Path) -> Iterator[Path]:
    path = tmp_path / "runs.db"
    s = open_store(str(path))
    four(s)
    s.close()
    yield path


def listed(out: str) -> list[str]:
    """The run ids of `endstate review`'s lines, in order."""
    return [
        line.split()[0]
        for line in out.splitlines()
        if line and not line.startswith(("\n", " ")) and " to review" not in line
    ]


def test_endstate_review_lists_newest_first_with_order_newest_and_each_runs_trace_id(
    sqlite: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["review", "--store", str(sqlite)]) == 0
    out = capsys.readouterr().out
    assert listed(out) == ["a", "b", "c", "d"] and "4 runs to review, oldest first." in out
    assert main(["review", "--store", str(sqlite), "--order", "newest", "--limit", "3"]) == 0
    out = capsys.readouterr().out
    assert listed(out) == ["d", "c", "b"] and "3 of 4 runs (--limit 3) to review, newest first." in out
    lines = out.splitlines()
    assert re.search(rf"  {HEX}  cannot$", lines[0]), lines[0]  # its trace id, then the note
    assert re.search(r"  -  +cannot$", lines[1]), lines[1]  # none: a dash, the notes still aligned
    assert lines[0].index("cannot") == lines[1].index("cannot")


def test_endstate_review_refuses_an_order_it_does_not_know(
    sqlite: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as refused:
        main(["review", "--store", str(sqlite), "--order", "latest"])
    told = capsys.readouterr().err
    assert refused.value.code == 2 and "argument --order: invalid choice: 'latest'" in told, told


@pytest.fixture
def client(sqlite: Path, tmp_path: Path) -> Iterator[TestClient]:
    store = open_store(str(sqlite))
    service = Service(
        Runner(store, example_catalog(tmp_path / "worlds")), Token(TOKEN), sweep_interval=3600, page_size=3
    )
    try:
        with TestClient(create_app(service), base_url=LOCAL) as c:
            yield c
    finally:
        store.close()


def shown(page: str) -> list[str]:
    return re.findall(r'<article class="run review" id="run-([^"]+)"', page)


def test_the_inbox_pages_through_the_queue_newest_first_and_keeps_the_order_in_its_links(
    client: TestClient,
) -> None:
    oldest = client.get("/inbox/review")
    assert shown(oldest.text) == ["a", "b", "c"] and "oldest first" in oldest.text
    newest = client.get("/inbox/review?order=newest")
    assert newest.status_code == 200 and shown(newest.text) == ["d", "c", "b"]
    assert "Runs 1-3 of 4, newest first" in newest.text
    assert '<a href="/inbox/review?page=2&amp;order=newest" rel="next">Older</a>' in newest.text
    assert (
        '<a href="/inbox/review?order=newest" aria-current="page" class="on">newest first</a>' in newest.text
    )
    assert '<a href="/inbox/review?agent=ci-fixer&amp;order=newest">' in newest.text  # a filter keeps it
    second = client.get("/inbox/review?page=2&order=newest")
    assert (
        shown(second.text) == ["a"]
        and '<a href="/inbox/review?page=1&amp;order=newest" rel="prev">Newer</a>' in second.text
    )
    assert shown(client.get("/inbox/review?order=oldest").text) == ["a", "b", "c"]


def test_the_inbox_refuses_an_order_it_does_not_know(client: TestClient) -> None:
    refused = client.get("/inbox/review?order=latest")
    assert refused.status_code == 400 and "use oldest or newest" in refused.text


def test_a_label_given_on_the_newest_first_queue_comes_back_to_it(client: TestClient) -> None:
    assert client.post("/inbox/login", data={"token": TOKEN}).status_code == 200
    page = client.get("/inbox/review?order=newest").text
    action = re.search(r'<form method="post" action="([^"]+/runs/d/label[^"]*)"', page)
    assert action and "order=newest" in action.group(1)
    done = client.post(
        action.group(1).replace("&amp;", "&"),
        data={"label": "correct_give_up", "by": "ana", "note": ""},
        headers={"Origin": LOCAL},
        follow_redirects=False,
    )
    assert done.status_code == 303 and "order=newest" in done.headers["location"]
    assert shown(client.get(done.headers["location"]).text) == ["c", "b", "a"]
