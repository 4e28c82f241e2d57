"""Foreign runs across real processes: suspended by one `endstate` process, approved from another;
listed, approved and denied through the service's JSON API and its inbox, with its /metrics."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from foreign_agents import ENV_CHECKPOINTS, TASK_TYPE
from test_runner_agents import env_with_tests
from test_service_support import TOKEN, Server, endstate, metric, wait_status

from telemetry import names as n

pytestmark = pytest.mark.slow
CATALOG = "foreign_agents:catalog"


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """LangGraph's checkpoints in a SQLite file every process opens (the service inherits it too)."""
    monkeypatch.setenv(ENV_CHECKPOINTS, str(tmp_path / "lg.db"))
    return env_with_tests()


@pytest.mark.parametrize(
    ("agent", "output"),
    [("oa-remover", "done: removed a"), ("lg-deleter", "done: deleted")],  # a state string; a checkpointer
)
def test_a_foreign_run_suspended_by_one_process_is_approved_from_another(
    tmp_path: Path, env: dict[str, str], agent: str, output: str
) -> None:
    store = str(tmp_path / "runs.db")
    first = endstate("start", agent, "clean up a", "--catalog", CATALOG, "--json", store=store, env=env)
    assert first.returncode == 0, first.stderr
    suspended = json.loads(first.stdout)
    assert suspended["reason"] == "need_help" and suspended["suspension"]["pending"]["arguments"] == {
        "path": "a"
    }
    listed = endstate("pending", store=store, env=env)
    assert suspended["run_id"] in listed.stdout and f"endstate approve {suspended['run_id']}" in listed.stdout
    second = endstate("approve", suspended["run_id"], "--catalog", CATALOG, "--json", store=store, env=env)
    assert second.returncode == 0, second.stderr
    done = json.loads(second.stdout)
    assert (done["run_id"], done["reason"], done["output"], done["turns"]) == (
        suspended["run_id"], "success", output, 2,
    )  # fmt: skip


@pytest.fixture
def server(tmp_path: Path, env: dict[str, str]) -> Iterator[Server]:
    with Server(str(tmp_path / "runs.db"), tmp_path, catalog=CATALOG) as s:
        yield s


def test_the_service_lists_foreign_runs_and_its_api_and_inbox_finish_them(server: Server) -> None:
    with server.client() as api:
        runs = {
            agent: api.post("/runs", json={"agent": agent, "task": "clean up a"}).json()["run_id"]
            for agent in ("oa-remover", "lg-deleter", "oa-hasty")
        }
        for run_id in runs.values():
            wait_status(api, run_id, "waiting", "finished")
        hasty = wait_status(api, runs["oa-hasty"], "finished")  # the service's sweep, at its deadline
        assert hasty["stop_reason"] == "help_timeout"
        pending = api.get("/pending").json()
        assert {p["run_id"]: p["pending"]["name"] for p in pending["pending"]} == {
            runs["oa-remover"]: "remove",
            runs["lg-deleter"]: "delete",
        }
        assert all(p["deadline"] > p["suspended_at"] for p in pending["pending"])
        text = api.get("/metrics").text
        assert metric(text, "agent_help_pending", agent="lg-deleter", task_type=TASK_TYPE) == 1

        assert api.post(f"/runs/{runs['oa-remover']}/approve", json={}).status_code == 202
        approved = wait_status(api, runs["oa-remover"], "finished")
        assert (approved["stop_reason"], approved["output"]) == ("success", "done: removed a")

        inbox = httpx.get(f"{server.url}/inbox", timeout=30).text
        assert "Approve delete(" in inbox and runs["lg-deleter"] in inbox
        with contextlib.closing(_signed_in(server)) as browser:
            same = {"Origin": server.url, "Sec-Fetch-Site": "same-origin"}
            form = browser.post(f"/inbox/{runs['lg-deleter']}/deny", data={"reason": "no"}, headers=same)
            assert form.status_code == 303
        denied = wait_status(api, runs["lg-deleter"], "finished")
        assert (denied["stop_reason"], denied["output"]) == ("success", "done: not deleted")

        text = api.get("/metrics").text
        for agent, reason in (
            ("oa-remover", "success"),
            ("lg-deleter", "success"),
            ("oa-hasty", "help_timeout"),
        ):
            labels = {"agent": agent, "task_type": TASK_TYPE, "stop_limit": n.NO_LIMIT, "stop_cause": ""}
            assert metric(text, "agent_stops_total", **labels, stop_reason=reason) == 1, (agent, reason)
            assert metric(text, "agent_stops_total", **labels, stop_reason="need_help") == 1, agent
        assert metric(text, "agent_help_pending", agent="lg-deleter", task_type=TASK_TYPE) == 0
        answered = {"agent": "oa-remover", "task_type": TASK_TYPE, "outcome": "answered"}
        assert metric(text, "agent_human_wait_seconds_count", **answered) == 1


def _signed_in(server: Server) -> httpx.Client:
    client = httpx.Client(base_url=server.url, timeout=30)
    response = client.post("/inbox/login", data={"token": TOKEN})
    assert response.status_code == 303 and "endstate_inbox" in client.cookies
    return client
