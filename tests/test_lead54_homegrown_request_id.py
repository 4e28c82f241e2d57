"""lead54: a home-grown loop's `call.reply(message)` keeps the `anthropic` SDK's request id of the
reply (`Message._request_id`, from its `request-id` header) on the call's chat span, as Endstate's own
adapter does: what Anthropic's support asks for about a slow or strange reply."""

from __future__ import annotations

from collections.abc import Iterator

import anthropic
import pytest
from integrations_support import Rig, rigged
from messages_api import MessagesAPI, message, text

from agent import observe_run
from telemetry import names as n


@pytest.fixture
def rig() -> Iterator[Rig]:
    with rigged() as rig:
        yield rig


def test_a_home_grown_loops_chat_span_carries_the_request_id_of_its_reply(rig: Rig) -> None:
    hostile = message(text("done"), headers={"request-id": "req_\x1b[2Jabc"})
    with MessagesAPI(hostile) as api, anthropic.Anthropic(base_url=api.url, api_key="test") as client:  # noqa: SIM117
        with observe_run(rig.hooks, agent="raw_loop", task_type="t", model="claude-x") as run:
            with run.turn(), run.model_call(max_tokens=256) as call:
                asked = [{"role": "user", "content": "hi"}]
                call.reply(client.messages.create(model="claude-x", max_tokens=256, messages=asked))
    assert run.result is not None and run.result.output == "done"
    (chat,) = [s for s in rig.spans() if s.name.startswith(n.SPAN_CHAT + " ")]
    shown = (chat.attributes or {})[n.ANTHROPIC_REQUEST_ID]
    assert isinstance(shown, str) and shown.startswith("req_test_0001")  # the server's own id first
    assert "\x1b" not in shown and "\\x1b[2Jabc" in shown  # the hostile one escaped, not raw


def test_a_reply_given_as_counts_has_no_request_id(rig: Rig) -> None:
    with observe_run(rig.hooks, agent="raw_loop", task_type="t", model="claude-x") as run:  # noqa: SIM117
        with run.turn(), run.model_call(max_tokens=256) as call:
            call.reply(input_tokens=3, output_tokens=2, text="done")
    (chat,) = [s for s in rig.spans() if s.name.startswith(n.SPAN_CHAT + " ")]
    assert n.ANTHROPIC_REQUEST_ID not in (chat.attributes or {})
