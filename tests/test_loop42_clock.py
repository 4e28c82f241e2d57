"""A clock that does not read well is refused before a run begins on it, and one that fails mid-run
ends the run `error` saying so: neither raises out of `run`, nor leaves a result or snapshot that
cannot be read back.

Before, an agent's clock whose `monotonic()` returned text or None, or whose `time()` raised, made
`run` raise a TypeError, an AssertionError or the clock's own exception; one that began to raise
mid-run escaped `run` too (its result was never made); one that began to return NaN left the run's
active seconds NaN, so its result was no JSON and its snapshot could not be read back
(`SnapshotError`: the run stranded). And `resume(..., now=10**400)` raised OverflowError.
"""

from __future__ import annotations

import json
import math
import re

import pytest

from agent import Agent, Answer, ConfigError, Snapshot, StopReason, tool
from agent.clock import SystemClock
from agent.models.scripted import ScriptedModel, call, finish


class Breakable(SystemClock):
    """The system's clock until `broken` is set; then `reading` is what `monotonic()` gives (raised
    when it is an exception)."""

    def __init__(self, reading: object) -> None:
        self.broken = False
        self.reading = reading

    def monotonic(self) -> float:
        if not self.broken:
            return super().monotonic()
        if isinstance(self.reading, BaseException):
            raise self.reading
        return self.reading  # type: ignore[return-value]


class Junk(SystemClock):
    def __init__(self, method: str, reading: object) -> None:
        self.method, self.reading = method, reading

    def time(self) -> float:
        return self._read("time", super().time)

    def monotonic(self) -> float:
        return self._read("monotonic", super().monotonic)

    def _read(self, method: str, real: object) -> float:
        if method != self.method:
            return real()  # type: ignore[operator, no-any-return]
        if isinstance(self.reading, BaseException):
            raise self.reading
        return self.reading  # type: ignore[return-value]


@pytest.mark.parametrize(
    ("method", "reading", "said"),
    [
        ("monotonic", "soon", "clock.monotonic() returned 'soon', not a finite number of seconds"),
        ("monotonic", None, "clock.monotonic() returned None"),
        ("monotonic", math.nan, "clock.monotonic() returned nan"),
        ("time", math.inf, "clock.time() returned inf"),
        ("time", 10**400, "clock.time() returned 1000"),
        ("time", RuntimeError("no time server"), "clock.time() raised RuntimeError: no time server"),
    ],
    ids=["text", "none", "nan", "inf", "huge-int", "raises"],
)
def test_a_clock_that_does_not_read_well_is_refused_before_the_run_begins(
    method: str, reading: object, said: str
) -> None:
    model = ScriptedModel([[finish("done", "ok")]])
    agent = Agent(name="timed", model=model, clock=Junk(method, reading))

    with pytest.raises(ConfigError, match=rf"agent 'timed': {re.escape(said)}.*SystemClock\(\)"):
        agent.run("go")
    assert model.requests == []  # nothing was asked


def _breaking_run(reading: object, ask: bool = False) -> tuple[Agent, Breakable]:
    clock = Breakable(reading)

    @tool
    def work() -> str:
        """Work a while (and the clock breaks meanwhile)."""
        clock.broken = True
        return "worked"

    last = (
        [[finish("need_help", "which branch?")], [finish("done", "ok")]] if ask else [[finish("done", "ok")]]
    )
    agent = Agent(name="timed", model=ScriptedModel([[call("work")], *last]), tools=[work], clock=clock)
    return agent, clock


def test_a_clock_that_raises_mid_run_ends_the_run_as_error_saying_so() -> None:
    agent, _ = _breaking_run(OSError("the clock device is gone"))

    result = agent.run("go")  # raised OSError before

    assert (result.reason, result.error_type) == (StopReason.ERROR, "clock_failed")
    assert result.note == (
        "The agent's clock failed mid-run: clock.monotonic() raised OSError: the clock device is gone"
    )
    assert result.turns == 1
    json.dumps(result.to_dict(), allow_nan=False)


def test_a_clock_that_turns_to_text_mid_run_ends_the_run_as_error_saying_so() -> None:
    agent, _ = _breaking_run("later")

    result = agent.run("go")  # raised TypeError before

    assert (result.reason, result.error_type) == (StopReason.ERROR, "clock_failed")
    assert "clock.monotonic() returned 'later'" in result.note


def test_a_clock_that_turns_to_nan_mid_run_leaves_a_result_and_snapshot_that_read_back() -> None:
    agent, clock = _breaking_run(math.nan, ask=True)

    result = agent.run("go")

    assert result.reason is StopReason.NEED_HELP and result.snapshot is not None
    assert math.isfinite(result.active_seconds)
    json.dumps(result.to_dict(), allow_nan=False)
    snapshot = Snapshot.from_json(result.snapshot.to_json())  # SnapshotError before: active seconds NaN
    clock.broken = False
    resumed = agent.resume(snapshot, Answer("main"))
    assert resumed.reason is StopReason.SUCCESS


@pytest.mark.parametrize("now", [10**400, -(10**400)], ids=["huge", "huge-negative"])
def test_a_resume_at_a_time_no_float_holds_is_a_config_error(now: int) -> None:
    agent = Agent(
        name="asker", model=ScriptedModel([[finish("need_help", "which?")], [finish("done", "ok")]])
    )
    asked = agent.run("go")
    assert asked.snapshot is not None
    with pytest.raises(ConfigError, match="now must be a finite number of seconds"):
        agent.resume(asked.snapshot, Answer("that one"), now=now)  # OverflowError before
