"""A shutdown ends a foreign run of the catalog at its next turn, as it ends Endstate's own (DESIGN:
`cancelled` when the process is shutting down; README: "runs stop at their next turn as cancelled;
after `grace` they are cut"). Before, the runner's cancel signal never reached a foreign run: it ran
on, turn after turn, until the grace ran out and it was cut off wherever it was (a tool mid-call), or
ended on its own as if no shutdown had been asked."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

from pydantic_ai import Agent as PAIAgent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.tools import DeferredToolRequests
from pydantic_ai.usage import RequestUsage

from agent.durable.catalog import Catalog
from agent.durable.runner import Runner
from agent.durable.store import RunStatus, open_store
from agent.integrations._observe import Recorder, stopping_at_turns
from agent.result import StopReason

LAST_TURN = 6  # the model's own end, which a run that ignored the shutdown reached


class Counting:
    """A Pydantic AI agent that calls `step` turn after turn; its second call asks for a shutdown."""

    def __init__(self) -> None:
        self.runner: Runner | None = None
        self.steps = 0

    async def reply(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        done = sum(isinstance(p, ToolReturnPart) for m in messages for p in getattr(m, "parts", []))
        usage = RequestUsage(input_tokens=10, output_tokens=4)
        if done + 1 >= LAST_TURN:
            return ModelResponse([TextPart("finished")], usage=usage)
        return ModelResponse([ToolCallPart("step", {}, f"s{done}")], usage=usage)

    def build(self) -> PAIAgent[None, Any]:
        agent: PAIAgent[None, Any] = PAIAgent(
            FunctionModel(self.reply), name="counting", output_type=[str, DeferredToolRequests]
        )

        @agent.tool_plain
        def step() -> str:
            """One step of the work."""
            self.steps += 1
            if self.steps == 2 and self.runner is not None:
                self.runner.stop_soon(grace=600)  # what SIGTERM does; the grace is never reached
            return f"step {self.steps}"

        @agent.tool_plain(requires_approval=True)
        def begin() -> str:
            """Begin the work, once a person approves."""
            return "begun"

        return agent


class Approved(Counting):
    """The same, asking a person first: the shutdown comes in the segment the approval resumed."""

    async def reply(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if not any(isinstance(p, ToolReturnPart) for m in messages for p in getattr(m, "parts", [])):
            return ModelResponse(
                [ToolCallPart("begin", {}, "b0")], usage=RequestUsage(input_tokens=10, output_tokens=4)
            )
        return await super().reply(messages, info)


def test_a_shutdown_ends_a_foreign_run_at_its_next_turn(tmp_path: Path) -> None:
    counting = Counting()
    catalog = Catalog()
    catalog.register_foreign("counting", "pydantic_ai", counting.build)
    store = open_store(tmp_path / "runs.db")

    async def shut_down_mid_run() -> Any:
        counting.runner = Runner(store, catalog)
        return await asyncio.wait_for(counting.runner.start("counting", "count"), timeout=120)

    try:
        result = asyncio.run(shut_down_mid_run())
        assert result.reason is StopReason.CANCELLED, (result.reason, result.turns)
        assert counting.steps == 2  # no tool ran after the shutdown was asked
        assert result.turns == 3  # the turn after it began, and was cut before its model call's reply
        record = store.get(result.run_id)
        assert record is not None and record.status is RunStatus.CANCELLED
    finally:
        store.close()


def test_a_shutdown_ends_a_resumed_foreign_segment_at_its_next_turn(tmp_path: Path) -> None:
    approved = Approved()
    catalog = Catalog()
    catalog.register_foreign("counting", "pydantic_ai", approved.build)
    store = open_store(tmp_path / "runs.db")

    async def shut_down_after_the_approval() -> Any:
        first = await Runner(store, catalog).start("counting", "count")
        assert first.reason is StopReason.NEED_HELP
        approved.runner = Runner(store, catalog)
        return await asyncio.wait_for(approved.runner.resume(first.run_id, approved=True), timeout=120)

    try:
        result = asyncio.run(shut_down_after_the_approval())
        assert result.reason is StopReason.CANCELLED, (result.reason, result.turns)
        assert approved.steps == 2
        record = store.get(result.run_id)
        assert record is not None and record.status is RunStatus.CANCELLED
    finally:
        store.close()


def test_a_stop_asked_as_a_segment_ends_is_taken_back_before_the_runner_records_it() -> None:
    """A segment that ends right after the turn the shutdown stopped (no await left to meet the
    cancel) leaves no cancel pending: the runner's recording of its end runs on."""

    async def segment_then_record() -> int:
        shutting_down = threading.Event()
        shutting_down.set()
        async with stopping_at_turns(shutting_down):
            recorder = Recorder.start(None, agent="counting", task_type="count")
            recorder.begin_turn()  # asks the signal: the segment's task is to stop
            recorder.finish(StopReason.SUCCESS)
        await asyncio.sleep(0)  # the runner recording the run: not cut off
        task = asyncio.current_task()
        assert task is not None
        return task.cancelling()

    assert asyncio.run(segment_then_record()) == 0
