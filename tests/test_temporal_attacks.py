"""Red-team checks of Endstate on Temporal, against a real Temporal Server: a workflow run ends as
the same run in this process would, whatever the model answers and however the agent is set up."""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
from temporal_server import TemporalServer

from agent import Agent, Budget, HistoryPolicy, RetryPolicy, tool
from agent.durable.runner import Catalog
from agent.models.scripted import ScriptedModel, Step, call, finish, reply, say
from agent.result import RunResult
from agent.temporal import TemporalRuns, build_worker

pytestmark = pytest.mark.slow

FAST_RETRY = RetryPolicy(max_attempts=2, base_delay=0.01, max_delay=0.02, jitter=False)
BUILT: list[Agent] = []


@pytest.fixture(scope="module")
def temporal() -> Iterator[TemporalServer]:
    server = TemporalServer()
    yield server
    server.stop()


@tool
def fetch(page: int) -> str:
    """Fetch a long page."""
    return f"page {page}: " + "x" * 41_000  # over the default cap of 40,000 characters


SCRIPTS: dict[str, list[Step]] = {
    "long-results": [[call("fetch", page=1)], [call("fetch", page=2)], [finish("done", "fetched")]],
    "full": [
        [call("fetch", page=1)],
        reply(say("Page 1 says"), input_tokens=199_000, stop_reason="model_context_window_exceeded"),
        [finish("done", "fetched")],
    ],
    "window": [
        *(reply(call("fetch", page=i), input_tokens=14_000) for i in range(5)),
        [finish("done", "fetched")],
    ],
    "refusal": [[call("fetch", page=1)], reply(say("I can't."), stop_reason="refusal")],
    "pause": [reply(say("Searching"), stop_reason="pause_turn"), [finish("done", "found")]],
    "cut": [reply(say("The first half"), stop_reason="max_tokens"), [finish("give_up", "too long")]],
}


class SmallWindow(ScriptedModel):
    """A scripted model with a 20,000-token context window."""

    context_window = 20_000


def build(state: dict[str, Any]) -> Agent:
    history = HistoryPolicy.off() if state.get("history") == "off" else HistoryPolicy(max_result_chars=300)
    agent = Agent(
        name="fetcher",
        model=SmallWindow(SCRIPTS[state["script"]]),
        instructions="Fetch pages.",
        tools=[fetch],
        budget=Budget(max_turns=6, max_seconds=120),
        retry=FAST_RETRY,
        history=history,
    )
    BUILT.append(agent)
    return agent


def catalog() -> Catalog:
    c = Catalog()
    c.register("fetcher", build)
    return c


@contextlib.asynccontextmanager
async def worker(server: TemporalServer) -> AsyncIterator[TemporalRuns]:
    queue = f"red-{uuid.uuid4().hex[:8]}"
    runs = await TemporalRuns.connect(server.address, task_queue=queue)
    async with await build_worker(runs.client, catalog(), task_queue=queue, heartbeat_seconds=2.0):
        yield runs


def on_temporal(server: TemporalServer, state: dict[str, Any]) -> tuple[RunResult, Agent]:
    async def go() -> RunResult:
        async with worker(server) as runs:
            result = await runs.start("fetcher", "Fetch the pages.", state=state)
            assert isinstance(result, RunResult)
            return result

    BUILT.clear()
    result = asyncio.run(go())
    return result, BUILT[-1]


def locally(state: dict[str, Any]) -> tuple[RunResult, Agent]:
    agent = build(state)
    return agent.run("Fetch the pages.", state=state), agent


def same_run(a: RunResult, b: RunResult) -> None:
    fields = ("reason", "limit", "cause", "verified", "turns", "output", "note", "error_type", "last_text")
    assert {f: getattr(a, f) for f in fields} == {f: getattr(b, f) for f in fields}
    assert (a.input_tokens, a.output_tokens, a.cost_usd) == (b.input_tokens, b.output_tokens, b.cost_usd)


def sent_results(agent: Agent) -> list[str]:
    model = agent.model
    assert isinstance(model, ScriptedModel)
    return [
        b["content"]
        for r in model.requests
        for m in r.messages
        if isinstance(m["content"], list)
        for b in m["content"]
        if b.get("type") == "tool_result"
    ]


@pytest.mark.parametrize("history", ["capped", "off"])
def test_the_agents_history_policy_holds_on_temporal(temporal: TemporalServer, history: str) -> None:
    state = {"script": "long-results", "history": history}
    here, local_agent = locally(state)
    there, worker_agent = on_temporal(temporal, state)
    same_run(here, there)
    assert sent_results(worker_agent) == sent_results(local_agent)
    capped = all(len(text) < 1_000 for text in sent_results(local_agent))
    assert capped is (history == "capped")


@pytest.mark.parametrize("script", ["full", "refusal", "pause", "cut"])
@pytest.mark.parametrize("history", ["capped", "off"])
def test_each_api_stop_reason_ends_the_workflow_as_it_ends_a_local_run(
    temporal: TemporalServer, script: str, history: str
) -> None:
    state = {"script": script, "history": history}
    here, local_agent = locally(state)
    there, worker_agent = on_temporal(temporal, state)
    same_run(here, there)
    assert [r.messages for r in worker_agent.model.requests] == [  # type: ignore[attr-defined]
        r.messages
        for r in local_agent.model.requests  # type: ignore[attr-defined]
    ]


def test_the_models_context_window_holds_on_temporal(temporal: TemporalServer) -> None:
    state = {"script": "window"}
    here, local_agent = locally(state)
    there, worker_agent = on_temporal(temporal, state)
    same_run(here, there)
    assert any("was cleared to save context" in text for text in sent_results(local_agent))
    assert sent_results(worker_agent) == sent_results(local_agent)
