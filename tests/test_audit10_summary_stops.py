"""A compaction's summary call that the API ends another way than a finished answer (a refusal, a
summary cut off at max_tokens or by the context window, a paused turn): what it wrote is no summary
of the older turns, so the code-written account stands in, with a note saying why, instead of
replacing the run's history with a refusal or half a summary. Through the real `anthropic` SDK
against the local Messages API server."""

from __future__ import annotations

import json

import pytest
from messages_api import MessagesAPI, Response, message, text
from test_compaction import SUMMARY, WINDOW, asks_for_summary, ledger_agent, script, summary_requests

from agent import StopReason

CUT = "<summary>Pages 0 to 12 read; the ledg"


@pytest.mark.parametrize(
    ("stop_reason", "wrote", "why"),
    [
        ("refusal", "I can't help with that request.", "refusal"),
        ("max_tokens", CUT, "max_tokens"),
        ("model_context_window_exceeded", CUT, "model_context_window_exceeded"),
        ("pause_turn", "Let me look again at the first pages.", "pause_turn"),
    ],
)
def test_a_summary_call_that_did_not_finish_leaves_the_code_written_account(
    stop_reason: str, wrote: str, why: str
) -> None:
    answer = message(text(wrote), stop_reason=stop_reason, input_tokens=None)

    def intercept(body: object) -> Response | None:
        return answer if asks_for_summary(body) else None

    with MessagesAPI(*script(), context_window=WINDOW, intercept=intercept) as api:
        result = ledger_agent(api).run("Check the ledger.")
        asked = summary_requests(api)
        assert result.reason is StopReason.SUCCESS, result.note
        assert asked, "the run compacted"
        after = json.dumps(api.bodies[asked[0] + 1]["messages"])
    assert wrote.removeprefix("<summary>") not in after  # not sent as the summary of the older turns
    assert "could not write this summary" in after and why in after  # the account, saying why
    assert "read(page=0)" in after


def test_a_finished_summary_is_still_used() -> None:
    answer = message(text(f"<summary>{SUMMARY}</summary>"), input_tokens=None, output_tokens=80)
    with MessagesAPI(
        *script(), context_window=WINDOW, intercept=lambda b: answer if asks_for_summary(b) else None
    ) as api:
        result = ledger_agent(api).run("Check the ledger.")
        after = json.dumps(api.bodies[summary_requests(api)[0] + 1]["messages"])
    assert result.reason is StopReason.SUCCESS, result.note
    assert SUMMARY in after and "could not write" not in after
