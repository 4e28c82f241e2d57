"""tele42: `gen_ai.provider.name` names the platform that served the calls, as the GenAI semantic
conventions list them: Claude on Amazon Bedrock is `aws.bedrock`, on Vertex AI `gcp.vertex_ai`.

Before, AnthropicModel said `anthropic` whatever its client sent to, so a run through Bedrock was
counted and traced as a Claude API run: a dashboard or query by provider could not tell the platforms
apart (their limits, prices and outages differ), and other instrumentations' Bedrock spans
(`aws.bedrock`) did not match Endstate's."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import anthropic
import pytest
from messages_api import MessagesAPI, message, tool_use
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from prometheus_client import CollectorRegistry
from test_probe39c_bedrock import BEDROCK_ID

from agent import Agent, Budget, CompositeHooks, RunResult, StopReason
from agent.models.anthropic import AnthropicModel
from telemetry import MetricsHooks, TracingHooks
from telemetry import names as n

KEYS = {
    "aws_access_key": "AKIAIOSFODNN7EXAMPLE",
    "aws_secret_key": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
}


def test_a_run_through_bedrock_is_traced_and_counted_as_aws_bedrock() -> None:
    spans, registry = InMemorySpanExporter(), CollectorRegistry()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(spans))
    hooks = CompositeHooks((TracingHooks(provider), MetricsHooks(registry)))

    async def run(url: str) -> RunResult:
        client = anthropic.AsyncAnthropicBedrock(**KEYS, aws_region="us-east-1", base_url=url, max_retries=0)
        async with client:
            model = AnthropicModel(BEDROCK_ID, client=client)
            agent = Agent("tidy", model, budget=Budget(max_turns=3, max_seconds=30), hooks=hooks)
            return await agent.arun("Say done.")

    with MessagesAPI(message(tool_use("finish", {"kind": "done", "note": "done"}))) as api:
        result = asyncio.run(run(api.url))
    assert result.reason is StopReason.SUCCESS, result.note
    names = {
        s.name.split()[0]: (s.attributes or {}).get(n.GEN_AI_PROVIDER_NAME)
        for s in spans.get_finished_spans()
    }
    assert names["invoke_agent"] == names["chat"] == "aws.bedrock"
    labels = {n.LABEL_AGENT: "tidy", n.LABEL_TASK_TYPE: "default", n.LABEL_GEN_AI_OPERATION_NAME: "chat"}
    labels |= {n.LABEL_GEN_AI_PROVIDER_NAME: "aws.bedrock", n.LABEL_GEN_AI_REQUEST_MODEL: BEDROCK_ID}
    labels |= {n.LABEL_ERROR_TYPE: ""}
    assert registry.get_sample_value("gen_ai_client_operation_duration_seconds_count", labels) == 1


@pytest.mark.parametrize(
    ("client", "provider"),
    [
        (lambda: anthropic.AsyncAnthropicBedrock(**KEYS, aws_region="eu-west-1"), "aws.bedrock"),
        (
            lambda: anthropic.AsyncAnthropicVertex(region="us-east5", project_id="p", access_token="t"),
            "gcp.vertex_ai",
        ),
        (
            lambda: anthropic.AsyncAnthropic(
                api_key="k", base_url="https://bedrock-runtime.us-east-1.amazonaws.com"
            ),
            "aws.bedrock",
        ),
        (lambda: anthropic.AsyncAnthropic(api_key="k"), "anthropic"),
        (lambda: anthropic.AsyncAnthropic(api_key="k", base_url="http://127.0.0.1:9"), "anthropic"),
    ],
    ids=["bedrock", "vertex", "bedrock-host", "claude-api", "local"],
)
def test_the_provider_is_the_platform_the_client_sends_to(client: Callable[[], Any], provider: str) -> None:
    assert AnthropicModel("claude-haiku-4-5", client=client()).provider == provider
