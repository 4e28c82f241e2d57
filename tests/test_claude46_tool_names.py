"""A tool named like one of the model's server tools is refused when the agent is built, not by the API
at the run's first call: through the real `anthropic` SDK against the local Messages API server, which
refuses repeated tool names as the API does ("tools: Tool names must be unique.")."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import anthropic
import pytest
from messages_api import MessagesAPI, message, tool_use

from agent import Agent, Budget, ConfigError, StopReason, tool
from agent.models.anthropic import AnthropicModel, web_fetch, web_search
from agent.models.base import ModelRequest

MODEL = "claude-haiku-4-5"


@pytest.fixture
def api() -> Iterator[MessagesAPI]:
    with MessagesAPI() as server:
        yield server


@tool(name="web_search")
def my_search(query: str) -> str:
    """Search the company wiki."""
    return f"wiki results for {query}"


def model_for(api: MessagesAPI, **options: object) -> AnthropicModel:
    return AnthropicModel(MODEL, api_key="sk-test", base_url=api.url, **options)  # type: ignore[arg-type]


def test_an_agent_tool_named_like_a_server_tool_is_refused_when_the_agent_is_built(api: MessagesAPI) -> None:
    model = model_for(api, server_tools=[web_search(max_uses=3), web_fetch()])
    with pytest.raises(ConfigError) as caught:
        Agent("researcher", model, tools=[my_search])
    said = str(caught.value)
    assert "['web_search']" in said and "server tools" in said
    assert "rename" in said and "server_tools=" in said  # what to do about it
    assert api.requests == []  # nothing was sent, nothing paid


def test_a_request_whose_tools_repeat_a_server_tools_name_is_refused_before_it_is_sent(
    api: MessagesAPI,
) -> None:
    # A request the agent did not build (an evaluator's tools through the same model, an integration).
    model = model_for(api, server_tools=[web_search()])
    request = ModelRequest.of_messages("", [{"role": "user", "content": "hi"}], [my_search.spec()], 256)
    with pytest.raises(ConfigError) as caught:
        asyncio.run(model.complete(request))
    said = str(caught.value)
    assert "two tools named 'web_search'" in said and "web_search_20260318" in said
    assert "Tool names must be unique" in said  # the API's words for it
    assert api.requests == []


def test_two_server_tools_of_one_name_are_refused_when_the_model_is_built() -> None:
    with pytest.raises(ConfigError, match="two tools named 'web_search'"):
        AnthropicModel(MODEL, api_key="sk-test", server_tools=[web_search(), web_search(max_uses=2)])


def test_a_tool_named_like_a_server_tool_the_model_does_not_use_is_kept(api: MessagesAPI) -> None:
    # Only a repeated name is refused: no evidence says the API reserves `web_search` on its own.
    api.enqueue(
        message(tool_use("web_search", {"query": "holidays"})),
        message(tool_use("finish", {"kind": "done", "note": "found"})),
    )
    agent = Agent("researcher", model_for(api), tools=[my_search], budget=Budget(max_turns=4, max_seconds=60))
    result = agent.run("Find the holiday policy.")
    assert result.reason is StopReason.SUCCESS, result.note
    assert [t["name"] for t in api.bodies[0]["tools"]] == ["web_search", "finish"]


def test_the_server_refuses_repeated_tool_names_as_the_api_does(api: MessagesAPI) -> None:
    # The local server's own check, which the tests above rely on to stand for the API.
    client = anthropic.Anthropic(api_key="sk-test", base_url=api.url, max_retries=0)
    tools: Any = [my_search.spec(), web_search()]
    with pytest.raises(anthropic.BadRequestError, match="Tool names must be unique"):
        client.messages.create(
            model=MODEL, max_tokens=8, messages=[{"role": "user", "content": "hi"}], tools=tools
        )
    client.close()
