"""What an integration adds per turn to each framework, as a ratio to the framework alone.

Each framework runs the same scripted 4-turn task (3 tool calls, then an
answer) with its own test model: alone, alone again (the control: how far
the measurement itself strays from 1.00x), with a do-nothing hook in the
framework's own extension point (what plugging in costs before Endstate
does anything), through its Endstate integration without hooks, through it
with hooks that do nothing (the integration observing every model and tool
call, telemetry aside), and with Endstate's tracing (in-memory exporter) and
metrics. Variants are interleaved, timed in this process's CPU time, and the
median of each round's ratio taken, so the ratios compare runs measured in
the same run. Target: at most 1.05x for the integration itself (`integration`
and `observing`).

    python benchmarks/integrations_overhead.py [--rounds 15] [--runs 30] [--frameworks pydantic_ai,langgraph]
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

from agents import RunHooks, Runner, set_tracing_disabled
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
from langchain_core.callbacks import BaseCallbackHandler
from pydantic_ai.capabilities import AbstractCapability
from test_integrations import oa_agent, pai_agent

from agent.hooks import RunInfo, RunObserver
from agent.integrations import claude_agent_sdk as claude
from agent.integrations import langgraph as lg
from agent.integrations import openai_agents as oa
from agent.integrations import pydantic_ai as pai

TURNS = 4
ALONE, NOOP = "alone", "noop"  # the framework alone; with a do-nothing hook of its own
Make = Callable[[Any], Awaitable[Any]]  # hooks (or "alone") -> one run


class NoopCapability(AbstractCapability[Any]):
    """Pydantic AI's extension point with nothing in it."""


class NoopHandler(BaseCallbackHandler):
    """LangChain's callback channel with nothing in it: as cheap as a handler that sees chat models
    and tools can be (one without `on_chat_model_start` would make LangChain render each call's
    messages as text for `on_llm_start`, a cost no observing handler pays)."""

    run_inline = True
    ignore_chain = ignore_retriever = ignore_retry = ignore_custom_event = True

    def on_chat_model_start(self, serialized: Any, messages: Any, **kwargs: Any) -> None:
        pass


class Silent:
    """Hooks that watch every call and do nothing with it: the integration's own work, telemetry aside."""

    def run_started(self, info: RunInfo) -> RunObserver:
        return RunObserver()


def pydantic_ai_run(hooks: Any) -> Awaitable[Any]:
    agent = pai_agent([*[("look", {"path": str(i)}, f"c{i}") for i in range(TURNS - 1)], "done"])
    if hooks == NOOP:
        return agent.run("x", capabilities=[NoopCapability()])
    return agent.run("x") if hooks == ALONE else pai.arun(agent, "x", hooks=hooks)


def openai_agents_run(hooks: Any) -> Awaitable[Any]:
    steps: list[Any] = [[function_call("read", {"path": str(i)}, call_id=f"c{i}")] for i in range(TURNS - 1)]
    agent = oa_agent([*steps, [assistant_message("done")]])
    if hooks == NOOP:
        return Runner.run(agent, "x", hooks=RunHooks())
    return Runner.run(agent, "x") if hooks == ALONE else oa.arun(agent, "x", hooks=hooks)


def langgraph_run(hooks: Any) -> Awaitable[Any]:
    graph = graph_of([*[calls("look", {"path": str(i)}, f"c{i}") for i in range(TURNS - 1)], says("done")])
    state = {"messages": [("user", "x")]}
    if hooks == NOOP:
        return graph.ainvoke(state, {"callbacks": [NoopHandler()]})
    return graph.ainvoke(state) if hooks == ALONE else lg.arun(graph, state, hooks=hooks)


async def _claude_alone(cli: FakeCLI) -> None:
    from claude_agent_sdk import query

    async for _ in query(prompt="x", transport=cli):
        pass


def claude_run(hooks: Any) -> Awaitable[Any]:
    lines: list[Any] = []
    for i in range(TURNS - 1):
        lines += [assistant(f"m{i}", tool_use(f"t{i}", "Read", {"path": str(i)})), tool_result(f"t{i}", "ok")]
    cli = FakeCLI([*lines, assistant("mz", {"type": "text", "text": "done"}), result(result="done")])
    if hooks in (ALONE, NOOP):  # the SDK has no hook for the run's messages: the integration reads the stream
        return _claude_alone(cli)
    return claude.arun("x", transport=cli, hooks=hooks)


FRAMEWORKS: dict[str, Make] = {
    "pydantic_ai": pydantic_ai_run,
    "openai_agents": openai_agents_run,
    "langgraph": langgraph_run,
    "claude_agent_sdk": claude_run,
}


async def timed(make: Make, hooks: Any, runs: int) -> float:
    """CPU seconds per turn (this process, all its threads): other processes' load does not count."""
    started = time.process_time()
    for _ in range(runs):
        await make(hooks)
    return (time.process_time() - started) / (runs * TURNS)


async def measure(make: Make, rounds: int, runs: int) -> dict[str, float]:
    """The median over rounds of each variant's time over the framework alone's in the same round."""
    with rigged() as rig:
        variants = {
            "alone": ALONE,
            "control": ALONE,
            "noop hook": NOOP,
            "integration": None,
            "observing": Silent(),
            "with telemetry": rig.hooks,
        }
        for hooks in variants.values():  # warm up
            await timed(make, hooks, 2)
        ratios: dict[str, list[float]] = {name: [] for name in variants}
        alone: list[float] = []
        for i in range(rounds):
            order = list(variants.items())
            order = (
                order[i % len(order) :] + order[: i % len(order)]
            )  # each variant goes first as often as the others
            t = {}
            for name, hooks in order:
                t[name] = await timed(make, hooks, runs)
                rig.exporter.clear()
            alone.append(t["alone"])
            for name in variants:
                ratios[name].append(t[name] / t["alone"])
    return {"alone": statistics.median(alone)} | {
        name: statistics.median(values) for name, values in ratios.items() if name != "alone"
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--frameworks", default=",".join(FRAMEWORKS), help="comma-separated, of: %(default)s")
    args = parser.parse_args()
    set_tracing_disabled(True)  # the SDK's own exporter would send traces away
    print(
        f"{'framework':<18} {'alone us/turn':>14} {'control':>8} {'noop hook':>10} {'integration':>12}"
        f" {'observing':>10} {'with telemetry':>15}"
    )
    for name in args.frameworks.split(","):
        t = asyncio.run(measure(FRAMEWORKS[name], args.rounds, args.runs))
        print(
            f"{name:<18} {t['alone'] * 1e6:>14.0f} {t['control']:>7.3f}x {t['noop hook']:>9.3f}x"
            f" {t['integration']:>11.3f}x {t['observing']:>9.3f}x {t['with telemetry']:>14.3f}x",
            flush=True,
        )


if __name__ == "__main__":
    main()
