"""Who answered a help request is kept on the run (schema 14) and told to whoever answers after.

Before, the second of two people answering the same run was refused ("moved on", "not waiting")
without a word of who answered or what, and the store kept no name: its answer columns are cleared
when the resumed segment ends.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pg
import pytest
import v1_agents
from old_stores import write_old_store

from agent import StopReason
from agent.durable.runner import Runner
from agent.durable.store import NotClaimable, RunStatus, RunStore, open_store
from agent.durable.store._sql import latest_version
from agent.errors import ConfigError

FIXTURE = json.loads((Path(__file__).with_name("fixtures") / "v1_store_rows.json").read_text())


def _waiting(store: RunStore, agent: str) -> tuple[Runner, str, int]:
    runner = Runner(store, v1_agents.catalog())
    first = asyncio.run(runner.start(agent, "Invoice ACME"))
    assert first.reason is StopReason.NEED_HELP
    record = store.get(first.run_id)
    assert record is not None
    return runner, first.run_id, record.segments


def test_a_second_answer_is_told_who_answered_first_when_and_what(store: RunStore) -> None:
    runner, run_id, read = _waiting(store, "v1-question")
    result = asyncio.run(runner.drive(runner.claim(run_id, "EU", segments=read, by="  ana  ")))
    assert result.reason is StopReason.SUCCESS
    record = store.get(run_id)
    assert record is not None and record.answer is None  # the claim's own columns were cleared
    assert (record.last_answer_by, record.last_answer_kind, record.last_answer) == ("ana", "answer", "EU")
    assert record.last_answer_at is not None
    shown = record.to_dict()
    assert shown["last_answer_by"] == "ana" and shown["last_answer_kind"] == "answer"
    assert shown["last_answer"] == "EU" and shown["last_answer_at"] == record.last_answer_at
    with pytest.raises(NotClaimable) as stale:  # the same page, read before ana answered
        runner.claim(run_id, "US", segments=read, by="bo")
    assert "answered by ana at " in str(stale.value) and "answer 'EU'" in str(stale.value)
    with pytest.raises(NotClaimable) as late:
        runner.claim(run_id, "US", by="bo")
    assert "not waiting for an answer (answered by ana at " in str(late.value)
    assert store.get(run_id).last_answer_by == "ana"  # type: ignore[union-attr]  # bo changed nothing


def test_an_answer_without_a_name_still_works_and_is_shown_as_such(store: RunStore) -> None:
    runner, run_id, read = _waiting(store, "v1-approval")
    result = asyncio.run(runner.drive(runner.claim(run_id, "too much", approved=False, segments=read)))
    assert result.reason is not StopReason.NEED_HELP
    record = store.get(run_id)
    assert record is not None
    assert (record.last_answer_by, record.last_answer_kind) == (None, "denied")
    assert record.answered_note.startswith("answered by someone who gave no name at ")
    assert record.answered_note.endswith(": denied 'too much'")


def test_an_approval_is_recorded_as_approved(store: RunStore) -> None:
    runner, run_id, _ = _waiting(store, "v1-approval")
    asyncio.run(runner.resume(run_id, approved=True, by="bo"))
    record = store.get(run_id)
    assert record is not None and record.status is RunStatus.FINISHED
    assert (record.last_answer_by, record.last_answer_kind, record.last_answer) == ("bo", "approved", None)
    assert record.answered_note.endswith(": approved")


@pytest.mark.parametrize(
    ("by", "said"),
    [
        ("x" * 101, "101 characters long"),
        ("ana\nroot", "control or invisible"),
        ("a\x1b[31m", "control"),
        ("a\u202eb", "invisible"),
        (5, "must be text"),
    ],
)
def test_a_bad_name_is_refused_and_the_run_still_waits(store: RunStore, by: Any, said: str) -> None:
    runner, run_id, read = _waiting(store, "v1-question")
    with pytest.raises(ConfigError, match=said):
        runner.claim(run_id, "EU", by=by)
    record = store.get(run_id)
    assert record is not None and record.status is RunStatus.WAITING and record.segments == read
    assert record.last_answer_at is None


@pytest.fixture(params=pg.BACKENDS)
def old_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    return pg.url_for(request.param, tmp_path)


def test_a_store_of_the_previous_release_is_upgraded_and_keeps_who_answered(old_url: str) -> None:
    """Schema 13 (the release before) with a run waiting on it, and schema 3 rows (version 1): both open,
    are upgraded, and their runs are answered with a name kept."""
    write_old_store(old_url, 13, [])
    store = open_store(old_url)
    try:
        assert store.schema_version() == latest_version(store.dialect) >= 14  # type: ignore[attr-defined]
        runner, run_id, _ = _waiting(store, "v1-approval")
        asyncio.run(runner.resume(run_id, approved=True, by="bo"))
        assert store.get(run_id).last_answer_by == "bo"  # type: ignore[union-attr]
    finally:
        store.close()


def test_a_version_1_store_is_upgraded_and_its_waiting_run_keeps_who_answered(old_url: str) -> None:
    write_old_store(old_url, FIXTURE["schema_version"], FIXTURE["rows"])
    store = open_store(old_url)
    try:
        assert store.get("v1-question").last_answer_at is None  # type: ignore[union-attr]
        runner = Runner(store, v1_agents.catalog(), clock=v1_agents.AsWritten())
        result = asyncio.run(runner.resume("v1-question", "EU", by="ana"))
        assert result.reason is StopReason.SUCCESS
        record = store.get("v1-question")
        assert record is not None and (record.last_answer_by, record.last_answer) == ("ana", "EU")
    finally:
        store.close()
