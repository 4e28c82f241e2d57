"""A `SystemExit` (or another non-`Exception`) from a run's own callbacks never escapes `run`/`arun`.

Each callback takes the path an `Exception` from it takes: a hook's is logged and the run goes on
(telemetry never fails a run), a per-turn check's ends the run `error`, the fingerprint's and the
checkpointer's end it `error`, the summarizer's has the default summary stand in. A
`KeyboardInterrupt` within a turn ends the run `cancelled` (checkpointed, resumable), as one from
a tool does; a real cancel stays `cancelled`.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from opentelemetry.sdk.trace import SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from agent import Agent, Budget
from agent.hooks import RunInfo, RunObserver
from agent.models.scripted import ScriptedModel, call, finish
from agent.result import StopReason
from agent.snapshot import SnapshotKind
from agent.tools import tool
from telemetry.tracing import TracingHooks


@tool
def look() -> str:
    """Look around."""
    return "seen"


class RaisingHooks:
    def __init__(self, where: str, exc: BaseException) -> None:
        self.where, self.exc = where, exc

    def run_started(self, info: RunInfo) -> RunObserver:
        if self.where == "run_started":
            raise self.exc
        return _Raises(self.where, self.exc)


class _Raises(RunObserver):
    def __init__(self, where: str, exc: BaseException) -> None:
        self._where, self._exc = where, exc

    def _maybe(self, name: str) -> None:
        if name == self._where:
            raise self._exc

    def turn_started(self, index: int, continued: bool = False) -> None:
        self._maybe("turn_started")

    def turn_ended(self, index: int, signal: Any) -> None:
        self._maybe("turn_ended")

    def model_started(self, request: Any, attempt: int) -> None:
        self._maybe("model_started")

    def model_ended(self, reply: Any, error: BaseException | None) -> None:
        self._maybe("model_ended")

    def tool_started(self, call: Any) -> None:
        self._maybe("tool_started")

    def tool_ended(self, call: Any, outcome: Any) -> None:
        self._maybe("tool_ended")

    def run_ended(self, result: Any) -> None:
        self._maybe("run_ended")


HOOKS = ["run_started", "turn_started", "turn_ended", "model_started", "model_ended", "tool_started",
         "tool_ended", "run_ended"]  # fmt: skip


def agent(**options: Any) -> Agent:
    model = ScriptedModel([[call("look")], [finish("done", "ok")]])
    options.setdefault("budget", Budget(max_turns=10, max_seconds=60))
    return Agent("exits", model, tools=[look], **options)


@pytest.mark.parametrize("where", HOOKS)
@pytest.mark.parametrize("exc", [SystemExit(3), asyncio.CancelledError("its own")])
def test_a_hook_raising_a_base_exception_is_logged_and_the_run_goes_on(
    where: str, exc: BaseException
) -> None:
    result = agent(hooks=RaisingHooks(where, exc)).run("task")
    assert result.reason is StopReason.SUCCESS, result.note


@pytest.mark.parametrize(
    "where", ["turn_started", "turn_ended", "model_started", "model_ended", "tool_started"]
)
def test_a_hook_interrupted_within_a_turn_ends_the_run_cancelled_and_resumable(where: str) -> None:
    result = agent(hooks=RaisingHooks(where, KeyboardInterrupt())).run("task")
    assert result.reason is StopReason.CANCELLED
    assert "KeyboardInterrupt" in result.note
    assert result.snapshot is not None


@pytest.mark.parametrize("where", ["run_started", "run_ended"])
def test_a_hook_interrupted_at_a_segments_edge_keeps_the_run_and_its_result(where: str) -> None:
    """Before the turns there is nothing to cancel; after, the result is made: it is returned."""
    result = agent(hooks=RaisingHooks(where, KeyboardInterrupt())).run("task")
    assert result.reason is StopReason.SUCCESS


class ControlFlow(BaseException):
    """A framework's control flow made to pass `except Exception` (Temporal evicting a workflow, a
    test's stand-in for a worker that died, `pytest.fail`): never a hook's failure to log."""


@pytest.mark.parametrize("exc", [ControlFlow(), GeneratorExit()])
@pytest.mark.parametrize("where", ["turn_started", "tool_ended", "run_ended"])
def test_a_frameworks_control_flow_from_a_hook_goes_on_up_untouched(where: str, exc: BaseException) -> None:
    with pytest.raises(type(exc)):
        agent(hooks=RaisingHooks(where, exc)).run("task")


class Exiting(SpanProcessor):
    """A span processor a team added to its provider, which exits (a wrapped CLI, say)."""

    def on_start(self, span: Any, parent_context: Any = None) -> None:
        raise SystemExit("processor")

    def on_end(self, span: Any) -> None:
        raise SystemExit("processor")


def test_endstates_own_telemetry_hooks_survive_a_system_exit_under_them() -> None:
    provider = TracerProvider()
    exporter = InMemorySpanExporter()
    provider.add_span_processor(Exiting())
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    result = agent(hooks=TracingHooks(provider)).run("task")
    assert result.reason is StopReason.SUCCESS


def test_a_fingerprint_raising_system_exit_ends_the_run_as_error() -> None:
    def fingerprint(ctx: Any) -> str:
        raise SystemExit("fingerprint")

    result = agent(fingerprint=fingerprint).run("task")
    assert (result.reason, result.error_type) == (StopReason.ERROR, "SystemExit")
    assert "fingerprint" in result.note


def test_a_fingerprint_interrupted_ends_the_run_cancelled() -> None:
    def fingerprint(ctx: Any) -> str:
        raise KeyboardInterrupt

    result = agent(fingerprint=fingerprint).run("task")
    assert result.reason is StopReason.CANCELLED
    assert result.snapshot is not None


@pytest.mark.parametrize("exc", [SystemExit(1), KeyboardInterrupt()])
def test_a_summarizer_raising_anything_gives_the_default_summary(exc: BaseException) -> None:
    def summarize(*args: Any) -> str:
        raise exc

    result = agent(summarize=summarize).run("task")
    assert result.reason is StopReason.SUCCESS
    assert result.summary


def test_a_check_raising_system_exit_ends_the_run_as_a_verifier_error() -> None:
    def check(ctx: Any) -> None:
        raise SystemExit("check")

    result = agent(checks=[check]).run("task")
    assert (result.reason, result.error_type) == (StopReason.ERROR, "verifier_error")
    assert "SystemExit" in result.note


def test_a_check_interrupted_ends_the_run_cancelled() -> None:
    def check(ctx: Any) -> None:
        raise KeyboardInterrupt

    assert agent(checks=[check]).run("task").reason is StopReason.CANCELLED


def test_a_checkpointer_raising_system_exit_ends_the_run_as_error() -> None:
    def checkpoint(new: Any) -> None:
        raise SystemExit("disk")

    result = agent(checkpoint=checkpoint).run("task")
    assert (result.reason, result.error_type) == (StopReason.ERROR, "SystemExit")


def test_a_checkpointers_write_raising_system_exit_ends_the_run_as_error() -> None:
    """A write handed over (awaited before the next tool) that exits: the run ends as error."""

    async def fail() -> None:
        raise SystemExit("late")

    def checkpoint(new: Any) -> Any:
        return fail()

    result = agent(checkpoint=checkpoint).run("task")
    assert (result.reason, result.error_type) == (StopReason.ERROR, "SystemExit")


def test_the_last_write_raising_system_exit_is_logged_and_the_result_stands() -> None:
    """The finished run's last entries (awaited after its end is decided) fail: its reason stands."""

    async def fail() -> None:
        raise SystemExit("late")

    def checkpoint(new: Any) -> Any:
        return fail() if new.head.kind == SnapshotKind.FINISHED else None

    assert agent(checkpoint=checkpoint).run("task").reason is StopReason.SUCCESS


def test_a_real_cancel_stays_cancelled() -> None:
    gate = asyncio.Event()

    @tool
    async def wait() -> str:
        """Wait."""
        gate.set()
        await asyncio.sleep(30)
        return "late"

    model = ScriptedModel([[call("wait")], [finish("done", "ok")]])
    a = Agent("exits", model, tools=[wait], hooks=RaisingHooks("tool_ended", SystemExit(1)))

    async def main() -> Any:
        task = asyncio.create_task(a.arun("task"))
        await gate.wait()
        task.cancel()
        return await task

    assert asyncio.run(main()).reason is StopReason.CANCELLED
