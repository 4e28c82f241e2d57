"""An approval approves the call a person was shown: a snapshot whose pending action (what the
question and the inbox show) is not the call its journal would run is refused, and nothing runs."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agent import Agent, Approval, Denial, Snapshot, SnapshotError, tool
from agent.models.scripted import ScriptedModel, call, finish, reply

ran: list[str] = []


@tool(needs_approval=True)
def push(branch: str) -> str:
    """Push a branch."""
    ran.append(branch)
    return f"pushed {branch}"


def _agent() -> Agent:
    model = ScriptedModel([reply(call("push", branch="main")), reply(finish("done", "ok"))])
    return Agent(name="pusher", model=model, tools=[push])


def _waiting() -> dict[str, Any]:
    ran.clear()
    result = _agent().run("push it")
    assert result.reason == "need_help" and result.snapshot is not None
    data: dict[str, Any] = json.loads(result.snapshot.to_json())
    return data


def _shown(data: dict[str, Any]) -> dict[str, Any]:
    suspension: dict[str, Any] = data["journal"][-1]["suspension"]
    return suspension


@pytest.mark.parametrize(
    "edit",
    [
        {"arguments": {"branch": "dev"}},
        {"name": "deploy"},
        {"tool_use_id": "toolu_elsewhere"},
    ],
    ids=["other-arguments", "other-tool", "no-such-call"],
)
def test_approving_a_pending_call_the_journal_does_not_hold_runs_nothing(edit: dict[str, Any]) -> None:
    data = _waiting()
    _shown(data)["pending"] |= edit
    snap = Snapshot.from_json(json.dumps(data))
    with pytest.raises(SnapshotError, match="the snapshot was edited; nothing was run"):
        _agent().resume(snap, Approval())
    assert ran == []


def test_the_call_shown_is_the_call_that_runs() -> None:
    snap = Snapshot.from_json(json.dumps(_waiting()))
    assert snap.suspension is not None and snap.suspension.pending is not None
    assert snap.suspension.pending.arguments == {"branch": "main"}
    result = _agent().resume(snap, Approval())
    assert (result.reason, ran) == ("success", ["main"])


def test_a_denial_of_an_edited_pending_call_runs_nothing_either() -> None:
    data = _waiting()
    _shown(data)["pending"]["arguments"] = {"branch": "dev"}
    result = _agent().resume(Snapshot.from_json(json.dumps(data)), Denial("no"))
    assert (result.reason, ran) == ("success", [])
