"""The integrations' sync `run` keeps its event loop between runs, as the frameworks' own do
(probe22b).

`pydantic_ai.run(agent, ...)` (and each integration's sync `run`/`resume`) ran the framework in
`asyncio.run`: a new event loop per run, closed after it. The frameworks' own sync entry points
(`Agent.run_sync`, the SDK's `Runner.run_sync`) keep the thread's loop open because their cached
model clients and loop-bound helpers belong to the loop they were first used on. Through Endstate,
every sync run after the first sent its first model request on the pooled connection of the closed
loop: the API received and answered it, the reply was lost, and the SDK sent the request again on a
new connection (a model call billed twice, counted once), leaving the old socket open. Here with
Pydantic AI's own Anthropic model on the real `anthropic` SDK, against the local Messages API server.
"""

from __future__ import annotations

import contextvars
import gc
import threading
import warnings
from typing import Any

import httpx2
from messages_api import MessagesAPI, message, text
from pydantic_ai import Agent
from pydantic_ai.models.anthropic import AnthropicModel
from pydantic_ai.models.test import TestModel
from pydantic_ai.providers.anthropic import AnthropicProvider

from agent.integrations import pydantic_ai as endstate_pai
from agent.integrations._sync import run_sync
from agent.result import StopReason


def test_sync_runs_one_after_another_share_one_connection_as_run_sync_does() -> None:
    with MessagesAPI() as api:
        api.enqueue(*(message(text(f"answer {i}")) for i in range(3)))
        client = httpx2.AsyncClient()
        provider = AnthropicProvider(base_url=api.url, api_key="test", http_client=client)
        agent = Agent(AnthropicModel("claude-sonnet-4-5", provider=provider), name="support")
        try:
            results = [endstate_pai.run(agent, "hi") for _ in range(3)]
            assert [(r.reason, r.output) for r in results] == [
                (StopReason.SUCCESS, f"answer {i}") for i in range(3)
            ]
            assert len(api.requests) == 3  # before: each run's first request sent twice, one reply lost
            assert api.connections == 1  # before: a new connection per run, the last one's left open
        finally:
            run_sync(client.aclose())  # on the loop its connection belongs to (before: closed already)


REQUEST = contextvars.ContextVar("request", default="none")


def test_a_sync_run_sees_the_callers_context_as_it_is_at_each_call() -> None:
    """The run's context is the caller's at the call (its current span, say), not the first run's."""
    seen: list[str] = []
    agent = Agent(TestModel(), name="ctx")

    @agent.tool_plain
    def whose() -> str:
        """Say whose request this is."""
        seen.append(REQUEST.get())
        return "ok"

    for who in ("alice", "bob"):
        REQUEST.set(who)
        assert endstate_pai.run(agent, "hi").reason is StopReason.SUCCESS
    assert seen == ["alice", "bob"]


def test_a_threads_loop_is_closed_once_the_thread_has_ended() -> None:
    results: list[Any] = []
    worker = threading.Thread(target=lambda: results.append(endstate_pai.run(Agent(TestModel()), "hi")))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        worker.start()
        worker.join()
        del worker
        gc.collect()
    assert [r.reason for r in results] == [StopReason.SUCCESS]
    leaked = [str(w.message) for w in caught if issubclass(w.category, ResourceWarning)]
    assert not leaked, leaked
