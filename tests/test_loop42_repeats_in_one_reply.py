"""A reply that makes one call hundreds of times runs it only until the run is stuck on it.

The progress check comes at a turn's end, so a reply holding 500 identical `charge(amount=5)` calls
ran all 500 (500 side effects) before the run stopped `no_progress` ("charge called 500 times"),
although it was stuck, by the rule the detector applies, from the third. Now a call the run is
stuck on already (made `max_repeats` times in a row with no change in state) is answered "Not run"
when the reply makes it again; the stop is the same. Calls that differ (pages 1, 2, 3), calls whose
state changes between them (the agent's fingerprint), and a `finish` after them go on as before.
"""

from __future__ import annotations

from agent import Agent, ProgressDetector, StopReason, tool
from agent.context import RunContext
from agent.journal import Result
from agent.models.scripted import ScriptedModel, call, finish


def _ledger() -> tuple[list[int], object]:
    charged: list[int] = []

    @tool
    def charge(amount: int) -> str:
        """Charge the card."""
        charged.append(amount)
        return "charge declined: card frozen"

    return charged, charge


def _results(model: ScriptedModel) -> list[Result]:
    return [e for e in model.requests[-1].journal if isinstance(e, Result)] if model.requests else []


def test_a_call_repeated_hundreds_of_times_in_one_reply_runs_until_the_run_is_stuck_on_it() -> None:
    charged, charge = _ledger()
    model = ScriptedModel([[call("charge", amount=5) for _ in range(500)]])
    agent = Agent(name="biller", model=model, tools=[charge])  # type: ignore[list-item]

    result = agent.run("charge the customer")

    assert result.reason is StopReason.NO_PROGRESS
    assert result.note == "charge called 3 times with the same arguments and no change in state"
    assert charged == [5, 5, 5]  # 500 before
    assert "Tool calls: charge x3." in result.summary


def test_the_calls_not_run_are_answered_as_such_and_a_later_finish_is_still_judged() -> None:
    charged, charge = _ledger()
    model = ScriptedModel(
        [[call("charge", amount=5) for _ in range(6)] + [finish("done", "tried")], [finish("done", "ok")]]
    )
    seen: list[list[Result]] = []

    def record(ctx: RunContext) -> list[str]:
        seen.append([e for e in ctx.journal if isinstance(e, Result)])
        return []

    result = Agent(name="biller", model=model, tools=[charge], verifiers=[record]).run("charge")  # type: ignore[list-item]

    assert (result.reason, result.output) == (StopReason.SUCCESS, "tried")  # finish judged, as before
    assert charged == [5, 5, 5]
    [results] = seen
    assert [r.text.startswith("Not run: charge was called 3 times in a row") for r in results] == [
        False, False, False, True, True, True,
    ]  # fmt: skip


def test_calls_that_differ_or_change_the_state_all_run() -> None:
    pages: list[int] = []

    @tool
    def page(n: int) -> str:
        """Read a page."""
        pages.append(n)
        return "the same text on every page"

    model = ScriptedModel([[call("page", n=i) for i in range(40)], [finish("done", "read")]])
    assert Agent(name="reader", model=model, tools=[page]).run("read").reason is StopReason.SUCCESS
    assert pages == list(range(40))

    lines: list[str] = []

    @tool
    def append() -> str:
        """Append a line to the log."""
        lines.append("x")
        return "ok"

    model = ScriptedModel([[call("append") for _ in range(10)], [finish("done", "written")]])
    agent = Agent(
        name="writer",
        model=model,
        tools=[append],
        fingerprint=lambda ctx: str(len(lines)),  # each call changes the state
        progress=lambda: ProgressDetector(max_repeats=3),
    )
    assert agent.run("write").reason is StopReason.SUCCESS
    assert len(lines) == 10


def test_a_history_whose_worker_ran_every_repeat_still_runs_them_all() -> None:
    """Where `skip_repeats` says no (a Temporal history whose worker, before this rule, ran every repeat:
    its replay must run them as it ran), each repeat runs, and the run still stops `no_progress`."""
    charged, charge = _ledger()
    model = ScriptedModel([[call("charge", amount=5) for _ in range(5)]])
    agent = Agent(name="biller", model=model, tools=[charge], skip_repeats=lambda: False)  # type: ignore[list-item]

    result = agent.run("charge the customer")

    assert result.reason is StopReason.NO_PROGRESS
    assert charged == [5] * 5
    assert result.note == "charge called 5 times with the same arguments and no change in state"
