"""A checkpoint, or a segment's record, of 33,002 journal entries is saved on either store.

The PostgreSQL store wrote a checkpoint's entries, and the entries a segment's record carries (what its
last checkpoint failed to write), in one statement with two bound values an entry: past 32,760 entries
(the results of a reply of 33,000 parallel tool calls, or a long unsaved tail) PostgreSQL refused it
("number of parameters must be between 0 and 65535") and the run could not be saved. SQLite is held
to its usual 32,766 variables a statement here, as most builds are (`default_sqlite_limit`)."""

from __future__ import annotations

import dataclasses
from typing import Any

import pg
import pytest
from test_lead_long_journals import default_sqlite_limit  # noqa: F401  (a fixture)
from test_store import NOW, lease, started, suspended

from agent.durable.store import Outcome, RunStatus, open_store
from agent.journal import Call, Entry, Reply, Result, Task
from agent.models.scripted import finish
from agent.snapshot import Checkpoint, SnapshotKind

CALLS = 33_000  # CALLS + 2 entries: past 65,535 values at two an entry
ODD = 'a "quote", a \\ {brace}, NULL, ünï, NUL \x00 and a lone \ud800'  # each 1000th result's text


def wide_turn() -> list[Entry]:
    """A task, one reply of CALLS parallel calls, and their CALLS results."""
    calls = tuple(Call(f"c{i}", "look", {"i": i}) for i in range(CALLS))
    results = [Result(f"c{i}", ODD if i % 1000 == 0 else f"seen {i}") for i in range(CALLS)]
    return [Task("look at everything"), Reply(calls, stop_reason="tool_use"), *results]


@pytest.fixture(params=pg.BACKENDS)
def store(request: pytest.FixtureRequest, tmp_path: Any, default_sqlite_limit: None) -> Any:  # noqa: F811
    opened = open_store(pg.url_for(request.param, tmp_path))
    yield opened
    opened.close()


def checkpoint(make_agent: Any, first: int, entries: list[Entry]) -> Checkpoint:
    snap = suspended(make_agent).snapshot
    assert snap is not None
    return Checkpoint(dataclasses.replace(snap, kind=SnapshotKind.CHECKPOINT, journal=[]), first, entries)


def test_a_checkpoint_of_33002_entries_is_saved(store: Any, make_agent: Any) -> None:
    journal = wide_turn()
    started(store)
    store.checkpoint("r1", checkpoint(make_agent, 0, journal[:2]), lease(), NOW)  # the common case first
    store.checkpoint("r1", checkpoint(make_agent, 2, journal[2:]), lease(), NOW + 1)
    store.checkpoint("r1", checkpoint(make_agent, len(journal), []), lease(), NOW + 2)  # and after it
    written = store.snapshot("r1")
    assert written is not None and list(written.journal) == journal
    record = store.get("r1")
    assert record is not None and record.journal_length == len(journal)


def test_a_record_carrying_33002_unsaved_entries_is_saved(store: Any, make_agent: Any) -> None:
    journal = wide_turn()
    started(store)
    result = make_agent([finish("done")]).run("look at everything", run_id="r1")
    rest = checkpoint(make_agent, 0, journal)
    record = store.record("r1", Outcome.of(result, rest=rest), lease(), NOW)
    assert record.status is RunStatus.FINISHED and record.journal_length == len(journal)
    written = store.snapshot("r1")
    assert written is not None and list(written.journal) == journal
