"""An observer whose attributes raise when read is a failing hook, logged; the run goes on.

The guard around a user's observer read its `ids_later` outside its `try`: an observer whose
attribute access raises (a `__getattr__` or property with a bug, a proxy to a closed exporter) made
`Agent.run` raise before the run began. Telemetry failing never fails a run.
"""

from __future__ import annotations

from typing import Any

import pytest

from agent import Agent, StopReason, tool
from agent.hooks import RunInfo
from agent.models.scripted import ScriptedModel, call, finish


class Broken(Exception):
    pass


class Unreadable:
    """An observer every attribute of which raises when read."""

    def __getattribute__(self, name: str) -> Any:
        if name.startswith("__"):
            return object.__getattribute__(self, name)
        raise Broken(name)


class Hooks:
    def run_started(self, info: RunInfo) -> Any:
        return Unreadable()


@tool
def look() -> str:
    """Look."""
    return "seen"


def test_an_observer_whose_attributes_raise_does_not_fail_the_run(caplog: pytest.LogCaptureFixture) -> None:
    model = ScriptedModel([[call("look")], [finish("done", "ok")]])

    result = Agent(name="a", model=model, tools=[look], hooks=Hooks()).run("t")  # type: ignore[list-item]

    assert (result.reason, result.turns) == (StopReason.SUCCESS, 2)
    assert "telemetry hook ids_later failed" in caplog.text
