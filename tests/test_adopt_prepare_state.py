"""A catalog entry's `prepare` that forgot its `return`, or returned a value no store keeps (a `Path`
for the run's folder, the usual first try), started from the CLI and over HTTP with a good state.

Before, both said "state must be a dict of JSON values, not NoneType" or "the run's state cannot be
stored: Object of type PosixPath ..." as if the caller's `--state` were wrong, and the service
answered 400 (the request's fault) where the deployment's catalog failed (503, as a `prepare` that
raises). Now each names the entry's prepare and what to return; the prepared world is let go."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient
from temporal_server import TemporalServer, serving, temporal_fixture

from agent import Agent, Catalog
from agent.cli.main import main
from agent.durable.runner import Runner
from agent.durable.store import open_store
from agent.models import ScriptedModel, finish, reply
from agent.result import StopReason
from agent.service.app import Service, create_app
from agent.service.auth import Token

TOKEN = "a-token-for-the-prepare-tests"
CLEANED: list[Any] = []


def build(state: dict[str, Any]) -> Agent:
    return Agent(name="triage", model=ScriptedModel([reply(finish("give_up", "nothing to do"))]))


def forgets_its_return(state: dict[str, Any], run_id: str) -> None:
    {**state, "workdir": f"/tmp/{run_id}"}  # noqa: B018  (the return forgotten)


def keeps_a_path(state: dict[str, Any], run_id: str) -> dict[str, Any]:
    return {**state, "workdir": Path("/tmp") / run_id}


def catalog() -> Catalog:
    made = Catalog()
    made.register("no-return", build, prepare=forgets_its_return, cleanup=CLEANED.append)
    made.register("path-state", build, prepare=keeps_a_path, cleanup=CLEANED.append)
    return made


SAYS = {
    "no-return": "its catalog entry's prepare returned NoneType, not the run's state (a dict)",
    "path-state": "the state its catalog entry's prepare returned cannot be stored: Object of type PosixPath",
}


@pytest.mark.parametrize("agent", sorted(SAYS))
def test_endstate_start_names_the_prepare_not_the_state_given(
    agent: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OTEL_SDK_DISABLED", "true")
    store = str(tmp_path / "runs.db")
    argv = ["start", agent, "Triage T-1", "--state", '{"ticket": "T-1"}', "--store", store]
    assert main([*argv, "--catalog", f"{__name__}:catalog"]) == 2
    said = capsys.readouterr().err
    assert SAYS[agent] in said, said
    assert "state must be a dict" not in said
    assert open_store(store).list_runs() == []


@pytest.mark.parametrize("agent", sorted(SAYS))
def test_the_service_answers_503_naming_the_prepare_and_lets_its_world_go(agent: str, tmp_path: Path) -> None:
    CLEANED.clear()
    runner = Runner(open_store(str(tmp_path / "runs.db")), catalog())
    service = Service(runner, Token(TOKEN), sweep_interval=3600)
    with TestClient(create_app(service), base_url="http://127.0.0.1:8000") as api:
        body = {"agent": agent, "task": "Triage T-1", "state": {"ticket": "T-1"}}
        answer = api.post("/runs", json=body, headers={"Authorization": f"Bearer {TOKEN}"})
    assert answer.status_code == 503, answer.text
    assert SAYS[agent] in answer.json()["error"]
    if agent == "path-state":  # what prepare made is let go; a prepare that returned nothing made nothing
        assert len(CLEANED) == 1 and isinstance(CLEANED[0]["workdir"], Path)
    else:
        assert CLEANED == []


temporal = temporal_fixture()


@pytest.mark.slow
@pytest.mark.parametrize("agent", sorted(SAYS))
def test_on_temporal_the_runs_error_names_the_prepare(agent: str, temporal: TemporalServer) -> None:
    """Before: the run ended `error` saying "'NoneType' object is not iterable" or "Object of type
    PosixPath is not JSON serializable", naming neither the entry nor its prepare."""

    async def started() -> Any:
        async with serving(temporal, catalog()) as runs:
            return await asyncio.wait_for(runs.start(agent, "Triage T-1", state={"ticket": "T-1"}), 120)

    result = asyncio.run(started())
    assert result.reason is StopReason.ERROR
    assert SAYS[agent] in result.note and f"agent {agent!r} could not be set up" in result.note


def test_an_eval_case_names_the_prepare_too(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Before: "the case could not run: ConfigError: the run's state cannot be stored: ..."."""
    cases = tmp_path / "cases.yaml"
    cases.write_text(
        f"cases:\n  - name: triage/path\n    agent: path-state\n    catalog: {__name__}:catalog\n"
        "    task: Triage T-1.\n    task_type: default\n    expect: gave_up\n"
    )
    assert main(["eval", str(cases)]) == 1
    assert SAYS["path-state"] in capsys.readouterr().out
