"""filters52: `endstate runs --temporal` and `pending --temporal` take `--agent` and `--task-type`,
against a real Temporal Server (the `temporal` dev server).

Before: neither command had the options; a person on call paged through every agent's runs.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from pathlib import Path
from typing import Any

import pytest
import temporal_agents
from starlette.testclient import TestClient
from temporal_server import TemporalServer, serving, temporal_fixture

from agent import Agent, Budget
from agent.cli.main import main
from agent.durable.catalog import Catalog
from agent.durable.store import RunStatus
from agent.models.scripted import ScriptedModel, finish
from agent.result import RunResult, StopReason
from agent.service.app import Service, create_app
from agent.service.auth import Token
from agent.temporal import TemporalRuns
from agent.temporal.service import Bridge, TemporalRunner

pytestmark = pytest.mark.slow

temporal = temporal_fixture()
QUOTED = "o'brien"  # a name the visibility query cannot quote: left to the client's own check


def build_quoted(state: dict[str, Any]) -> Agent:
    return Agent(
        name=QUOTED, model=ScriptedModel([[finish("need_help", "Which one?")]]), budget=Budget(max_turns=3)
    )


def catalog() -> Catalog:
    c = temporal_agents.catalog()
    c.register(QUOTED, build_quoted)
    return c


async def start_runs(server: TemporalServer, queue: str, folder: Path) -> dict[str, str]:
    """Three runs on `queue`, ended or waiting, and listed by Temporal's visibility: their ids by name."""
    async with serving(server, catalog(), queue) as runs:
        started = {
            "asks": await runs.start("counter", "Count", state={"script": "question", "dir": str(folder)}),
            "gave_up": await runs.start(
                "counter", "Count", task_type="batch", state={"script": "gave_up", "dir": str(folder)}
            ),
            "quoted": await runs.start(QUOTED, "Pick one"),
        }
    ids = {name: r.run_id for name, r in started.items() if isinstance(r, RunResult)}
    assert [started[n].reason for n in ("asks", "gave_up", "quoted")] == [  # type: ignore[union-attr]
        StopReason.NEED_HELP,
        StopReason.GAVE_UP,
        StopReason.NEED_HELP,
    ]
    await listed(server, queue, ids)
    return ids


async def listed(server: TemporalServer, queue: str, ids: dict[str, str]) -> None:
    """Until visibility lists the runs as they are (it lags their ends a little; 60 s at most)."""
    runs = await TemporalRuns.connect(server.address, task_queue=queue)
    for _ in range(600):
        statuses = {r.run_id: r.status for r in await runs.runs()}
        waiting = statuses.get(ids["asks"]) is statuses.get(ids["quoted"]) is RunStatus.WAITING
        if waiting and statuses.get(ids["gave_up"]) is RunStatus.FINISHED:
            return
        await asyncio.sleep(0.1)
    raise AssertionError(f"visibility never listed the runs as they are: {statuses}")


def test_runs_and_pending_over_temporal_list_only_the_agent_and_task_type_asked_for(
    temporal: TemporalServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    queue = f"test-{uuid.uuid4().hex[:8]}"
    ids = asyncio.run(start_runs(temporal, queue, tmp_path))
    on = ["--temporal", temporal.address, "--task-queue", queue]

    def shown(*argv: str) -> list[str]:
        capsys.readouterr()
        assert main([*argv, *on, "--json"]) == 0
        return [json.loads(line)["run_id"] for line in capsys.readouterr().out.splitlines()]

    assert shown("runs", "--agent", "counter") == [ids["gave_up"], ids["asks"]]
    assert shown("runs", "--task-type", "batch") == [ids["gave_up"]]
    assert shown("runs", "--agent", "counter", "--task-type", "counting", "--status", "waiting") == [
        ids["asks"]
    ]
    assert shown("runs", "--agent", QUOTED) == [ids["quoted"]]
    assert shown("runs", "--agent", "nobody") == []
    assert shown("pending", "--agent", "counter") == [ids["asks"]]
    assert shown("pending", "--agent", QUOTED, "--task-type", "default") == [ids["quoted"]]
    assert shown("pending", "--task-type", "batch") == []
    assert main(["pending", "--agent", "counter", "--task-type", "batch", *on]) == 0
    said = capsys.readouterr().out
    assert said.startswith("no runs of agent 'counter' and task type 'batch' are waiting for a person in ")


def test_get_runs_of_serve_temporal_lists_only_the_agent_and_task_type_asked_for(
    temporal: TemporalServer, tmp_path: Path
) -> None:
    queue = f"test-{uuid.uuid4().hex[:8]}"
    ids = asyncio.run(start_runs(temporal, queue, tmp_path))
    bridge = Bridge()
    runs = bridge.call(TemporalRuns.connect(temporal.address, task_queue=queue))
    service = Service(TemporalRunner(runs, bridge), Token("test-token-0123456789abcdef"), sweep_interval=3600)  # type: ignore[arg-type]
    try:
        with TestClient(create_app(service), base_url="http://127.0.0.1:8000") as api:

            def listed(query: str) -> list[str]:
                answer = api.get(f"/runs?{query}")
                assert answer.status_code == 200, answer.text
                return [r["run_id"] for r in answer.json()["runs"]]

            assert listed("agent=counter") == [ids["gave_up"], ids["asks"]]
            assert listed(f"agent={QUOTED}&task_type=default") == [ids["quoted"]]
            assert listed("task_type=batch&status=waiting") == []
            assert api.get("/runs?agent=").status_code == 400
    finally:
        bridge.close()
        bridge.loop.close()
