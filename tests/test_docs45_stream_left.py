"""docs45: README "Runs not built on Endstate": a stream the caller stops reading ends `cancelled`,
counted once. The SDK's and LangGraph's streams have `result` on the line after the `break`; a Pydantic
AI `run_stream` is a block, and has it once its `async with` block ends (as README now says)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
from integrations_support import Rig, rigged
from pydantic_ai import Agent as PAIAgent
from pydantic_ai.models.test import TestModel

from agent import StopReason
from agent.integrations import pydantic_ai as pai

TASK = "docs45_stream"


@pytest.fixture
def rig() -> Iterator[Rig]:
    with rigged() as r:
        yield r


def streamer() -> PAIAgent[None, Any]:
    return PAIAgent(TestModel(custom_output_text="one two three four five six"), name="docs45_streamer")


@pytest.mark.parametrize("reading", ["stream_text", "stream_output", "stream_response"])
def test_a_pydantic_ai_stream_left_after_one_item_is_cancelled_when_its_block_ends(
    rig: Rig, reading: str
) -> None:
    async def left() -> Any:
        async with pai.run_stream(streamer(), "go", hooks=rig.hooks, task_type=TASK) as run:
            async for _ in getattr(run, reading)():
                break
        return run

    res = asyncio.run(left()).result
    assert res is not None and res.reason is StopReason.CANCELLED
    assert rig.stops("docs45_streamer", TASK, "cancelled") == 1
    assert rig.stops("docs45_streamer", TASK, "success") == 0


def test_a_pydantic_ai_stream_read_to_its_end_is_a_success(rig: Rig) -> None:
    async def read() -> Any:
        async with pai.run_stream(streamer(), "go", hooks=rig.hooks, task_type=TASK) as run:
            texts = [text async for text in run.stream_text()]
        return run, texts

    run, texts = asyncio.run(read())
    assert texts and texts[-1] == "one two three four five six"
    assert run.result is not None and run.result.reason is StopReason.SUCCESS
    assert run.result.output == "one two three four five six"
    assert rig.stops("docs45_streamer", TASK, "success") == 1
