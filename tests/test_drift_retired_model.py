"""drift: the model an agent calls is retired while its runs wait (SQLite and PostgreSQL).

A run asks a person; meanwhile its model's retirement date comes (the model table marks it retired:
the Claude API answers 404 for it), and the catalog still names it. Before, the answer was taken, the
first model call failed with 404, and the run ended `error` for good (not resumable): the person's
answer spent, and once the team moved the agent to a served model nothing could continue the run. Now
the runner refuses the reply before it takes it (`NotInCatalog`: HTTP 503, exit 2), saying the model is
retired and what to move to; the run waits on, keeping the reply as not taken, and takes it once the
agent is deployed with a served model. No model call is made for the refused reply.
"""

from __future__ import annotations

import asyncio
import dataclasses
from pathlib import Path
from typing import Any

import pytest
from drift_support import counter_runner, started
from messages_api import MessagesAPI, error, message, tool_use
from test_runner_agents import counter_state, make_counter

from agent import Agent, RetryPolicy, StopReason
from agent.budget import Extension
from agent.durable.runner import NotInCatalog
from agent.durable.store import RunStatus
from agent.models.anthropic import AnthropicModel

FAST = RetryPolicy(max_attempts=2, base_delay=0.01, max_delay=0.02, jitter=False)


def on_model(model_id: str, url: str) -> Any:
    """The counter's catalog build, its model `model_id` at the Messages API at `url`."""

    def build(state: dict[str, Any]) -> Agent:
        model = AnthropicModel(model_id, api_key="sk-ant-test", base_url=url)
        return dataclasses.replace(make_counter(state), model=model, retry=FAST)

    return build


def test_a_reply_to_a_run_whose_model_was_retired_is_refused_until_a_served_model_is_deployed(
    store_url: str, tmp_path: Path
) -> None:
    first = started(store_url, counter_state(tmp_path, "ask"), "m1")
    assert first.reason is StopReason.NEED_HELP

    with MessagesAPI(error(404, "model: claude-sonnet-4-5", type="not_found_error")) as api:
        retired = counter_runner(store_url, on_model("claude-sonnet-4-5", api.url))
        try:
            with pytest.raises(
                NotInCatalog, match=r"claude-sonnet-4-5 is retired.*claude-sonnet-5-5"
            ) as said:
                asyncio.run(retired.resume("m1", "3", by="ana"))
            assert "still waits" in str(said.value), said.value
            assert api.requests == []  # refused before any model call
            after = retired.store.get("m1")
            assert after is not None and after.status is RunStatus.WAITING
            assert after.refused is not None and "is retired" in after.refused
        finally:
            retired.store.close()

    done_reply = message(tool_use("finish", {"kind": "done", "note": "counted"}))
    with MessagesAPI(message(tool_use("count", {"n": 3})), done_reply) as api:
        served = counter_runner(store_url, on_model("claude-sonnet-5-5", api.url))
        try:
            done = asyncio.run(served.resume("m1", "3", by="ana"))
            assert done.reason is StopReason.SUCCESS, done.note
            assert "Answer from a person: 3" in str(api.requests[0].body)  # the answer reached the model
        finally:
            served.store.close()


def test_more_budget_for_a_run_whose_model_was_retired_is_refused_as_well(
    store_url: str, tmp_path: Path
) -> None:
    state = counter_state(tmp_path, "plain", max_turns=1)
    first = started(store_url, state, "m2")
    assert first.reason is StopReason.LIMIT
    retired = counter_runner(store_url, on_model("claude-sonnet-4-5", "http://127.0.0.1:9"))
    try:
        with pytest.raises(NotInCatalog, match="claude-sonnet-4-5 is retired"):
            asyncio.run(retired.resume("m2", more=Extension(turns=5)))
        after = retired.store.get("m2")
        assert after is not None and (after.status, after.stop_reason) == (RunStatus.FINISHED, "limit")
    finally:
        retired.store.close()
