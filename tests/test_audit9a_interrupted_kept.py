"""A run a shutdown cancelled is continued by recovery (`interrupted`). A resume that claims it and then
gives it back (its agent could not be built here, its snapshot could not be read) changed nothing, as it
says: the run stays one that recovery continues, not one left cancelled until someone resumes it by hand."""

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
from agent.durable.runner import Catalog, Runner
from agent.durable.store import RunStatus, open_store
from agent.errors import EndstateError

FIXTURE = json.loads((Path(__file__).with_name("fixtures") / "v1_store_rows.json").read_text())
RUN = "v1-cancelled"  # a run of v1-ledger that a shutdown cancelled (interrupted)


def _unbuildable(_: dict[str, Any] | None = None) -> Any:
    raise RuntimeError("the ledger's database is not reachable from this host")


@pytest.mark.parametrize("backend", pg.BACKENDS)
def test_a_failed_resume_leaves_an_interrupted_run_to_recovery(backend: str, tmp_path: Path) -> None:
    url = pg.url_for(backend, tmp_path)
    write_old_store(url, FIXTURE["schema_version"], FIXTURE["rows"])
    store = open_store(url)
    try:
        assert [r.run_id for r in store.interrupted()] == [RUN]
        here = Catalog()
        here.register("v1-ledger", _unbuildable)
        with pytest.raises(EndstateError, match="not reachable"):
            asyncio.run(Runner(store, here, clock=v1_agents.AsWritten()).resume(RUN))
        record = store.get(RUN)
        assert record is not None and (record.status, record.interrupted) == (RunStatus.CANCELLED, True)
        assert [r.run_id for r in store.interrupted()] == [RUN]
        v1_agents.COUNTS.clear()
        results = asyncio.run(Runner(store, v1_agents.catalog(), clock=v1_agents.AsWritten()).recover())
        assert {r.run_id: r.reason for r in results}[RUN] is StopReason.SUCCESS
    finally:
        store.close()
