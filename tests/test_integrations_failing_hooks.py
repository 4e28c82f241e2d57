"""Hooks and verifiers that fail in every way they can never leave a foreign run without its stop."""

from __future__ import annotations

from typing import Any

import pytest
from agents import Agent as OAAgent
from agents import set_tracing_disabled
from agents.testing.model import ModelStep, ScriptedModel, assistant_message
from integrations_support import graph_of, rigged, says
from pydantic_ai import Agent as PAIAgent
from pydantic_ai.models.test import TestModel

from agent import StopReason, observe_run
from agent.hooks import RunObserver
from agent.integrations import langgraph as lg
from agent.integrations import openai_agents as oa
from agent.integrations import pydantic_ai as pai


class NoObserver:
    """`run_started` returns nothing (a hook that forgot its return)."""

    def run_started(self, info: Any) -> Any:
        return None


class Unreadable:
    """An observer every attribute of which raises, `trace_id` included."""

    def run_started(self, info: Any) -> Any:
        class Broken:
            def __getattr__(self, name: str) -> Any:
                raise RuntimeError(f"telemetry down: {name}")

        return Broken()


class OddIds:
    """An observer whose ids are no strings."""

    def run_started(self, info: Any) -> Any:
        observer = RunObserver()
        observer.trace_id = 42  # type: ignore[assignment]
        return observer


def home_grown(hooks: Any) -> Any:
    with observe_run(hooks, agent="raw_loop", task_type="t") as run, run.turn(), run.model_call() as call:
        call.reply(input_tokens=3, output_tokens=1, text="done")
    return run.result


RUNS = {
    "pydantic_ai": lambda hooks: pai.run(PAIAgent(TestModel(), name="p"), "x", hooks=hooks, task_type="t"),
    "openai_agents": lambda hooks: oa.run(
        OAAgent(name="o", model=ScriptedModel([ModelStep(output=[assistant_message("done")])])),
        "x",
        hooks=hooks,
        task_type="t",
    ),
    "langgraph": lambda hooks: lg.run(graph_of([says("done")]), {"messages": [("user", "x")]}, hooks=hooks),
    "home_grown": home_grown,
}


@pytest.fixture(autouse=True)
def no_openai_trace_export() -> Any:
    set_tracing_disabled(True)
    yield
    set_tracing_disabled(False)


@pytest.mark.parametrize("hooks", [NoObserver, Unreadable, OddIds])
@pytest.mark.parametrize("framework", sorted(RUNS))
def test_a_hook_that_returns_no_observer_or_a_broken_one_never_fails_the_run(
    framework: str, hooks: type
) -> None:
    """Such hooks raised out of the integration before the framework ran (reading the observer's
    `trace_id`): the caller's run failed for its telemetry."""
    res = RUNS[framework](hooks())
    assert res is not None and res.reason is StopReason.SUCCESS
    assert res.trace_id is None


def interrupted(ctx: Any) -> list[str]:
    raise KeyboardInterrupt


def exiting(ctx: Any) -> list[str]:
    raise SystemExit(3)


@pytest.mark.parametrize(
    ("verifier", "reason", "error_type"),
    [(interrupted, StopReason.CANCELLED, None), (exiting, StopReason.ERROR, "verifier_error")],
)
@pytest.mark.parametrize("framework", ["pydantic_ai", "home_grown"])
def test_a_verifier_interrupted_or_exiting_still_ends_the_foreign_run(
    framework: str, verifier: Any, reason: StopReason, error_type: str | None
) -> None:
    """As Endstate's own runs: a `KeyboardInterrupt` in a verifier is `cancelled`, a `SystemExit`
    a verifier error. Such an exception went up out of the run's end, the run left without a stop."""
    with rigged() as rig:
        if framework == "pydantic_ai":
            agent: PAIAgent[None, str] = PAIAgent(TestModel(), name="checked")
            res = pai.run(agent, "x", hooks=rig.hooks, task_type="t", verifiers=[verifier])
        else:
            with observe_run(rig.hooks, agent="checked", task_type="t", verifiers=[verifier]) as run:
                pass
            res = run.result
        assert res is not None and (res.reason, res.error_type) == (reason, error_type)
        assert rig.stops("checked", "t", str(reason)) == 1
