"""On Temporal, the workflow counts a run's tokens: a reply a server-side fallback served now counts
every attempt's (the usage's iterations), where it counted the reply's own counts, which may give the
answering attempt's alone. A token budget can then stop a run a turn earlier than it did, so runs
started before keep their count (`workflow.patched(EVERY_ATTEMPT)`) and replay as they ran. Against a
real Temporal dev server, the real SDK and the local Messages API server."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from messages_api import MessagesAPI, message, tool_use
from temporal_server import TemporalServer, serving, temporal_fixture
from temporalio.worker import Replayer

from agent import Agent, Budget, RetryPolicy, RunResult, tool
from agent.durable.runner import Catalog
from agent.models.anthropic import AnthropicModel
from agent.temporal import _remote
from agent.temporal.worker import workflow_runner
from agent.temporal.workflow import EndstateRun

pytestmark = pytest.mark.slow
temporal = temporal_fixture()

FAST = RetryPolicy(max_attempts=2, base_delay=0.01, max_delay=0.02, jitter=False)
REQUESTED, SERVING = "claude-opus-4-6", "claude-haiku-4-5"
ATTEMPTS = [  # the requested model declined after 2,000 input tokens and 50 output; the fallback answered
    {"type": "message", "model": REQUESTED, "input_tokens": 2_000, "output_tokens": 50},
    {"type": "fallback_message", "model": SERVING, "input_tokens": 10, "output_tokens": 5},
]
FIRST = message(
    tool_use("look", {"q": "x"}),
    input_tokens=10,
    output_tokens=5,
    model=SERVING,
    usage={
        "iterations": [a | {"cache_read_input_tokens": 0, "cache_creation_input_tokens": 0} for a in ATTEMPTS]
    },
)
DONE = message(tool_use("finish", {"kind": "done", "note": "ok"}), input_tokens=10, output_tokens=5)


@tool
def look(q: str) -> str:
    """Look something up."""
    return "found"


def catalog(url: str) -> Catalog:
    def build(state: Any) -> Agent:
        model = AnthropicModel(REQUESTED, api_key="sk-ant-test", base_url=url)
        budget = Budget(max_turns=5, max_seconds=60, max_tokens=1_000)  # the first reply: 15 or 2,065
        return Agent("fallback", model, tools=[look], budget=budget, retry=FAST)

    found = Catalog()
    found.register("fallback", build)
    return found


async def run_and_history(server: TemporalServer, *replies: Any) -> tuple[RunResult, Any]:
    with MessagesAPI(*replies) as api:
        async with serving(server, catalog(api.url)) as runs:
            result = await runs.start("fallback", "Look it up.")
            assert isinstance(result, RunResult)
            history = await runs.client.get_workflow_handle(result.run_id).fetch_history()
    return result, history


def replay_failure(history: Any) -> Exception | None:
    replayer = Replayer(workflows=[EndstateRun], workflow_runner=workflow_runner())
    return asyncio.run(replayer.replay_workflow(history, raise_on_replay_failure=False)).replay_failure


def test_a_run_counts_every_attempt_and_stops_at_its_token_budget(temporal: TemporalServer) -> None:
    result, history = asyncio.run(run_and_history(temporal, FIRST, DONE))
    assert (result.reason, result.limit) == ("limit", "tokens"), result.note
    assert (result.input_tokens, result.output_tokens) == (2_010, 55)
    assert replay_failure(history) is None


def test_a_run_started_before_every_attempt_was_counted_replays_as_it_ran(
    temporal: TemporalServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    patched = _remote.workflow.patched
    with monkeypatch.context() as before:  # the code before: no EVERY_ATTEMPT (nor its marker)
        before.setattr(
            _remote.workflow, "patched", lambda patch: patch != _remote.EVERY_ATTEMPT and patched(patch)
        )
        result, history = asyncio.run(run_and_history(temporal, FIRST, DONE))
    assert result.reason == "success", result.note
    assert (result.input_tokens, result.output_tokens) == (20, 10)  # the reply's own counts
    assert replay_failure(history) is None  # under this code: the run keeps its count
    monkeypatch.setattr(
        _remote.workflow, "patched", lambda patch: patch == _remote.EVERY_ATTEMPT or patched(patch)
    )
    assert "Nondeterminism" in str(replay_failure(history))  # without the gate it would not replay
