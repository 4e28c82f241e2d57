"""temporal45: Temporal hands a run's work to any worker polling its task queue, so a worker whose catalog
lacks the run's agent (or task type) ends the run `error` even while another worker of the queue has it
(a second team's catalog on the queue, a deploy that adds an agent). The run's note now says so and what to
do; before, it named only the agents of that worker's catalog, which read as if the fleet lacked the agent.
Against a real Temporal Server (the `temporal` dev server)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from temporal_agents import catalog
from temporal_audit_agents import catalog as other_catalog
from temporal_server import TemporalServer, serving, temporal_fixture

from agent.result import RunResult, StopReason

pytestmark = pytest.mark.slow

temporal = temporal_fixture()


@pytest.mark.parametrize(
    ("agent", "task_type", "says"),
    [
        ("counter", None, "no agent named 'counter' in the catalog; known: builder, deployer"),
        ("counter", "ad-hoc", "does not run task type 'ad-hoc'"),
    ],
)
def test_a_run_a_workers_catalog_cannot_build_says_every_worker_of_the_queue_needs_the_same_catalog(
    temporal: TemporalServer, tmp_path: Path, agent: str, task_type: str | None, says: str
) -> None:
    async def scenario() -> RunResult:
        lacking = other_catalog() if task_type is None else catalog()
        async with serving(temporal, lacking, catalog_wait=0) as runs:  # not tried again (temporal46)
            state = {"script": "success", "dir": str(tmp_path)}
            result = await asyncio.wait_for(runs.start(agent, "count", state=state, task_type=task_type), 120)
        assert isinstance(result, RunResult)
        return result

    result = asyncio.run(scenario())
    assert (result.reason, result.error_type) == (StopReason.ERROR, "ConfigError")
    assert says in result.note
    assert "any worker polling its task queue, so every one of them needs the same catalog" in result.note
    assert "a task queue of their own (`--task-queue`)" in result.note
