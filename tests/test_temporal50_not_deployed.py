"""temporal50: a reply (or a resume) that this deployment cannot carry on, because it lacks the run's agent
or the approved call's tool, is the deployment's state, not the caller's mistake: the same refusal on
every face. Before: over a store, approving a call whose tool the agent lacks was a 400 (`ConfigError`)
while a run whose agent the catalog lacks was a 503 (`NotInCatalog`); over Temporal both were a 400
(`ConfigError`), and a resume on workers that lack the agent a `ConfigError` too. Now each is a
`NotInCatalog` (an `AgentUnavailable`, still a `ConfigError`): a 503 from the HTTP service over a store
and over Temporal, exit 2 (refused) from `endstate`, and the run still waits, saying what is missing
and how to fix it. The Temporal faces run against a real Temporal Server (the `temporal` dev server).
"""

from __future__ import annotations

import asyncio
import contextlib
import gzip
import re
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from subprocess import PIPE
from typing import Any

import pytest
from starlette.testclient import TestClient
from temporal_server import TemporalServer, cli_env, endstate, temporal_fixture
from temporalio.client import WorkflowHistory
from temporalio.worker import Replayer

from agent import Agent, Budget, tool
from agent.cli.main import main
from agent.durable.catalog import AgentUnavailable, Catalog
from agent.durable.runner import NotInCatalog, Runner
from agent.durable.store import RunStatus, RunStore, open_store
from agent.errors import ConfigError
from agent.models.scripted import ScriptedModel, call, finish
from agent.result import RunResult, StopReason
from agent.service.app import Service, create_app
from agent.service.auth import Token
from agent.service.http import status_of
from agent.temporal import TemporalRuns, build_worker
from agent.temporal.service import Bridge, TemporalRunner
from agent.temporal.worker import workflow_runner
from agent.temporal.workflow import EndstateRun

temporal = temporal_fixture()
TOKEN = "test-token-0123456789abcdef"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
LOCAL = "http://127.0.0.1:8000"
WAIT_S = 60.0
NO_TOOL = r"agent 'payer' has no tool 'pay' any more.*Deploy .* that tool.*or deny the call"
NO_AGENT = r"'payer'"


@tool(needs_approval=True)
def pay(amount: int) -> str:
    """Pay `amount` (a person approves it)."""
    return f"paid {amount}"


def payer(state: dict[str, Any]) -> Agent:
    """Asks to pay 7, then finishes."""
    script = [[call("pay", amount=7)], [finish("done", "paid")]]
    return Agent("payer", ScriptedModel(script), tools=[pay], budget=Budget(max_turns=4))


def payer_without_pay(state: dict[str, Any]) -> Agent:
    """The payer as a redeploy left it: without its tool `pay`."""
    return Agent("payer", ScriptedModel([[finish("done", "paid")]]), budget=Budget(max_turns=4))


def deployed() -> Catalog:
    c = Catalog()
    c.register("payer", payer)
    return c


def without_tool() -> Catalog:
    c = Catalog()
    c.register("payer", payer_without_pay)
    return c


def without_agent() -> Catalog:
    c = Catalog()
    c.register("other", payer_without_pay)
    return c


LACKING: dict[str, Callable[[], Catalog]] = {"tool": without_tool, "agent": without_agent}
SAID = {"tool": NO_TOOL, "agent": NO_AGENT}


def test_not_in_catalog_is_the_deployments_state_on_the_http_face_and_still_a_config_error() -> None:
    refused = NotInCatalog("agent 'payer' has no tool 'pay' any more")
    assert isinstance(refused, AgentUnavailable) and isinstance(refused, ConfigError)
    assert status_of(refused) == 503
    assert status_of(ConfigError("a bad request")) == 400


# -- over a store ----------------------------------------------------------------------------------------


@pytest.fixture
def store(tmp_path: Path) -> Iterator[RunStore]:
    made = open_store(str(tmp_path / "runs.db"))
    yield made
    made.close()


def waiting_to_pay(store: RunStore) -> str:
    result = asyncio.run(Runner(store, deployed()).start("payer", "Pay."))
    assert result.reason is StopReason.NEED_HELP, result.note
    return result.run_id


def api_over(runner: Any) -> TestClient:
    service = Service(runner, Token(TOKEN), sweep_interval=3600)
    return TestClient(create_app(service), base_url=LOCAL, raise_server_exceptions=False)


@pytest.mark.parametrize("lacks", ["tool", "agent"])
def test_over_a_store_an_approval_this_deployment_cannot_carry_on_is_not_in_catalog_and_a_503(
    store: RunStore, lacks: str
) -> None:
    run_id = waiting_to_pay(store)
    runner = Runner(store, LACKING[lacks]())
    with pytest.raises(NotInCatalog, match=SAID[lacks]):  # was, for the tool: a plain ConfigError
        runner.claim(run_id, approved=True)
    with api_over(Runner(store, LACKING[lacks]())) as api:
        refused = api.post(f"/runs/{run_id}/approve", json={}, headers=AUTH)
    assert refused.status_code == 503, refused.text  # was, for the tool: 400
    assert re.search(SAID[lacks], refused.json()["error"]), refused.text
    record = store.get(run_id)
    assert record is not None and record.status is RunStatus.WAITING and record.answer is None
    done = asyncio.run(Runner(store, deployed()).resume(run_id, approved=True))  # deployed again
    assert (done.reason, done.output) == (StopReason.SUCCESS, "paid")


@pytest.mark.parametrize("lacks", ["tool", "agent"])
def test_over_a_store_the_command_refuses_it_with_exit_2_saying_what_is_missing(
    store: RunStore, tmp_path: Path, lacks: str, capsys: pytest.CaptureFixture[str]
) -> None:
    run_id = waiting_to_pay(store)
    capsys.readouterr()
    spec = f"{__name__}:{LACKING[lacks].__name__}"
    assert main(["approve", run_id, "--store", str(tmp_path / "runs.db"), "--catalog", spec]) == 2
    err = capsys.readouterr().err
    assert err.startswith("endstate: ") and err.count("\n") == 1, err
    assert re.search(SAID[lacks], err), err
    record = store.get(run_id)
    assert record is not None and record.status is RunStatus.WAITING


# -- over Temporal ---------------------------------------------------------------------------------------


@contextlib.asynccontextmanager
async def worker(runs: TemporalRuns, catalog: Catalog) -> AsyncIterator[None]:
    """A worker of `catalog` on the runs' task queue (the default catalog wait: a refusal is final)."""
    async with await build_worker(runs.client, catalog, task_queue=runs.task_queue, heartbeat_seconds=2.0):
        yield


async def connected(server: TemporalServer) -> TemporalRuns:
    return await TemporalRuns.connect(server.address, task_queue=f"t50-{uuid.uuid4().hex[:8]}")


def served(runs: TemporalRuns, use: Callable[[TestClient], Any]) -> Any:
    """`use` the HTTP API of `endstate serve --temporal` over the runs of `runs`' task queue."""
    bridge = Bridge()
    try:
        here = bridge.call(
            TemporalRuns.connect(runs.client.service_client.config.target_host, task_queue=runs.task_queue)
        )
        with api_over(TemporalRunner(here, bridge)) as api:
            return use(api)
    finally:
        bridge.close()
        bridge.loop.close()


def approved_over_http(run_id: str) -> Callable[[TestClient], tuple[int, str]]:
    """What `served` does to approve the run's call: the response's status and error."""

    def use(api: TestClient) -> tuple[int, str]:
        refused = api.post(f"/runs/{run_id}/approve", json={}, headers=AUTH)
        return refused.status_code, refused.json().get("error", "")

    return use


async def cli(runs: TemporalRuns, server: TemporalServer, *argv: str) -> tuple[int, str]:
    """`endstate ARGV --temporal ...` in a process of its own: its exit code and stderr."""
    on = ("--temporal", server.address, "--task-queue", runs.task_queue)
    proc = await asyncio.create_subprocess_exec(
        *endstate(*argv, *on), stdout=PIPE, stderr=PIPE, env=cli_env()
    )
    _, err = await asyncio.wait_for(proc.communicate(), 120)
    return proc.returncode if proc.returncode is not None else -1, err.decode()


@pytest.mark.slow
@pytest.mark.parametrize("lacks", ["tool", "agent"])
def test_over_temporal_an_approval_no_worker_can_carry_on_is_refused_as_over_a_store(
    temporal: TemporalServer, lacks: str
) -> None:
    async def scenario() -> tuple[int, str, int, str]:
        runs = await connected(temporal)
        async with worker(runs, deployed()):
            asked = await asyncio.wait_for(runs.start("payer", "Pay."), WAIT_S)
        assert isinstance(asked, RunResult) and asked.reason is StopReason.NEED_HELP
        async with worker(runs, LACKING[lacks]()):
            with pytest.raises(NotInCatalog, match=SAID[lacks]):  # was: a plain ConfigError
                await asyncio.wait_for(runs.approve(asked.run_id), WAIT_S)
            status, said = await asyncio.to_thread(served, runs, approved_over_http(asked.run_id))
            code, err = await cli(runs, temporal, "approve", asked.run_id)
            record = await runs.record(asked.run_id)
            assert record is not None and record.status is RunStatus.WAITING
        async with worker(runs, deployed()):  # deployed again: the same approval is taken
            done = await asyncio.wait_for(runs.approve(asked.run_id), WAIT_S)
        assert (done.reason, done.output) == (StopReason.SUCCESS, "paid")
        return status, said, code, err

    status, said, code, err = asyncio.run(scenario())
    assert status == 503, said  # was: 400
    assert re.search(SAID[lacks], said) and "still waits" in said, said
    assert code == 2 and err.startswith("endstate: ") and "still waits" in err, err


@pytest.mark.slow
def test_over_temporal_a_resume_no_worker_can_carry_on_is_not_in_catalog_as_over_a_store(
    temporal: TemporalServer, tmp_path: Path
) -> None:
    async def scenario() -> None:
        runs = await connected(temporal)
        async with worker(runs, deployed()):
            asked = await asyncio.wait_for(runs.start("payer", "Pay."), WAIT_S)
            assert isinstance(asked, RunResult)
            await runs.cancel(asked.run_id)
            assert (await asyncio.wait_for(runs.result(asked.run_id), WAIT_S)).reason is StopReason.CANCELLED
        async with worker(runs, without_agent()):
            with pytest.raises(NotInCatalog, match=r"'payer'.*resume it again"):  # was: a plain ConfigError
                await asyncio.wait_for(runs.resume(asked.run_id), WAIT_S)
        record = await runs.record(asked.run_id)
        assert record is not None and record.status is RunStatus.CANCELLED

    asyncio.run(scenario())


def test_a_history_whose_approval_was_refused_before_replays() -> None:
    """A run whose approval a worker refused for want of the tool (then approved once deployed again),
    recorded by the code before (main at a1aea2e: the refusal's type "ConfigError"), replays under this
    code, whose refusal's type is `NotInCatalog` (an update's outcome is not replayed)."""
    path = Path(__file__).parent / "fixtures" / "temporal_v13_before_not_in_catalog_history.json.gz"
    history = WorkflowHistory.from_json("refused", gzip.decompress(path.read_bytes()).decode())
    replayer = Replayer(workflows=[EndstateRun], workflow_runner=workflow_runner())
    replayed = asyncio.run(replayer.replay_workflow(history, raise_on_replay_failure=False))
    assert replayed.replay_failure is None
