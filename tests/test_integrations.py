"""Every row of DESIGN.md's "Runs not built on Endstate", through the real frameworks,
with the spans and the metrics Endstate's own runs make."""

from __future__ import annotations

import asyncio
import json
import operator
import re
import sqlite3
from collections.abc import AsyncIterable, AsyncIterator, Iterator
from pathlib import Path
from typing import Annotated, Any, TypedDict

import anthropic
import pytest
from agents import Agent as OAAgent
from agents import (
    GuardrailFunctionOutput,
    InputGuardrail,
    OutputGuardrail,
    function_tool,
    set_tracing_disabled,
)
from agents import RunHooks as OARunHooks
from agents import Usage as OAUsage
from agents.exceptions import ModelRefusalError
from agents.testing.model import ModelStep, ScriptedModel, assistant_message, function_call
from integrations_support import (
    Chat,
    FakeCLI,
    Rig,
    assistant,
    calls,
    graph_of,
    read,
    remove,
    result,
    rigged,
    says,
    tool_result,
    tool_use,
    usage,
)
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import tool as lc_tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, START, StateGraph
from langgraph.prebuilt import ToolNode
from langgraph.types import Command, Interrupt, interrupt
from messages_api import MessagesAPI, message, text
from messages_api import tool_use as api_tool_use
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from pydantic_ai import Agent as PAIAgent
from pydantic_ai import InstrumentationSettings
from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.exceptions import CallDeferred, ContentFilterError, ModelRetry
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, DeltaToolCall, FunctionModel
from pydantic_ai.models.test import TestModel
from pydantic_ai.tools import DeferredToolRequests
from pydantic_ai.usage import RequestUsage, UsageLimits

from agent import Agent as OwnAgent
from agent import Budget, CompositeHooks, LimitKind, StopReason, observe_run, predicate
from agent import models as own
from agent import tool as own_tool
from agent.errors import ConfigError
from agent.hooks import RunInfo, RunObserver
from agent.integrations import ForeignAgent
from agent.integrations import claude_agent_sdk as claude
from agent.integrations import langgraph as lg
from agent.integrations import openai_agents as oa
from agent.integrations import pydantic_ai as pai
from agent.models.base import StopKind
from telemetry import TracingHooks
from telemetry import names as n

TASK = "probe_task"


@pytest.fixture
def rig() -> Iterator[Rig]:
    with rigged() as rig:
        yield rig


@pytest.fixture(autouse=True)
def no_openai_trace_export() -> Iterator[None]:
    """The Agents SDK would export its own traces to OpenAI: nothing leaves this machine."""
    set_tracing_disabled(True)
    yield
    set_tracing_disabled(False)


def check_run_span(rig: Rig, agent: str, res: Any, turns: int) -> None:
    """One `invoke_agent` span with the result's totals, holding `turns` turn spans with their chats."""
    (span,) = [s for s in rig.run_spans() if s.name == f"{n.SPAN_INVOKE_AGENT} {agent}"]
    attrs = span.attributes or {}
    assert attrs[n.STOP_REASON] == str(res.reason)
    assert attrs.get(n.STOP_LIMIT) == (str(res.limit) if res.limit else None)
    assert attrs[n.AGENT_TURNS] == res.turns == turns
    assert attrs[n.GEN_AI_USAGE_INPUT_TOKENS] == res.input_tokens
    assert attrs[n.GEN_AI_CONVERSATION_ID] == res.run_id
    assert attrs[n.AGENT_TASK_TYPE] == TASK
    assert res.trace_id == f"{span.context.trace_id:032x}"
    turn_spans = rig.children(span, n.SPAN_TURN)
    assert [(t.attributes or {})[n.AGENT_TURN_INDEX] for t in turn_spans] == list(range(1, turns + 1))
    for turn in turn_spans:
        assert len(rig.children(turn, n.SPAN_CHAT + " ")) <= 1


def tool_spans(rig: Rig) -> list[str]:
    return [s.name for s in rig.spans() if s.name.startswith(n.SPAN_EXECUTE_TOOL + " ")]


# -- Pydantic AI -------------------------------------------------------------------


def pai_agent(replies: list[Any], **kwargs: Any) -> PAIAgent[None, Any]:
    script = iter(replies)

    async def play(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        step = next(script)
        if isinstance(step, BaseException):
            raise step
        if isinstance(step, asyncio.Event):  # the call stalls for good, and sets the event to say so
            step.set()
            await asyncio.Event().wait()
        parts = [ToolCallPart(*step) if isinstance(step, tuple) else TextPart(step)]
        return ModelResponse(parts, usage=RequestUsage(input_tokens=10, output_tokens=4))

    agent: PAIAgent[None, Any] = PAIAgent(FunctionModel(play), name="pai_agent", **kwargs)

    @agent.tool_plain
    def look(path: str) -> str:
        """Read a file."""
        return f"contents of {path}"

    @agent.tool_plain(requires_approval=True)
    def delete(path: str) -> str:
        """Delete a file."""
        return f"deleted {path}"

    return agent


class ToolEnds:
    """Hooks that keep each ended tool call's name and arguments."""

    def __init__(self) -> None:
        self.ended: list[tuple[str, dict[str, Any]]] = []

    def run_started(self, info: RunInfo) -> RunObserver:
        ended = self.ended

        class Observer(RunObserver):
            def tool_ended(self, call: Any, outcome: Any) -> None:
                ended.append((call.name, call.arguments))

        return Observer()


def test_a_tool_calls_end_carries_the_arguments_of_its_start() -> None:
    """Pydantic AI reports no arguments when a call ends: the call is the one that started."""
    hooks = ToolEnds()
    pai.run(pai_agent([("look", {"path": "a"}, "c1"), "all read"]), "read a", hooks=hooks)
    assert hooks.ended == [("look", {"path": "a"})]


class Replies:
    """Hooks that keep each model reply an observer sees."""

    def __init__(self) -> None:
        self.replies: list[Any] = []

    def run_started(self, info: RunInfo) -> RunObserver:
        replies = self.replies

        class Observer(RunObserver):
            def model_ended(self, reply: Any, error: BaseException | None) -> None:
                replies.append(reply)

        return Observer()


def test_pydantic_ais_finish_reasons_are_kept_and_given_their_stop_kinds() -> None:
    answers = iter(
        [
            ModelResponse([ToolCallPart("look", {"path": "a"}, "c1")], finish_reason="tool_call"),
            ModelResponse([TextPart("cut")], finish_reason="length"),
        ]
    )

    async def play(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        return next(answers)

    agent: PAIAgent[None, str] = PAIAgent(FunctionModel(play), name="finishing")

    @agent.tool_plain
    def look(path: str) -> str:
        """Read a file."""
        return f"contents of {path}"

    hooks = Replies()
    pai.run(agent, "read a", hooks=hooks)
    assert [(r.stop_reason, r.stop) for r in hooks.replies] == [
        ("tool_call", StopKind.TOOL_USE),
        ("length", StopKind.MAX_TOKENS),
    ]


def test_pydantic_ai_output_is_success_with_turns_tools_spans_and_metrics(rig: Rig) -> None:
    agent = pai_agent([("look", {"path": "a"}, "c1"), "all read"])
    res = pai.run(agent, "read a", hooks=rig.hooks, task_type=TASK)
    assert (res.reason, res.output, res.verified, res.turns) == (StopReason.SUCCESS, "all read", False, 2)
    assert (res.input_tokens, res.output_tokens) == (20, 8)
    assert res.raw.output == "all read"
    check_run_span(rig, "pai_agent", res, turns=2)
    assert tool_spans(rig) == ["execute_tool look"]
    assert rig.stops("pai_agent", TASK, "success") == 1
    labels = {"agent": "pai_agent", "task_type": TASK, "tool": "look", "outcome": "ok"}
    assert rig.value("agent_tool_calls_total", **labels) == 1
    assert rig.value("agent_runs_started_total", agent="pai_agent", task_type=TASK) == 1


def test_pydantic_ai_verifiers_check_the_output_and_a_failed_check_is_a_counted_false_success(
    rig: Rig,
) -> None:
    passes = predicate(lambda ctx: ctx.state["output"] == "42", "the answer is 42")
    good = pai.run(pai_agent(["42"]), "?", hooks=rig.hooks, task_type=TASK, verifiers=[passes])
    bad = pai.run(pai_agent(["41"]), "?", hooks=rig.hooks, task_type=TASK, verifiers=[passes])
    assert (good.reason, good.verified) == (StopReason.SUCCESS, True)
    assert (bad.reason, bad.verified, bad.verifier_failures) == (
        StopReason.SUCCESS,
        False,
        ("the answer is 42",),
    )
    assert rig.value("agent_verify_rejections_total", agent="pai_agent", task_type=TASK) == 1
    verified = [(s.attributes or {})[n.STOP_VERIFIED] for s in rig.run_spans()]
    assert sorted(verified) == [False, True]


def test_a_verifier_that_raises_ends_the_foreign_run_as_error(rig: Rig) -> None:
    def broken(ctx: Any) -> list[str]:
        raise RuntimeError("no")

    res = pai.run(pai_agent(["done"]), "?", hooks=rig.hooks, task_type=TASK, verifiers=broken)
    assert (res.reason, res.error_type) == (StopReason.ERROR, "verifier_error")


@pytest.mark.parametrize("returned", [True, "the answer is wrong", None])
def test_a_verifier_that_returns_no_list_of_reasons_ends_the_foreign_run_as_error(
    rig: Rig, returned: Any
) -> None:
    """Never a pass for `True`, nor one failure per letter of a string."""
    res = pai.run(pai_agent(["done"]), "?", hooks=rig.hooks, task_type=TASK, verifiers=lambda ctx: returned)
    assert (res.reason, res.error_type) == (StopReason.ERROR, "verifier_error")
    assert "a verifier returns a list of the reasons the check failed" in res.note


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"hooks": "prometheus"}, r"hooks must have run_started\(\).*not str"),
        ({"task_type": 5}, r"task_type must be a non-empty string \(a metric label\), not 5"),
        ({"task_type": ""}, r"task_type must be a non-empty string"),
        ({"verifiers": "check the answer"}, r"verifiers must be a verifier or a list of them, not str"),
        ({"verifiers": ["check the answer"]}, r"verifiers must be functions of the run's context, not str"),
        (
            {"help_seconds": "3600"},
            r"help_seconds must be a finite number >= 0 \(seconds\), at most .*, not '3600'",
        ),
        ({"help_seconds": -5}, r"help_seconds must be a finite number >= 0"),
        ({"help_seconds": float("nan")}, r"help_seconds must be a finite number >= 0"),
        ({"help_seconds": True}, r"help_seconds must be a finite number >= 0"),
        ({"help_seconds": 1e300}, r"help_seconds must be .* at most 3153600000 \(100 years\), not 1e\+300"),
    ],
)
def test_endstates_options_of_the_wrong_kind_are_refused_before_the_framework_runs(
    options: dict[str, Any], message: str
) -> None:
    """Not a logged traceback per run (hooks), a metric label of any type, or an error run for a typo;
    a wait that is no number raised a TypeError once the framework had run, its run never ended."""
    agent = pai_agent(["done"])
    with pytest.raises(ConfigError, match=message):
        pai.run(agent, "?", **options)


async def _entered(block: Any) -> None:
    async with block:
        pass


@pytest.mark.parametrize(
    ("start", "message"),
    [
        (lambda h: oa.run(oa_agent([]), "x", hooks=h, max_turn=3), r"openai_agents\.run\(\) got 'max_turn'"),
        (
            lambda h: oa.run_streamed(oa_agent([]), "x", hooks=h, max_turn=3),
            r"run_streamed\(\) got 'max_turn'",
        ),
        (
            lambda h: pai.run(pai_agent([]), "x", hooks=h, usage_limit=3),
            r"pydantic_ai\.run\(\) got 'usage_limit'",
        ),
        (
            lambda h: asyncio.run(_entered(pai.run_stream(pai_agent([]), "x", hooks=h, usage_limit=3))),
            r"pydantic_ai\.run_stream\(\) got 'usage_limit'",
        ),
        (
            lambda h: asyncio.run(_entered(pai.iter(pai_agent([]), "x", hooks=h, deferred_results=3))),
            r"pydantic_ai\.iter\(\) got 'deferred_results'",
        ),
        (lambda h: claude.run("x", hooks=h, max_turns=3), r"claude_agent_sdk\.run\(\) got 'max_turns'"),
    ],
    ids=["oa_run", "oa_run_streamed", "pai_run", "pai_run_stream", "pai_iter", "claude_run"],
)
def test_a_keyword_neither_endstate_nor_the_framework_takes_is_refused_before_the_run(
    rig: Rig, start: Any, message: str
) -> None:
    """A typo in the framework's own options (`max_turn=3`) is a clear `ConfigError` naming it and what
    is taken, as Endstate's own options are: not a run started and counted as an `error` (with the
    framework's TypeError as its note), which pages as an error rate for a mistake in the code."""
    with pytest.raises(ConfigError, match=message):
        start(rig.hooks)
    assert not rig.run_spans()
    assert not [s for m in rig.registry.collect() for s in m.samples if s.name == "agent_runs_started_total"]


@pytest.mark.parametrize("entry", [oa.run, oa.run_streamed], ids=["run", "run_streamed"])
def test_the_sdks_own_run_hooks_given_as_hooks_are_refused_saying_run_hooks(entry: Any) -> None:
    """`Runner.run(agent, input, hooks=MyRunHooks())` moved to the integration as it was: `hooks=` is
    Endstate's there, and the message said only that hooks need run_started()."""
    with pytest.raises(ConfigError, match=r"pass the SDK's RunHooks as run_hooks="):
        entry(oa_agent([]), "x", hooks=OARunHooks())


def test_an_async_verifier_of_a_foreign_run_is_refused_saying_what_to_write(rig: Rig) -> None:
    async def checks(ctx: Any) -> list[str]:
        return []

    res = pai.run(pai_agent(["done"]), "?", hooks=rig.hooks, task_type=TASK, verifiers=checks)
    assert (res.reason, res.error_type) == (StopReason.ERROR, "verifier_error")
    assert "make it a plain def" in res.note


@pytest.mark.parametrize(
    ("limits", "kind"),
    [
        (UsageLimits(request_limit=1), LimitKind.TURNS),
        (UsageLimits(output_tokens_limit=3), LimitKind.TOKENS),
        (UsageLimits(tool_calls_limit=0), LimitKind.TURNS),
    ],
)
def test_pydantic_ai_usage_limits_are_limit_stops(rig: Rig, limits: UsageLimits, kind: LimitKind) -> None:
    agent = pai_agent([("look", {"path": "a"}, "c1"), "done"])
    res = pai.run(agent, "read", hooks=rig.hooks, task_type=TASK, usage_limits=limits)
    assert (res.reason, res.limit) == (StopReason.LIMIT, kind)
    assert rig.stops("pai_agent", TASK, "limit", str(kind)) == 1
    assert res.turns >= 1


def test_pydantic_ai_deferred_approval_is_need_help_and_resumes_from_saved_messages(rig: Rig) -> None:
    agent = pai_agent(
        [("delete", {"path": "a"}, "d1"), "deleted it"], output_type=[str, DeferredToolRequests]
    )
    res = pai.run(agent, "delete a", hooks=rig.hooks, task_type=TASK)
    assert res.reason is StopReason.NEED_HELP and res.suspension and res.suspension.pending
    assert (res.suspension.pending.tool_use_id, res.suspension.pending.name) == ("d1", "delete")
    assert res.suspension.pending.arguments == {"path": "a"}
    assert rig.stops("pai_agent", TASK, "need_help") == 1
    done = pai.resume(agent, res, approved=True, hooks=rig.hooks, task_type=TASK)
    assert (done.reason, done.output, done.run_id) == (StopReason.SUCCESS, "deleted it", res.run_id)
    assert done.turns == 2  # the run's turns across both segments
    assert "execute_tool delete" in tool_spans(rig)
    assert [s.name for s in rig.spans() if s.name == n.SPAN_HUMAN_WAIT] == [n.SPAN_HUMAN_WAIT]
    turns = [(s.attributes or {}) for s in rig.spans() if s.name == n.SPAN_TURN]
    indexed = sorted((t[n.AGENT_TURN_INDEX], bool(t.get(n.AGENT_TURN_CONTINUED))) for t in turns)
    assert indexed == [
        (1, False),
        (1, True),
        (2, False),
    ]  # the split turn goes on, marked, in the resumed trace
    (delete_span,) = [s for s in rig.spans() if s.name == "execute_tool delete"]
    (continued,) = [s for s in rig.spans() if (s.attributes or {}).get(n.AGENT_TURN_CONTINUED)]
    assert delete_span.parent and delete_span.parent.span_id == continued.context.span_id
    assert rig.value("agent_runs_started_total", agent="pai_agent", task_type=TASK) == 1


def test_pydantic_ai_calls_waiting_together_are_all_named_in_the_question() -> None:
    """Pydantic AI takes the answers to every deferred call at once, so one answer covers them all:
    the person is shown every call it covers, not the first alone."""

    def play(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if len(messages) > 1:
            return ModelResponse([TextPart("both gone")])
        return ModelResponse(
            [ToolCallPart("delete", {"path": "a"}, "d1"), ToolCallPart("delete", {"path": "b"}, "d2")]
        )

    agent: PAIAgent[None, Any] = PAIAgent(FunctionModel(play), output_type=[str, DeferredToolRequests])
    deleted: list[str] = []

    @agent.tool_plain(requires_approval=True)
    def delete(path: str) -> str:
        """Delete a file."""
        deleted.append(path)
        return f"deleted {path}"

    res = pai.run(agent, "delete a and b")
    assert res.suspension and res.suspension.pending and res.suspension.pending.tool_use_id == "d1"
    assert res.suspension.question == 'Approve delete({"path": "a"}) and delete({"path": "b"})?'
    done = pai.resume(agent, pai.state_of(res), approved=True)
    assert (done.reason, done.output) == (StopReason.SUCCESS, "both gone")
    assert sorted(deleted) == ["a", "b"]  # Pydantic AI runs the two approved calls at once, in threads


def test_pydantic_ai_external_call_is_need_help_and_the_answer_is_its_result() -> None:
    agent = pai_agent(
        [("ask_owner", {"q": "which file?"}, "q1"), "ok"], output_type=[str, DeferredToolRequests]
    )

    @agent.tool_plain
    def ask_owner(q: str) -> str:
        """Ask the file's owner."""
        raise CallDeferred

    res = pai.run(agent, "clean up")
    assert res.reason is StopReason.NEED_HELP and res.suspension
    assert res.suspension.pending is None  # a question for a person, not an approval
    assert res.suspension.question == 'Answer ask_owner({"q": "which file?"})?'
    stored = pai.state_of(res)  # what a store keeps: JSON, the call still known as external
    done = pai.resume(agent, stored, answer="b.txt", run_id=res.run_id)
    assert done.run_id == res.run_id
    returns = [
        p for m in done.raw.all_messages() for p in getattr(m, "parts", []) if p.part_kind == "tool-return"
    ]
    assert (done.reason, returns[0].content) == (StopReason.SUCCESS, "b.txt")


def test_pydantic_ai_denial_from_stored_json_reaches_the_model() -> None:
    agent = pai_agent([("delete", {"path": "a"}, "d1"), "left it"], output_type=[str, DeferredToolRequests])
    res = pai.run(agent, "delete a")
    stored = res.raw.all_messages_json()
    done = pai.resume(agent, stored, approved=False, answer="keep it")
    assert (done.reason, done.output) == (StopReason.SUCCESS, "left it")
    returns = [
        p for m in done.raw.all_messages() for p in getattr(m, "parts", []) if p.part_kind == "tool-return"
    ]
    assert "keep it" in str(returns[0].content)


def test_pydantic_ai_refusal_cancel_and_crash() -> None:
    refused = pai.run(pai_agent([ContentFilterError("blocked")]), "x")
    assert (refused.reason, refused.cause) == (StopReason.GAVE_UP, "refusal")
    crashed = pai.run(pai_agent([KeyError("boom")]), "x")
    assert (crashed.reason, crashed.error_type) == (StopReason.ERROR, "KeyError")

    async def cancel() -> Any:
        stalled = asyncio.Event()
        task = asyncio.create_task(pai.arun(pai_agent([stalled]), "x"))
        await stalled.wait()
        task.cancel()
        return await task

    assert asyncio.run(cancel()).reason is StopReason.CANCELLED


class NodeWatcher(AbstractCapability[Any]):
    """A capability hooking node runs: the integration then reports the run through its own capability."""

    async def before_node_run(self, ctx: Any, *, node: Any) -> Any:
        return node


def four_turns(**kwargs: Any) -> PAIAgent[None, Any]:
    return pai_agent([*[("look", {"path": str(i)}, f"c{i}") for i in range(3)], "done"], **kwargs)


def flaky_agent() -> PAIAgent[None, Any]:
    agent = pai_agent([("flaky", {}, "f1"), ("flaky", {}, "f2"), "done"])
    tries: list[int] = []

    @agent.tool_plain
    def flaky() -> str:
        """Ask for a retry the first time."""
        tries.append(1)
        if len(tries) == 1:
            raise ModelRetry("again")
        return "ok"

    return agent


def raising_agent() -> PAIAgent[None, Any]:
    agent = pai_agent([("boom", {}, "b1"), "done"])

    @agent.tool_plain
    def boom() -> str:
        """Fail."""
        raise RuntimeError("kaboom")

    return agent


def approved(options: dict[str, Any]) -> Any:
    agent = pai_agent([("delete", {"path": "a"}, "d1"), "deleted"], output_type=[str, DeferredToolRequests])
    res = pai.run(agent, "x", **options)
    return pai.resume(agent, res, approved=True, **options)


def denied(options: dict[str, Any]) -> Any:
    agent = pai_agent([("delete", {"path": "a"}, "d1"), "kept"], output_type=[str, DeferredToolRequests])
    res = pai.run(agent, "x", **options)
    return pai.resume(agent, res.raw.all_messages_json(), approved=False, run_id=res.run_id, **options)


def answered(options: dict[str, Any]) -> Any:
    agent = pai_agent([("ask", {"q": "?"}, "q1"), "ok"], output_type=[str, DeferredToolRequests])

    @agent.tool_plain
    def ask(q: str) -> str:
        """Ask a person."""
        raise CallDeferred

    res = pai.run(agent, "x", **options)
    return pai.resume(agent, pai.state_of(res), answer="b", run_id=res.run_id, **options)


PAI_RUNS: dict[str, Any] = {
    "tools then an answer": lambda o: pai.run(four_turns(), "x", **o),
    "request limit": lambda o: pai.run(four_turns(), "x", usage_limits=UsageLimits(request_limit=2), **o),
    "token limit": lambda o: pai.run(four_turns(), "x", usage_limits=UsageLimits(output_tokens_limit=7), **o),
    "tool calls limit": lambda o: pai.run(
        four_turns(), "x", usage_limits=UsageLimits(tool_calls_limit=1), **o
    ),
    "a tool asks for a retry": lambda o: pai.run(flaky_agent(), "x", **o),
    "invalid arguments": lambda o: pai.run(pai_agent([("look", {"no": 1}, "c1"), "done"]), "x", **o),
    "a tool raises": lambda o: pai.run(raising_agent(), "x", **o),
    "the model fails": lambda o: pai.run(pai_agent([("look", {"path": "a"}, "c1"), KeyError("x")]), "x", **o),
    "approved on resume": approved,
    "denied on resume": denied,
    "answered on resume": answered,
}


def observed(rig: Rig) -> tuple[list[Any], list[str]]:
    """The spans (name, parent, attributes but ids and times, status) and the metric samples but timings."""
    spans = sorted(rig.spans(), key=lambda s: s.start_time or 0)
    names = {s.context.span_id: s.name for s in spans}
    shape = [
        (
            s.name,
            names.get(s.parent.span_id) if s.parent else None,
            sorted((k, str(v)) for k, v in (s.attributes or {}).items() if not k.endswith(("_id", ".id"))),
            s.status.status_code,
        )
        for s in spans
    ]
    samples = [
        f"{m.name}{sorted(m.labels.items())} {m.value}"
        for family in rig.registry.collect()
        for m in family.samples
        if "seconds" not in m.name and not m.name.endswith("_created")
    ]
    return shape, sorted(samples)


@pytest.mark.parametrize("case", PAI_RUNS)
def test_pydantic_ai_runs_read_node_by_node_report_what_the_capability_reports(case: str) -> None:
    """Read from `Agent.iter` (the default) or through `EndstateCapability` (when a capability hooks
    node runs), a run has the same result, spans and metrics."""
    outcomes = []
    for capabilities in ([], [NodeWatcher()]):
        with rigged() as rig:
            res = PAI_RUNS[case]({"hooks": rig.hooks, "task_type": TASK, "capabilities": capabilities})
            outcomes.append(((res.reason, res.limit, res.turns, res.usage, res.output), observed(rig)))
    assert outcomes[0] == outcomes[1]


async def _drained(ctx: Any, events: AsyncIterable[Any]) -> None:
    async for _ in events:
        pass


def test_an_unnamed_pydantic_ai_agent_is_labelled_by_its_variable_as_pydantic_ai_names_it(rig: Rig) -> None:
    """Pydantic AI names an agent given no name after the variable its caller holds it in (`infer_name`).
    Through the integration every unnamed agent was `pydantic_ai_agent` in the metrics, and a run
    with an event_stream_handler renamed the caller's agent `agent`, after the integration's own local
    variable: the same agent under two labels from its second run on."""
    support_bot: PAIAgent[None, str] = PAIAgent(TestModel(), output_type=str)
    first = pai.run(support_bot, "x", hooks=rig.hooks, task_type=TASK, event_stream_handler=_drained)
    second = pai.run(support_bot, "x", hooks=rig.hooks, task_type=TASK)
    assert (first.agent, second.agent, support_bot.name) == ("support_bot", "support_bot", "support_bot")

    async def streamed() -> Any:
        async with pai.run_stream(triage_bot, "x", hooks=rig.hooks, task_type=TASK) as run:
            pass
        return run.result

    triage_bot: PAIAgent[None, str] = PAIAgent(TestModel(), output_type=str)
    assert asyncio.run(streamed()).agent == triage_bot.name == "triage_bot"
    assert rig.stops("support_bot", TASK, "success") == 2
    named = PAIAgent(TestModel(), name="billing", output_type=str)
    assert pai.run(named, "x", event_stream_handler=_drained).agent == named.name == "billing"


def test_a_plain_pydantic_ai_run_adds_no_capability(rig: Rig, monkeypatch: pytest.MonkeyPatch) -> None:
    """Pydantic AI dispatches every hook of every capability, about 5% of a scripted turn: none is added."""

    def forbidden(recorder: Any) -> None:
        raise AssertionError("a capability was added")

    monkeypatch.setattr(pai, "EndstateCapability", forbidden)
    res = pai.run(four_turns(), "x", hooks=rig.hooks, task_type=TASK)
    assert (res.reason, res.turns) == (StopReason.SUCCESS, 4)
    assert tool_spans(rig) == ["execute_tool look"] * 3


def test_pydantic_ai_event_stream_handler_still_gets_every_event(rig: Rig) -> None:
    script = iter([("look", {"path": "a"}, "c1"), "done"])

    async def stream(messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[Any]:
        step = next(script)
        if isinstance(step, tuple):
            yield {0: DeltaToolCall(name=step[0], json_args=json.dumps(step[1]), tool_call_id=step[2])}
        else:
            yield step

    agent: PAIAgent[None, str] = PAIAgent(FunctionModel(stream_function=stream), name="streamer")
    agent.tool_plain(lambda path: f"contents of {path}", name="look")
    seen: list[str] = []

    async def handler(ctx: Any, events: AsyncIterable[Any]) -> None:
        seen.extend([type(e).__name__ async for e in events])

    res = pai.run(agent, "x", hooks=rig.hooks, task_type=TASK, event_stream_handler=handler)
    assert (res.reason, res.output, res.turns) == (StopReason.SUCCESS, "done", 2)
    assert {"FunctionToolCallEvent", "FunctionToolResultEvent", "PartStartEvent"} <= set(seen)
    check_run_span(rig, "streamer", res, turns=2)
    assert tool_spans(rig) == ["execute_tool look"]


def test_pydantic_ai_cost_and_cache_reads_are_those_pydantic_ai_gives_its_responses(rig: Rig) -> None:
    async def play(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        usage = RequestUsage(input_tokens=1000, output_tokens=200, cache_read_tokens=600)
        return ModelResponse([TextPart("ok")], usage=usage, provider_name="openai")

    agent: PAIAgent[None, str] = PAIAgent(FunctionModel(play, model_name="gpt-4o"), name="priced")
    res = pai.run(agent, "x", hooks=rig.hooks, task_type=TASK)
    assert res.cost_usd is not None and res.cost_usd > 0
    assert res.cost_usd == pytest.approx(float(res.raw.response.usage.cost))
    assert (res.input_tokens, res.usage.cache_read_tokens) == (1000, 600)  # input counts its cache reads
    assert (
        rig.value("agent_cost_usd_total", agent="priced", task_type=TASK, stop_reason="success")
        == res.cost_usd
    )


# -- OpenAI Agents SDK ---------------------------------------------------------------


def oa_agent(steps: list[Any], **kwargs: Any) -> OAAgent[Any]:
    return OAAgent(name="oa_agent", model=ScriptedModel(steps), tools=[read, remove], **kwargs)


def oa_usage() -> OAUsage:
    return OAUsage(requests=1, input_tokens=10, output_tokens=4, total_tokens=14)


def test_openai_agents_final_output_is_success_with_spans_and_metrics(rig: Rig) -> None:
    steps = [
        ModelStep(output=[function_call("read", {"path": "a"}, call_id="c1")], usage=oa_usage()),
        ModelStep(output=[assistant_message("read it")], usage=oa_usage()),
    ]
    res = oa.run(oa_agent(steps), "read a", hooks=rig.hooks, task_type=TASK)
    assert (res.reason, res.output, res.turns, res.input_tokens) == (StopReason.SUCCESS, "read it", 2, 20)
    assert res.cost_usd is None  # the SDK prices nothing: unknown, never a made-up $0
    assert res.raw.final_output == "read it"
    check_run_span(rig, "oa_agent", res, turns=2)
    assert tool_spans(rig) == ["execute_tool read"]
    assert rig.stops("oa_agent", TASK, "success") == 1


def test_openai_agents_max_turns_is_a_turns_limit(rig: Rig) -> None:
    steps = [[function_call("read", {"path": str(i)}, call_id=f"c{i}")] for i in range(3)]
    res = oa.run(oa_agent(steps), "loop", hooks=rig.hooks, task_type=TASK, max_turns=2)
    assert (res.reason, res.limit, res.turns) == (StopReason.LIMIT, LimitKind.TURNS, 2)
    assert res.summary.startswith("Stopped: limit (turns budget used up) after 2 turns, ")
    check_run_span(rig, "oa_agent", res, turns=2)
    assert rig.stops("oa_agent", TASK, "limit", "turns") == 1
    assert rig.value("agent_budget_limit", agent="oa_agent", task_type=TASK, limit="turns") == 2


def test_openai_agents_an_error_handlers_output_keeps_the_stop_it_stands_in_for(rig: Rig) -> None:
    """The SDK's `error_handlers` turn a turns limit or a refusal into a final output: the run still
    stopped on that limit (or refusal), with the handler's output as its partial result. Not a success."""
    steps = [[function_call("read", {"path": str(i)}, call_id=f"c{i}")] for i in range(3)]
    handlers = {"max_turns": lambda data: f"partial after {len(data.run_data.raw_responses)} replies"}
    res = oa.run(
        oa_agent(steps), "loop", hooks=rig.hooks, task_type=TASK, max_turns=2, error_handlers=handlers
    )
    assert (res.reason, res.limit, res.output, res.turns) == (
        StopReason.LIMIT,
        LimitKind.TURNS,
        "partial after 2 replies",
        2,
    )
    assert res.raw.final_output == "partial after 2 replies"
    assert rig.stops("oa_agent", TASK, "limit", "turns") == 1

    async def fallback(data: Any) -> str:
        return "cannot help with that"

    message = {"id": "r", "type": "message", "role": "assistant", "status": "completed"}
    content = [{"type": "refusal", "refusal": "no"}]  # the SDK's own message type, read from its helper:
    refusal = type(assistant_message("")).model_validate(message | {"content": content})
    refused = oa.run(oa_agent([[refusal]]), "x", error_handlers={"model_refusal": fallback})
    assert (refused.reason, refused.cause, refused.output) == (
        StopReason.GAVE_UP,
        "refusal",
        "cannot help with that",
    )
    passed = oa.run(oa_agent(steps), "loop", max_turns=2, error_handlers={"max_turns": lambda data: None})
    assert (passed.reason, passed.limit) == (StopReason.LIMIT, LimitKind.TURNS)  # None: the SDK raises


async def tripped(ctx: Any, agent: Any, data: Any) -> GuardrailFunctionOutput:
    return GuardrailFunctionOutput(output_info="secret", tripwire_triggered=True)


@pytest.mark.parametrize(
    "guardrails",
    [{"input_guardrails": [InputGuardrail(tripped)]}, {"output_guardrails": [OutputGuardrail(tripped)]}],
    ids=["input", "output"],
)
def test_openai_agents_guardrail_tripwire_is_gave_up_with_cause_guardrail(
    rig: Rig, guardrails: dict[str, Any]
) -> None:
    agent = oa_agent([[assistant_message("the password is hunter2")]], **guardrails)
    res = oa.run(agent, "the password", hooks=rig.hooks, task_type=TASK)
    assert (res.reason, res.cause) == (StopReason.GAVE_UP, "guardrail")
    assert "tripped" in res.note
    assert rig.stops("oa_agent", TASK, "gave_up", cause="guardrail") == 1
    (span,) = rig.run_spans()
    assert (span.attributes or {})[n.STOP_CAUSE] == "guardrail"


def test_openai_agents_interruption_is_need_help_and_resumes_from_run_state_json(rig: Rig) -> None:
    steps = [[function_call("remove", {"path": "a"}, call_id="r1")], [assistant_message("removed")]]
    agent = oa_agent(steps)
    res = oa.run(agent, "remove a", hooks=rig.hooks, task_type=TASK)
    assert res.reason is StopReason.NEED_HELP and res.suspension and res.suspension.pending
    assert (res.suspension.pending.tool_use_id, res.suspension.pending.name) == ("r1", "remove")
    saved = oa.state_of(res)
    assert isinstance(saved, str) and '"r1"' in saved
    done = oa.resume(agent, saved, approved=True, hooks=rig.hooks, task_type=TASK, run_id=res.run_id)
    assert (done.reason, done.output) == (StopReason.SUCCESS, "removed")
    assert "execute_tool remove" in tool_spans(rig)


def test_openai_agents_approving_the_call_asked_about_leaves_the_others_pending(rig: Rig) -> None:
    """Two calls wait for approval and the person is asked about the first: their answer is for that
    call alone. The run waits again for the second, which runs only if approved in turn."""
    both = [
        function_call("remove", {"path": "a"}, call_id="r1"),
        function_call("remove", {"path": "b"}, call_id="r2"),
    ]
    agent = oa_agent([both, [assistant_message("done")]])
    res = oa.run(agent, "remove a and b", hooks=rig.hooks, task_type=TASK)
    assert res.suspension and res.suspension.pending and res.suspension.pending.tool_use_id == "r1"
    again = oa.resume(agent, oa.state_of(res), approved=True, hooks=rig.hooks, resumed=res, task_type=TASK)
    assert again.reason is StopReason.NEED_HELP and again.suspension and again.suspension.pending
    assert (again.suspension.pending.tool_use_id, again.suspension.question) == (
        "r2",
        'Approve remove({"path": "b"})?',
    )
    done = oa.resume(agent, again, approved=False, answer="keep b", hooks=rig.hooks, task_type=TASK)
    assert (done.reason, done.output, done.run_id) == (StopReason.SUCCESS, "done", res.run_id)
    assert [str(i.output) for i in done.raw.new_items if i.type == "tool_call_output_item"] == [
        "removed a",
        "keep b",
    ]


def test_openai_agents_a_tool_that_raises_is_a_failed_call(rig: Rig) -> None:
    """The SDK hands a raising tool's error to the model as its result (its default
    failure_error_function): the run goes on, and the call is counted failed, as LangGraph's is."""

    @function_tool
    def broken(path: str) -> str:
        """Always fails."""
        raise PermissionError(path)

    steps = [[function_call("broken", {"path": "a"}, call_id="b1")], [assistant_message("could not")]]
    agent = OAAgent(name="oa_agent", model=ScriptedModel(steps), tools=[broken])
    res = oa.run(agent, "read a", hooks=rig.hooks, task_type=TASK)
    assert (res.reason, res.output, res.turns) == (StopReason.SUCCESS, "could not", 2)
    (span,) = [s for s in rig.spans() if s.name == f"{n.SPAN_EXECUTE_TOOL} broken"]
    assert (span.attributes or {})[n.ERROR_TYPE] == "tool_error"
    labels = {"agent": "oa_agent", "task_type": TASK, "tool": "broken"}
    assert (
        rig.value("agent_tool_calls_total", **labels, outcome="ok"),
        rig.value("agent_tool_calls_total", **labels, outcome="error"),
    ) == (0, 1)


def test_a_catalog_approval_of_one_openai_agents_call_leaves_the_other_waiting_in_the_next_snapshot() -> None:
    """Through the saved state a store keeps, as `endstate approve` resumes it."""
    both = [
        function_call("remove", {"path": "a"}, call_id="r1"),
        function_call("remove", {"path": "b"}, call_id="r2"),
    ]
    steps = [both, [assistant_message("done")]]
    agent = ForeignAgent("remover", "openai_agents", lambda: oa_agent(steps))
    res = asyncio.run(agent.arun("remove a and b"))
    assert res.snapshot and res.suspension and res.suspension.pending
    again = asyncio.run(agent.aresume(res.snapshot, approved=True))
    assert again.snapshot and again.suspension and again.suspension.pending
    assert (again.reason, again.snapshot.segment, again.suspension.pending.tool_use_id) == (
        StopReason.NEED_HELP,
        2,
        "r2",
    )
    done = asyncio.run(agent.aresume(again.snapshot, "keep b", approved=False))
    assert (done.reason, done.output, done.run_id) == (StopReason.SUCCESS, "done", res.run_id)


def test_openai_agents_rejection_refusal_crash_and_cancel() -> None:
    steps = [[function_call("remove", {"path": "a"}, call_id="r1")], [assistant_message("kept")]]
    agent = oa_agent(steps)
    res = oa.run(agent, "remove a")
    denied = oa.resume(agent, res, approved=False, answer="no")
    assert (denied.reason, denied.run_id) == (StopReason.SUCCESS, res.run_id)
    refused = oa.run(oa_agent([ModelRefusalError("no")]), "x")
    assert (refused.reason, refused.cause) == (StopReason.GAVE_UP, "refusal")
    crashed = oa.run(oa_agent([ValueError("boom")]), "x")
    assert (crashed.reason, crashed.error_type) == (StopReason.ERROR, "ValueError")

    async def cancel() -> Any:
        started, never = asyncio.Event(), asyncio.Event()

        async def hang(call: Any) -> Any:
            started.set()
            await never.wait()

        task = asyncio.create_task(oa.arun(oa_agent([ModelStep.respond(hang)]), "x"))
        await started.wait()
        task.cancel()
        return await task

    assert asyncio.run(cancel()).reason is StopReason.CANCELLED


# -- LangGraph -----------------------------------------------------------------------


@pytest.fixture(params=[False, True], ids=["stream", "exact_counts"])
def both_readings(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """The test runs twice: LangGraph read from its stream (the default), then with
    `exact_counts=True` (LangChain's callbacks), as the default of every `lg.run`/`lg.resume`."""
    monkeypatch.setitem(lg.arun.__kwdefaults__, "exact_counts", request.param)


@pytest.mark.usefixtures("both_readings")
def test_langgraph_final_state_is_success_with_turns_from_the_graphs_stream(rig: Rig) -> None:
    graph = graph_of([calls("look", {"path": "a"}, "c1"), says("looked")])
    res = lg.run(graph, {"messages": [("user", "look")]}, hooks=rig.hooks, task_type=TASK, tools=["look"])
    assert (res.reason, res.output, res.turns, res.input_tokens) == (StopReason.SUCCESS, "looked", 2, 22)
    assert res.raw["messages"][-1].content == "looked"
    check_run_span(rig, "lg_agent", res, turns=2)
    assert tool_spans(rig) == ["execute_tool look"]
    labels = {"agent": "lg_agent", "task_type": TASK, "tool": "look", "outcome": "ok"}
    assert rig.value("agent_tool_calls_total", **labels) == 1


@pytest.mark.usefixtures("both_readings")
def test_langgraph_recursion_limit_is_a_turns_limit(rig: Rig) -> None:
    graph = graph_of([calls("look", {"path": str(i)}, f"c{i}") for i in range(10)])
    config = {"recursion_limit": 4}
    res = lg.run(graph, {"messages": [("user", "loop")]}, config, hooks=rig.hooks, task_type=TASK)
    assert (res.reason, res.limit, res.turns) == (StopReason.LIMIT, LimitKind.TURNS, 2)
    assert res.summary.startswith("Stopped: limit (turns budget used up) after 2 turns, ")
    assert rig.stops("lg_agent", TASK, "limit", "turns") == 1


@pytest.mark.usefixtures("both_readings")
def test_langgraph_interrupt_is_need_help_and_resumes_with_command(rig: Rig) -> None:
    graph = graph_of([calls("delete", {"path": "a"}, "d1"), says("gone")], checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t1"}}
    res = lg.run(graph, {"messages": [("user", "delete a")]}, config, hooks=rig.hooks, task_type=TASK)
    assert res.reason is StopReason.NEED_HELP and res.suspension and res.suspension.pending
    assert (res.suspension.pending.name, res.suspension.pending.arguments) == ("delete", {"path": "a"})
    (waiting,) = res.raw["output"][lg.INTERRUPT_KEY]  # as ainvoke gives it: LangGraph's own Interrupt
    assert isinstance(waiting, Interrupt) and waiting.value == {"tool": "delete", "args": {"path": "a"}}
    assert res.suspension.pending.tool_use_id == waiting.id == graph.get_state(config).interrupts[0].id
    done = lg.resume(graph, res, True, hooks=rig.hooks, task_type=TASK)
    assert (done.reason, done.output, done.run_id) == (StopReason.SUCCESS, "gone", res.run_id)
    assert done.raw["messages"][-2].content == "deleted"
    waited, ran = [s for s in rig.spans() if s.name == f"{n.SPAN_EXECUTE_TOOL} delete"]
    assert (waited.attributes or {})[n.ERROR_TYPE] == n.ERROR_INTERRUPTED  # the call a person approved
    assert (ran.attributes or {}).get(n.ERROR_TYPE) is None


@pytest.mark.usefixtures("both_readings")
def test_langgraph_sync_run_and_resume_keep_a_sync_only_checkpointer_as_graph_invoke_does(
    rig: Rig, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """LangGraph's `SqliteSaver` (its `PostgresSaver` alike) has sync methods only, as sync code
    (`graph.invoke`) uses it; `lg.run`/`lg.resume` are the sync entries, and ended every run as
    `error` (NotImplementedError: the graph's async stream asked for its async methods)."""
    connection = sqlite3.connect(tmp_path / "checkpoints.db", check_same_thread=False)
    request.addfinalizer(connection.close)  # the saver does not close it
    saver = SqliteSaver(connection)
    graph = graph_of([calls("delete", {"path": "a"}, "d1"), says("gone")], checkpointer=saver)
    config = {"configurable": {"thread_id": "sync-1"}}
    res = lg.run(graph, {"messages": [("user", "delete a")]}, config, hooks=rig.hooks, task_type=TASK)
    assert res.reason is StopReason.NEED_HELP and res.suspension and res.suspension.pending
    assert res.suspension.pending.tool_use_id == graph.get_state(config).interrupts[0].id  # in their saver
    done = lg.resume(graph, res, True, hooks=rig.hooks, task_type=TASK)
    assert (done.reason, done.output, done.run_id) == (StopReason.SUCCESS, "gone", res.run_id)
    assert graph.get_state(config).values["messages"][-2].content == "deleted"
    assert rig.stops("lg_agent", TASK, "need_help") == rig.stops("lg_agent", TASK, "success") == 1


@pytest.mark.usefixtures("both_readings")
def test_langgraph_resumes_from_the_stored_state_with_a_denial() -> None:
    graph = graph_of([calls("delete", {"path": "a"}, "d1"), says("kept")], checkpointer=InMemorySaver())
    res = lg.run(graph, {"messages": [("user", "delete a")]}, {"configurable": {"thread_id": "t2"}})
    assert (res.turns, res.input_tokens) == (1, 10)  # no hooks: the totals all the same
    stored = lg.state_of(res)
    assert json.loads(stored)["configurable"] == {"thread_id": "t2"}
    done = lg.resume(graph, stored, approved=False)
    assert (done.reason, done.raw["messages"][-2].content) == (StopReason.SUCCESS, "not deleted")
    assert (done.run_id, done.turns, done.output) == (res.run_id, 2, "kept")  # the same run, from the JSON


@pytest.mark.usefixtures("both_readings")
@pytest.mark.parametrize("entry", ["run", "astream"])
def test_langgraph_own_command_resume_goes_on_as_the_same_run_the_thread_names(rig: Rig, entry: str) -> None:
    """LangGraph's own way to answer an interrupt, `Command(resume=...)` on the thread, given to
    `lg.run` (or `lg.astream`) with no `resumed=`: it was a new run, counted twice and linked to
    nothing. The thread's checkpoint names the run that waited: the same run, its next segment."""
    graph = graph_of([calls("delete", {"path": "a"}, "d1"), says("gone")], checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "own-1"}}
    options = {"hooks": rig.hooks, "task_type": TASK}
    asked = lg.run(graph, {"messages": [("user", "delete a")]}, config, **options)
    assert asked.reason is StopReason.NEED_HELP
    if entry == "run":
        done = lg.run(graph, Command(resume=True), config, **options)
    else:
        done = asyncio.run(_streamed(graph, Command(resume=True), config=config, **options))
    assert (done.reason, done.output, done.run_id) == (StopReason.SUCCESS, "gone", asked.run_id)
    assert done.raw["messages"][-2].content == "deleted"
    run = {"agent": "lg_agent", "task_type": TASK}
    assert rig.value(f"{n.METRIC_RUNS_STARTED}_total", **run) == 1
    assert rig.value(f"{n.METRIC_RUNS_RESUMED}_total", **run, stop_reason="need_help", stopped_ago="1h") == 1
    assert rig.value(f"{n.METRIC_HUMAN_WAIT_SECONDS}_count", **run, outcome="answered") == 1
    first, second = sorted(rig.run_spans(), key=lambda s: s.start_time or 0)
    assert [(s.attributes or {}).get(n.AGENT_SEGMENT) for s in (first, second)] == [1, 2]
    assert [link.context.span_id for link in second.links] == [first.context.span_id]


@pytest.mark.usefixtures("both_readings")
def test_langgraph_own_command_resume_given_another_run_id_is_that_run(rig: Rig) -> None:
    """A `run_id=` naming another run than the thread's is the caller's word: that run, not the thread's."""
    graph = graph_of([calls("delete", {"path": "a"}, "d1"), says("gone")], checkpointer=InMemorySaver())
    config, options = {"configurable": {"thread_id": "own-2"}}, {"hooks": rig.hooks, "task_type": TASK}
    asked = lg.run(graph, {"messages": [("user", "delete a")]}, config, **options)
    done = lg.run(graph, Command(resume=True), config, run_id="ticket-9", **options)
    assert (asked.reason, done.reason, done.run_id) == (StopReason.NEED_HELP, StopReason.SUCCESS, "ticket-9")
    assert rig.value(f"{n.METRIC_RUNS_STARTED}_total", agent="lg_agent", task_type=TASK) == 2


class Disks(TypedDict):
    wiped: Annotated[list[str], operator.add]


def wipe_node(disk: str) -> Any:
    def wipe(state: Disks) -> dict[str, Any]:
        return {"wiped": [disk if interrupt({"tool": "wipe", "args": {"disk": disk}}) else f"kept {disk}"]}

    return wipe


@pytest.mark.usefixtures("both_readings")
def test_langgraph_parallel_interrupts_are_answered_one_at_a_time(rig: Rig) -> None:
    """Two nodes of a step wait for approval at once: the answer goes to the one asked about (LangGraph
    refuses a bare resume value then), and the run waits again for the other."""
    builder = StateGraph(Disks)
    for disk in ("a", "b"):
        builder.add_node(disk, wipe_node(disk))
        builder.add_edge(START, disk)
        builder.add_edge(disk, END)
    graph = builder.compile(checkpointer=InMemorySaver(), name="wiper")
    res = lg.run(graph, {"wiped": []}, {"configurable": {"thread_id": "p1"}}, hooks=rig.hooks, task_type=TASK)
    assert res.suspension and res.suspension.pending
    first = res.suspension.pending.arguments["disk"]
    again = lg.resume(graph, res, True, hooks=rig.hooks, task_type=TASK)
    assert again.reason is StopReason.NEED_HELP and again.suspension and again.suspension.pending
    second = again.suspension.pending.arguments["disk"]
    assert {first, second} == {"a", "b"}
    done = lg.resume(graph, lg.state_of(again), False, resumed=again, hooks=rig.hooks, task_type=TASK)
    assert (done.reason, sorted(done.raw["wiped"])) == (StopReason.SUCCESS, sorted([first, f"kept {second}"]))


@pytest.mark.usefixtures("both_readings")
def test_langgraph_a_breakpoint_is_need_help_not_success(rig: Rig) -> None:
    """A graph paused at a static breakpoint (`interrupt_before`) has not finished: it waits for a
    person to let it go on, as LangGraph's human-in-the-loop guides use it. LangGraph cannot be told
    "no" at a breakpoint, so a denial is refused and the run waits on."""
    graph = graph_of([calls("look", {"path": "a"}, "c1"), says("looked")], checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "bp1"}}
    res = lg.run(
        graph,
        {"messages": [("user", "x")]},
        config,
        hooks=rig.hooks,
        task_type=TASK,
        interrupt_before=["tools"],
    )
    assert res.reason is StopReason.NEED_HELP and res.suspension and res.suspension.pending
    assert (res.suspension.pending.tool_use_id, res.suspension.question) == (
        "c1",
        'Approve look({"path": "a"})?',
    )
    assert rig.stops("lg_agent", TASK, "need_help") == 1
    with pytest.raises(ConfigError, match="breakpoint"):
        lg.resume(graph, lg.state_of(res), approved=False)
    done = lg.resume(graph, res, True, hooks=rig.hooks, task_type=TASK)
    assert (done.reason, done.output, done.turns) == (StopReason.SUCCESS, "looked", 2)
    assert done.raw["messages"][-2].content == "contents of a"


class Database:
    """What a graph takes in its config's `configurable`, and JSON cannot hold."""


@pytest.mark.usefixtures("both_readings")
def test_langgraph_configurable_objects_are_not_saved_as_text_and_a_catalog_resume_gets_them_back() -> None:
    """The saved state keeps what JSON can hold; an object (a connection, a client) is left for the
    catalog's options to give again, never replaced by its repr."""
    given: list[Any] = []
    replies = iter([calls("delete", {"path": "a"}, "d1"), says("gone")])

    def build(saver: Any) -> Any:
        async def model(state: Chat, config: RunnableConfig) -> dict[str, Any]:
            given.append(config["configurable"]["db"])
            return {"messages": [next(replies)]}

        return graph_of([], saver, model_node=model)

    db = Database()
    options = {"config": {"configurable": {"db": db, "tenant": "acme"}}}
    agent = ForeignAgent("cleaner", "langgraph", build, checkpointer=InMemorySaver(), options=options)
    res = asyncio.run(agent.arun("clean up a"))
    assert res.snapshot and res.snapshot.foreign and res.snapshot.foreign.state
    assert json.loads(res.snapshot.foreign.state)["configurable"] == {
        "tenant": "acme",
        "thread_id": res.run_id,
    }
    done = asyncio.run(agent.aresume(res.snapshot, approved=True))
    assert (done.reason, done.output) == (StopReason.SUCCESS, "gone")
    assert given == [db, db]


class Loose(TypedDict, total=False):
    messages: Any


@pytest.mark.parametrize(
    ("given", "task"),
    [
        ({"messages": {"k": 1}}, ""),
        ({"messages": [("user",)]}, ""),
        ({"messages": [{"role": "user", "content": "wipe it"}]}, "wipe it"),  # as LangGraph takes them too
    ],
)
@pytest.mark.usefixtures("both_readings")
def test_langgraph_input_and_interrupts_of_any_shape_never_raise_out_of_run(given: Any, task: str) -> None:
    """An approval whose "args" are no mapping, messages of unexpected shapes: the run still ends
    in a stop reason (here waiting, the arguments kept), never an exception out of `run`."""
    seen: list[str] = []

    class Tasks(RunObserver):
        pass

    class Hooks:
        def run_started(self, info: RunInfo) -> RunObserver:
            seen.append(info.task)
            return Tasks()

    def ask(state: Loose) -> dict[str, Any]:
        return {"messages": {"said": interrupt({"tool": "wipe", "args": "disk a"})}}

    builder = StateGraph(Loose)
    builder.add_node("ask", ask)
    builder.add_edge(START, "ask")
    graph = builder.compile(checkpointer=InMemorySaver())
    res = lg.run(graph, given, {"configurable": {"thread_id": "loose"}}, hooks=Hooks())
    assert res.reason is StopReason.NEED_HELP and res.suspension and res.suspension.pending
    assert (res.suspension.pending.arguments, seen) == ({"args": "disk a"}, [task])


@pytest.mark.usefixtures("both_readings")
@pytest.mark.parametrize(
    "metadata",
    [{"stop_reason": "refusal"}, {"finish_reason": "content_filter"}],
    ids=["anthropic", "openai"],
)
def test_langgraph_a_graph_ending_on_a_refusal_is_gave_up_refusal_not_success(
    rig: Rig, metadata: dict[str, str]
) -> None:
    """The model API refused (ChatAnthropic's `stop_reason`, ChatOpenAI's `finish_reason`, as LangChain
    keeps them in `response_metadata`) and the graph ended on that reply: `gave_up`, cause `refusal`,
    as the other integrations' refusals are. It was a success with an empty output."""
    refused = AIMessage(content="", response_metadata=metadata, usage_metadata=usage(10, 0))
    res = lg.run(graph_of([refused]), {"messages": [("user", "help me")]}, hooks=rig.hooks, task_type=TASK)
    assert (res.reason, res.cause, res.turns) == (StopReason.GAVE_UP, "refusal", 1)
    assert res.raw["messages"][-1] is not None and res.raw["messages"][-1].response_metadata == metadata
    assert rig.stops("lg_agent", TASK, "gave_up", cause="refusal") == 1
    assert rig.stops("lg_agent", TASK, "success") == 0


async def _streamed(graph: Any, input: Any, **kwargs: Any) -> Any:
    """`lg.astream` read to its end: the run's result."""
    stream = lg.astream(graph, input, **kwargs)
    async for _ in stream:
        pass
    return stream.result


@pytest.mark.usefixtures("both_readings")
@pytest.mark.parametrize("entry", ["run", "arun", "astream"])
def test_langgraph_an_interrupt_with_no_checkpointer_is_an_error_saying_how_to_compile_one(
    rig: Rig, entry: str
) -> None:
    """LangGraph gives an `interrupt()` of a graph with no checkpointer as it gives any, but nothing can
    ever resume it: it was `need_help`, a wait nobody can answer, in the inbox and the help gauges until
    its deadline. It is an `error` naming what is missing and how to add it; the interrupt's value kept."""
    graph = graph_of([calls("delete", {"path": "a"}, "d1"), says("gone")])
    given, options = {"messages": [("user", "delete a")]}, {"hooks": rig.hooks, "task_type": TASK}
    if entry == "run":
        res = lg.run(graph, given, **options)
    else:
        run = lg.arun if entry == "arun" else _streamed
        res = asyncio.run(run(graph, given, **options))
    assert (res.reason, res.error_type) == (StopReason.ERROR, lg.NO_CHECKPOINTER)
    assert (res.suspension, res.snapshot) == (None, None)
    assert "graph.compile(checkpointer=" in res.note and 'Approve delete({"path": "a"})?' in res.note
    (waiting,) = res.raw[lg.INTERRUPT_KEY]  # as ainvoke gives it
    assert waiting.value == {"tool": "delete", "args": {"path": "a"}}
    assert (rig.stops("lg_agent", TASK, "error"), rig.stops("lg_agent", TASK, "need_help")) == (1, 0)
    (span,) = rig.run_spans()
    assert (span.attributes or {})[n.ERROR_TYPE] == lg.NO_CHECKPOINTER
    with pytest.raises(ConfigError, match=r"no checkpointer.*compile the graph with checkpointer="):
        lg.resume(graph, res, True)


@pytest.mark.usefixtures("both_readings")
def test_langgraph_crash_and_cancel() -> None:
    async def boom(state: Any) -> Any:
        raise LookupError("no model")

    crashed = lg.run(graph_of([], model_node=boom), {"messages": [("user", "x")]})
    assert (crashed.reason, crashed.error_type) == (StopReason.ERROR, "LookupError")

    async def cancel() -> Any:
        started, never = asyncio.Event(), asyncio.Event()

        async def hang(state: Any) -> Any:
            started.set()
            await never.wait()

        task = asyncio.create_task(lg.arun(graph_of([], model_node=hang), {"messages": [("user", "x")]}))
        await started.wait()
        task.cancel()
        return await task

    assert asyncio.run(cancel()).reason is StopReason.CANCELLED


def chat_spans(rig: Rig) -> list[Any]:
    return sorted(
        (s for s in rig.spans() if s.name.startswith(n.SPAN_CHAT + " ")), key=lambda s: s.start_time
    )


def seconds(span: Any) -> float:
    return (span.end_time - span.start_time) / 1e9


def test_langgraph_adds_no_callback_handler_and_the_callers_own_still_run(rig: Rig) -> None:
    """The run is read from the graph's own stream: LangChain's callback channel (about 6% of a
    turn with any handler at all) carries only what the caller put there, and that still runs."""
    seen: list[str] = []
    handlers: list[list[type]] = []

    class Caller(BaseCallbackHandler):
        def on_chat_model_start(self, serialized: Any, messages: Any, **kwargs: Any) -> None:
            seen.append("chat")

    model = GenericFakeChatModel(messages=iter([calls("look", {"path": "a"}, "c1"), says("looked")]))

    async def node(state: Any, config: RunnableConfig) -> dict[str, Any]:
        handlers.append([type(h) for h in config["callbacks"].handlers])
        return {"messages": [await model.ainvoke(state["messages"])]}

    config = {"callbacks": [Caller()]}
    res = lg.run(graph_of([], model_node=node), {"messages": [("user", "x")]}, config, hooks=rig.hooks)
    assert (res.reason, res.turns, res.input_tokens, res.output) == (StopReason.SUCCESS, 2, 22, "looked")
    assert seen == ["chat", "chat"]
    assert handlers == [[Caller], [Caller]]


def test_langgraph_times_model_and_tool_calls_from_the_graphs_tasks(rig: Rig) -> None:
    """A call is timed from its node's task start: tool nodes are known from the graph, a model
    node once it has replied (its very first reply in a process is timed at its update)."""

    async def thinking(state: Any) -> dict[str, Any]:  # a model call that takes 50 ms
        await asyncio.sleep(0.05)
        done = isinstance(state["messages"][-1], ToolMessage)
        return {"messages": [says("done") if done else calls("slow", {"n": 1}, "s1")]}

    @lc_tool
    async def slow(n: int) -> str:
        """Take 30 ms."""
        await asyncio.sleep(0.03)
        return "slept"

    graph = graph_of([], model_node=thinking, tools=ToolNode([slow]))
    for run in (1, 2):
        rig.exporter.clear()
        res = lg.run(graph, {"messages": [("user", "x")]}, hooks=rig.hooks, task_type=TASK, tools=["slow"])
        check_run_span(rig, "lg_agent", res, turns=2)
        first, second = chat_spans(rig)
        assert seconds(second) >= 0.05
        if run == 2:
            assert seconds(first) >= 0.05
        (tool,) = [s for s in rig.spans() if s.name == f"{n.SPAN_EXECUTE_TOOL} slow"]
        assert seconds(tool) >= 0.03 and (tool.attributes or {}).get(n.ERROR_TYPE) is None
        (turn, _) = rig.children(rig.run_spans()[0], n.SPAN_TURN)
        assert tool.parent is not None and tool.parent.span_id == turn.context.span_id


@pytest.mark.usefixtures("both_readings")
def test_langgraph_a_model_call_that_fails_ends_its_span_with_the_error(rig: Rig) -> None:
    lg.run(graph_of([says("warm")]), {"messages": [("user", "x")]}, hooks=rig.hooks)  # the node replied once
    rig.exporter.clear()
    graph = graph_of([calls("look", {"path": "a"}, "c1")])  # the second call finds no reply left
    res = lg.run(graph, {"messages": [("user", "x")]}, hooks=rig.hooks, task_type=TASK)
    assert (res.reason, res.error_type, res.turns) == (StopReason.ERROR, "RuntimeError", 2)
    ok, failed = chat_spans(rig)
    assert (ok.attributes or {}).get(n.ERROR_TYPE) is None
    assert (failed.attributes or {})[n.ERROR_TYPE] == "RuntimeError"


@pytest.mark.usefixtures("both_readings")
def test_langgraph_failed_tool_calls_are_counted_as_failed(rig: Rig) -> None:
    """A tool error the ToolNode hands back to the model (status "error"), and a tool whose
    node raises (no error handling): each call's span and metric say it failed. (A call of a tool
    the ToolNode lacks is `unknown_tool`: tests/test_int44_unknown_tools.py.)"""

    @lc_tool
    def broken(path: str) -> str:
        """Always fails."""
        raise PermissionError(path)

    handling = ToolNode([broken], handle_tool_errors=True)
    graph = graph_of([calls("broken", {"path": "z"}, "z1"), says("sorry")], tools=handling)
    res = lg.run(graph, {"messages": [("user", "x")]}, hooks=rig.hooks, task_type=TASK, tools=["broken"])
    assert (res.reason, res.turns) == (StopReason.SUCCESS, 2)
    (handed_back,) = [s for s in rig.spans() if s.name == f"{n.SPAN_EXECUTE_TOOL} broken"]
    # the stream sees the ToolNode's error message alone; LangChain's callbacks see the tool's raise
    assert (handed_back.attributes or {})[n.ERROR_TYPE] in ("tool_error", "PermissionError")
    rig.exporter.clear()

    graph = graph_of(
        [calls("broken", {"path": "a"}, "b1")], tools=ToolNode([broken], handle_tool_errors=False)
    )
    res = lg.run(graph, {"messages": [("user", "x")]}, hooks=rig.hooks, task_type=TASK, tools=["broken"])
    assert (res.reason, res.error_type) == (StopReason.ERROR, "PermissionError")
    (raised,) = [s for s in rig.spans() if s.name == f"{n.SPAN_EXECUTE_TOOL} broken"]
    assert (raised.attributes or {})[n.ERROR_TYPE] == "PermissionError"
    labels = {"agent": "lg_agent", "task_type": TASK, "tool": "broken"}
    assert rig.value("agent_tool_calls_total", **labels, outcome="ok") == 0
    assert sum(rig.value("agent_tool_calls_total", **labels, outcome=o) for o in ("error", "failed")) == 2


@pytest.mark.usefixtures("both_readings")
def test_langgraph_a_subgraph_node_is_read_from_its_update(rig: Rig) -> None:
    """A node that runs a whole agent (a compiled subgraph) writes its replies and tool results at
    once: every call is counted, each timed at that update, and no call is opened at its start."""
    for _ in range(2):
        rig.exporter.clear()
        inner = graph_of([calls("look", {"path": "a"}, "c1"), says("looked")])
        outer = StateGraph(Chat)
        outer.add_node("agent", inner)
        outer.add_edge(START, "agent")
        outer.add_edge("agent", END)
        res = lg.run(
            outer.compile(name="outer"), {"messages": [("user", "x")]}, hooks=rig.hooks, task_type=TASK
        )
        assert (res.reason, res.turns, res.input_tokens, res.output) == (StopReason.SUCCESS, 2, 22, "looked")
        check_run_span(rig, "outer", res, turns=2)
        assert tool_spans(rig) == ["execute_tool look"]
        assert [(s.attributes or {}).get(n.ERROR_TYPE) for s in chat_spans(rig)] == [None, None]


def test_langgraph_reads_every_message_a_task_wrote() -> None:
    """A channel written twice in one task comes as `{"$writes": [...]}` in the tasks stream."""
    first, second, note = says("a"), says("b"), ToolMessage(content="r", tool_call_id="t")
    writes = {"messages": {"$writes": [[first], [second, note]]}, "count": 2, "last": first}
    assert lg.messages_in(writes) == [first, second, note, first]


class Listed(TypedDict):
    messages: list[Any]  # no reducer: each node writes the whole list back
    last: Any


def rewriting_graph(replies: list[Any], checkpointer: Any = None) -> Any:
    """A graph whose nodes return the whole message list (and the last reply once more, elsewhere)."""
    model = GenericFakeChatModel(messages=iter(replies))

    async def call_model(state: Listed) -> dict[str, Any]:
        reply = await model.ainvoke(state["messages"])
        return {"messages": [*state["messages"], reply], "last": reply}

    def run_tools(state: Listed) -> dict[str, Any]:
        asked = state["messages"][-1].tool_calls
        done = [ToolMessage("ok", tool_call_id=c["id"], name=c["name"]) for c in asked]
        return {"messages": [*state["messages"], *done]}

    graph = StateGraph(Listed)
    graph.add_node("model", call_model)
    graph.add_node("tools", run_tools)
    graph.add_edge(START, "model")
    graph.add_conditional_edges("model", lambda s: "tools" if s["messages"][-1].tool_calls else END)
    graph.add_edge("tools", "model")
    return graph.compile(checkpointer=checkpointer, name="rewriter")


@pytest.mark.usefixtures("both_readings")
def test_langgraph_counts_each_message_once_when_nodes_write_the_whole_list_back(rig: Rig) -> None:
    """A state without the add_messages reducer is written back whole at every step, and a reply may
    also go to a second channel: each reply is still one model call, each tool result one tool call,
    and messages the thread held before this run are none of this run's."""
    replies = [calls("look", {"path": "a"}, "c1"), calls("look", {"path": "b"}, "c2"), says("done")]
    replies.append(says("more"))
    graph = rewriting_graph(replies, InMemorySaver())
    config = {"configurable": {"thread_id": "w1"}}
    res = lg.run(graph, {"messages": [HumanMessage("x")]}, config, hooks=rig.hooks, task_type=TASK)
    assert (res.reason, res.turns, res.input_tokens, res.output) == (StopReason.SUCCESS, 3, 32, "done")
    check_run_span(rig, "rewriter", res, turns=3)
    assert tool_spans(rig) == ["execute_tool look"] * 2
    rig.exporter.clear()
    again = {"messages": [*graph.get_state(config).values["messages"], HumanMessage("y")]}
    res = lg.run(graph, again, config, hooks=rig.hooks, task_type=TASK)
    assert (res.reason, res.turns, res.input_tokens, res.output) == (StopReason.SUCCESS, 1, 12, "more")
    assert (len(chat_spans(rig)), tool_spans(rig)) == (1, [])


@pytest.mark.usefixtures("both_readings")
def test_langgraph_leaves_the_stream_to_the_integration() -> None:
    graph = graph_of([says("hi")])
    with pytest.raises(ConfigError, match=r"leave out \['stream_mode'\]"):
        lg.run(graph, {"messages": [("user", "x")]}, stream_mode="updates")


# -- Claude Agent SDK ----------------------------------------------------------------


def test_claude_success_with_turns_tools_and_the_result_totals(rig: Rig) -> None:
    lines = [
        assistant("m1", tool_use("t1", "Read", {"path": "a"})),
        tool_result("t1", "contents"),
        assistant("m2", {"type": "text", "text": "read it"}),
        result(result="read it"),
    ]
    res = claude.run("read a", transport=FakeCLI(lines), hooks=rig.hooks, task_type=TASK)
    assert (res.reason, res.output, res.turns) == (StopReason.SUCCESS, "read it", 2)
    assert (res.input_tokens, res.output_tokens, res.cost_usd) == (20, 10, 0.02)
    assert res.raw.session_id == "session-1"
    check_run_span(rig, "claude_agent", res, turns=2)
    assert tool_spans(rig) == ["execute_tool Read"]
    assert (
        rig.value("agent_cost_usd_total", agent="claude_agent", task_type=TASK, stop_reason="success") == 0.02
    )


@pytest.mark.parametrize(
    ("line", "reason", "limit", "cause"),
    [
        (result("error_max_turns"), StopReason.LIMIT, LimitKind.TURNS, None),
        (result("error_max_budget_usd"), StopReason.LIMIT, LimitKind.COST, None),
        (result(stop_reason="refusal"), StopReason.GAVE_UP, None, "refusal"),
        (result(terminal_reason="aborted_tools"), StopReason.CANCELLED, None, None),
        (result("error_during_execution"), StopReason.ERROR, None, None),
    ],
)
def test_claude_result_subtypes_map_to_stop_reasons(
    rig: Rig, line: dict[str, Any], reason: StopReason, limit: LimitKind | None, cause: str | None
) -> None:
    lines = [assistant("m1", {"type": "text", "text": "..."}), line]
    res = claude.run("x", transport=FakeCLI(lines), hooks=rig.hooks, task_type=TASK)
    assert (res.reason, res.limit, res.cause) == (reason, limit, cause)
    assert rig.stops("claude_agent", TASK, str(reason), str(limit) if limit else n.NO_LIMIT, cause or "") == 1


def test_claude_deferred_tool_use_is_need_help_and_resumes_in_its_session(rig: Rig) -> None:
    deferred = {"id": "t9", "name": "Bash", "input": {"command": "rm a"}}
    lines = [assistant("m1", tool_use("t9", "Bash", {"command": "rm a"})), result(deferred_tool_use=deferred)]
    res = claude.run("clean up", transport=FakeCLI(lines), hooks=rig.hooks, task_type=TASK)
    assert res.reason is StopReason.NEED_HELP and res.suspension and res.suspension.pending
    assert (res.suspension.pending.tool_use_id, res.suspension.pending.name) == ("t9", "Bash")
    lines = [
        tool_result("t9", "removed a"),
        assistant("m2", {"type": "text", "text": "ok"}),
        result(result="ok"),
    ]
    cli = FakeCLI(lines, unprompted=True)
    done = claude.resume(res, True, transport=cli, hooks=rig.hooks, task_type=TASK)
    assert (done.reason, done.run_id, done.turns) == (StopReason.SUCCESS, res.run_id, 2)
    assert cli.prompts == []  # no new prompt: the session goes on from the deferred call
    assert tool_spans(rig) == ["execute_tool Bash", "execute_tool Bash"]  # cut at the deferral, then run
    stored = json.loads(claude.state_of(res))
    assert (stored["session_id"], stored["deferred_tool_use"]) == ("session-1", deferred)
    assert (stored["endstate"]["run_id"], stored["endstate"]["segment"]) == (res.run_id, 1)  # the segment
    again = FakeCLI([tool_result("t9", "removed a"), result(result="ok")], unprompted=True)
    denied = claude.resume(claude.state_of(res), False, transport=again)
    assert (denied.reason, denied.run_id, denied.turns) == (StopReason.SUCCESS, res.run_id, 1)
    assert done.cost_usd == pytest.approx(0.04)  # both segments


def test_claude_deferred_call_waits_help_seconds_and_its_question_shows_the_call(rig: Rig) -> None:
    """As the other integrations': `help_seconds` is how long the deferred call waits (it was passed
    on to the SDK's `query`, a TypeError: every run an `error`), and the question a person answers
    shows what the call would do, not its tool's name alone."""
    deferred = {"id": "t9", "name": "Bash", "input": {"command": "rm -rf build"}}
    lines = [assistant("m1", tool_use("t9", "Bash", deferred["input"])), result(deferred_tool_use=deferred)]
    res = claude.run("clean up", transport=FakeCLI(lines), hooks=rig.hooks, task_type=TASK, help_seconds=600)
    assert res.reason is StopReason.NEED_HELP and res.suspension is not None
    assert res.suspension.deadline - res.suspension.suspended_at == pytest.approx(600)
    assert res.suspension.question == 'Approve Bash({"command": "rm -rf build"})?'


def test_claude_stream_without_result_and_cancel_are_error_and_cancelled() -> None:
    empty = claude.run("x", transport=FakeCLI([assistant("m1", {"type": "text", "text": "..."})]))
    assert (empty.reason, empty.error_type) == (StopReason.ERROR, "no_result")

    async def cancel() -> Any:
        cli = FakeCLI([], hang=True)
        task = asyncio.create_task(claude.arun("x", transport=cli))
        await cli.prompted.wait()
        task.cancel()
        return await task

    assert asyncio.run(cancel()).reason is StopReason.CANCELLED


# -- home-grown loops ------------------------------------------------------------------


def test_observe_run_records_a_raw_anthropic_loop(rig: Rig) -> None:
    replies = [message(api_tool_use("look", {"path": "a"}, id="tu1")), message(text("done"))]
    with MessagesAPI(*replies) as api, anthropic.Anthropic(base_url=api.url, api_key="test") as client:
        messages: list[Any] = [{"role": "user", "content": "look at a"}]
        with observe_run(
            rig.hooks, agent="raw_loop", task_type=TASK, model="claude-x", tools=["look"]
        ) as run:
            for _ in range(5):
                with run.turn(), run.model_call(max_tokens=256) as call:
                    reply = client.messages.create(model="claude-x", max_tokens=256, messages=messages)
                    call.reply(reply)
                messages.append({"role": "assistant", "content": [b.model_dump() for b in reply.content]})
                if reply.stop_reason != "tool_use":
                    break
                results = []
                for block in reply.content:
                    if block.type == "tool_use":
                        with run.tool(block.name, block.input, block.id) as t:
                            t.result(f"contents of {block.input['path']}")
                        results.append({"type": "tool_result", "tool_use_id": block.id, "content": t.text})
                messages.append({"role": "user", "content": results})
    res = run.result
    assert res is not None
    assert (res.reason, res.output, res.turns, res.input_tokens) == (StopReason.SUCCESS, "done", 2, 20)
    check_run_span(rig, "raw_loop", res, turns=2)
    assert tool_spans(rig) == ["execute_tool look"]
    assert rig.stops("raw_loop", TASK, "success") == 1


def readme_loop(rig: Rig, *replies: Any) -> Any:
    """The README's home-grown loop, run as it is written against the Messages API (which refuses
    tool results that follow no tool call) replying `replies`, with the names it leaves to the
    reader defined; returns its `run`."""
    readme = (Path(__file__).parent.parent / "README.md").read_text()
    section = readme[readme.index("## Runs not built on Endstate") :]
    code = section[section.index("```python\n") + 10 : section.index("```\n", section.index("```python"))]

    def run_tools(run: Any, reply: Any) -> dict[str, Any]:
        results = []
        for block in reply.content:
            if block.type == "tool_use":
                with run.tool(block.name, block.input, block.id) as t:
                    t.result(f"found {block.input['q']}")
                results.append({"type": "tool_result", "tool_use_id": block.id, "content": t.text})
        return {"role": "user", "content": results}

    with MessagesAPI(*replies) as api, anthropic.Anthropic(base_url=api.url, api_key="test") as client:
        names = {
            "hooks": rig.hooks,
            "client": client,
            "MODEL": "claude-x",
            "TOOLS": [],
            "run_tools": run_tools,
        }
        names["messages"] = [{"role": "user", "content": "find refunds"}]
        exec(code, names)
    return names["run"]


def test_the_readme_loop_runs_as_pasted(rig: Rig) -> None:
    replies = [message(api_tool_use("search", {"q": "refunds"}, id="tu1")), message(text("done"))]
    res = readme_loop(rig, *replies).result
    assert (res.reason, res.output, res.turns, res.input_tokens) == (StopReason.SUCCESS, "done", 2, 20)
    assert tool_spans(rig) == ["execute_tool search"]
    (run_span,) = rig.run_spans()
    first, _ = rig.children(run_span, n.SPAN_TURN)
    (call,) = [s for s in rig.spans() if s.name == "execute_tool search"]
    assert call.parent is not None and call.parent.span_id == first.context.span_id
    assert first.start_time and first.end_time and call.start_time and call.end_time
    assert first.start_time <= call.start_time and call.end_time <= first.end_time  # the turn holds its calls


def test_a_home_grown_loop_left_after_a_refusal_is_gave_up_refusal_not_success(rig: Rig) -> None:
    """The README's loop leaves the block on any reply that asks for no tool, a refusal too
    (`stop_reason: "refusal"`, which the run recorded): `gave_up`, cause `refusal`, as Endstate's own
    runs and the integrations end on a refusal. It was a success with an empty output."""
    replies = [message(api_tool_use("search", {"q": "refunds"}, id="tu1")), message(stop_reason="refusal")]
    res = readme_loop(rig, *replies).result
    assert (res.reason, res.cause, res.turns) == (StopReason.GAVE_UP, "refusal", 2)
    assert rig.stops("triage", "ticket", "gave_up", cause="refusal") == 1
    assert rig.stops("triage", "ticket", "success") == 0


def turn_signals(rig: Rig) -> list[str]:
    """`agent.turn.signal` of each turn of the rig's one run, in order."""
    (run,) = rig.run_spans()
    return [str((t.attributes or {})[n.AGENT_TURN_SIGNAL]) for t in rig.children(run, n.SPAN_TURN)]


@own_tool
def search(q: str) -> str:
    """Search the tickets."""
    return f"found {q}"


def own_signals(steps: list[Any], **options: Any) -> list[str]:
    """The turn signals Endstate's own loop records for a model replying `steps`."""
    with rigged() as rig:
        model = own.ScriptedModel(steps)
        OwnAgent("own", model, tools=[search, own_look], hooks=rig.hooks, **options).run("find refunds")
        return turn_signals(rig)


@own_tool
def own_look(path: str) -> str:
    """Read a file."""
    return f"contents of {path}"


def searching(i: int) -> Any:
    return message(api_tool_use("search", {"q": f"refunds {i}"}, id=f"tu{i}"))


@pytest.mark.parametrize(
    ("last", "reason", "signals"),
    [
        (message(text("done")), StopReason.SUCCESS, ["tool_use", "success"]),
        (message(stop_reason="refusal"), StopReason.GAVE_UP, ["tool_use", "gave_up"]),
    ],
)
def test_the_readme_loops_last_turn_says_how_the_run_ended(
    rig: Rig, last: Any, reason: StopReason, signals: list[str]
) -> None:
    """The turn whose reply ended the run was recorded `tool_use`; Endstate's own loop records the
    stop reason of the turn that ends the run (its `finish` turn: `success`; a refusal: `gave_up`)."""
    assert readme_loop(rig, searching(1), last).result.reason is reason
    assert turn_signals(rig) == signals
    assert own_signals([[own.call("search", q="refunds")], [own.finish("done", "done")]]) == [
        "tool_use",
        "success",
    ]


def test_the_readme_loop_stopped_by_its_turns_keeps_each_turns_signal_as_endstates_own_loop(
    rig: Rig,
) -> None:
    """A turns limit is checked between turns, in Endstate's own loop as in the README's: no turn
    ends with it, and the last turn stays what it did (`tool_use`)."""
    res = readme_loop(rig, *(searching(i) for i in range(10))).result
    assert (res.reason, res.limit, res.turns) == (StopReason.LIMIT, LimitKind.TURNS, 10)
    steps = [[own.call("search", q=f"refunds {i}")] for i in range(11)]
    assert turn_signals(rig) == own_signals(steps, budget=Budget(max_turns=10)) == ["tool_use"] * 10


def test_a_home_grown_turn_that_called_no_tool_or_that_an_error_left_says_so(rig: Rig) -> None:
    """As Endstate's own loop: a turn that called no tool and went on is `no_tool_call`; a tool call
    reported after its turn's block is still that turn's (its span holds it); an error that leaves a
    turn ends it `error`."""
    with observe_run(rig.hooks, agent="raw_loop", task_type=TASK, tools=["own_look"]) as run:
        with run.turn(), run.model_call() as reply:
            reply.reply(input_tokens=5, output_tokens=2, text="thinking")  # no tool: the loop nudges
        with run.turn(), run.model_call() as reply:
            reply.reply(input_tokens=5, output_tokens=2, stop_reason="tool_use")
        with run.tool("own_look", {"path": "a"}) as t:
            t.result("contents of a")
        with run.turn(), run.model_call() as reply:
            reply.reply(input_tokens=5, output_tokens=2, text="done")
        run.succeed()
    steps = [[own.say("thinking")], [own.call("own_look", path="a")], [own.finish("done", "done")]]
    assert turn_signals(rig) == own_signals(steps) == ["no_tool_call", "tool_use", "success"]
    (run_span,) = rig.run_spans()
    second = rig.children(run_span, n.SPAN_TURN)[1]
    assert [s.name for s in rig.children(second, n.SPAN_EXECUTE_TOOL)] == ["execute_tool own_look"]
    with rigged() as broken_rig:
        with (
            pytest.raises(ZeroDivisionError),
            observe_run(broken_rig.hooks, agent="raw_loop", task_type=TASK) as broken,
            broken.turn(),
        ):
            _ = 1 / 0
        assert turn_signals(broken_rig) == ["error"]


def test_cached_input_counts_as_input_for_home_grown_and_claude_runs(rig: Rig) -> None:
    """The Messages API reports cache reads and writes beside `input_tokens`; Endstate's own runs
    count them as input (as the GenAI conventions do), and so must runs it only observes."""
    cached = message(
        text("done"), input_tokens=7, cache_read_input_tokens=900, cache_creation_input_tokens=100
    )
    with (
        MessagesAPI(cached) as api,
        anthropic.Anthropic(base_url=api.url, api_key="test") as client,
        observe_run(rig.hooks, agent="raw_loop", task_type=TASK) as run,
        run.turn(),
        run.model_call() as call,
    ):
        call.reply(
            client.messages.create(
                model="claude-x", max_tokens=64, messages=[{"role": "user", "content": "hi"}]
            )
        )
    assert run.result is not None
    u = run.result.usage
    assert (u.input_tokens, u.cache_read_tokens, u.cache_write_tokens) == (1007, 900, 100)
    totals = {"input_tokens": 7, "cache_read_input_tokens": 900, "cache_creation_input_tokens": 100}
    lines = [assistant("m1", {"type": "text", "text": "done"}), result(result="done", usage=totals)]
    res = claude.run("x", transport=FakeCLI(lines), hooks=rig.hooks, task_type=TASK)
    assert (res.input_tokens, res.usage.cache_read_tokens, res.usage.cache_write_tokens) == (1007, 900, 100)


@pytest.mark.parametrize(
    ("report", "message"),
    [
        (lambda run: run.limit("money"), r"'money' is no limit kind: use one of turns, seconds"),
        (lambda run: run.give_up("no", cause="tired"), r"'tired' is no cause: use one of agent, refusal"),
        (lambda run: run.stop("finished"), r"'finished' is no stop reason: use one of success"),
        (lambda run: run.tool("search", arguments="q").__enter__(), r"arguments=...\) takes a dict"),
    ],
)
def test_a_home_grown_loop_reporting_what_is_no_stop_gets_a_clear_error(
    rig: Rig, report: Any, message: str
) -> None:
    """And the run still ends, as error, with the error's name (raised out of the block)."""
    with (
        pytest.raises(ConfigError, match=message),
        observe_run(rig.hooks, agent="raw_loop", task_type=TASK) as run,
    ):
        report(run)
    assert run.result and (run.result.reason, run.result.error_type) == (StopReason.ERROR, "ConfigError")


def test_a_home_grown_reply_of_impossible_token_counts_gets_a_clear_error(rig: Rig) -> None:
    with (
        pytest.raises(
            ConfigError, match=r"call.reply\(output_tokens=...\) takes a whole number >= 0, not '7'"
        ),
        observe_run(rig.hooks, agent="raw_loop", task_type=TASK) as run,
        run.turn(),
        run.model_call() as call,
    ):
        call.reply(input_tokens=5, output_tokens="7")


def test_a_home_grown_stop_as_success_is_verified_and_as_need_help_waits_with_a_deadline(rig: Rig) -> None:
    failing = predicate(lambda ctx: False, "the ticket is still open")
    with observe_run(rig.hooks, agent="raw_loop", task_type=TASK, verifiers=[failing]) as run:
        run.stop("success")
    assert run.result and (run.result.reason, run.result.verified) == (StopReason.SUCCESS, False)
    assert run.result.verifier_failures == ("the ticket is still open",)
    with observe_run(rig.hooks, agent="raw_loop", task_type=TASK) as waits:
        waits.stop("need_help", "Which queue?")
    assert waits.result and waits.result.reason is StopReason.NEED_HELP
    assert waits.result.suspension is not None and waits.result.suspension.question == "Which queue?"


def test_observe_run_records_limit_and_reraises_errors_as_error_stops(rig: Rig) -> None:
    with observe_run(rig.hooks, agent="raw_loop", task_type=TASK) as run:
        with run.turn(), run.model_call() as call:
            call.reply(input_tokens=5, output_tokens=2, text="still going", cost_usd=0.003)
        run.limit("turns")
    assert run.result and (run.result.reason, run.result.limit) == (StopReason.LIMIT, LimitKind.TURNS)
    assert run.result.cost_usd == 0.003
    with (
        pytest.raises(ZeroDivisionError),
        observe_run(rig.hooks, agent="raw_loop", task_type=TASK) as broken,
        broken.turn(),
    ):
        _ = 1 / 0
    assert broken.result and (broken.result.reason, broken.result.error_type) == (
        StopReason.ERROR,
        "ZeroDivisionError",
    )
    assert rig.stops("raw_loop", TASK, "error") == 1
    with observe_run(rig.hooks, agent="raw_loop", task_type=TASK) as gave:
        gave.give_up("the API refused", cause="refusal")
    assert gave.result and gave.result.cause == "refusal"
    assert rig.stops("raw_loop", TASK, "gave_up", cause="refusal") == 1


def test_a_failing_hook_never_fails_the_foreign_run() -> None:
    class Broken:
        def run_started(self, info: Any) -> Any:
            raise RuntimeError("telemetry down")

    res = pai.run(pai_agent(["fine"]), "x", hooks=Broken())
    assert res.reason is StopReason.SUCCESS


def test_with_pydantic_ai_instrumentation_on_each_call_has_one_endstate_span() -> None:
    """Pydantic AI's own spans stay its own (its scope); Endstate adds one span per call, never two."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    hooks = CompositeHooks((TracingHooks(provider),))
    agent = pai_agent([("look", {"path": "a"}, "c1"), "done"])
    agent.instrument = InstrumentationSettings(tracer_provider=provider, include_content=False)
    res = pai.run(agent, "read a", hooks=hooks, task_type=TASK)
    provider.shutdown()
    spans = exporter.get_finished_spans()
    ours = [s.name for s in spans if s.instrumentation_scope and s.instrumentation_scope.name == "endstate"]
    theirs = [s for s in spans if s.instrumentation_scope and s.instrumentation_scope.name != "endstate"]
    assert res.reason is StopReason.SUCCESS and res.turns == 2
    assert sorted(ours) == sorted(
        ["invoke_agent pai_agent", "agent.turn", "agent.turn", "chat function:play:", "chat function:play:",
         "execute_tool look"]
    )  # fmt: skip
    assert theirs, "Pydantic AI's own instrumentation still records the run"


@pytest.mark.parametrize(
    ("run", "given", "says"),
    [
        (pai.run, "an agent's name", "pydantic_ai.run() takes a pydantic_ai.Agent first, not str"),
        (oa.run, None, "openai_agents.run() takes an agents.Agent first, not NoneType"),
        (lg.run, {"messages": []}, "langgraph.run() takes a compiled graph first, not dict"),
    ],
)
def test_what_is_not_the_frameworks_agent_is_a_clear_error(run: Any, given: Any, says: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(says)):
        run(given, "hi")
