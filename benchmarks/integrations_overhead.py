"""What an integration adds per turn to each framework, as a ratio to the framework alone.

Each framework runs the same scripted 4-turn task (3 tool calls, then an
answer) with its own test model: alone, through its Endstate integration
without hooks, and through it with Endstate's tracing (in-memory exporter)
and metrics. Variants are interleaved and the median of the rounds taken, so
the ratios compare runs measured in the same run. Target: at most 1.05x for
the integration itself.

    python benchmarks/integrations_overhead.py [--rounds 15] [--runs 30]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from agents import Runner, set_tracing_disabled
from agents.testing.model import assistant_message, function_call
from integrations_support import (
    FakeCLI,
    assistant,
    calls,
    graph_of,
    result,
    rigged,
    says,
    tool_result,
    tool_use,
)
from test_integrations import oa_agent, pai_agent

from agent.integrations import claude_agent_sdk as claude
from agent.integrations import langgraph as lg
from agent.integrations import openai_agents as oa
from agent.integrations import pydantic_ai as pai

TURNS = 4
Make = Callable[[Any], Awaitable[Any]]  # hooks (or "alone") -> one run


def pydantic_ai_run(hooks: Any) -> Awaitable[Any]:
    agent = pai_agent([*[("look", {"path": str(i)}, f"c{i}") for i in range(TURNS - 1)], "done"])
    return agent.run("x") if hooks == "alone" else pai.arun(agent, "x", hooks=hooks)


def openai_agents_run(hooks: Any) -> Awaitable[Any]:
    steps: list[Any] = [[function_call("read", {"path": str(i)}, call_id=f"c{i}")] for i in range(TURNS - 1)]
    agent = oa_agent([*steps, [assistant_message("done")]])
    return Runner.run(agent, "x") if hooks == "alone" else oa.arun(agent, "x", hooks=hooks)


def langgraph_run(hooks: Any) -> Awaitable[Any]:
    graph = graph_of([*[calls("look", {"path": str(i)}, f"c{i}") for i in range(TURNS - 1)], says("done")])
    state = {"messages": [("user", "x")]}
    return graph.ainvoke(state) if hooks == "alone" else lg.arun(graph, state, hooks=hooks)


async def _claude_alone(cli: FakeCLI) -> None:
    from claude_agent_sdk import query

    async for _ in query(prompt="x", transport=cli):
        pass


def claude_run(hooks: Any) -> Awaitable[Any]:
    lines: list[Any] = []
    for i in range(TURNS - 1):
        lines += [assistant(f"m{i}", tool_use(f"t{i}", "Read", {"path": str(i)})), tool_result(f"t{i}", "ok")]
    cli = FakeCLI([*lines, assistant("mz", {"type": "text", "text": "done"}), result(result="done")])
    return _claude_alone(cli) if hooks == "alone" else claude.arun("x", transport=cli, hooks=hooks)


FRAMEWORKS: dict[str, Make] = {
    "pydantic_ai": pydantic_ai_run,
    "openai_agents": openai_agents_run,
    "langgraph": langgraph_run,
    "claude_agent_sdk": claude_run,
}


async def timed(make: Make, hooks: Any, runs: int) -> float:
    started = time.perf_counter()
    for _ in range(runs):
        await make(hooks)
    return (time.perf_counter() - started) / (runs * TURNS)


async def measure(make: Make, rounds: int, runs: int) -> dict[str, float]:
    with rigged() as rig:
        variants = {"alone": "alone", "integration": None, "with telemetry": rig.hooks}
        for hooks in variants.values():  # warm up
            await timed(make, hooks, 2)
        samples: dict[str, list[float]] = {name: [] for name in variants}
        for _ in range(rounds):
            for name, hooks in variants.items():
                samples[name].append(await timed(make, hooks, runs))
                rig.exporter.clear()
    return {name: statistics.median(values) for name, values in samples.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--runs", type=int, default=30)
    args = parser.parse_args()
    set_tracing_disabled(True)  # the SDK's own exporter would send traces away
    print(f"{'framework':<18} {'alone us/turn':>14} {'integration':>12} {'with telemetry':>15}")
    for name, make in FRAMEWORKS.items():
        t = asyncio.run(measure(make, args.rounds, args.runs))
        alone = t["alone"]
        print(
            f"{name:<18} {alone * 1e6:>14.0f} {t['integration'] / alone:>11.3f}x"
            f" {t['with telemetry'] / alone:>14.3f}x"
        )


if __name__ == "__main__":
    main()
