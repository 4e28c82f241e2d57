"""A version-1 snapshot the store's upgrade could not read is kept whole (tests/test_store_upgrade.py);
once fixed and resumed, the journal it is read as must reach the store's entries too: the entries that
came from the version-1 snapshot were never written apart, so a run that counted them as saved left the
store a journal starting at its first new entry, which no later read accepts (`DamagedJournal`)."""

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
from agent.durable.store import RunStatus, open_store
from agent.errors import SnapshotError
from agent.journal import Answered, Reply, Result, Stopped, Suspended, Task

FIXTURE = json.loads((Path(__file__).with_name("fixtures") / "v1_store_rows.json").read_text())


def _broken_then_fixed(url: str, run_id: str) -> None:
    """The store upgraded while `run_id`'s version-1 snapshot could not be read, then the row fixed by
    hand (as the upgrade's log and the resume's error say to)."""
    rows = json.loads(json.dumps(FIXTURE["rows"]))
    [row] = [r for r in rows if r["run_id"] == run_id]
    whole = row["snapshot"]
    broken = json.loads(whole)
    broken["messages"][1]["content"][0].pop("id")
    row["snapshot"] = json.dumps(broken)
    write_old_store(url, FIXTURE["schema_version"], rows)
    store = open_store(url)
    try:
        with pytest.raises(SnapshotError):
            store.snapshot(run_id)  # kept as it was by the upgrade
        store._rows("UPDATE endstate_runs SET snapshot = ? WHERE run_id = ?", (whole, run_id))  # type: ignore[attr-defined]
    finally:
        store.close()


@pytest.mark.parametrize("backend", pg.BACKENDS)
@pytest.mark.parametrize(
    ("run_id", "reply"), [("v1-approval", {"approved": True}), ("v1-question", {"answer": "EU"})]
)
def test_a_version_1_snapshot_fixed_after_the_upgrade_is_stored_whole_once_resumed(
    backend: str, run_id: str, reply: dict[str, Any], tmp_path: Path
) -> None:
    url = pg.url_for(backend, tmp_path)
    _broken_then_fixed(url, run_id)
    store = open_store(url)
    try:
        runner = Runner(store, v1_agents.catalog(), clock=v1_agents.AsWritten())
        result = asyncio.run(runner.resume(run_id, **reply))
        assert result.reason is StopReason.SUCCESS
        record = store.get(run_id)
        assert record is not None and record.status is RunStatus.FINISHED
        snap = store.snapshot(run_id)  # kept for review and replay: the whole journal, from the task on
        assert snap is not None
        kinds = [type(e) for e in snap.journal]
        assert kinds[:2] == [Task, Reply] and kinds[-1] is Stopped
        assert Suspended in kinds and Answered in kinds
        assert "ACME: net 30" in [e.text for e in snap.journal if isinstance(e, Result)]  # from version 1
        assert record.journal_length == len(snap.journal)
    finally:
        store.close()
