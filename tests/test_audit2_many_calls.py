"""A reply with thousands of tool calls (a hostile or runaway model) costs the journal work in
proportion to its calls, not to their square: for each call the loop asks for the last reply, its
declined calls and an answer to the call, and each of those scanned the journal from its end (5,000
calls in one reply took about 30 s of CPU, with the event loop blocked). Counted in lines the
journal's code runs (a tracer, not a clock), so the test is the same on a loaded machine."""

from __future__ import annotations

import sys
from types import FrameType
from typing import Any

from agent import Agent, tool
from agent import journal as journal_module
from agent.models.scripted import ScriptedModel, call, finish, reply

JOURNAL_CODE = journal_module.__file__


@tool
def read(page: int) -> str:
    """Read a page."""
    return f"page {page}"


def _journal_lines(calls: int) -> int:
    """Lines of agent/journal.py run on the loop's thread by a run whose first reply makes `calls`
    distinct calls."""
    first = reply(*[call("read", page=i) for i in range(calls)])
    agent = Agent(name="many", model=ScriptedModel([first, reply(finish("done", "ok"))]), tools=[read])
    count = 0

    def local(frame: FrameType, event: str, arg: Any) -> Any:
        nonlocal count
        count += event == "line"
        return local

    def on_call(frame: FrameType, event: str, arg: Any) -> Any:
        return local if frame.f_code.co_filename == JOURNAL_CODE else None

    sys.settrace(on_call)
    try:
        result = agent.run("read them all")
    finally:
        sys.settrace(None)
    assert result.reason == "success"
    return count


def test_the_journal_work_of_a_reply_grows_linearly_with_its_calls() -> None:
    small, large = _journal_lines(150), _journal_lines(600)
    # linear: about 4x the work for 4x the calls; the scans from the end made it about 16x
    assert large < 6 * small, (small, large)
