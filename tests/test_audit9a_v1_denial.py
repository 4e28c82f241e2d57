"""A call a person denied under version 1 never ran: its result ("Denied by a person: ...") is no tool's
output. Upgraded, the journal must not count it among the calls that ran (`ctx.calls`, which verifiers,
summaries and progress read), as today's loop does not count a denial."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
import v1_agents

from agent import Agent, Budget, StopReason, predicate
from agent.journal import Result
from agent.models.scripted import ScriptedModel, call, finish
from agent.snapshot import Snapshot

APPROVAL = json.loads((Path(__file__).with_name("fixtures") / "v1_snapshots.json").read_text())["v1-approval"]
DENIALS = [  # the two denials version 1 wrote: a person's, and the help policy's at the deadline
    "Denied by a person: too much. Do not retry this call.",
    "Denied by the help policy, as nobody answered in time: no answer. Do not retry this call.",
]


def _denied_then_asked(denial: str) -> dict[str, Any]:
    """v1-approval as version 1 saved it after the invoice was denied and the model then asked."""
    snap = copy.deepcopy(APPROVAL)
    results = [
        {"type": "tool_result", "tool_use_id": "toolu_001_0", "content": "ACME: net 30"},
        {"type": "tool_result", "tool_use_id": "toolu_001_1", "content": denial},
    ]
    asked = {"type": "tool_use", "id": "toolu_002_0", "name": "finish"}
    asked["input"] = {"kind": "need_help", "note": "Should I try a smaller amount?"}
    snap["messages"] += [{"role": "user", "content": results}, {"role": "assistant", "content": [asked]}]
    snap["open_results"] = [None]
    snap["suspension"] = {**snap["suspension"], "question": "Should I try a smaller amount?", "pending": None}
    return snap


def _agent() -> Agent:
    steps = [
        [call("lookup", customer="ACME"), call("send_invoice", customer="ACME", amount=120.0)],
        [finish("need_help", "Should I try a smaller amount?")],
        [finish("done", "billed")],
        [finish("give_up", "no invoice could be sent")],
    ]
    sent = predicate(lambda ctx: any(c.name == "send_invoice" for c in ctx.calls), "no invoice was sent")
    tools = [v1_agents.lookup, v1_agents.send_invoice]
    return Agent(
        "v1-approval", ScriptedModel(steps), tools=tools, verifiers=[sent], budget=Budget(max_turns=10)
    )


@pytest.mark.parametrize("denial", DENIALS)
def test_a_call_denied_under_version_1_is_not_read_as_a_call_that_ran(denial: str) -> None:
    snap = Snapshot.from_json(json.dumps(_denied_then_asked(denial)))
    [result] = [e for e in snap.journal if isinstance(e, Result) and e.call_id == "toolu_001_1"]
    assert result.ran is None
    v1_agents.COUNTS.clear()
    ended = _agent().resume(snap, "no", now=v1_agents.WRITTEN_AT + 60)
    assert v1_agents.COUNTS == {}
    assert ended.reason is StopReason.GAVE_UP  # "done" was refused: no invoice was sent
    assert ended.verifier_failures == ("no invoice was sent",)
    assert "send_invoice" not in ended.summary
