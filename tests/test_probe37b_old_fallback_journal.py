"""A journal an older release wrote keeps what a declining model wrote before a turn's last `fallback`
block (its thinking, its tool calls, and the results of the calls it ran): the reply parser left
nothing out until it learned the API's rule (the refusals-and-fallback guide, "Continuing the
conversation"). A run suspended or checkpointed then, and resumed now, sent all of it back: the API
wants it left out. The request is built without it, and without the results of the calls left out
(the API refuses a `tool_result` whose call is not sent: the local server does too); a user message
left with nothing holds a note instead, so the roles still alternate."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from messages_api import MessagesAPI, fallback_block, message, text, tool_use

import agent.models.anthropic as adapter
from agent import Agent, Approval, Budget, RetryPolicy, RunResult, Snapshot, StopReason, tool
from agent.durable.runner import Catalog, Runner
from agent.durable.store import open_store
from agent.journal import Reply
from agent.models.anthropic import DECLINED_RESULTS, AnthropicModel

FAST = RetryPolicy(max_attempts=2, base_delay=0.01, max_delay=0.02, jitter=False)
REQUESTED, SERVING = "claude-opus-4-6", "claude-haiku-4-5"
DONE = tool_use("finish", {"kind": "done", "note": "ok"})
RAN: list[str] = []


@tool
def delete(path: str) -> str:
    """Delete a file."""
    RAN.append(f"delete {path}")
    return f"deleted {path}"


@tool(needs_approval=True)
def deploy(target: str) -> str:
    """Deploy (a person approves first)."""
    RAN.append(f"deploy {target}")
    return f"deployed {target}"


FALLBACK = fallback_block(REQUESTED, SERVING)
THINKING = {"type": "thinking", "thinking": "the declined thought", "signature": "sig-declined"}
DECLINED_CALL = tool_use("delete", {"path": "/etc/passwd"}, id="toolu_declined")
SERVED_CALL = tool_use("deploy", {"target": "prod"}, id="toolu_served")


def agent_for(url: str) -> Agent:
    model = AnthropicModel(REQUESTED, api_key="sk-ant-test", base_url=url)
    return Agent("fallback", model, tools=[delete, deploy], budget=Budget(max_turns=5), retry=FAST)


def as_older_releases_parsed(monkeypatch: pytest.MonkeyPatch) -> None:
    """Parse replies as releases before the fallback rule did: every block kept, every call run."""
    monkeypatch.setattr(adapter, "_served_part", lambda content, unfinished: (content, unfinished, {}))
    monkeypatch.setattr(Reply, "declined", property(lambda reply: frozenset()))


def started_by_an_older_release(url: str, catalog: Catalog, monkeypatch: pytest.MonkeyPatch) -> RunResult:
    """The `fallback` agent's run, started in the store at `url` by an older release's reply parser."""
    with monkeypatch.context() as older:
        as_older_releases_parsed(older)
        store = open_store(url)
        try:
            return asyncio.run(Runner(store, catalog).start("fallback", "Deploy."))
        finally:
            store.close()


def sent(body: dict[str, Any], index: int) -> list[dict[str, Any]]:
    """The blocks of message `index` of a request, without their cache breakpoints."""
    return [{k: v for k, v in b.items() if k != "cache_control"} for b in body["messages"][index]["content"]]


def test_a_stored_run_an_older_release_suspended_resumes_without_the_declined_blocks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = message(THINKING, text("I will delete"), DECLINED_CALL, FALLBACK, text("Deploying."), SERVED_CALL)
    RAN.clear()
    with MessagesAPI(first, message(DONE)) as api:
        catalog = Catalog()
        catalog.register("fallback", lambda state: agent_for(api.url))
        url = str(tmp_path / "runs.db")
        waiting = started_by_an_older_release(url, catalog, monkeypatch)
        assert waiting.reason is StopReason.NEED_HELP, waiting.note
        assert RAN == ["delete /etc/passwd"]  # what the older release did: the journal holds its result
        store = open_store(url)  # this release, another process: the run read back from the file
        try:
            done = asyncio.run(Runner(store, catalog).resume(waiting.run_id, approved=True))
        finally:
            store.close()
    assert done.reason is StopReason.SUCCESS, done.note
    assert RAN == ["delete /etc/passwd", "deploy prod"]
    after = api.bodies[1]
    assert sent(after, 1) == [text("I will delete"), FALLBACK, text("Deploying."), SERVED_CALL]
    assert [b["tool_use_id"] for b in sent(after, 2)] == ["toolu_served"]


def test_a_snapshot_whose_only_results_were_the_declined_calls_sends_a_note_in_their_place(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The older release ran the declining model's call, then asked the model again; its answer asks
    # for approval, and the run is snapshotted as JSON, then resumed by this release.
    first = message(DECLINED_CALL, FALLBACK, text("Nothing to delete."), stop_reason="end_turn")
    second = message(SERVED_CALL)
    RAN.clear()
    with MessagesAPI(first, second, message(DONE)) as api:
        with monkeypatch.context() as older:
            as_older_releases_parsed(older)
            paused = agent_for(api.url).run("Tidy up, then deploy.")
        assert paused.reason is StopReason.NEED_HELP, paused.note
        assert paused.snapshot is not None
        snap = Snapshot.from_json(json.loads(json.dumps(paused.snapshot.to_json())))
        resumed = agent_for(api.url).resume(snap, Approval())
    assert resumed.reason is StopReason.SUCCESS, resumed.note
    assert RAN == ["delete /etc/passwd", "deploy prod"]
    last = api.bodies[2]
    roles = [m["role"] for m in last["messages"]]
    assert roles == ["user", "assistant", "user", "assistant", "user"]
    assert sent(last, 1) == [FALLBACK, text("Nothing to delete.")]
    assert sent(last, 2) == [text(DECLINED_RESULTS)]
    assert [b["tool_use_id"] for b in sent(last, 4)] == ["toolu_served"]
