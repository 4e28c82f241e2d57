"""The agent of the chaos tests (helpers; no tests here).

`catalog()` holds `chaos`: a scripted agent whose plan (`plan_for(seed)`) mixes quick tools, slow
tools, a tool that needs approval and questions for a person. Every execution of a tool is written to
the outside world (`state["world"]`, a file shared by every process) before and after it does its
work, with the worker's pid and a token of its own, which the tool's result carries too: the chaos
test then knows which execution a recorded result came from, and what ran again.
Subprocesses load it with `--catalog chaos_agents:catalog` and `tests/` on PYTHONPATH.
"""

from __future__ import annotations

import os
import random
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent import Agent, Budget, HelpPolicy, tool
from agent.context import RunContext
from agent.durable.runner import Catalog
from agent.models.scripted import ScriptedModel, call, finish

APPROVED = "wire"  # the tool that needs approval: never run twice
TOOLS = ("work", "nap", APPROVED)


@dataclass(frozen=True)
class Execution:
    """One line of the outside world: a tool began (`begin`) or returned (`end`) in process `pid`."""

    pid: int
    at: float
    tool: str
    key: str  # run_id:call_id
    token: str  # this execution's own
    phase: str


def record(world: Path, tool: str, key: str, token: str, phase: str) -> None:
    """Append one line to the world in a single write (O_APPEND: lines of processes never mix)."""
    line = f"{os.getpid()} {time.time():.6f} {tool} {key} {token} {phase}\n"
    fd = os.open(world, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(fd, line.encode())
    finally:
        os.close(fd)


def read_world(world: Path) -> list[Execution]:
    if not world.exists():
        return []
    out = []
    for line in world.read_text().splitlines():
        pid, at, name, key, token, phase = line.split()
        out.append(Execution(int(pid), float(at), name, key, token, phase))
    return out


def token_of(result_text: str) -> str | None:
    """The execution token a tool's result carries (`did KEY exec=TOKEN`), or None."""
    head, _, token = result_text.rpartition(" exec=")
    return token if head.startswith("did ") and token else None


def plan_for(seed: int, steps: int = 6) -> list[list[Any]]:
    """A run's script: `steps` turns of quick, slow, approved calls and questions, then done."""
    rng = random.Random(seed)
    plan: list[list[Any]] = []
    for i in range(steps):
        kind = rng.choice(["work", "work", "nap", "nap", "wire", "ask"])
        if kind == "work":
            plan.append([call("work", n=i), call("work", n=i + 100)])
        elif kind == "nap":
            plan.append([call("work", n=i), call("nap", n=i, seconds=round(rng.uniform(0.2, 1.5), 2))])
        elif kind == "wire":
            plan.append([call("wire", n=i)])
        else:
            plan.append([finish("need_help", f"Question {i}?")])
    return [*plan, [finish("done", "all steps done")]]


def make_chaos(state: dict[str, Any]) -> Agent:
    world = Path(state["world"])

    def did(ctx: RunContext, name: str) -> tuple[str, str]:
        token = uuid.uuid4().hex[:12]
        record(world, name, ctx.idempotency_key, token, "begin")
        return ctx.idempotency_key, token

    @tool
    def work(n: int, ctx: RunContext) -> str:
        """Do a quick piece of work."""
        key, token = did(ctx, "work")
        record(world, "work", key, token, "end")
        return f"did {key} exec={token}"

    @tool(timeout=60)
    def nap(n: int, seconds: float, ctx: RunContext) -> str:
        """Do a slow piece of work."""
        key, token = did(ctx, "nap")
        time.sleep(seconds)
        record(world, "nap", key, token, "end")
        return f"did {key} exec={token}"

    @tool(needs_approval=True, timeout=60)
    def wire(n: int, ctx: RunContext) -> str:
        """Send money (needs approval; takes a moment)."""
        key, token = did(ctx, "wire")
        time.sleep(0.3)
        record(world, "wire", key, token, "end")
        return f"did {key} exec={token}"

    return Agent(
        name="chaos",
        model=ScriptedModel(plan_for(int(state["seed"]))),
        tools=[work, nap, wire],
        budget=Budget(max_turns=40, max_seconds=600),
        task_type="chaos",
        help=HelpPolicy(
            wait_seconds=float(state.get("wait", 3600)), on_timeout=state.get("on_timeout", "end")
        ),
    )


def catalog() -> Catalog:
    c = Catalog()
    c.register("chaos", make_chaos)
    return c
