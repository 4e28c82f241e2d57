"""A model's huge text on the on-call pages: a list page shows the start of it and says it was cut.

Before, the review queue printed each run's whole task and final text (a give-up's note, a success's output):
fifty runs whose model wrote a megabyte each made a 50 MB page, which a browser takes minutes to lay
out, if it does at all. The inbox did the same with a question a model asked and a call's arguments.
Now a list shows the first characters of each, says how many there are in all and where to read them
whole (the run's review page, or `GET /runs/RUN_ID`); the run's own review page still shows all of it.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient
from test_service_defences import LOCAL, TOKEN
from test_store import lease

from agent import Agent, Budget, HelpPolicy, tool
from agent.durable.runner import Runner
from agent.durable.store import NewRun, Outcome, RunStore, open_store
from agent.examples.scenarios import example_catalog
from agent.models.scripted import ScriptedModel, call, finish
from agent.service.app import Service, create_app
from agent.service.auth import Token

HUGE = "".join(f"word{n} " for n in range(150_000))  # about a megabyte, each part of it different
RUNS = 5


@tool(needs_approval=True)
def wire(memo: str) -> str:
    """Send money with a memo."""
    return "sent"


def stored(store: RunStore, run_id: str, reply: list[Any], task: str = "fix the build") -> None:
    """A run of `ci-fixer` for `task` stored as it ended after the model's `reply`."""
    agent = Agent(
        model=ScriptedModel([reply]),
        name="ci-fixer",
        tools=[wire],
        help=HelpPolicy(wait_seconds=3600),
        budget=Budget(max_turns=5, max_seconds=60),
    )
    result = agent.run(task, run_id=run_id)
    store.create(NewRun(run_id, "ci-fixer", task, "fix_ci", {}), lease(), time.time())
    store.record(run_id, Outcome.of(result), lease(), time.time())


@pytest.fixture
def api(tmp_path: Path) -> Iterator[tuple[TestClient, RunStore]]:
    store = open_store(str(tmp_path / "runs.db"))
    service = Service(Runner(store, example_catalog(tmp_path / "worlds")), Token(TOKEN), sweep_interval=3600)
    try:
        with TestClient(create_app(service), base_url=LOCAL) as client:
            yield client, store
    finally:
        store.close()


def test_the_review_queue_cuts_a_huge_final_text_and_the_runs_page_shows_it_whole(
    api: tuple[TestClient, RunStore],
) -> None:
    client, store = api
    for n in range(RUNS):
        stored(store, f"gave-up-{n}", [finish("give_up", HUGE)])
    queue = client.get("/inbox/review")
    assert queue.status_code == 200 and queue.text.count('class="run review"') == RUNS
    assert len(queue.content) < 100_000, len(queue.content)  # was RUNS megabytes
    assert "word0 word1 word2" in queue.text and "word149999" not in queue.text
    assert queue.text.count(f"of its {len(HUGE):,} characters") == RUNS
    assert 'href="/inbox/review/runs/gave-up-0"' in queue.text
    whole = client.get("/inbox/review/runs/gave-up-0")
    assert (
        whole.status_code == 200 and "word149999" in whole.text and "characters are shown" not in whole.text
    )


def test_the_inbox_cuts_a_huge_question_and_huge_arguments_and_says_where_they_are_whole(
    api: tuple[TestClient, RunStore],
) -> None:
    client, store = api
    for n in range(RUNS):
        stored(store, f"asks-{n}", [finish("need_help", HUGE)])
        stored(store, f"pays-{n}", [call("wire", memo=HUGE)])
    inbox = client.get("/inbox")
    assert inbox.status_code == 200 and inbox.text.count('class="run"') == 2 * RUNS
    assert len(inbox.content) < 400_000, len(inbox.content)  # was 2 * RUNS megabytes
    assert "word0 word1 word2" in inbox.text and "word149999" not in inbox.text
    assert inbox.text.count("of the question's") == 2 * RUNS  # an approval asks with the call in it
    assert inbox.text.count("of the call's arguments'") == RUNS
    assert 'href="/runs/pays-0"' in inbox.text
    signed = client.post("/inbox/login", data={"token": TOKEN})
    assert signed.status_code == 200 and "form" in signed.text
    assert signed.text.count('class="approve"') == RUNS  # a cut call can still be approved or denied
    whole = client.get("/runs/pays-0").json()
    assert whole["pending"]["arguments"]["memo"] == HUGE  # what the call gets: all of it


def test_a_huge_task_a_pasted_log_is_cut_on_both_lists(api: tuple[TestClient, RunStore]) -> None:
    """A task is written by whoever starts the run (`endstate start` takes a CI log as it is)."""
    client, store = api
    for n in range(RUNS):
        stored(store, f"log-{n}", [finish("give_up", "cannot")], task=HUGE)
        stored(store, f"log-asks-{n}", [finish("need_help", "which test?")], task=HUGE)
    queue, inbox = client.get("/inbox/review"), client.get("/inbox")
    assert len(queue.content) < 100_000 and len(inbox.content) < 200_000, (
        len(queue.content),
        len(inbox.content),
    )
    assert queue.text.count(f"of its {len(HUGE):,} characters") == RUNS
    assert inbox.text.count("of the task's") == RUNS and "word149999" not in queue.text + inbox.text
    assert "word149999" in client.get("/inbox/review/runs/log-0").text


@pytest.fixture
def cut_inbox(api: tuple[TestClient, RunStore]) -> str:
    """The inbox page over a run asking with a huge task and question and one with huge arguments
    (stored before Chromium starts: its driver runs an event loop, where `Agent.run` is refused)."""
    client, store = api
    stored(store, "asks", [finish("need_help", HUGE)], task=HUGE)
    stored(store, "pays", [call("wire", memo=HUGE)])
    return client.get("/inbox").text


@pytest.mark.slow
def test_in_chromium_the_cut_notes_show_under_each_cut_text(
    cut_inbox: str, page: object, tmp_path: Path
) -> None:
    """The inbox as Chromium lays it out: each cut text and its note below it (a screenshot kept)."""
    from playwright.sync_api import Page, expect

    assert isinstance(page, Page)
    page.set_content(cut_inbox)
    asks, pays = page.locator("#run-asks"), page.locator("#run-pays")
    expect(asks.locator("p.cut")).to_have_count(2)  # the task and the question
    expect(asks.locator("p.question + p.cut")).to_contain_text("of the question's 1,538,890 characters")
    expect(pays.locator("pre.arguments + p.cut")).to_contain_text("the call gets them all")
    expect(pays.locator("pre.arguments + p.cut a")).to_have_attribute("href", "/runs/pays")
    page.screenshot(path=str(tmp_path / "cut.png"), full_page=True)
    assert (tmp_path / "cut.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
