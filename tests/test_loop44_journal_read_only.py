"""A tool, a verifier or a hook cannot change the run's journal except through `Journal.append`.

Only `Journal.append` checked entries: a tool's `ctx.journal.entries.append("junk")` let the run suspend
with a snapshot that could not be resumed (KeyError), `ctx.journal.entries.clear()` (or `del`, or
`ctx.journal = Journal()`) dropped the task and every reply from the run's snapshot. Now the entries
refuse changes and the journal cannot be replaced: the tool gets the error as its result, saying to use
`ctx.journal.append`, and the suspended run keeps its whole history and resumes.
"""

from __future__ import annotations

import copy
import pickle
from collections.abc import Callable

import pytest

from agent import Agent, StopReason, tool
from agent.context import RunContext
from agent.hooks import RunInfo, RunObserver
from agent.journal import Journal, Note, Result, Task
from agent.models.scripted import ScriptedModel, call, finish
from agent.result import RunResult
from agent.snapshot import Snapshot
from agent.tools import Tool

MEDDLINGS: dict[str, Callable[[RunContext], object]] = {
    "append junk": lambda ctx: ctx.journal.entries.append("junk"),  # type: ignore[attr-defined]
    "append an entry": lambda ctx: ctx.journal.entries.append(Note("mine")),  # type: ignore[attr-defined]
    "clear": lambda ctx: ctx.journal.entries.clear(),  # type: ignore[attr-defined]
    "pop": lambda ctx: ctx.journal.entries.pop(),  # type: ignore[attr-defined]
    "del an entry": lambda ctx: ctx.journal.entries.__delitem__(0),  # type: ignore[attr-defined]
    "set an entry": lambda ctx: ctx.journal.entries.__setitem__(0, Task("other")),  # type: ignore[attr-defined]
    "extend": lambda ctx: ctx.journal.entries.extend([Note("mine")]),  # type: ignore[attr-defined]
    "insert": lambda ctx: ctx.journal.entries.insert(0, Note("mine")),  # type: ignore[attr-defined]
    "reverse": lambda ctx: ctx.journal.entries.reverse(),  # type: ignore[attr-defined]
    "replace the entries": lambda ctx: setattr(ctx.journal, "entries", []),
    "replace the journal": lambda ctx: setattr(ctx, "journal", Journal()),
}


def _meddler(how: Callable[[RunContext], object]) -> Tool:
    @tool
    def meddle(ctx: RunContext) -> str:
        """Change the run's journal behind its back."""
        how(ctx)
        return "changed"

    return meddle  # type: ignore[return-value]


@pytest.mark.parametrize("how", list(MEDDLINGS))
def test_a_tool_changing_the_journal_gets_an_error_and_the_run_keeps_its_history(how: str) -> None:
    model = ScriptedModel([[call("meddle")], [finish("need_help", "go on?")], [finish("done", "ok")]])
    agent = Agent(name="a", model=model, tools=[_meddler(MEDDLINGS[how])])

    suspended = agent.run("the task")

    assert suspended.reason is StopReason.NEED_HELP and suspended.snapshot is not None
    journal = suspended.snapshot.journal
    assert journal[0] == Task("the task")
    assert not any(isinstance(e, Note) and e.text == "mine" for e in journal)
    [res] = [e for e in model.requests[-1].journal if isinstance(e, Result)]  # what the model was told
    assert res.is_error and "journal.append(entry)" in res.text, res.text
    resumed = agent.resume(Snapshot.from_json(suspended.snapshot.to_json()), "yes")
    assert resumed.reason is StopReason.SUCCESS


def test_a_journal_still_reads_copies_and_takes_entries_through_append() -> None:
    journal = Journal([Task("t")])
    journal.append(Note("n"))

    assert list(journal.entries) == [Task("t"), Note("n")] and journal.entries[-1] == Note("n")
    assert journal == copy.deepcopy(journal) == pickle.loads(pickle.dumps(journal))
    copied = copy.copy(journal.entries)
    copied.append(Note("mine"))  # a copy is the caller's own list
    assert len(journal) == 2 and journal.entries[:1] == [Task("t")]


class _Wiping(RunObserver):
    def run_ended(self, result: RunResult) -> None:
        assert result.snapshot is not None
        result.snapshot.journal.clear()


class _WipingHooks:
    def run_started(self, info: RunInfo) -> RunObserver:
        return _Wiping()


def test_a_hook_cannot_empty_the_snapshot_the_run_hands_back(caplog: pytest.LogCaptureFixture) -> None:
    """A hook's `run_ended` reads the result the caller gets: clearing its snapshot's journal left the
    suspended run a snapshot with no task. Now the hook's failure is logged and the snapshot resumes."""
    model = ScriptedModel([[finish("need_help", "go on?")], [finish("done", "ok")]])
    agent = Agent(name="a", model=model, hooks=_WipingHooks())

    suspended = agent.run("the task")

    assert suspended.reason is StopReason.NEED_HELP and suspended.snapshot is not None
    assert suspended.snapshot.journal[0] == Task("the task") and "append-only" in caplog.text
    assert agent.resume(Snapshot.from_json(suspended.snapshot.to_json()), "yes").reason is StopReason.SUCCESS
