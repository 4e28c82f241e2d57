"""clock: a stored time no calendar holds (a row edited by hand or written by another program, an
agent's clock that counts milliseconds: 1.8e12 is the year 59000) is said as it is wherever a person
reads it, and never takes the page or the listing down with it.

Before: one finished run that ended at 1e308 (or infinity, or a millisecond clock's 1.8e12) made the
whole review queue a 500 (`/inbox/review`, OverflowError in `when`) and its own review page too, and
stopped `endstate review` with OverflowError's traceback; one waiting run whose deadline was such a
time made the whole inbox a 500, so nobody could answer any run there. `endstate review` also printed
local time with no offset from UTC, where `runs` and `pending` say it."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.testclient import TestClient
from test_service_defences import LOCAL, TOKEN

from agent.cli.main import main
from agent.durable.runner import Runner
from agent.durable.store import open_store
from agent.examples.scenarios import example_catalog
from agent.service.app import Service, create_app
from agent.service.auth import Token

NOW = 1_800_000_000.0
FAR = {"huge": 1e308, "infinite": float("inf"), "millis": NOW * 1000}


def _insert(db: Path, run_id: str, **columns: object) -> None:
    row: dict[str, object] = {"run_id": run_id, "agent": "a", "task": "t", "task_type": "a"}
    row |= {"started_at": NOW, "updated_at": NOW, **columns}
    with sqlite3.connect(db) as conn:
        marks = ", ".join("?" for _ in row)
        conn.execute(f"INSERT INTO endstate_runs ({', '.join(row)}) VALUES ({marks})", tuple(row.values()))
    conn.close()


def _finished(db: Path, run_id: str, ended: float) -> None:
    _insert(db, run_id, status="finished", ended_at=ended, stop_reason="limit", stop_limit="turns")


def _waiting(db: Path, run_id: str, deadline: float) -> None:
    _insert(db, run_id, status="waiting", deadline=deadline, suspended_at=NOW, question="which one?")


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "runs.db"
    open_store(str(path)).close()
    return path


@pytest.fixture
def client(db: Path, tmp_path: Path) -> Iterator[TestClient]:
    store = open_store(str(db))
    service = Service(Runner(store, example_catalog(tmp_path / "worlds")), Token(TOKEN), sweep_interval=3600)
    try:
        with TestClient(create_app(service), base_url=LOCAL) as api:
            yield api
    finally:
        store.close()


def test_the_review_queue_and_a_run_s_page_say_an_end_no_calendar_holds(db: Path, client: TestClient) -> None:
    _finished(db, "fine", NOW)
    for run_id, ended in FAR.items():
        _finished(db, run_id, ended)
    queue = client.get("/inbox/review?limit=50")
    assert queue.status_code == 200, queue.text[:300]
    assert queue.text.count('class="run review"') == 1 + len(FAR)
    for ended in FAR.values():
        assert f"(no such time: {ended!r})" in queue.text
    page = client.get("/inbox/review/runs/huge")
    assert page.status_code == 200 and "(no such time: 1e+308)" in page.text


def test_the_inbox_says_a_deadline_no_calendar_holds_and_lists_every_waiting_run(
    db: Path, client: TestClient
) -> None:
    _waiting(db, "soon", NOW * 2)
    for run_id, deadline in FAR.items():
        _waiting(db, run_id, deadline)
    inbox = client.get("/inbox")
    assert inbox.status_code == 200, inbox.text[:300]
    for run_id in ("soon", *FAR):
        assert f'id="run-{run_id}"' in inbox.text
    assert "(no such time: 1e+308)" in inbox.text


def test_endstate_review_says_an_end_no_calendar_holds_and_each_time_s_offset(
    db: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TZ", "America/New_York")  # 2027-01-15 08:00 UTC is 03:00 there, five hours behind
    time.tzset()
    try:
        _finished(db, "fine", NOW)
        for run_id, ended in FAR.items():
            _finished(db, run_id, ended)
        assert main(["review", "--store", str(db)]) == 0
        captured = capsys.readouterr()
    finally:
        monkeypatch.delenv("TZ")
        time.tzset()
    assert "Traceback" not in captured.err
    lines = {line.split()[0]: line for line in captured.out.splitlines() if line.strip()}
    assert "2027-01-15 03:00:00 -0500" in lines["fine"], lines["fine"]
    for run_id in ("huge", "infinite"):
        assert f"(no such time: {FAR[run_id]!r})" in lines[run_id], lines[run_id]
    assert " 59009-09-24 04:00:00 -0400 " in lines["millis"]  # the C library's calendar goes that far
