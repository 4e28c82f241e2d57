"""leak: an agent on the Anthropic adapter, run again and again by `agent.run()` (a new event loop
each time: a web app's request handler, a script's loop, a thread per job), keeps no client, event
loop or TLS context of a run that ended.

Before: the model kept each loop's client under the loop as a weak key, but the value (the parked
async generator that closes the client at the loop's shutdown) held the loop through its finalizer:
neither was ever collected. Every `run()` kept its loop and a closed SDK client with its own TLS
context, about 0.8 MB, for as long as the agent lived (27 MB after 30 runs). Now a closed loop's
entry is dropped once its client was closed, and a later run's client takes its place."""

from __future__ import annotations

import asyncio
import gc
import ssl
from collections.abc import Iterator

import anthropic
import pytest
from messages_api import MessagesAPI, message, tool_use

from agent import Agent, Budget, StopReason
from agent.models.anthropic import AnthropicModel

RUNS = 6


@pytest.fixture
def api() -> Iterator[MessagesAPI]:
    with MessagesAPI() as server:
        server.then = message(tool_use("finish", {"kind": "done", "note": "ok"}))
        yield server


def _alive(kind: type) -> int:
    gc.collect()
    return sum(isinstance(o, kind) for o in gc.get_objects())


def test_runs_each_in_their_own_event_loop_keep_no_client_or_loop_of_an_ended_run(api: MessagesAPI) -> None:
    loops_before = _alive(asyncio.AbstractEventLoop)
    model = AnthropicModel("claude-sonnet-4-5", api_key="sk-ant-test", base_url=api.url)
    agent = Agent("a", model, budget=Budget(max_turns=3, max_seconds=60))
    for i in range(RUNS):
        assert agent.run(f"task {i}").reason is StopReason.SUCCESS
    assert api.connections == RUNS  # one client a loop, as before
    assert _alive(asyncio.AbstractEventLoop) - loops_before <= 1  # the last run's, at most
    assert _alive(anthropic.AsyncAnthropic) <= 2  # the last run's and a spare, at most
    assert api.settled_connections() == 0  # each closed with its loop


def test_models_built_one_a_run_share_one_tls_context() -> None:
    """A catalog builds an agent, and so a model, for every run (a Temporal worker keeps up to 1,024
    of runs not ended there): each model's client made its own TLS context, 0.8 MB of memory each."""
    before = _alive(ssl.SSLContext)
    models = [AnthropicModel("claude-sonnet-4-5", api_key="sk-ant-test") for _ in range(RUNS)]
    assert _alive(ssl.SSLContext) - before <= 1
    assert len(models) == RUNS
