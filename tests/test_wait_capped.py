"""A person's wait that expired counts to its deadline, not to when the expiry was processed: the
result's `waiting_seconds`, the `agent.human_wait` span and `agent_human_wait_seconds` agree (decide18).
Time is an injected clock: nothing sleeps."""

from __future__ import annotations

from typing import Any

import pytest

from agent import Agent, Answer, Budget, HelpPolicy
from agent.hooks import HumanWait, RunInfo, RunObserver
from agent.models.scripted import ScriptedModel, finish
from agent.result import StopReason
from telemetry.tracing import person_wait_seconds

T0 = 1_800_000_000.0
WAIT = 600.0


class Clock:
    """Wall and monotonic time that move only when the test says."""

    def __init__(self) -> None:
        self.now = T0

    def time(self) -> float:
        return self.now

    def monotonic(self) -> float:
        return self.now


class Waits:
    """Hooks that keep every human wait the run reports."""

    def __init__(self) -> None:
        self.seen: list[HumanWait] = []

    def run_started(self, info: RunInfo) -> RunObserver:
        waits = self

        class Keep(RunObserver):
            def human_waited(self, wait: HumanWait) -> None:
                waits.seen.append(wait)

        return Keep()


def asking(clock: Clock, hooks: Any, **help: Any) -> Agent:
    model = ScriptedModel([[finish("need_help", "Which month?")], [finish("done", "ok")]])
    policy = HelpPolicy(wait_seconds=WAIT, **help)
    return Agent("asker", model, budget=Budget(max_turns=5), help=policy, clock=clock, hooks=hooks)


@pytest.mark.parametrize("late", [0.0, 1.0, 3600.0, 86400.0 * 30])
def test_an_expired_wait_counts_to_its_deadline_however_late_the_expiry(late: float) -> None:
    clock, hooks = Clock(), Waits()
    agent = asking(clock, hooks)
    asked = agent.run("task")
    assert asked.reason is StopReason.NEED_HELP and asked.snapshot is not None
    clock.now = T0 + WAIT + late
    ended = agent.expire(asked.snapshot)
    assert ended.reason is StopReason.HELP_TIMEOUT
    assert ended.waiting_seconds == WAIT
    [wait] = hooks.seen
    assert wait.outcome == "expired" and wait.seconds == person_wait_seconds(wait) == WAIT


def test_a_policy_that_resumes_after_the_deadline_counts_the_wait_to_it() -> None:
    clock, hooks = Clock(), Waits()
    agent = asking(clock, hooks, on_timeout="resume", default_answer="Use the latest.")
    asked = agent.run("task")
    assert asked.snapshot is not None
    clock.now = T0 + WAIT + 3600
    done = agent.resume(asked.snapshot, Answer("too late"))  # past the deadline: the policy answers
    assert done.reason is StopReason.SUCCESS
    assert done.waiting_seconds == WAIT


def test_an_answer_before_the_deadline_counts_to_the_answer() -> None:
    clock, hooks = Clock(), Waits()
    agent = asking(clock, hooks)
    asked = agent.run("task")
    assert asked.snapshot is not None
    clock.now = T0 + 42
    done = agent.resume(asked.snapshot, Answer("March"))
    assert done.reason is StopReason.SUCCESS and done.waiting_seconds == 42
