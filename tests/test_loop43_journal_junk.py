"""A tool cannot put into the run's journal what no snapshot can hold.

`ctx.journal.append` took anything: a tool that appended a string let the run suspend (need_help)
with a snapshot whose `to_json` raised KeyError, so the suspended run could be neither saved nor
resumed. Now `Journal.append` refuses what is no journal entry (the tool gets the error as its
result), and the run suspends with a snapshot that resumes.
"""

from __future__ import annotations

from agent import Agent, StopReason, tool
from agent.context import RunContext
from agent.journal import Result
from agent.models.scripted import ScriptedModel, call, finish
from agent.snapshot import Snapshot


@tool
def scribble(ctx: RunContext) -> str:
    """Write into the journal."""
    ctx.journal.append("a note of my own")  # type: ignore[arg-type]
    return "written"


def test_junk_appended_to_the_journal_is_refused_and_the_suspended_run_resumes() -> None:
    model = ScriptedModel([[call("scribble")], [finish("need_help", "go on?")], [finish("done", "ok")]])
    agent = Agent(name="a", model=model, tools=[scribble])  # type: ignore[list-item]

    suspended = agent.run("t")

    assert suspended.reason is StopReason.NEED_HELP and suspended.snapshot is not None
    [res] = [e for e in model.requests[-1].journal if isinstance(e, Result)]
    assert res.is_error and "journal entry" in res.text and "str" in res.text
    resumed = agent.resume(Snapshot.from_json(suspended.snapshot.to_json()), "yes")
    assert resumed.reason is StopReason.SUCCESS
