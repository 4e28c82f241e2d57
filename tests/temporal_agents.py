"""A catalog of scripted agents for the Temporal tests, rebuilt by name in any worker process.

`state["script"]` picks the model's script; `state["dir"]` is where the
counting tool writes one line when a call starts and one when it completes,
so a test can tell which calls ran and how often.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agent import Agent, Budget, HelpPolicy, RetryPolicy, RunContext, TransientModelError, tool
from agent.durable.runner import Catalog
from agent.errors import ModelError
from agent.models.scripted import ScriptedModel, Step, call, finish, say

FAST_RETRY = RetryPolicy(max_attempts=2, base_delay=0.01, max_delay=0.02, jitter=False)


def _log(ctx: RunContext, line: str) -> None:
    folder = Path(ctx.state["dir"])
    with (folder / f"{ctx.run_id}.log").open("a") as f:
        f.write(line + "\n")


def _held(ctx: RunContext, n: int) -> None:
    """From `count(state["hold_at"])` on, a call waits while the file `state["hold"]` exists: a test
    acts on the run while a call is in flight, then lets it go, with no race against the clock."""
    flag = ctx.state.get("hold")
    if flag and n >= int(ctx.state.get("hold_at", 1)):
        while Path(flag).exists():
            time.sleep(0.05)


def _count(ctx: RunContext, n: int) -> str:
    """Count to n (writes when it starts and when it is done)."""
    _log(ctx, f"start {n}")
    _held(ctx, n)
    time.sleep(float(ctx.state.get("sleep", 0)))
    _log(ctx, f"end {n}")
    ctx.state["counted"] = int(ctx.state.get("counted", 0)) + 1
    return f"counted {n}" + "." * int(ctx.state.get("pad", 0))


count = tool(_count, name="count", timeout=5)
# a run with a hold: its held call waits for the test, not for 5 s (after which the run would go on)
held_count = tool(_count, name="count", timeout=None)


def _holding(ctx: RunContext) -> bool:
    return Path(ctx.state["hold"]).exists()


async def _stubborn_count(ctx: RunContext, n: int) -> str:
    """Count to n, going on while the hold exists even once cancelled (a cleanup that takes its time)."""
    _log(ctx, f"start {n}")
    while _holding(ctx):
        try:
            await asyncio.sleep(0.05)
        except asyncio.CancelledError:
            _log(ctx, f"cancelled {n}")
    _log(ctx, f"end {n}")
    return f"counted {n}"


# a run whose held call outlasts every cancel (its cleanup may take up to an hour): `state["stubborn"]`
stubborn_count = tool(_stubborn_count, name="count", timeout=None, cleanup_seconds=3600)


@tool
def read(n: int, size: int = 2000) -> str:
    """Read page n, `size` characters of it (takes no context: it cannot read the run's calls)."""
    return f"page {n}: " + "x" * size


@tool(needs_approval=True)
def push(ctx: RunContext, branch: str) -> str:
    """Push the fix to a branch (needs a person's approval)."""
    _log(ctx, f"push {branch}")
    return f"pushed {branch}"


def _counted(ctx: RunContext) -> list[str]:
    return [] if ctx.state.get("counted") else ["nothing was counted"]


def _counts(k: int) -> list[Step]:
    return [[say(f"Counting {i}."), call("count", n=i)] for i in range(1, k + 1)]


SCRIPTS: dict[str, Callable[[dict[str, Any]], list[Step]]] = {
    "success": lambda s: [*_counts(2), [finish("done", "Counted to 2.")]],
    "rejected-then-success": lambda s: [
        [finish("done", "Done already.")],
        *_counts(1),
        [finish("done", "Counted.")],
    ],
    "turns": lambda s: _counts(10),
    "gave_up": lambda s: [*_counts(1), [finish("give_up", "The numbers ran out.")]],
    "no_progress": lambda s: [[call("count", n=7)] for _ in range(4)],
    "question": lambda s: [*_counts(1), [finish("need_help", "Count to 2 or 3?")], *_counts(1)[:0],
                           [call("count", n=3)], [finish("done", "Counted to 3 as asked.")]],
    "approval": lambda s: [[call("push", branch="fix")], *_counts(1), [finish("done", "Pushed, or not.")]],
    "slow": lambda s: [*_counts(6), [finish("done", "Counted slowly.")]],
    "api_down": lambda s: [TransientModelError("overloaded", error_type="overloaded")] * 3,
    "bad_request": lambda s: [ModelError("bad request", error_type="bad_request")],
    "ask-then-count": lambda s: [
        [finish("need_help", "How far?")],
        *_counts(6),
        [finish("done", "Counted to 6.")],
    ],
    "many": lambda s: [*_counts(1), [finish("done", "Counted once.")]],
    "finish-first": lambda s: [*_counts(1), [finish("done", "Counted."), call("count", n=2)]],
    "bench": lambda s: [*_counts(int(s.get("k", 1))), [finish("done", "Counted.")]],
    "bench-ask": lambda s: [
        *_counts(int(s.get("k", 1))),
        [finish("need_help", "Count on?")],
        *_counts(int(s.get("k", 1)))[:2],
        [finish("done", "Counted on as asked.")],
    ],
    "bench-read": lambda s: [
        *([call("read", n=i, size=int(s.get("pad", 0)))] for i in range(1, int(s.get("k", 1)) + 1)),
        [finish("done", "Read.")],
    ],
}  # fmt: skip


def _counting(state: dict[str, Any]) -> Any:
    if state.get("stubborn"):
        return stubborn_count
    return held_count if state.get("hold") else count


def build(state: dict[str, Any]) -> Agent:
    """The test agent for `state`: its script, help policy and budget come from the state."""
    script = SCRIPTS[state["script"]](state)
    help_policy = HelpPolicy(
        wait_seconds=float(state.get("wait", 3600)), on_timeout=state.get("on_timeout", "end")
    )
    return Agent(
        name="counter",
        model=ScriptedModel(script),
        instructions=str(state.get("instructions", "Count as asked.")),
        tools=[_counting(state), read, push],
        verifiers=[_counted],
        budget=Budget(
            max_turns=int(state.get("max_turns", 4)), max_seconds=float(state.get("max_seconds", 120))
        ),
        task_type="counting",
        help=help_policy,
        retry=FAST_RETRY,
        finish_last=bool(state.get("finish_last", True)),
    )


def catalog() -> Catalog:
    """The Temporal tests' catalog (`temporal_agents:catalog`, with `tests/` on the path)."""
    c = Catalog()
    c.register("counter", build, task_types=("batch",))
    return c


def changed_catalog() -> Catalog:
    """The same agent after a deploy: other instructions, a looser budget, an extra verifier."""

    def build_changed(state: dict[str, Any]) -> Agent:
        agent = build({**state, "max_turns": 50, "instructions": "Count, and be quick about it."})
        agent.verifiers = [*agent.verifiers, lambda ctx: []]
        return agent

    c = Catalog()
    c.register("counter", build_changed, task_types=("batch",))
    return c
