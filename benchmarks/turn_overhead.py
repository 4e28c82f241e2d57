"""What a turn costs the harness: a bare loop, Endstate bare, Endstate with full telemetry.

Run: `python benchmarks/turn_overhead.py [--repeats N]`. Not a test: it prints
microseconds per turn (median of repeats) at 10 and 100 turns per run, and the
ratios. Every variant plays the same turn: a model reply with one tool call,
one async tool, the result back into the history. The model is a constant-time
fake, so what is measured is the harness, not the script player.

Full telemetry is what `Telemetry.from_env` wires: spans through a batch
processor (to an exporter that drops them), every Prometheus instrument,
exemplars on `agent_run_active_seconds`. With pydantic-ai-slim installed, an
instrumented Pydantic AI agent (spans and metrics, content off) plays the same
turns for comparison.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import statistics
import sys
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult
from prometheus_client import CollectorRegistry

from agent import Agent, Budget, ProgressDetector, tool
from agent.models import ModelReply, ModelRequest
from telemetry import Telemetry

TURN_COUNTS = (10, 100)
RunOnce = Callable[[int], Awaitable[None]]
CLOCKS = ("wall", "cpu")


class DropSpans(SpanExporter):
    """Accepts every batch and keeps nothing."""

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        return None


class FastModel:
    """Replies in constant time: a call of `look` with a fresh path each turn."""

    name = "claude-sonnet-4-5"
    provider = "anthropic"

    def __init__(self) -> None:
        self.turn = 0

    async def complete(self, request: ModelRequest) -> ModelReply:
        self.turn += 1
        block = {
            "type": "tool_use",
            "id": f"toolu_{self.turn}",
            "name": "look",
            "input": {"path": f"p{self.turn}"},
        }
        return ModelReply(
            [{"type": "text", "text": "looking"}, block], 1200, 40, "tool_use", self.name, "msg"
        )


@tool
async def look(path: str) -> str:
    """Read a file."""
    return f"contents of {path}"


# -- the variants --------------------------------------------------------------


async def bare_loop(turns: int) -> None:
    """The least a loop can do: call the model, run the tool, append the messages."""
    model, messages = FastModel(), [{"role": "user", "content": "read"}]
    for _ in range(turns):
        reply = await model.complete(ModelRequest("", list(messages), [], 1024))
        messages.append({"role": "assistant", "content": reply.content})
        results = []
        for block in reply.content:
            if block.get("type") == "tool_use":
                text = await look.fn(**block["input"])
                results.append({"type": "tool_result", "tool_use_id": block["id"], "content": text})
        messages.append({"role": "user", "content": results})


def endstate(hooks: Any = None) -> RunOnce:
    """Runs of one agent per turn count, built once: the loop is measured, not the setup."""
    agents: dict[int, Agent] = {}

    async def run(turns: int) -> None:
        if turns not in agents:
            agents[turns] = Agent(
                "bench",
                FastModel(),
                tools=[look],
                budget=Budget(max_turns=turns, max_seconds=None),
                progress=lambda: ProgressDetector(max_idle_turns=None),
                **({"hooks": hooks} if hooks is not None else {}),
            )
        result = await agents[turns].arun("read")
        assert result.turns == turns, result

    return run


def full_telemetry() -> tuple[RunOnce, Telemetry]:
    telemetry = Telemetry.from_env({}, registry=CollectorRegistry(), span_exporter=DropSpans())
    return endstate(telemetry.hooks), telemetry


def pydantic_ai_variant() -> RunOnce | None:
    try:
        from opentelemetry.sdk.metrics import MeterProvider
        from opentelemetry.sdk.metrics.export import InMemoryMetricReader
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
        from pydantic_ai import Agent as PydanticAgent
        from pydantic_ai import InstrumentationSettings
        from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
        from pydantic_ai.models.function import FunctionModel
        from pydantic_ai.usage import RequestUsage, UsageLimits
    except ImportError as exc:
        print(f"note: Pydantic AI comparison skipped ({exc}); pip install pydantic-ai-slim to include it")
        return None
    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(DropSpans()))
    settings = InstrumentationSettings(
        tracer_provider=provider,
        meter_provider=MeterProvider([InMemoryMetricReader()]),
        include_content=False,
    )

    async def run(turns: int) -> None:
        count = 0

        def reply(messages: Any, info: Any) -> ModelResponse:
            nonlocal count
            count += 1
            usage = RequestUsage(input_tokens=1200, output_tokens=40)
            if count > turns - 1:
                return ModelResponse(parts=[TextPart("done")], usage=usage)
            call = ToolCallPart("look", {"path": f"p{count}"}, tool_call_id=f"t{count}")
            return ModelResponse(parts=[TextPart("looking"), call], usage=usage)

        agent = PydanticAgent(FunctionModel(reply))
        agent.tool_plain(look.fn)
        agent.instrument = settings
        await agent.run("read", usage_limits=UsageLimits(request_limit=None))
        assert count == turns

    return run


# -- measuring -----------------------------------------------------------------


Table = dict[str, dict[tuple[str, int], float]]


def measure(variants: dict[str, RunOnce], repeats: int) -> Table:
    """Median microseconds per turn for each variant and turn count, by wall and CPU clock.

    Each variant and turn count is timed in a block of its own, after a
    warm-up and a full garbage collection, so one variant's garbage is not
    collected on another's clock. The CPU clock (this thread's) leaves out
    the time the machine gave to other processes.
    """
    table: Table = {}

    async def block(run: RunOnce, turns: int) -> dict[str, float]:
        for _ in range(3):
            await run(turns)
        gc.collect()
        wall_us, cpu_us = [], []
        for _ in range(repeats):
            wall, cpu = time.perf_counter(), time.thread_time()
            await run(turns)
            wall_us.append((time.perf_counter() - wall) / turns * 1e6)
            cpu_us.append((time.thread_time() - cpu) / turns * 1e6)
        return {"wall": statistics.median(wall_us), "cpu": statistics.median(cpu_us)}

    async def timed() -> None:
        for name, run in variants.items():
            for turns in TURN_COUNTS:
                medians = await block(run, turns)
                for clock in CLOCKS:
                    table.setdefault(name, {})[clock, turns] = medians[clock]

    asyncio.run(timed())
    return table


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=30, help="timed runs per variant and turn count")
    args = parser.parse_args(argv)
    run_full, telemetry = full_telemetry()
    variants: dict[str, RunOnce] = {
        "bare Python loop": bare_loop,
        "Endstate, telemetry off": endstate(),
        "Endstate, full telemetry": run_full,
    }
    if (pydantic := pydantic_ai_variant()) is not None:
        variants["Pydantic AI, instrumented"] = pydantic
    table = measure(variants, args.repeats)
    telemetry.shutdown()
    report(table)
    return 0


def report(table: Table) -> None:
    columns = [(c, t) for c in CLOCKS for t in TURN_COUNTS]
    print(
        f"{'us/turn, median':<28}" + "".join(f"{f'{c} @{t}':>12}" for c, t in columns) + f"{'@100/@10':>10}"
    )
    for name, row in table.items():
        cells = "".join(f"{row[key]:>12.1f}" for key in columns)
        print(f"{name:<28}{cells}{row['wall', 100] / row['wall', 10]:>10.2f}")
    full, off = table["Endstate, full telemetry"], table["Endstate, telemetry off"]
    added = ", ".join(f"{full[k] - off[k]:.1f} ({k[0]} @{k[1]})" for k in columns)
    print(f"\ntelemetry adds us/turn: {added}")
    worst = max(full["wall", t] for t in TURN_COUNTS)
    print(
        f"target full telemetry <= 150 us/turn (wall): {'met' if worst <= 150 else 'NOT met'} ({worst:.1f})"
    )
    growth = full["wall", 100] / full["wall", 10]
    print(f"target @100 within 1.25x of @10 (wall): {'met' if growth <= 1.25 else 'NOT met'} ({growth:.2f}x)")
    if pydantic := table.get("Pydantic AI, instrumented"):
        ratio = min(pydantic[k] / full[k] for k in columns)
        print(f"Pydantic AI / Endstate full telemetry, least of the columns: {ratio:.1f}x (target >= 10x)")


if __name__ == "__main__":
    sys.exit(main())
