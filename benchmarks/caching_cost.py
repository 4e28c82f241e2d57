"""What prompt caching saves: the input cost of a 50-turn run with caching on and off.

Run: `python benchmarks/caching_cost.py [--turns N] [--model M] [--smoke]`. Not a test:
it plays the same agent run twice through the real `anthropic` SDK against
the local Messages API server (tests/messages_api.py), once with Endstate's
default cache breakpoints and once with caching off. The server reports the
usage the API would: input tokens counted from each request, and cache reads
and writes from the breakpoints and the prefixes it has seen. Each reply's
input is priced with the model table (`PriceTable.cost_of`, output left out).

Target: caching on at least 4x cheaper in input cost than off. Exit 1 if not.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from messages_api import MessagesAPI, message, tool_use

from agent import Agent, Budget, PriceTable, RunObserver, tool
from agent.hooks import RunInfo
from agent.models.anthropic import AnthropicModel
from agent.models.base import ModelReply

TARGET = 4.0
SMOKE_TURNS = 5
INSTRUCTIONS = "You are a careful code reviewer. " + "Read each file, note problems, then finish. " * 150


@tool
def read(path: str) -> str:
    """Read a file of the repository under review."""
    return f"# {path}\n" + "def handler(event):\n    return process(event)  # TODO: validate\n" * 30


class Replies(RunObserver):
    """Keeps every model reply of the run."""

    def __init__(self) -> None:
        self.replies: list[ModelReply] = []

    def run_started(self, info: RunInfo) -> RunObserver:
        return self

    def model_ended(self, reply: ModelReply | None, error: BaseException | None) -> None:
        if reply is not None:
            self.replies.append(reply)


def play(turns: int, model_id: str, cache: Any) -> tuple[float, dict[str, int]]:
    """One run of `turns` turns; its input cost in dollars and its token counts."""
    reads = [tool_use("read", {"path": f"src/m{i}.py"}) for i in range(turns - 1)]
    script = [message(block, input_tokens=None) for block in reads]
    script.append(message(tool_use("finish", {"kind": "done", "note": "reviewed"}), input_tokens=None))
    replies = Replies()
    with MessagesAPI(*script) as api:
        model = AnthropicModel(model_id, api_key="sk-ant-bench", base_url=api.url, cache=cache)
        agent = Agent("reviewer", model, instructions=INSTRUCTIONS, tools=[read], hooks=replies)
        agent.budget = Budget(max_turns=turns + 1, max_seconds=600)
        result = agent.run("Review the repository.")
    if result.reason != "success" or result.turns != turns:
        raise SystemExit(f"the run ended {result.reason} after {result.turns} turns: {result.note}")
    prices = PriceTable()
    inputs = [dataclasses.replace(r, output_tokens=0) for r in replies.replies]
    cost = sum(prices.cost_of(model_id, r) or 0.0 for r in inputs)
    tokens = {
        "input": sum(r.input_tokens for r in replies.replies),
        "cache read": sum(r.cache_read_input_tokens for r in replies.replies),
        "cache write": sum(r.cache_creation_input_tokens for r in replies.replies),
    }
    return cost, tokens


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=50)
    parser.add_argument("--model", default="claude-sonnet-5-5")
    parser.add_argument(
        "--smoke",
        action="store_true",
        help="a quick check, not a measure: 5 turns, the report's shape, exit 0 whatever the ratio",
    )
    args = parser.parse_args(argv)
    if args.smoke:
        args.turns = SMOKE_TURNS
    off, off_tokens = play(args.turns, args.model, None)
    on, on_tokens = play(args.turns, args.model, "5m")
    ratio = off / on
    print(f"{args.turns}-turn run on {args.model}, input cost priced from the server's reported usage")
    print(f"  caching off: ${off:.4f}  {off_tokens}")
    print(f"  caching on:  ${on:.4f}  {on_tokens}")
    print(f"  caching on is {ratio:.1f}x cheaper (target: at least {TARGET:g}x)")
    if args.smoke:  # a short run shares less of its prompt: its ratio says nothing of the target's
        print("  (--smoke: not judged against the target)")
        return 0
    return 0 if ratio >= TARGET else 1


if __name__ == "__main__":
    sys.exit(main())
