"""A catalog for the Temporal audit tests' worker processes (`temporal_audit_agents:catalog`, with
`tests/` on the path): an agent whose one tool needs a person's approval, and one whose tool does not.
Each tool takes `state["sleep"]` seconds (first waiting while the file `state["hold"]` exists, or,
with `state["until_stop"]`, until its worker begins to stop), writing a line to `state["dir"]` when it
starts and one when it is done."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from temporalio import activity

from agent import Agent, Budget, RetryPolicy, RunContext, tool
from agent.durable.runner import Catalog
from agent.models.scripted import ScriptedModel, call, finish


def _slowly(ctx: RunContext, n: int) -> None:
    log = Path(ctx.state["dir"]) / f"{ctx.run_id}.log"
    with log.open("a") as f:
        f.write(f"start {n}\n")
    hold = ctx.state.get("hold")
    while hold and Path(hold).exists():  # a test acts on the call in flight, then lets it go
        time.sleep(0.05)
    if ctx.state.get("until_stop"):  # still in hand when the worker's stop begins
        activity.wait_for_worker_shutdown_sync(60)
    time.sleep(float(ctx.state.get("sleep", 0)))
    with log.open("a") as f:
        f.write(f"end {n}\n")


@tool(needs_approval=True, timeout=60)
def deploy(ctx: RunContext, n: int) -> str:
    """Deploy release n (needs a person's approval)."""
    _slowly(ctx, n)
    return f"deployed {n}"


@tool(timeout=60)
def build_release(ctx: RunContext, n: int) -> str:
    """Build release n."""
    _slowly(ctx, n)
    return f"built {n}"


def build(state: dict[str, Any]) -> Agent:
    return Agent(
        name="deployer",
        model=ScriptedModel([[call("deploy", n=1)], [finish("done", "Deployed, or checked.")]]),
        instructions="Deploy as asked.",
        tools=[deploy],
        budget=Budget(max_turns=1, max_seconds=300),  # ends `limit` after the call: its result kept
        retry=RetryPolicy(max_attempts=3, base_delay=0.01, max_delay=0.02, jitter=False),
    )


def build_builder(state: dict[str, Any]) -> Agent:
    return Agent(
        name="builder",
        model=ScriptedModel([[call("build_release", n=1)], [finish("done", "Built.")]]),
        instructions="Build as asked.",
        tools=[build_release],
        budget=Budget(max_turns=4, max_seconds=300),
    )


def catalog() -> Catalog:
    c = Catalog()
    c.register("deployer", build)
    c.register("builder", build_builder)
    return c
