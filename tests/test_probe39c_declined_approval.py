"""probe39c: a run an older release suspended for approval of a call that a DECLINING model made.

Before fallback blocks were handled, the reply parser kept what a declining model wrote before a turn's
last `fallback` block (Anthropic's server-side fallback), its tool calls among it: such a call that needs
approval suspended the run. Resumed now and approved, it ran, though that model's output is not the
answer (the request already left the call out). It is now never run: its result says why, the model is
asked again, and nothing the declining model asked for takes effect. The real SDK against the local
Messages API server, on the store runner (SQLite, the journal read back from the file).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from messages_api import MessagesAPI, message, text, tool_use
from temporal_server import TemporalServer, serving, temporal_fixture
from temporalio.worker import Replayer
from test_probe37b_old_fallback_journal import (
    DONE,
    FALLBACK,
    RAN,
    THINKING,
    agent_for,
    as_older_releases_parsed,
    sent,
    started_by_an_older_release,
)

from agent import RunResult, StopReason
from agent._loop import NOT_RUN_DECLINED
from agent.durable.runner import Catalog, Runner
from agent.durable.store import open_store
from agent.journal import Result
from agent.models.anthropic import DECLINED_RESULTS
from agent.temporal import _remote
from agent.temporal.worker import workflow_runner
from agent.temporal.workflow import EndstateRun

DECLINED_DEPLOY = tool_use("deploy", {"target": "prod"}, id="toolu_declined_deploy")


def test_an_approved_call_of_a_declining_model_is_not_run_and_the_model_is_asked_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    first = message(THINKING, DECLINED_DEPLOY, FALLBACK, text("I will not deploy."), stop_reason="end_turn")
    RAN.clear()
    with MessagesAPI(first, message(DONE)) as api:
        catalog = Catalog()
        catalog.register("fallback", lambda state: agent_for(api.url))
        url = str(tmp_path / "runs.db")
        waiting = started_by_an_older_release(url, catalog, monkeypatch)
        assert waiting.reason is StopReason.NEED_HELP, waiting.note
        assert waiting.suspension is not None and waiting.suspension.pending is not None
        assert (
            waiting.suspension.pending.tool_use_id == "toolu_declined_deploy" and RAN == []
        )  # what the older release asked
        store = open_store(url)  # this release, another process: the run read back from the file
        try:
            with caplog.at_level("WARNING", logger="endstate.loop"):
                done = asyncio.run(Runner(store, catalog).resume(waiting.run_id, approved=True))
            kept = store.snapshot(waiting.run_id)
        finally:
            store.close()
    assert done.reason is StopReason.SUCCESS, done.note
    assert RAN == []  # was: ["deploy prod"], the declining model's call run once approved
    assert kept is not None
    results = [e for e in kept.journal if isinstance(e, Result) and e.call_id == "toolu_declined_deploy"]
    assert [(r.text, r.is_error) for r in results] == [(NOT_RUN_DECLINED, True)]
    assert any(
        "toolu_declined_deploy" in r.getMessage() and "declined" in r.getMessage() for r in caplog.records
    )
    again = api.bodies[1]  # the model asked again: without the declined call, its result a note
    assert sent(again, 1) == [FALLBACK, text("I will not deploy.")]
    assert sent(again, 2) == [text(DECLINED_RESULTS)]


# -- on Temporal: the same loop in the workflow, gated so that an older worker's history replays ---------


temporal = temporal_fixture()


def fallback_catalog(url: str) -> Catalog:
    found = Catalog()
    found.register("fallback", lambda state: agent_for(url))
    return found


async def suspended_then_approved(
    server: TemporalServer, monkeypatch: pytest.MonkeyPatch, older_throughout: bool
) -> tuple[RunResult, Any]:
    """A run an older worker suspended for approval of the declining model's call; approved by this code
    (or, `older_throughout`, by the older code too). Its result, and its history."""
    first = message(THINKING, DECLINED_DEPLOY, FALLBACK, text("I will not deploy."), stop_reason="end_turn")
    with MessagesAPI(first, message(DONE)) as api, monkeypatch.context() as older:
        as_older_releases_parsed(older)
        async with serving(server, fallback_catalog(api.url)) as runs:
            waiting = await runs.start("fallback", "Deploy.")
            assert isinstance(waiting, RunResult) and waiting.reason is StopReason.NEED_HELP, waiting
            if not older_throughout:
                older.undo()  # this code's worker, the workflow still in its cache
            done = await asyncio.wait_for(runs.approve(waiting.run_id), 60)
            history = await runs.client.get_workflow_handle(waiting.run_id).fetch_history()
    return done, history


def replay_failure(history: Any) -> Exception | None:
    replayer = Replayer(workflows=[EndstateRun], workflow_runner=workflow_runner())
    return asyncio.run(replayer.replay_workflow(history, raise_on_replay_failure=False)).replay_failure


@pytest.mark.slow
def test_on_temporal_an_approved_call_of_a_declining_model_is_not_run(
    temporal: TemporalServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    RAN.clear()
    done, history = asyncio.run(suspended_then_approved(temporal, monkeypatch, older_throughout=False))
    assert done.reason is StopReason.SUCCESS, done.note
    assert RAN == []  # was: ["deploy prod"]
    assert replay_failure(history) is None


@pytest.mark.slow
def test_on_temporal_a_history_whose_older_worker_ran_the_call_replays_as_it_ran(
    temporal: TemporalServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    RAN.clear()
    done, history = asyncio.run(suspended_then_approved(temporal, monkeypatch, older_throughout=True))
    assert done.reason is StopReason.SUCCESS and RAN == ["deploy prod"], (done.note, RAN)  # the older code
    assert replay_failure(history) is None  # under this code: the gate says the call ran
    patched = _remote.workflow.patched
    monkeypatch.setattr(
        _remote.workflow, "patched", lambda patch: patch == _remote.DECLINED_NOT_RUN or patched(patch)
    )
    assert "Nondeterminism" in str(replay_failure(history))  # without the gate it would not replay
