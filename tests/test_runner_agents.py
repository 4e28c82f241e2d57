"""Agents for the runner and recovery tests (helpers; no tests here).

`catalog()` holds the `counter` agent: each `count(n)` call appends `n` to
`calls.txt` in the run's folder, so a test can see that no call ran twice.
`hang()` leaves a `hanging` file, then blocks while `hang.flag` exists in the
folder (a process is killed there); `crash()` makes the worker "die" (`Crash`
raised from the loop, not the tool) right after its first call; `slow(seconds)`
sleeps, then blocks while `slow.flag` exists (once `state["hold_at"]` numbers were
counted); `deploy(version)` needs approval, appends `version` to `deploys.txt` and
then blocks while `deploy.flag` exists.
Subprocesses load the catalog with `--catalog test_runner_agents:catalog` and `tests/` on PYTHONPATH.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import resource
import time
from pathlib import Path
from typing import Any

from agent import Agent, Budget, HelpPolicy, tool
from agent.durable.runner import Catalog, Runner
from agent.durable.store import open_store
from agent.durable.store._sql import TABLE, SqlStore
from agent.hooks import RunInfo, RunObserver
from agent.models.base import ToolCall
from agent.models.scripted import ScriptedModel, call, finish
from agent.tools import ToolOutcome

MARKUP = """<script>document.title='pwned'</script><img src=x onerror="document.title='pwned'"> & \"q\""""
SCRIPTS: dict[str, list[Any]] = {
    "plain": [[call("count", n=1)], [call("count", n=2)], [finish("done", "counted")]],
    "crash": [
        [call("count", n=1)],
        [call("count", n=2)],
        [call("count", n=3), call("crash")],
        [call("count", n=4)],
        [finish("done", "counted to 4")],
    ],
    "hang": [
        [call("count", n=1)],
        [call("count", n=2)],
        [call("count", n=3), call("hang"), call("count", n=4)],
        [call("count", n=5)],
        [finish("done", "counted to 5")],
    ],
    "hang-first": [[call("hang")], [call("count", n=1)], [finish("done", "counted")]],
    "slow": [[call("count", n=i), call("slow", seconds=0.3 + i / 1000)] for i in range(1, 9)]
    + [[finish("done", "slow")]],
    "long": [[call("count", n=1)], [call("hang")], [finish("done", "one long call")]],
    "ask": [
        [call("count", n=1)],
        [finish("need_help", "Which number next?")],
        [call("count", n=2)],
        [finish("done", "ok")],
    ],
    "approve": [[call("count", n=1)], [call("wire", amount=7)], [finish("done", "wired")]],
    "ask-twice": [
        [call("count", n=1)],
        [finish("need_help", "First question?")],
        [call("count", n=2)],
        [finish("need_help", "Second question?")],
        [finish("done", "asked twice")],
    ],
    "approve-twice": [[call("wire", amount=7)], [call("wire", amount=700)], [finish("done", "wired")]],
    "deploy": [[call("deploy", version="v2")], [finish("done", "deployed")]],
    "full": [[call("count", n=1)], [call("fill_disk")], [call("count", n=2)], [finish("done", "counted")]],
    "markup": [  # what a model may write: markup in a question and in a pending call's arguments
        [finish("need_help", MARKUP)],
        [call("deploy", version=MARKUP)],
        [finish("done", "ok")],
    ],
}


class Crash(BaseException):
    """Stands in for a process dying in the middle of a turn."""


DYING = "the worker dies now"


class _PullThePlug(RunObserver):
    """Raises `Crash` from the loop right after `crash()` answered `DYING`.

    A tool's own exceptions (`BaseException` too) are results for the model, so
    an in-process stand-in for a dying worker is raised by a hook instead: the
    guard around hooks catches `Exception` only, as it would never see a kill.
    """

    def tool_ended(self, call: ToolCall, outcome: ToolOutcome) -> None:
        if call.name == "crash" and outcome.text == DYING:
            raise Crash()


class DyingHooks:
    """Hooks whose observer pulls the plug (see `_PullThePlug`)."""

    def run_started(self, info: RunInfo) -> RunObserver:
        return _PullThePlug()


def counted(folder: Path) -> list[int]:
    path = folder / "calls.txt"
    return [int(x) for x in path.read_text().split()] if path.exists() else []


def deployed(folder: Path) -> list[str]:
    path = folder / "deploys.txt"
    return path.read_text().split() if path.exists() else []


@tool
def fill_disk() -> str:
    """The disk fills up: from now on no file of this process grows past its first byte."""
    resource.setrlimit(resource.RLIMIT_FSIZE, (1, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))
    return "the disk is full"


def make_counter(state: dict[str, Any], help: HelpPolicy | None = None) -> Agent:
    folder = Path(state["dir"])

    @tool
    def count(n: int) -> str:
        """Count one number."""
        with (folder / "calls.txt").open("a") as f:
            f.write(f"{n}\n")
        return f"counted {n}"

    @tool(timeout=600)
    def hang() -> str:
        """Block while hang.flag exists."""
        (folder / "hanging").touch()
        while (folder / "hang.flag").exists():
            time.sleep(0.05)
        return "released"

    @tool
    def crash() -> str:
        """Die the first time."""
        marker = folder / "crashed"
        if not marker.exists():
            marker.write_text("1")
            return DYING
        return "no crash this time"

    @tool
    def slow(seconds: float) -> str:
        """Sleep; then, once `state["hold_at"]` numbers were counted (1 if unset), wait while
        slow.flag exists (a test holds the run inside a turn until its shutdown has begun)."""
        time.sleep(seconds)
        _hold(state, folder)
        return "slept"

    @tool(needs_approval=True)
    def wire(amount: int) -> str:
        """Send money (needs approval)."""
        with (folder / "wired.txt").open("a") as f:
            f.write(f"{amount}\n")
        return f"wired {amount}"

    @tool(needs_approval=True, timeout=600)
    def deploy(version: str) -> str:
        """Deploy a version (needs approval); blocks while deploy.flag exists."""
        with (folder / "deploys.txt").open("a") as f:
            f.write(f"{version}\n")
        while (folder / "deploy.flag").exists():
            time.sleep(0.05)
        return f"deployed {version}"

    return Agent(
        name="counter",
        model=ScriptedModel(SCRIPTS[state["script"]]),
        tools=[count, hang, crash, slow, wire, deploy, fill_disk],
        budget=Budget(max_turns=int(state.get("max_turns", 20)), max_seconds=120),
        task_type="counting",
        help=help or HelpPolicy(wait_seconds=float(state.get("wait", 3600))),
        hooks=DyingHooks(),
    )


def _timeout_resumes(state: dict[str, Any]) -> Agent:
    return make_counter(state, HelpPolicy(wait_seconds=0.0, on_timeout="resume"))


def _hold(state: dict[str, Any], folder: Path) -> None:
    """Once `state["hold_at"]` numbers were counted (1 if unset), block while slow.flag exists."""
    if len(counted(folder)) >= int(state.get("hold_at", 1)):
        _block_while(folder / "slow.flag")


def _block_while(flag: Path) -> None:
    while flag.exists():
        time.sleep(0.05)


def kill_points(state: dict[str, Any]) -> Agent:
    """A counter that stops dead where a test kills it: in the third model call (while
    `model.flag` exists; it writes `asked.txt` first) or after count(3) returned but before
    its result is recorded (while `between.flag` exists; `handed.flag` for count(2)), or when the
    run has ended but is not yet recorded (while `ended.flag` exists)."""
    folder = Path(state["dir"])

    def third_reply(request: Any) -> list[Any]:
        return [call("count", n=3), call("count", n=4)]

    def fingerprint(ctx: Any) -> str:
        if ctx.calls and ctx.calls[-1].arguments == {"n": 2}:
            _block_while(folder / "handed.flag")
        if ctx.calls and ctx.calls[-1].arguments == {"n": 3}:
            _block_while(folder / "between.flag")
        return ctx.calls[-1].result if ctx.calls else ""

    agent = make_counter({**state, "script": "plain"})
    steps = [[call("count", n=1)], [call("count", n=2)], third_reply, [finish("done", "counted to 4")]]
    model = WaitingModel(steps, folder / "model.flag")
    hooks = EndingHooks(folder / "ended.flag")
    return dataclasses.replace(agent, name="kill-points", model=model, fingerprint=fingerprint, hooks=hooks)


def said(path: Path, text: str) -> None:
    """Write `path` whole at once: a test that waits for it to exist reads all of `text` (a file being
    written exists, empty, before its text is in: a test killed the process there and read '')."""
    part = path.with_name(path.name + ".part")
    part.write_text(text)
    os.replace(part, path)


class _EndPoint(_PullThePlug):
    """Stops dead when the segment has ended, before the runner records it (while `flag` exists;
    it writes `ended.txt` first)."""

    def __init__(self, flag: Path) -> None:
        self.flag = flag

    def run_ended(self, result: Any) -> None:
        if self.flag.exists():
            said(self.flag.parent / "ended.txt", str(result.reason))
            _block_while(self.flag)


class EndingHooks:
    """Hooks whose observer stops between the segment's end and its record (see `_EndPoint`)."""

    def __init__(self, flag: Path) -> None:
        self.flag = flag

    def run_started(self, info: RunInfo) -> RunObserver:
        return _EndPoint(self.flag)


class WaitingModel(ScriptedModel):
    """Its third call waits while `flag` exists, off the event loop as a call over the network does
    (the loop goes on meanwhile: the runner's writer thread saves the turn before it)."""

    def __init__(self, steps: list[Any], flag: Path) -> None:
        super().__init__(steps)
        self.flag = flag

    async def complete(self, request: Any) -> Any:
        if request.replies == 2:
            said(self.flag.parent / "asked.txt", "the third model call")
            await asyncio.to_thread(_block_while, self.flag)
        return await super().complete(request)


def _configured(state: dict[str, Any]) -> Agent:
    """A counter whose build reads a config file: gone, the run cannot be rebuilt."""
    Path(state["config"]).read_text()
    return make_counter(state)


def catalog() -> Catalog:
    c = Catalog()
    c.register("counter", make_counter)
    c.register("configured-counter", _configured)
    c.register("kill-points", kill_points)
    c.register("patient-counter", _timeout_resumes)
    return c


def counter_state(folder: Path, script: str, **extra: Any) -> dict[str, Any]:
    folder.mkdir(parents=True, exist_ok=True)
    return {"dir": str(folder), "script": script, **extra}


def env_with_tests() -> dict[str, str]:
    """The environment for a subprocess that loads this catalog."""
    tests = str(Path(__file__).parent)
    path = os.environ.get("PYTHONPATH", "")
    return {**os.environ, "PYTHONPATH": f"{tests}{os.pathsep}{path}" if path else tests}


def outlive_leases(store_url: str, seconds: float, *owners: str) -> int:
    """`seconds` pass for the leases of `owners` (workers that died): each moves that far back on the
    store's own table, as the store's clock, which judges leases, would have moved on; no test waits
    for it. The number of leases moved. Their length is forgotten too (as a lease an Endstate before
    schema 13 wrote): a service's sweep, which saw none of that time pass by its own monotonic clock,
    then waits its own lease before it takes one, not a dead worker's far longer one (probe39b)."""
    store = open_store(store_url)
    try:
        assert isinstance(store, SqlStore)
        marks = ", ".join("?" for _ in owners)
        sql = (
            f"UPDATE {TABLE} SET lease_until = lease_until - ?, lease_seconds = NULL WHERE owner IN ({marks})"
        )
        return store._count(sql, (seconds, *owners))
    finally:
        store.close()


ELSEWHERE_LEASE = 600.0  # seconds: the lease of `a_run_whose_worker_died`, run out by `lease_ran_out`


def a_run_whose_worker_died(store_url: str, folder: Path) -> Any:
    """The job of a `plain` counter run begun on the store by a worker of another host, which then
    died: its lease stays good until `lease_ran_out`, and then a live runner may take the run over."""
    store = open_store(store_url)
    try:
        elsewhere = Runner(
            store, catalog(), lease_seconds=ELSEWHERE_LEASE, owner="another-host:4242:0badc0de"
        )
        return elsewhere.begin("counter", "count", state=counter_state(folder, "plain"))
    finally:
        store.close()


def lease_ran_out(store_url: str, job: Any) -> None:
    """The lease of `a_run_whose_worker_died`'s dead worker runs out, unrenewed: its length and a
    second pass for it by the store's clock (`outlive_leases`)."""
    assert outlive_leases(store_url, ELSEWHERE_LEASE + 1, job.record.owner) == 1
