"""The Messages API never redirects; a redirect comes from a proxy, a portal or a base URL gone wrong.
The SDK follows redirects by default, so the adapter's client sent the whole conversation to wherever
one pointed (a 307 or 308 re-sends the body; the key is left off across origins) and ended the run
with a note blaming the key ("HTTP 401 ... check that it is set") or the model id (a 301 or 302
becomes a GET: "HTTP 404 ... check the model id"). A client the adapter builds follows none: the
run ends as `error` (`redirect`), its note naming where the redirect pointed and what to set."""

from __future__ import annotations

import pytest
from messages_api import MessagesAPI, Response, message, text, tool_use

from agent import Agent, Budget, StopReason
from agent.models.anthropic import AnthropicModel

DONE = tool_use("finish", {"kind": "done", "note": "ok"})


@pytest.mark.parametrize("status", [301, 302, 307, 308])
def test_a_redirect_is_not_followed_and_ends_the_run_saying_where_it_pointed(status: int) -> None:
    with MessagesAPI(message(DONE), then=message(text("elsewhere"))) as elsewhere, MessagesAPI() as api:
        target = elsewhere.url.rstrip("/") + "/v1/messages"
        api.enqueue(Response(status, None, {"location": target}))
        model = AnthropicModel("claude-haiku-4-5", api_key="sk-ant-test", base_url=api.url)
        result = Agent("moved", model, budget=Budget(max_turns=2, max_seconds=60)).run("Secret plans.")
        assert elsewhere.requests == []  # the conversation went nowhere but base_url
    assert result.reason is StopReason.ERROR
    assert result.error_type == "redirect"
    assert f"HTTP {status}" in result.note and repr(target) in result.note
    assert "base_url" in result.note
