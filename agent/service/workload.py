"""`--demo-workload`: the seed example agents, played offline again and again so a fresh stack has data.

Each round starts every scripted scenario. A question or a pending tool call
waits `answer_after` seconds (so the help gauges and the inbox show it), then
the scenario's person answers, approves or denies it, unless someone in the
inbox did first; a run cancelled by its (simulated) shutdown is resumed; an
unanswered one is left to the deadline sweep. At start it follows up the demo
runs an earlier process left waiting, so a restart leaves nothing pending.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from agent.durable.runner import Runner
from agent.durable.store import RunStatus
from agent.errors import EndstateError
from agent.examples.scenarios import SCENARIOS, FollowUp, Scenario
from agent.result import RunResult, StopReason

log = logging.getLogger("endstate.workload")

T = TypeVar("T")
OffLoop = Callable[..., Awaitable[Any]]  # `Service.off_loop`: `await off_loop(call, *args, **kwargs)`


async def _here(call: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """A call made where it is awaited: for a workload run outside a service."""
    return call(*args, **kwargs)


class DemoWorkload:
    """Plays the scenarios through a runner until stopped."""

    def __init__(self, runner: Runner, interval: float = 15.0, answer_after: float = 20.0) -> None:
        self.runner = runner
        self.interval = interval
        self.answer_after = answer_after
        self._stop = asyncio.Event()
        self._later: set[asyncio.Task[None]] = set()
        self._off_loop: OffLoop = _here
        self.rounds = 0

    def stop(self) -> None:
        self._stop.set()

    async def run(self, off_loop: OffLoop | None = None) -> None:
        """Rounds of every scenario, `interval` seconds apart, until `stop` (or until cancelled).

        `off_loop` makes the store's calls (starts, claims, reads), as the service's own: on its
        thread (`Service.off_loop`), so a store waiting for a lock never holds the event loop; the
        catalog's prepare and build run on threads of their own (`Runner.abegin`, `aclaim`)."""
        self._off_loop = off_loop or _here
        try:
            await self._adopt_left_over()
            while not self._stop.is_set():
                for scenario in SCENARIOS:
                    if self._stop.is_set():
                        break
                    await self._play(scenario)
                self.rounds += 1
                await self._sleep(self.interval)
        finally:  # the follow-ups not yet due are dropped: their runs wait, or the sweep ends them
            later = list(self._later)
            for task in later:
                task.cancel()
            await asyncio.gather(*later, return_exceptions=True)

    async def _adopt_left_over(self) -> None:
        """Follow up the demo runs an earlier process left waiting (a restart must not leave
        requests pending for good: the stale-help alert would page about the demo itself)."""
        by_name = {s.name: s for s in SCENARIOS}
        for status in (RunStatus.WAITING, RunStatus.CANCELLED):
            for record in await self._off_loop(self.runner.store.list_runs, status, limit=None):
                scenario = by_name.get(str(record.state.get("scenario")))
                if scenario is None or scenario.follow_up is None or record.interrupted:
                    continue  # not the workload's, or one recovery continues
                self._later_follow_up(record.run_id, scenario.follow_up)

    def _later_follow_up(self, run_id: str, action: FollowUp) -> None:
        task = asyncio.create_task(self._follow_up(run_id, action))
        self._later.add(task)
        task.add_done_callback(self._later.discard)

    async def _play(self, scenario: Scenario) -> None:
        try:
            state = {"scenario": scenario.name}
            job = await self.runner.abegin(scenario.agent, scenario.task, state=state, calls=self._off_loop)
        except EndstateError:
            log.exception("the demo workload could not start %s", scenario.name)
            return
        result = await _settled(self.runner.spawn(job))
        if result is not None and scenario.follow_up and result.reason in _WAITS:
            self._later_follow_up(result.run_id, scenario.follow_up)

    async def _follow_up(self, run_id: str, action: FollowUp) -> None:
        """What the scenario's person does, a little later (expiry is the sweeper's)."""
        if action.action == "expire":
            return
        await self._sleep(self.answer_after * random.uniform(0.5, 1.5))
        if self._stop.is_set():
            return
        try:
            job = await self.runner.aclaim(run_id, *_claimed_with(action), calls=self._off_loop)
        except EndstateError as exc:  # answered in the inbox meanwhile, or expired
            log.info("demo follow-up of run %s skipped: %s", run_id, exc)
            return
        self.runner.spawn(job)

    async def _sleep(self, seconds: float) -> None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._stop.wait(), timeout=seconds)


_WAITS = (StopReason.NEED_HELP, StopReason.CANCELLED)


def _claimed_with(action: FollowUp) -> tuple[str | None, bool | None]:
    """The answer and approval a follow-up claims its run with (a cancelled run's: none)."""
    if action.action == "answer":
        return action.text, None
    if action.action in ("approve", "deny"):
        return action.text or None, action.action == "approve"
    return None, None


async def _settled(task: asyncio.Task[Any]) -> RunResult | None:
    """The task's result, without cancelling it if the caller is cancelled."""
    await asyncio.wait({task})
    return task.result() if not task.cancelled() else None
