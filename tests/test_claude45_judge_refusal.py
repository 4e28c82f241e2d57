"""An evaluator whose model refuses to judge (Claude's `stop_reason: "refusal"`). Before, the refusal
was read as a reply with no verdict: the agent was told to call finish again, the judge refused again,
and the run spent every turn left and ended `limit`/`turns`, counted as a budget problem in the
limit-share alert (issue 10's complaint about the agent's own refusals), the API's category and
explanation nowhere. Now it ends at once as `gave_up` with cause `refusal`, as a refusal of the
agent's own model does, saying which model refused and why. Through the real `anthropic` SDK against
the local Messages API server."""

from __future__ import annotations

import json
from typing import Any

from messages_api import MessagesAPI, Response, message, tool_use
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from prometheus_client import CollectorRegistry

from agent import Agent, Budget, CompositeHooks, RetryPolicy, StopReason
from agent.models.anthropic import AnthropicModel
from agent.stops import StopCause
from agent.temporal._remote import _named_error
from agent.verify import JudgeRefused, evaluator
from telemetry import MetricsHooks, TracingHooks
from telemetry import names as n

MODEL = "claude-haiku-4-5"
FAST = RetryPolicy(max_attempts=3, base_delay=0.01, max_delay=0.02, jitter=False)
REFUSED = {"type": "refusal", "category": "cyber", "explanation": "This request may facilitate an attack."}


def answers(judge: Response) -> Any:
    """The agent finishes every turn (a new note each time); the judge answers with `judge`."""
    turns = iter(range(1, 100))

    def answer(body: Any) -> Response:
        if "You check another agent's work" in json.dumps(body.get("system")):
            return judge
        return message(tool_use("finish", {"kind": "done", "note": f"done, take {next(turns)}"}))

    return answer


def judged(api: MessagesAPI, **options: Any) -> Agent:
    """An agent whose finish an evaluator judges, both on the local server."""
    judge = evaluator(AnthropicModel(MODEL, api_key="sk-ant-test", base_url=api.url), "It works.")
    model = AnthropicModel(MODEL, api_key="sk-ant-test", base_url=api.url)
    budget = Budget(max_turns=6, max_seconds=120)
    return Agent("judged", model, tools=[], verifiers=[judge], budget=budget, retry=FAST, **options)


def test_a_judge_that_refuses_ends_the_run_at_once_as_gave_up_refusal() -> None:
    exporter, provider, registry = InMemorySpanExporter(), TracerProvider(), CollectorRegistry()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    hooks = CompositeHooks((TracingHooks(provider), MetricsHooks(registry)))
    refusal = message(stop_reason="refusal", stop_details=REFUSED)
    with MessagesAPI(intercept=answers(refusal)) as api:
        agent = judged(api, hooks=hooks)
        result = agent.run("Scan the host.")
        requests = len(api.requests)
    provider.shutdown()
    assert (result.reason, result.cause) == (StopReason.GAVE_UP, StopCause.REFUSAL), result.note
    assert requests == 2  # the agent's finish and one judgement: no call more
    assert result.turns == 1
    assert f"evaluator's model ({MODEL}) refused" in result.note, result.note
    assert "category: cyber" in result.note and REFUSED["explanation"] in result.note
    labels = {"agent": "judged", "task_type": "default", "stop_reason": "gave_up", "stop_limit": n.NO_LIMIT}
    assert registry.get_sample_value("agent_stops_total", labels | {"stop_cause": "refusal"}) == 1
    (run_span,) = [s for s in exporter.get_finished_spans() if s.name.startswith("invoke_agent")]
    assert (run_span.attributes or {}).get(n.STOP_CAUSE) == "refusal"


def test_a_judge_that_answers_is_still_a_verdict() -> None:
    verdict = tool_use("verdict", {"passed": True, "reasons": []})
    with MessagesAPI(intercept=answers(message(verdict))) as api:
        agent = judged(api)
        result = agent.run("Scan the host.")
    assert result.reason is StopReason.SUCCESS and result.verified, result.note


def test_a_judges_refusal_on_a_temporal_worker_reaches_the_workflows_loop_as_itself() -> None:
    # The verify activity fails with the error's type name; the workflow rebuilds the error by it.
    error = _named_error("JudgeRefused", "The evaluator's model (m) refused to judge the result")
    assert isinstance(error, JudgeRefused) and str(error).endswith("refused to judge the result")
