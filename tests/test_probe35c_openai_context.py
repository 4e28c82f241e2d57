"""Probe 35c: an OpenAI Agents SDK run whose input outgrew the model's context window ends `limit`/`context`.

The OpenAI API rejects such a request with a 400 whose error `code` is `context_length_exceeded`;
the SDK lets the `openai.BadRequestError` out of `Runner.run`. That was an `error` stop. It is
DESIGN's `limit`/`context` (nothing in the run shrank the input), as Endstate's own runs and the
other integrations (Claude's `prompt_too_long`, Pydantic AI's `ModelContextWindowExceededError`,
LangChain's `ContextOverflowError`) end it: counted with the limit stops, not the errors. Any other
rejected request stays an `error`.

The SDK's real `OpenAIResponsesModel`, through the `openai` client, against a local server
answering as the API does.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx2
import openai
import pytest
from agents import Agent, OpenAIResponsesModel, set_tracing_disabled
from integrations_support import Rig, rigged

from agent import LimitKind, StopReason
from agent.integrations import openai_agents as oa
from telemetry import names as n

TASK = "probe35c"
TOO_LONG = {  # the Responses API's answer to an input past the model's context window
    "message": "Your input exceeds the context window of this model. Please adjust your input and try again.",
    "type": "invalid_request_error",
    "param": "input",
    "code": "context_length_exceeded",
}
BAD_FIELD = {"message": "Unknown parameter: 'foo'.", "type": "invalid_request_error", "code": None}


@pytest.fixture
def rig() -> Iterator[Rig]:
    set_tracing_disabled(True)  # the SDK's own traces would go to OpenAI
    with rigged() as rig:
        yield rig
    set_tracing_disabled(False)


class Rejecting(BaseHTTPRequestHandler):
    """Answers every request with a 400 carrying the server's `error`."""

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length") or 0))
        body = json.dumps({"error": self.server.error}).encode()  # type: ignore[attr-defined]
        self.send_response(400)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


def run_rejected(rig: Rig, error: dict[str, Any]) -> Any:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Rejecting)
    server.error = error  # type: ignore[attr-defined]
    threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()

    async def run() -> Any:
        async with httpx2.AsyncClient() as http:
            url = f"http://127.0.0.1:{server.server_address[1]}/v1"
            client = openai.AsyncOpenAI(api_key="test", base_url=url, max_retries=0, http_client=http)
            agent = Agent(name="oa_ctx", model=OpenAIResponsesModel("gpt-4.1", openai_client=client))
            return await oa.arun(agent, "summarise everything", hooks=rig.hooks, task_type=TASK)

    try:
        return asyncio.run(run())
    finally:
        server.shutdown()
        server.server_close()


def test_an_input_past_the_context_window_is_a_context_limit(rig: Rig) -> None:
    res = run_rejected(rig, TOO_LONG)
    assert isinstance(res.raw, openai.BadRequestError)
    assert (res.reason, res.limit) == (StopReason.LIMIT, LimitKind.CONTEXT), (res.reason, res.note)
    assert "context window" in res.note
    assert rig.stops("oa_ctx", TASK, "limit", "context") == 1
    assert rig.stops("oa_ctx", TASK, "error") == 0
    (span,) = rig.run_spans()
    assert (span.attributes or {})[n.STOP_LIMIT] == "context"


def test_another_rejected_request_is_still_an_error(rig: Rig) -> None:
    res = run_rejected(rig, BAD_FIELD)
    assert (res.reason, res.error_type) == (StopReason.ERROR, "BadRequestError"), res.note
    assert rig.stops("oa_ctx", TASK, "error") == 1
