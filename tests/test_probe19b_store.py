"""The run store against odd uses (probe19b), on SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest
from test_runner_agents import catalog, counter_state

from agent import StopReason
from agent.audit import Audit, AuditOutcome
from agent.durable.runner import Runner
from agent.durable.store import RunExists, RunStore


@pytest.mark.parametrize("kept", ["label", "audit"])
def test_the_id_of_a_pruned_run_whose_label_or_audit_is_kept_is_not_given_to_a_new_run(
    store: RunStore, tmp_path: Path, kept: str
) -> None:
    """Prune deletes a finished run but keeps its review label and its audit's outcome, by run id. A new
    run given that id (a client that names its runs, `POST /runs {"run_id": ...}`, weeks later) would
    take them over: out of the review queue as if labelled, 'audited' by the old outcome and never
    audited itself, and the label read as this run's. It is refused, naming why."""
    cleaned: list[str] = []
    catalog_ = catalog()
    entry = catalog_.entries["counter"]
    catalog_.register("counter", entry.build, cleanup=lambda state: cleaned.append(state["dir"]))
    runner = Runner(store, catalog_)
    first = asyncio.run(
        runner.start("counter", "c", state=counter_state(tmp_path / "a", "plain"), run_id="job-1")
    )
    assert first.reason is StopReason.SUCCESS
    if kept == "label":
        store.add_review("job-1", "fine", "", time.time())
    else:
        store.schedule_audit(Audit("job-1", "counter", "counting", time.time()))
        assert store.record_audit("job-1", AuditOutcome.CONFIRMED, "", time.time())
    assert store.prune(time.time() + 10) == 1 and store.get("job-1") is None
    with pytest.raises(RunExists, match=r"job-1.*pruned.*pick another id"):
        runner.begin("counter", "c", state=counter_state(tmp_path / "b", "plain"), run_id="job-1")
    assert store.get("job-1") is None
    assert cleaned == [str(tmp_path / "a"), str(tmp_path / "b")]  # the refused run's world is cleaned up
    fresh = asyncio.run(
        runner.start("counter", "c", state=counter_state(tmp_path / "c", "plain"), run_id="job-2")
    )
    assert fresh.reason is StopReason.SUCCESS
