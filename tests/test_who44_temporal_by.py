"""who44: a run on Temporal keeps who answered it, as a run on a store does, against a real Temporal
Server (the `temporal` dev server).

Before, `by` (the CLI's `--by`, the API's `"by"`, the inbox's name) was accepted and dropped on
Temporal: `runs --json`, `/runs/{id}` and `pending` showed no `last_answer_*`, a second person's
refused answer was not told whose came first, and a bad name went through unchecked.
"""

from __future__ import annotations

import asyncio
import contextlib
import gzip
import json
import os
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from subprocess import PIPE
from typing import Any

import pytest
import temporal_agents
from starlette.testclient import TestClient
from temporal_server import TemporalServer, serving, temporal_fixture, waiting
from temporalio.client import WorkflowHistory, WorkflowUpdateFailedError
from temporalio.exceptions import ApplicationError
from temporalio.worker import Replayer

from agent import Agent, Budget, tool
from agent.durable.runner import Catalog, checked_answerer
from agent.durable.store import NotClaimable
from agent.errors import ConfigError
from agent.models.scripted import ScriptedModel, call, finish
from agent.result import RunResult, StopReason
from agent.service.app import Service, create_app
from agent.service.auth import Token
from agent.temporal import TemporalRuns
from agent.temporal import workflow as run_workflow
from agent.temporal.service import Bridge, TemporalRunner
from agent.temporal.worker import workflow_runner
from agent.temporal.workflow import ANSWERER_KEPT, EndstateRun

pytestmark = pytest.mark.slow

temporal = temporal_fixture()
TOKEN = "test-token-0123456789abcdef"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
LOCAL = "http://127.0.0.1:8000"
FORM = {"Origin": LOCAL, "Content-Type": "application/x-www-form-urlencoded"}
FIXTURE = Path(__file__).parent / "fixtures" / "temporal_v11_before_answerer_histories.json.gz"


@tool(needs_approval=True)
def pay(amount: int) -> str:
    """Pay `amount` (a person approves each payment)."""
    return f"paid {amount}"


def build_payer(state: dict[str, Any]) -> Agent:
    """Asks to pay 7, then to pay 700, then finishes: two requests for a person."""
    script = [[call("pay", amount=7)], [call("pay", amount=700)], [finish("done", "paid")]]
    return Agent(name="payer", model=ScriptedModel(script), tools=[pay], budget=Budget(max_turns=6))


def catalog() -> Catalog:
    c = temporal_agents.catalog()
    c.register("payer", build_payer)
    return c


@contextlib.asynccontextmanager
async def worker(server: TemporalServer) -> AsyncIterator[TemporalRuns]:
    async with serving(server, catalog()) as runs:
        yield runs


def question(folder: Path, **more: Any) -> dict[str, Any]:
    return {"script": "question", "dir": str(folder), **more}


async def recorded(runs: TemporalRuns, run_id: str) -> dict[str, Any]:
    record = await runs.record(run_id)
    assert record is not None
    return record.to_dict()


async def asked_to_pay(runs: TemporalRuns, run_id: str, amount: int) -> None:
    for _ in range(600):
        record = await runs.record(run_id)
        if (
            record is not None
            and record.pending is not None
            and record.pending.arguments == {"amount": amount}
        ):
            return
        await asyncio.sleep(0.1)
    raise AssertionError(f"run {run_id} did not wait to pay {amount}")


def test_an_answer_keeps_who_gave_it_and_a_second_answer_is_told_whose_came_first(
    temporal: TemporalServer, tmp_path: Path
) -> None:
    flag = tmp_path / "hold.flag"  # the count after the answer waits while it exists: the run runs on
    flag.write_text("hold")

    async def scenario() -> None:
        async with worker(temporal) as runs:
            asked = await runs.start("counter", "Count", state=question(tmp_path, hold=str(flag), hold_at=3))
            assert isinstance(asked, RunResult) and asked.reason is StopReason.NEED_HELP
            await runs.submit(asked.run_id, "3", by=" ana ")  # taken; the run goes on (held)
            running = await recorded(runs, asked.run_id)
            assert running["status"] == "running"
            assert (running["last_answer_by"], running["last_answer_kind"], running["last_answer"]) == (
                "ana",
                "answer",
                "3",
            )
            with pytest.raises(NotClaimable) as late:  # the workflow's refusal, while the run runs
                await runs.answer(asked.run_id, "2", by="bo")
            assert "answered by ana at " in str(late.value) and "answer '3'" in str(late.value), late.value
            flag.unlink()
            done = await asyncio.wait_for(runs.result(asked.run_id), 60)
            assert done.reason is StopReason.SUCCESS, done.note
            ended = await recorded(runs, asked.run_id)
            assert (ended["last_answer_by"], ended["last_answer"]) == ("ana", "3")
            assert ended["last_answer_at"] == pytest.approx(running["last_answer_at"])
            [listed] = [r for r in await runs.runs() if r.run_id == asked.run_id]  # `runs --json`
            assert listed.last_answer_by == "ana"
            with pytest.raises(NotClaimable) as after:  # the client's refusal, once the run has ended
                await runs.answer(asked.run_id, "2", by="bo")
            assert "ended as success; answered by ana at " in str(after.value), after.value

    try:
        asyncio.run(scenario())
    finally:
        flag.unlink(missing_ok=True)


def test_approvals_and_denials_keep_their_name_and_a_run_resumed_keeps_the_last_one(
    temporal: TemporalServer, tmp_path: Path
) -> None:
    flag = tmp_path / "hold.flag"
    flag.write_text("hold")

    async def scenario() -> None:
        async with worker(temporal) as runs:
            asked = await runs.start("payer", "Pay.")
            assert isinstance(asked, RunResult)
            read = await runs.record(asked.run_id)
            assert read is not None
            await runs.submit(asked.run_id, approved=True, segments=read.segments, by="ana")
            await asked_to_pay(runs, asked.run_id, 700)
            [waiting_run] = [r for r in await runs.pending() if r.run_id == asked.run_id]  # `pending`
            assert (waiting_run.last_answer_by, waiting_run.last_answer_kind) == ("ana", "approved")
            assert waiting_run.last_answer is None
            denied = await runs.deny(asked.run_id, "too much", by="bo")
            assert denied.reason is StopReason.SUCCESS
            shown = await recorded(runs, asked.run_id)
            assert (shown["last_answer_by"], shown["last_answer_kind"], shown["last_answer"]) == (
                "bo",
                "denied",
                "too much",
            )
            # answered, then cancelled and resumed: the new execution keeps who answered last
            held = await runs.start("counter", "Count", state=question(tmp_path, hold=str(flag), hold_at=3))
            assert isinstance(held, RunResult)
            await runs.submit(held.run_id, "3", by="cy")
            await runs.cancel(held.run_id)
            flag.unlink()
            cancelled = await asyncio.wait_for(runs.result(held.run_id), 60)
            assert cancelled.reason is StopReason.CANCELLED, cancelled.note
            done = await asyncio.wait_for(runs.resume(held.run_id), 60)
            assert done.reason is StopReason.SUCCESS, done.note
            again = await recorded(runs, held.run_id)
            assert (again["last_answer_by"], again["last_answer"]) == ("cy", "3")

    try:
        asyncio.run(scenario())
    finally:
        flag.unlink(missing_ok=True)


@pytest.mark.parametrize("by", ["a" * 101, "ana\nlee", "ana\u202e", 5])
def test_a_bad_name_is_refused_as_a_store_run_refuses_it_and_the_run_still_waits(
    temporal: TemporalServer, tmp_path: Path, by: Any
) -> None:
    with pytest.raises(ConfigError) as local:
        checked_answerer(by)

    async def scenario() -> None:
        async with worker(temporal) as runs:
            asked = await runs.start("counter", "Count", state=question(tmp_path))
            assert isinstance(asked, RunResult)
            with pytest.raises(ConfigError) as refused:  # Endstate's client
                await runs.answer(asked.run_id, "3", by=by)
            assert str(refused.value) == str(local.value)
            handle = runs.client.get_workflow_handle(asked.run_id)  # by hand: the workflow's validator
            with pytest.raises(WorkflowUpdateFailedError) as by_hand:
                await handle.execute_update("answer", args=["3", True, None, by])
            cause = by_hand.value.cause
            assert isinstance(cause, ApplicationError) and cause.type == "ConfigError"
            assert f"{cause.message}; nothing was changed" == str(local.value)
            still = await recorded(runs, asked.run_id)
            assert still["status"] == "waiting" and still["last_answer_at"] is None
            done = await runs.answer(asked.run_id, "3")  # no name: goes, kept without one
            assert done.reason is StopReason.SUCCESS
            shown = await recorded(runs, asked.run_id)
            assert (shown["last_answer_by"], shown["last_answer_kind"]) == (None, "answer")

    asyncio.run(scenario())


def test_a_worker_from_before_names_is_still_answered_and_the_run_keeps_no_name(
    temporal: TemporalServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    # Mid-deploy, a run may be served by a worker whose `answer`/`approve`/`deny` take no `by` (and keep
    # no name): a reply with a name must still land there, as it did before.
    from temporal_before_answerer import BeforeAnswerer

    from agent.temporal import worker as worker_module

    patched = run_workflow.workflow.patched
    monkeypatch.setattr(run_workflow.workflow, "patched", lambda p: p != ANSWERER_KEPT and patched(p))
    monkeypatch.setattr(worker_module, "EndstateRun", BeforeAnswerer)

    async def scenario() -> None:
        async with worker(temporal) as runs:
            asked = await runs.start("payer", "Pay.")
            assert isinstance(asked, RunResult)
            read = await runs.record(asked.run_id)
            assert read is not None
            await asyncio.wait_for(  # as the inbox and the API send it: with the count read
                runs.submit(asked.run_id, approved=True, segments=read.segments, by="ana"), 30
            )
            await asked_to_pay(runs, asked.run_id, 700)
            done = await asyncio.wait_for(runs.deny(asked.run_id, "no", by="bo"), 60)  # as the CLI sends it
            assert done.reason is StopReason.SUCCESS, done.note
            shown = await recorded(runs, asked.run_id)
            assert shown["last_answer_by"] is None and shown["last_answer_at"] is None
            question_run = await runs.start("counter", "Count", state=question(tmp_path))
            assert isinstance(question_run, RunResult)
            answered = await asyncio.wait_for(runs.answer(question_run.run_id, "3", by="cy"), 60)
            assert answered.reason is StopReason.SUCCESS

    asyncio.run(scenario())
    dropped = [
        r.getMessage() for r in caplog.records if "takes none: the reply was sent without" in r.getMessage()
    ]
    assert [m.rsplit(" without ", 1)[1].split(",")[0] for m in dropped] == ["'ana'", "'bo'", "'cy'"], dropped


def replay_failure(history: WorkflowHistory) -> Exception | None:
    replayer = Replayer(workflows=[EndstateRun], workflow_runner=workflow_runner())
    return asyncio.run(replayer.replay_workflow(history, raise_on_replay_failure=False)).replay_failure


def recorded_before() -> dict[str, WorkflowHistory]:
    """Runs answered, approved and denied by the release before `by` (main at 5080695, through its own
    client: the answer with `segments` as the inbox sends it), `fetch_history().to_json()` of each."""
    histories = json.loads(gzip.decompress(FIXTURE.read_bytes()))
    return {kind: WorkflowHistory.from_json(kind, text) for kind, text in histories.items()}


@pytest.mark.parametrize("kind", ["answer", "approve", "deny"])
def test_a_history_recorded_before_names_were_kept_replays_as_it_ran(
    kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    history = recorded_before()[kind]
    assert replay_failure(history) is None
    patched = run_workflow.workflow.patched  # without the gate (the memo kept as the reply is taken)
    monkeypatch.setattr(run_workflow.workflow, "patched", lambda p: p == ANSWERER_KEPT or patched(p))
    assert "Nondeterminism" in str(replay_failure(history))


def test_a_history_with_a_named_reply_replays(temporal: TemporalServer, tmp_path: Path) -> None:
    async def scenario() -> WorkflowHistory:
        async with worker(temporal) as runs:
            asked = await runs.start("counter", "Count", state=question(tmp_path))
            assert isinstance(asked, RunResult)
            done = await runs.answer(asked.run_id, "3", by="ana")
            assert done.reason is StopReason.SUCCESS
            return await runs.client.get_workflow_handle(asked.run_id).fetch_history()

    assert replay_failure(asyncio.run(scenario())) is None


def served(runs: TemporalRuns, use: Any) -> None:
    """`use` the HTTP API and inbox of `endstate serve --temporal` over the runs of `runs`' task queue."""
    bridge = Bridge()
    here = bridge.call(
        TemporalRuns.connect(runs.client.service_client.config.target_host, task_queue=runs.task_queue)
    )
    service = Service(TemporalRunner(here, bridge), Token(TOKEN), sweep_interval=3600)  # type: ignore[arg-type]
    try:
        with TestClient(create_app(service), base_url=LOCAL) as api:
            use(api)
    finally:
        bridge.close()
        bridge.loop.close()


def waiting_for(api: TestClient, run_id: str, amount: int) -> dict[str, Any]:
    run: dict[str, Any] = {}
    for _ in range(600):
        run = api.get(f"/runs/{run_id}", headers=AUTH).json()
        if run["status"] == "waiting" and (run["pending"] or {}).get("arguments") == {"amount": amount}:
            return run
        time.sleep(0.1)
    raise AssertionError(f"run {run_id} did not wait to pay {amount}: {run}")


def test_the_api_and_the_inbox_over_temporal_keep_the_name_and_tell_the_next_person(
    temporal: TemporalServer,
) -> None:
    def pages(api: TestClient, run_id: str) -> None:
        [read] = api.get("/pending", headers=AUTH).json()["pending"]
        first = {"segments": read["segments"]}
        bad = api.post(f"/runs/{run_id}/approve", json={**first, "by": "x" * 101}, headers=AUTH)
        assert bad.status_code == 400 and "at most 100" in bad.json()["error"], bad.text
        assert (
            api.post(f"/runs/{run_id}/approve", json={**first, "by": "ana"}, headers=AUTH).status_code == 202
        )
        now = waiting_for(api, run_id, 700)
        assert (now["last_answer_by"], now["last_answer_kind"]) == ("ana", "approved")
        [listed] = api.get("/pending", headers=AUTH).json()["pending"]
        assert listed["last_answer_by"] == "ana"
        late = api.post(f"/runs/{run_id}/approve", json={**first, "by": "bo"}, headers=AUTH)  # a stale page
        assert late.status_code == 409 and "answered by ana at " in late.json()["error"], late.text
        assert api.post("/inbox/login", content=f"token={TOKEN}", headers=FORM).status_code == 200
        page = api.get("/inbox").text
        assert "<strong>Last answer:</strong> answered by ana at " in page, page
        sent = f"segments={now['segments']}&reason=too+much&by=bo+lee"
        assert (
            api.post(f"/inbox/{run_id}/deny", content=sent, headers=FORM, follow_redirects=False).status_code
            == 303
        )
        shown: dict[str, Any] = {}
        for _ in range(600):
            shown = api.get(f"/runs/{run_id}", headers=AUTH).json()
            if shown["status"] == "finished":
                break
            time.sleep(0.1)
        assert (shown["last_answer_by"], shown["last_answer_kind"], shown["last_answer"]) == (
            "bo lee",
            "denied",
            "too much",
        )

    async def scenario() -> None:
        async with worker(temporal) as runs:
            asked = await asyncio.wait_for(runs.start("payer", "Pay."), 30)
            assert isinstance(asked, RunResult)
            await asyncio.to_thread(served, runs, lambda api: pages(api, asked.run_id))

    asyncio.run(scenario())


async def cli(*argv: str) -> tuple[int, str, str]:
    """`endstate ARGV` in a process of its own: exit code, stdout, stderr."""
    env = {k: v for k, v in os.environ.items() if k != "ENDSTATE_TEMPORAL"}
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "agent.cli", *argv, stdout=PIPE, stderr=PIPE, env=env
    )
    out, err = await asyncio.wait_for(proc.communicate(), 120)
    return proc.returncode or 0, out.decode(), err.decode()


def test_the_commands_over_temporal_send_by_or_the_user_and_refuse_a_bad_one(
    temporal: TemporalServer, tmp_path: Path
) -> None:
    async def scenario() -> None:
        async with worker(temporal) as runs:
            on = ("--temporal", temporal.address, "--task-queue", runs.task_queue)
            asked = await runs.start("payer", "Pay.")
            assert isinstance(asked, RunResult)
            code, out, err = await cli("approve", asked.run_id, *on, "--by", "ana\x1b[2J")
            assert code == 2 and "control or invisible characters" in err, (out, err)
            code, out, err = await cli("approve", asked.run_id, *on, "--by", "ana\u202e")
            assert code == 2 and "nothing was changed" in err, (out, err)
            assert (await recorded(runs, asked.run_id))["status"] == "waiting"
            code, out, err = await cli("approve", asked.run_id, *on, "--by", "ana")
            assert code == 0, err
            assert (await recorded(runs, asked.run_id))["last_answer_by"] == "ana"
            code, out, err = await cli("deny", asked.run_id, "no", *on)  # no --by: the user running it
            assert code == 0, err
            shown = await recorded(runs, asked.run_id)
            assert shown["last_answer_by"] == current_user() and shown["last_answer_kind"] == "denied"
            code, out, err = await cli("runs", "--json", *on)
            assert code == 0, err
            [listed] = [
                r for r in map(json.loads, out.splitlines()) if r["run_id"] == asked.run_id
            ]  # JSON lines
            assert listed["last_answer_by"] == current_user()

    asyncio.run(scenario())


def current_user() -> str:
    from agent.cli._help import current_user as user

    return user()


def test_a_run_that_continues_as_new_after_its_answer_keeps_who_gave_it(
    temporal: TemporalServer, tmp_path: Path
) -> None:
    from test_probe39a_continue_as_new import executions

    async def scenario() -> None:
        async with serving(temporal, catalog(), continue_after_events=1) as runs:  # a turn an execution
            state = {"script": "bench-ask", "dir": str(tmp_path), "k": 3, "max_turns": 9}
            asked = await runs.start("counter", "Count", state=state)
            assert isinstance(asked, RunResult) and asked.reason is StopReason.NEED_HELP
            await waiting(runs, asked.run_id)  # in the execution it handed over to
            before = len(await executions(runs, asked.run_id))
            done = await asyncio.wait_for(runs.answer(asked.run_id, "yes", by="ana"), 60)
            assert done.reason is StopReason.SUCCESS, done.note
            assert len(await executions(runs, asked.run_id)) > before  # answered, then handed over
            shown = await recorded(runs, asked.run_id)
            assert (shown["last_answer_by"], shown["last_answer"]) == ("ana", "yes")

    asyncio.run(scenario())
