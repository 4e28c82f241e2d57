"""What the Claude Agent SDK integration adds to a run of the SDK with its real CLI.

`integrations_overhead.py` measures the Claude Agent SDK over a fake transport
that replays the CLI's messages in 50-80 µs a turn: the worst case, with the
CLI left out. Here the SDK runs its real bundled Claude Code CLI (a subprocess,
as in production), pointed at a local Messages API server (tests/messages_api.py)
that answers at once: three `Read` calls, then an answer. Variants, each a
ratio to the SDK alone in the same round: `control` (the SDK alone again),
`integration` (`claude_agent_sdk.arun` without hooks) and `observing` (with
hooks that watch every call and do nothing).

Timing: wall-clock seconds per run (the CLI is another process: a caller waits
for it), and CPU seconds of this process and its reaped children beside it;
rounds of one run of each variant in shuffled order; the median of the
per-round ratios with a 95% bootstrap interval. Nothing asserts numbers.

    python benchmarks/claude_cli_overhead.py [--rounds 12]
    python benchmarks/claude_cli_overhead.py --smoke      # 1 round, no warm-up: a check, not a measure
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import resource
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from claude_agent_sdk import ClaudeAgentOptions, query
from integrations_overhead import Silent, cell, median_ci
from integrations_support import StreamingMessagesAPI
from messages_api import Response, message, text, tool_use
from test_integrations_claude_cli import options as cli_options

from agent import StopReason
from agent.integrations import claude_agent_sdk as claude

CALLS = 3  # Read calls before the answer: 4 model calls a run


def replier(folder: Path) -> Callable[[Any], Response | None]:
    """Answers each model call by how many tool results the conversation holds: a Read, or the answer."""

    def answer(body: Any) -> Response | None:
        if not isinstance(body, dict) or "messages" not in body:
            return None
        done = sum(
            1
            for m in body["messages"]
            if isinstance(m.get("content"), list)
            for b in m["content"]
            if isinstance(b, dict) and b.get("type") == "tool_result"
        )
        if done < CALLS:
            return message(tool_use("Read", {"file_path": str(folder / f"f{done}.txt")}))
        return message(text("read them all"))

    return answer


def options_for(api: StreamingMessagesAPI, folder: Path) -> ClaudeAgentOptions:
    """The CLI pointed at the local server, as the tests point it (its home under `folder`)."""
    return cli_options(api, folder, allowed_tools=["Read"], max_turns=CALLS + 3)


async def alone(options: ClaudeAgentOptions) -> None:
    async for _ in query(prompt="read the files", options=options):
        pass


async def through(options: ClaudeAgentOptions, hooks: Any) -> None:
    result = await claude.arun("read the files", options=options, hooks=hooks)
    assert result.reason is StopReason.SUCCESS and result.turns == CALLS + 1, result


def _cpu() -> float:
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


async def measure(
    rounds: int, options: ClaudeAgentOptions, warm_up: bool = True
) -> dict[str, dict[str, Any]]:
    variants: dict[str, Callable[[], Awaitable[None]]] = {
        "alone": lambda: alone(options),
        "control": lambda: alone(options),
        "integration": lambda: through(options, None),
        "observing": lambda: through(options, Silent()),
    }
    for run in variants.values() if warm_up else ():  # the first CLI start reads its files from disk
        await run()
    wall: dict[str, list[float]] = {name: [] for name in variants}
    cpu: dict[str, list[float]] = {name: [] for name in variants}
    order, shuffle = list(variants), random.Random(rounds).shuffle
    for _ in range(rounds):
        shuffle(order)
        for name in order:
            started, used = time.perf_counter(), _cpu()
            await variants[name]()
            wall[name].append(time.perf_counter() - started)
            cpu[name].append(_cpu() - used)
    return {
        "wall": _ratios(wall),
        "cpu": _ratios(cpu),
        "alone_s": {"wall": median_ci(wall["alone"])[0], "cpu": median_ci(cpu["alone"])[0]},
    }


def _ratios(times: dict[str, list[float]]) -> dict[str, tuple[float, float, float]]:
    base = times["alone"]
    return {
        name: median_ci([t / b for t, b in zip(values, base, strict=True)])
        for name, values in times.items()
        if name != "alone"
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=12, help="rounds of one run of each variant")
    parser.add_argument(
        "--smoke", action="store_true", help="a quick check, not a measure: 1 round, no warm-up runs"
    )
    args = parser.parse_args()
    if args.smoke:
        args.rounds = 1
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for i in range(CALLS):
            (folder / f"f{i}.txt").write_text(f"file {i}\n" * 20)
        with StreamingMessagesAPI(intercept=replier(folder)) as api:
            table = asyncio.run(measure(args.rounds, options_for(api, folder), warm_up=not args.smoke))
    alone_s = table["alone_s"]
    print(
        f"Claude Agent SDK alone, real CLI: {alone_s['wall']:.2f} s a run (wall), "
        f"{alone_s['cpu']:.2f} s CPU (this process and the CLI); {CALLS + 1} turns, "
        f"load {os.getloadavg()[0]:.1f}"
    )
    for clock in ("wall", "cpu"):
        cells = "  ".join(f"{name} {cell(value)}" for name, value in table[clock].items())
        print(f"  {clock:<4} {cells}")


if __name__ == "__main__":
    main()
