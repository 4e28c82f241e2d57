"""Recovery of durable runs at points other tests do not reach (probe19b), on SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from test_runner_agents import catalog, counted, counter_state, outlive_leases

from agent import StopReason
from agent.durable.runner import Catalog, Runner
from agent.durable.store import RunStatus, open_store

DYING_LEASE = 600.0  # seconds: a dead worker's lease, run out only when a test says so


def _runner(url: str, catalog_: Catalog, lease: float = 30.0) -> Runner:
    return Runner(open_store(url), catalog_, lease_seconds=lease)


@pytest.mark.parametrize(("script", "reply"), [("ask", {"answer": "2"}), ("approve", {"approved": True})])
def test_an_answer_whose_worker_died_and_whose_run_could_not_be_rebuilt_is_kept_for_the_resume(
    store_url: str, tmp_path: Path, script: str, reply: dict[str, object]
) -> None:
    """A person answered; the worker holding the claim died before the answer was journaled; the worker
    that recovered the run could not rebuild its agent (a config file gone), so the run ended `error`,
    "resumable once fixed". Fixed, `endstate resume` continues it with the person's answer: the answer
    was not dropped (the run no longer waits, so nobody could give it again)."""
    folder, config = tmp_path / "r", tmp_path / "agent.toml"
    config.write_text("ok")
    state = counter_state(folder, script, config=str(config))
    asking, dying = _runner(store_url, catalog()), _runner(store_url, catalog(), DYING_LEASE)
    survivor, fixed = _runner(store_url, catalog()), _runner(store_url, catalog())
    try:
        first = asyncio.run(asking.start("configured-counter", "count", state=state))
        assert first.reason is StopReason.NEED_HELP
        dying.claim(first.run_id, **reply)  # type: ignore[arg-type]  # claimed; it dies before driving it
        config.unlink()  # and the deploy that recovers the run lost the agent's config
        assert outlive_leases(store_url, DYING_LEASE + 1, dying.owner) == 1
        assert asyncio.run(survivor.recover()) == []
        ended = survivor.store.get(first.run_id)
        assert ended is not None
        assert (ended.status, ended.error_type) == (RunStatus.FINISHED, "agent_build_failed")
        assert f"endstate resume {first.run_id}" in ended.note
        config.write_text("ok")  # fixed
        done = asyncio.run(fixed.resume(first.run_id))
        assert done.reason is StopReason.SUCCESS, done.note
        if script == "ask":
            assert counted(folder) == [1, 2]
        else:
            assert (folder / "wired.txt").read_text() == "7\n"
    finally:
        for runner in (asking, dying, survivor, fixed):
            runner.store.close()
