"""Issue 9: a reply's calls are recorded in the journal as the model made them. A tool that changes
its own arguments in place (sorts a list it was given, fills in a dict's defaults) changes its copy
only: the model is sent back its own call, and the store keeps that call, not what the tool made of
it."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from agent import Agent, StopReason, tool
from agent.durable.runner import Catalog, Runner
from agent.durable.store import open_store
from agent.journal import Call
from agent.models.scripted import ScriptedModel, call, finish


@tool
def top(scores: list[int]) -> str:
    """The best score."""
    scores.sort(reverse=True)  # in place: an ordinary thing for a function to do with its list
    return str(scores[0])


@tool
async def search(query: str, options: dict[str, Any]) -> str:
    """Search, with options."""
    options.setdefault("limit", 10)
    options["filters"].append("safe")
    return f"{query}: {options['limit']} results"


def calls_in(journal: Any) -> list[dict[str, Any]]:
    return [c.arguments for e in journal for c in getattr(e, "calls", ())]


def test_a_tool_that_changes_its_arguments_leaves_the_call_the_model_made_as_it_was() -> None:
    model = ScriptedModel(
        [
            [call("top", scores=[3, 9, 1]), call("search", query="q", options={"filters": ["recent"]})],
            [finish("done", "ok")],
        ]
    )
    result = Agent("sorter", model, tools=[top, search]).run("find the best")
    assert result.reason is StopReason.SUCCESS
    made = [{"scores": [3, 9, 1]}, {"query": "q", "options": {"filters": ["recent"]}}]
    last = model.requests[-1]
    assert calls_in(last.journal) == made
    sent = [b["input"] for m in last.messages if m["role"] == "assistant" for b in m["content"]]
    assert sent == made
    results = [b["content"] for m in last.messages[1:] if m["role"] == "user" for b in m["content"]]
    assert results == ["9", "q: 10 results"]  # the tools had their copies to change


def test_the_store_keeps_the_call_the_model_made_not_what_the_tool_made_of_it(tmp_path: Path) -> None:
    catalog = Catalog()
    catalog.register(
        "sorter",
        lambda state: Agent(
            "sorter", ScriptedModel([[call("top", scores=[3, 9, 1])], [finish("done", "ok")]]), tools=[top]
        ),
    )
    store = open_store(str(tmp_path / "runs.db"))
    try:
        done = asyncio.run(Runner(store, catalog).start("sorter", "find the best", run_id="s1"))
        assert done.reason is StopReason.SUCCESS
        snapshot = store.snapshot("s1")
        assert snapshot is not None
        assert [c for e in snapshot.journal for c in getattr(e, "calls", ()) if c.name == "top"] == [
            Call("toolu_001_0", "top", {"scores": [3, 9, 1]})
        ]
    finally:
        store.close()
