"""drift: a reply refused because the deployment changed while the run waited (SQLite and PostgreSQL).

A run asks a person; meanwhile a deploy drops the tool whose call waits for approval, or breaks the
agent's catalog entry. The reply is refused (NotInCatalog / AgentUnavailable: HTTP 503, exit 2) and
the run waits on. Before, the run then showed the refused reply as its last answer (`last_answer_kind`
`approved`, in `/pending`, `runs --json` and the inbox's "Last answer") with no word that it was not
taken: a colleague reading the inbox saw the call approved. Now the run keeps why it was not taken
(`refused`, the inbox's "Not taken"), as a reply refused once its segment began always did, and it can
be answered again once the deployment is fixed.
"""

from __future__ import annotations

import asyncio
import dataclasses
from pathlib import Path
from typing import Any

import pytest
from drift_support import counter_runner, started
from test_runner_agents import counter_state, make_counter

from agent import Agent, StopReason
from agent.durable.runner import AgentUnavailable, NotInCatalog
from agent.durable.store import RunStatus


def without_wire(state: dict[str, Any]) -> Agent:
    """The counter as redeployed: its `wire` tool dropped."""
    agent = make_counter(state)
    return dataclasses.replace(agent, tools=[t for t in agent.tools if t.name != "wire"])


def broken(state: dict[str, Any]) -> Agent:
    """The counter's entry as redeployed with a dependency missing."""
    raise ImportError("No module named 'billing_sdk'")


@pytest.mark.parametrize(
    ("script", "build", "reply", "refused", "why"),
    [
        ("approve", without_wire, {"approved": True}, NotInCatalog, "has no tool 'wire' any more"),
        ("ask", broken, {"answer": "3"}, AgentUnavailable, "No module named 'billing_sdk'"),
    ],
)
def test_a_reply_the_redeployed_agent_cannot_take_is_kept_as_not_taken(
    store_url: str, tmp_path: Path, script: str, build: Any, reply: dict[str, Any], refused: type, why: str
) -> None:
    first = started(store_url, counter_state(tmp_path, script), "d1")
    assert first.reason is StopReason.NEED_HELP

    new = counter_runner(store_url, build)
    try:
        with pytest.raises(refused, match=why):
            asyncio.run(new.resume("d1", reply.get("answer"), approved=reply.get("approved"), by="ana"))
        after = new.store.get("d1")
        assert after is not None and after.status is RunStatus.WAITING  # still answerable
        assert after.answer is None and after.approved is None  # nothing is left to be taken later
        assert after.refused is not None, "the refused reply reads as the run's last answer"
        assert "was not taken" in after.refused and why in after.refused
        assert [r.run_id for r in new.store.waiting(10)] == ["d1"]  # pending still lists it
    finally:
        new.store.close()

    fixed = counter_runner(store_url, make_counter)
    try:
        done = asyncio.run(fixed.resume("d1", reply.get("answer"), approved=reply.get("approved"), by="ana"))
        assert done.reason is StopReason.SUCCESS
        record = fixed.store.get("d1")
        assert record is not None and record.refused is None  # it moved on: the refusal is gone
    finally:
        fixed.store.close()


def test_the_inbox_says_an_approval_the_redeployed_service_refused_was_not_taken(
    store_url: str, tmp_path: Path
) -> None:
    """Over HTTP the approval is a 503; `/pending` and the inbox then say it was not taken, not only
    that the run was last approved."""
    from starlette.testclient import TestClient

    from agent.service.app import Service, create_app
    from agent.service.auth import Token

    token = "test-token-0123456789abcdef"
    auth = {"Authorization": f"Bearer {token}"}
    started(store_url, counter_state(tmp_path, "approve"), "d2")
    service = Service(counter_runner(store_url, without_wire), Token(token), sweep_interval=3600)
    try:
        with TestClient(create_app(service), base_url="http://127.0.0.1:8000") as api:
            refused = api.post("/runs/d2/approve", json={"by": "ana"}, headers=auth)
            assert refused.status_code == 503 and "has no tool 'wire' any more" in refused.json()["error"]
            [item] = api.get("/pending", headers=auth).json()["pending"]
            assert item["run_id"] == "d2" and item["last_answer_kind"] == "approved"
            assert item["refused"] is not None and "the approval given at" in item["refused"]
            login = {"Origin": "http://127.0.0.1:8000"}
            assert api.post("/inbox/login", data={"token": token}, headers=login).status_code == 200
            page = api.get("/inbox").text
            assert "Not taken:" in page and "has no tool" in page, page[:2000]
    finally:
        service.runner.store.close()
