"""The agent of test_promise_crash_property: the property test's turns, run by a real process that
may die (`os._exit`, as kill -9: nothing flushed, no handler) when its Nth tool call or model call
begins. Every tool call made is appended to the file `$PROMISE_RAN`, so calls made in processes that
died still count.

Run as a script: `python promise_crash_agents.py URL start|resume|recover RUN_ID [ANSWER [APPROVED]]`;
prints the segment's result as JSON (nothing when the process died).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from typing import Any

from agent import Agent, Budget, tool
from agent.durable.runner import Catalog, Runner
from agent.durable.store import open_store
from agent.models.scripted import ScriptedModel

DIE_AT_TOOL = "PROMISE_DIE_AT_TOOL"  # die as this process's Nth tool call begins (1-based)
DIE_AT_MODEL = "PROMISE_DIE_AT_MODEL"  # die in this process's Nth model call
RAN = "PROMISE_RAN"
URL = "PROMISE_URL"  # the store, for the model to see what landed
RUN_ID = "r1"
_counts = {"tool": 0, "model": 0}


def _maybe_die(kind: str, variable: str) -> None:
    _counts[kind] += 1
    if os.environ.get(variable) == str(_counts[kind]):
        os._exit(9)


def _ran(what: str) -> None:
    with open(os.environ[RAN], "a") as f:
        f.write(what + "\n")


@tool
def echo(n: int) -> str:
    """Say a number back; 3 fails (an error result)."""
    _maybe_die("tool", DIE_AT_TOOL)
    _ran(f"echo {n}")
    if n == 3:
        raise ValueError("three is not echoed")
    return f"echo {n}"


@tool(needs_approval=True)
def approve(n: int) -> str:
    """Do something a person must approve."""
    _maybe_die("tool", DIE_AT_TOOL)
    _ran(f"approve {n}")
    return f"approved action {n}"


class Dying(ScriptedModel):
    """A scripted model whose Nth call in this process kills it, once the store holds every entry the
    request was made from: the runner writes a turn's checkpoint behind the loop, during the next
    model call, so a kill in its first milliseconds loses that turn's results, which then run again
    (as a kill between a call's result and its checkpoint does: test_recovery)."""

    async def complete(self, request: Any) -> Any:
        if os.environ.get(DIE_AT_MODEL) == str(_counts["model"] + 1) and _counts["model"]:  # a turn before
            await asyncio.to_thread(_landed, len(request.journal))
        _maybe_die("model", DIE_AT_MODEL)
        return await super().complete(request)


def _landed(entries: int) -> None:
    """Wait (a minute at most) until the store holds `entries` journal entries of the run: fails if not."""
    store = open_store(os.environ[URL])
    try:
        for _ in range(1200):
            record = store.get(RUN_ID)
            if record is not None and (record.journal_length or 0) >= entries:
                return
            time.sleep(0.05)
        raise AssertionError(f"the store never held the {entries} entries of the model's request")
    finally:
        store.close()


def build(state: dict[str, Any]) -> Agent:
    from test_journal_property import CLOCK, steps_of

    return Agent(
        "prop",
        Dying(steps_of(state["turns"])),
        tools=[echo, approve],
        budget=Budget(max_turns=50, max_seconds=None),
        clock=CLOCK,
    )


def catalog() -> Catalog:
    c = Catalog()
    c.register("prop", build)
    return c


def main(argv: list[str]) -> None:
    url, how, run_id, *rest = argv
    store = open_store(url)
    from test_journal_property import CLOCK

    runner = Runner(store, catalog(), clock=CLOCK)  # the in-memory run's: the journals compare whole
    try:
        if how == "start":
            coro: Any = runner.start("prop", "do the turns", state=json.loads(rest[0]), run_id=run_id)
        elif how == "resume":
            answer, approved = json.loads(rest[0]), json.loads(rest[1])
            coro = runner.resume(run_id, answer, approved=approved)
        else:
            coro = runner.recover()
        done = asyncio.run(coro)
        result = done[0] if isinstance(done, list) else done
        print(json.dumps({"owner": runner.owner, **result.to_dict()}))
    finally:
        store.close()


if __name__ == "__main__":
    main(sys.argv[1:])
