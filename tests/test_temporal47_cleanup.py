"""temporal47: a run's cleanup reached a worker whose catalog lacks the run's agent (a rolling deploy, or
workers of different catalogs on one queue). That worker cannot know the agent's cleanup, and it skipped it
without a word: the run's world (a clone, a sandbox) was never let go, and nothing said so. Now it refuses
the call as it refuses the run's other calls, retryable within its `catalog_wait` (so a worker that has the
agent may take it) and final after, and says in its log that the cleanup did not run there."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from datetime import UTC, datetime
from typing import Any

import pytest
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment

from agent import Agent
from agent.durable.catalog import Catalog
from agent.models import ScriptedModel
from agent.temporal import _wire as w
from agent.temporal._activities import EndstateActivities

RUN = {"run_id": "r-47", "agent": "tidy", "task": "t", "task_type": "default", "state": {"dir": "/tmp/x"}}


def cleanup_of(catalog_wait: float, catalog: Catalog) -> ApplicationError | None:
    """The cleanup activity's failure for `RUN` on a worker of `catalog` (None: it succeeded)."""
    acts = EndstateActivities(catalog, catalog_wait=catalog_wait)
    env = ActivityEnvironment()  # as the workflow schedules it: just now, bound by start-to-close only
    now = datetime.now(UTC)
    env.info = dataclasses.replace(
        env.info, activity_type=w.CLEANUP, scheduled_time=now, schedule_to_close_timeout=None
    )
    try:
        asyncio.run(env.run(acts.cleanup, RUN))
    except ApplicationError as exc:
        return exc
    return None


def test_a_worker_lacking_the_agent_refuses_its_cleanup_at_once_by_default(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING, logger="endstate.temporal"):
        refused = cleanup_of(0, Catalog())
    assert refused is not None, "the cleanup of an agent this worker lacks passed as done"
    assert refused.non_retryable and "no agent named 'tidy'" in str(refused)
    said = [r.getMessage() for r in caplog.records]
    assert any("r-47" in m and "cleanup is not run on this worker" in m for m in said), said


def test_with_a_catalog_wait_the_refused_cleanup_is_tried_again_elsewhere() -> None:
    refused = cleanup_of(60, Catalog())
    assert refused is not None and not refused.non_retryable  # Temporal tries it again, on any worker
    assert refused.next_retry_delay is not None


def test_a_worker_that_has_the_agent_runs_its_cleanup() -> None:
    cleaned: list[dict[str, Any]] = []
    catalog = Catalog()
    catalog.register("tidy", lambda state: Agent("tidy", ScriptedModel([])), cleanup=cleaned.append)
    assert cleanup_of(0, catalog) is None
    assert cleaned == [RUN["state"]]
