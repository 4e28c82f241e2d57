"""What an integration adds per turn to each framework, as a ratio to the framework alone.

Each framework runs the same scripted 4-turn task (3 tool calls, then an
answer) with its own test model: alone, alone again (the control: how far
the measurement itself strays from 1.00x), with a do-nothing hook in the
framework's own extension point (what plugging in costs before Endstate
does anything), through its Endstate integration without hooks, through it
with hooks that do nothing (the integration observing every model and tool
call, telemetry aside), and with Endstate's tracing (in-memory exporter) and
metrics. `langgraph_exact` is LangGraph with `exact_counts=True` (every call
read from LangChain's callbacks); `langgraph_prebuilt` is LangGraph's prebuilt agent
(`create_react_agent`), which the integration also gives a callback handler (its
out-of-steps end hides a reply whose tokens only a callback sees). The Pydantic AI
agent and the LangGraph graphs are built once, as an application builds them, so
that building them is not counted as part of a
turn (it was about 45% and 27% of the old denominator).

Timing: this process's CPU time (`time.process_time_ns`), in many short
rounds of `--runs` runs of each variant, shuffled each round; each variant's
ratio to the framework alone in the same round; the median of those ratios
with a 95% bootstrap confidence interval beside it. Target: at most 1.05x for
the integration itself (`integration` and `observing`). Nothing asserts numbers.

    python benchmarks/integrations_overhead.py [--rounds 200] [--runs 2] [--frameworks langgraph,pydantic_ai]
    python benchmarks/integrations_overhead.py --smoke   # 1 round of 1 run: a check, not a measure
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import gc
import itertools
import random
import statistics
import sys
import time
import warnings
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
    look,
    result,
    rigged,
    says,
    tool_result,
    tool_use,
)
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
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
    messages as text for `on_llm_start`, a cost no observing handler pays). The LangGraph
    integration adds none by default (it reads the graph's own stream); `langgraph_exact`
    (`exact_counts=True`) adds one through LangChain's configure hook, to each call's manager."""

    run_inline = True
    ignore_chain = ignore_retriever = ignore_retry = ignore_custom_event = True

    def on_chat_model_start(self, serialized: Any, messages: Any, **kwargs: Any) -> None:
        pass


class Silent:
    """Hooks that watch every call and do nothing with it: the integration's own work, telemetry aside."""

    def run_started(self, info: RunInfo) -> RunObserver:
        return RunObserver()


@functools.cache
def pydantic_ai_agent() -> Any:
    """Built once, as an application builds its agent: its model replays the script in a loop."""
    return pai_agent(
        itertools.cycle([*[("look", {"path": str(i)}, f"c{i}") for i in range(TURNS - 1)], "done"])
    )


def pydantic_ai_run(hooks: Any) -> Awaitable[Any]:
    agent = pydantic_ai_agent()
    if hooks == NOOP:
        return agent.run("x", capabilities=[NoopCapability()])
    return agent.run("x") if hooks == ALONE else pai.arun(agent, "x", hooks=hooks)


def openai_agents_run(hooks: Any) -> Awaitable[Any]:
    steps: list[Any] = [[function_call("read", {"path": str(i)}, call_id=f"c{i}")] for i in range(TURNS - 1)]
    agent = oa_agent([*steps, [assistant_message("done")]])
    if hooks == NOOP:
        return Runner.run(agent, "x", hooks=RunHooks())
    return Runner.run(agent, "x") if hooks == ALONE else oa.arun(agent, "x", hooks=hooks)


@functools.cache
def langgraph_graph() -> Any:
    """Compiled once, as an application compiles its graph: its chat model replays the script in a loop."""
    return graph_of(
        itertools.cycle([*[calls("look", {"path": str(i)}, f"c{i}") for i in range(TURNS - 1)], says("done")])
    )


def langgraph_run(hooks: Any, exact_counts: bool = False) -> Awaitable[Any]:
    graph = langgraph_graph()
    state = {"messages": [("user", "x")]}
    if hooks == NOOP:
        return graph.ainvoke(state, {"callbacks": [NoopHandler()]})
    if hooks == ALONE:
        return graph.ainvoke(state)
    return lg.arun(graph, state, hooks=hooks, exact_counts=exact_counts)


class ToolModel(GenericFakeChatModel):
    """The fake chat model, taking the tools `create_react_agent` binds to it."""

    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
        return self


@functools.cache
def langgraph_prebuilt_graph() -> Any:
    """LangGraph's prebuilt agent, built once: its chat model replays the script in a loop."""
    from langgraph.prebuilt import create_react_agent

    script = [*[calls("look", {"path": str(i)}, f"c{i}") for i in range(TURNS - 1)], says("done")]
    with warnings.catch_warnings():  # moved to `langchain.agents` in LangGraph 1.0, still LangGraph's
        warnings.simplefilter("ignore")
        return create_react_agent(ToolModel(messages=itertools.cycle(script)), [look], name="react")


def langgraph_prebuilt_run(hooks: Any) -> Awaitable[Any]:
    graph = langgraph_prebuilt_graph()
    state = {"messages": [("user", "x")]}
    if hooks == NOOP:
        return graph.ainvoke(state, {"callbacks": [NoopHandler()]})
    if hooks == ALONE:
        return graph.ainvoke(state)
    return lg.arun(graph, state, hooks=hooks)


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
    "langgraph_exact": functools.partial(langgraph_run, exact_counts=True),  # LangChain's callbacks
    "langgraph_prebuilt": langgraph_prebuilt_run,  # create_react_agent: a callback handler added
    "claude_agent_sdk": claude_run,
}


async def timed(make: Make, hooks: Any, runs: int) -> float:
    """CPU seconds per turn (this process, all its threads): other processes' load does not count."""
    started = time.process_time_ns()
    for _ in range(runs):
        await make(hooks)
    return (time.process_time_ns() - started) / (runs * TURNS * 1e9)


def median_ci(values: list[float], resamples: int = 2000) -> tuple[float, float, float]:
    """The median and a 95% bootstrap confidence interval around it (seeded: same data, same interval)."""
    draw = random.Random(13)
    medians = sorted(statistics.median(draw.choices(values, k=len(values))) for _ in range(resamples))
    return statistics.median(values), medians[int(0.025 * resamples)], medians[int(0.975 * resamples) - 1]


async def measure(
    make: Make, rounds: int, runs: int, warm_up: int = 3
) -> dict[str, tuple[float, float, float]]:
    """Per variant: the median over rounds of its time over the framework alone's in the same round.

    A round is short (`runs` runs of each variant, about 0.1 s), so a neighbour's
    load or a frequency change lands on every variant of the round alike. The
    order is shuffled each round: a run that follows a run of the same code is
    1-2% faster (warm caches), so a fixed order would favour the variant placed
    after its twin. The heap is collected before each round, so no round pays
    for another's garbage, and one untimed run follows the collection (the
    first run after one was about 14% slower in per-run data).
    """
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
            await timed(make, hooks, warm_up)
        gc.collect()
        gc.freeze()  # the modules' objects leave the collector's view: each round's collection is short
        ratios: dict[str, list[float]] = {name: [] for name in variants}
        alone: list[float] = []
        order, shuffle = list(variants), random.Random(len(variants) * rounds).shuffle
        for _ in range(rounds):
            gc.collect()
            shuffle(order)  # each variant follows each other as often: none gains from following its twin
            await make(variants[order[0]])  # untimed: the first run after a collection is 10-15% slower
            t = {}
            for name in order:
                t[name] = await timed(make, variants[name], runs)
                rig.exporter.clear()
            alone.append(t["alone"])
            for name in variants:
                ratios[name].append(t[name] / t["alone"])
        gc.unfreeze()
    return {"alone": median_ci(alone)} | {
        name: median_ci(values) for name, values in ratios.items() if name != "alone"
    }


def cell(value: tuple[float, float, float]) -> str:
    """`1.023x [1.015-1.031]`: the median ratio and its 95% confidence interval."""
    mid, low, high = value
    return f"{mid:.3f}x [{low:.3f}-{high:.3f}]"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument(
        "--runs", type=int, default=2, help="runs of each variant in a round (default %(default)s)"
    )
    parser.add_argument("--frameworks", default=",".join(FRAMEWORKS), help="comma-separated, of: %(default)s")
    parser.add_argument(
        "--smoke", action="store_true", help="a quick check, not a measure: 1 round of 1 run, 1 to warm up"
    )
    args = parser.parse_args()
    warm_up = 3
    if args.smoke:
        args.rounds, args.runs, warm_up = 1, 1, 1
    set_tracing_disabled(True)  # the SDK's own exporter would send traces away
    columns = ["control", "noop hook", "integration", "observing", "with telemetry"]
    print(f"{'framework':<18} {'alone us/turn':>14} " + " ".join(f"{c:>24}" for c in columns))
    for name in args.frameworks.split(","):
        t = asyncio.run(measure(FRAMEWORKS[name], args.rounds, args.runs, warm_up))
        print(
            f"{name:<18} {t['alone'][0] * 1e6:>14.0f} " + " ".join(f"{cell(t[c]):>24}" for c in columns),
            flush=True,
        )


if __name__ == "__main__":
    main()
