"""probe39c: a run through Amazon Bedrock end to end: the SDK's `AsyncAnthropicBedrock` (the `bedrock`
extra: boto3 and botocore, never the base install), with fake AWS credentials, signs each request
(SigV4) and sends it to Bedrock's streamed InvokeModel on the local server, which streams the reply in
AWS's event stream as Bedrock does. The run's calls, its stop reason and its cost (a Bedrock model id is
priced as the Claude model it names) come out as through the Claude API."""

from __future__ import annotations

import asyncio

import anthropic
import pytest
from messages_api import MessagesAPI, message, tool_use
from test_probe37b_old_fallback_journal import RAN, delete

from agent import Agent, Budget, RunResult, StopReason
from agent.models.anthropic import AnthropicModel
from agent.models.claude_limits import PARTNER_PLATFORM, limits_for

BEDROCK_ID = "global.anthropic.claude-haiku-4-5-20251001-v1:0"
HAIKU = (100 * 1 + 20 * 5) / 1e6  # Claude Haiku 4.5, global endpoint: its Claude API row


def test_a_run_through_bedrock_signs_its_requests_and_reads_the_event_stream() -> None:
    async def run(url: str) -> RunResult:
        client = anthropic.AsyncAnthropicBedrock(
            aws_access_key="AKIAIOSFODNN7EXAMPLE",
            aws_secret_key="wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
            aws_region="us-east-1",
            base_url=url,
            max_retries=0,
        )
        async with client:
            assert limits_for(client) == PARTNER_PLATFORM
            model = AnthropicModel(BEDROCK_ID, client=client)
            budget = Budget(max_turns=3, max_seconds=30)
            return await Agent("tidy", model, tools=[delete], budget=budget).arun("Delete /tmp/x.")

    replies = [
        message(tool_use("delete", {"path": "/tmp/x"}), input_tokens=100, output_tokens=20),
        message(tool_use("finish", {"kind": "done", "note": "deleted"}), input_tokens=100, output_tokens=20),
    ]
    RAN.clear()
    with MessagesAPI(*replies) as api:
        result = asyncio.run(run(api.url))
    assert result.reason is StopReason.SUCCESS, result.note
    assert RAN == ["delete /tmp/x"]
    assert [r.path for r in api.bedrock] == [f"/model/{BEDROCK_ID}/invoke-with-response-stream"] * 2
    first = api.bedrock[0]
    assert first.headers["authorization"].startswith("AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/")
    assert "x-amz-date" in first.headers
    assert first.body["anthropic_version"] and "model" not in first.body  # the model is in the path
    assert result.cost_usd == pytest.approx(2 * HAIKU)
