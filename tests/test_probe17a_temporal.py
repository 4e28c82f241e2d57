"""probe17a: the HTTP API and inbox over Temporal (`serve --temporal`) keep the promises they keep over
the store, against a real Temporal Server (the `temporal` dev server)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import shlex
import subprocess
import sys
import time
import uuid
from collections.abc import AsyncIterator, Callable
from subprocess import PIPE
from typing import Any

import pytest
from ports import free_port
from starlette.testclient import TestClient
from temporal_server import TemporalServer, cli_env, serving, temporal_cli, temporal_fixture

from agent import Agent, Budget, tool
from agent.durable.runner import AnswerError, Catalog
from agent.durable.store import NotClaimable
from agent.models.scripted import ScriptedModel, call, finish
from agent.result import RunResult
from agent.service.app import Service, create_app
from agent.service.auth import Token
from agent.temporal import TemporalRuns
from agent.temporal.service import Bridge, TemporalRunner

pytestmark = pytest.mark.slow

TOKEN = "test-token-0123456789abcdef"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
LOCAL = "http://127.0.0.1:8000"
FORM = {"Origin": LOCAL, "Content-Type": "application/x-www-form-urlencoded"}

PAID: list[int] = []  # the payments the worker's `pay` made, in order


@tool(needs_approval=True)
def pay(amount: int) -> str:
    """Pay `amount` (a person approves each payment)."""
    PAID.append(amount)
    return f"paid {amount}"


def build(state: dict[str, Any]) -> Agent:
    """Asks to pay 7, then (approved) to pay 700, then finishes."""
    script = [[call("pay", amount=7)], [call("pay", amount=700)], [finish("done", "paid")]]
    return Agent(name="payer", model=ScriptedModel(script), tools=[pay], budget=Budget(max_turns=6))


temporal = temporal_fixture()


@contextlib.asynccontextmanager
async def worker(server: TemporalServer) -> AsyncIterator[TemporalRuns]:
    catalog = Catalog()
    catalog.register("payer", build)
    async with serving(server, catalog) as runs:
        yield runs


def served(runs: TemporalRuns, use: Callable[[TestClient], None]) -> None:
    """`use` the HTTP API of `endstate serve --temporal` over the runs of `runs`' task queue."""
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
    """The run as `/runs/{id}` shows it once it waits for approval of paying `amount`."""
    run: dict[str, Any] = {}
    for _ in range(600):
        run = api.get(f"/runs/{run_id}").json()
        if run["status"] == "waiting" and (run["pending"] or {}).get("arguments") == {"amount": amount}:
            return run
        time.sleep(0.1)
    raise AssertionError(f"run {run_id} did not wait to pay {amount}: {run}")


def test_a_stale_approval_over_temporal_never_approves_the_call_that_came_next(
    temporal: TemporalServer,
) -> None:
    # The README: "Send the `segments` that `/pending` shows with an answer, and it lands only on the
    # question you read: a retry or a stale page gets a 409 once the run has moved on"; `serve --temporal`
    # "serves the same HTTP API and help inbox". Over Temporal every run showed `segments` 0, whatever it
    # had done, so the check passed for any page: a client's retry of an approval, or an inbox page left
    # open while someone else approved, approved the next payment (700) that nobody had read.
    PAID.clear()

    def stale_pages(api: TestClient, run_id: str) -> None:
        [read] = api.get("/pending").json()["pending"]
        assert read["pending"]["arguments"] == {"amount": 7}
        first = {"segments": read["segments"]}
        assert api.post(f"/runs/{run_id}/approve", json=first, headers=AUTH).status_code == 202
        now = waiting_for(api, run_id, 700)
        assert now["segments"] != read["segments"]
        again = api.post(f"/runs/{run_id}/approve", json=first, headers=AUTH)  # a client's retry
        assert again.status_code == 409 and "moved on" in again.json()["error"], again.text
        assert api.post("/inbox/login", content=f"token={TOKEN}", headers=FORM).status_code == 200
        assert f'name="segments" value="{now["segments"]}"' in api.get("/inbox").text
        stale = api.post(f"/inbox/{run_id}/approve", content=f"segments={read['segments']}", headers=FORM)
        assert stale.status_code == 409 and "moved on" in stale.text
        assert waiting_for(api, run_id, 700)["segments"] == now["segments"]  # still waits, as it was
        denied = api.post(f"/runs/{run_id}/deny", json={"segments": now["segments"]}, headers=AUTH)
        assert denied.status_code == 202, denied.text

    async def scenario() -> RunResult:
        async with worker(temporal) as runs:
            asked = await asyncio.wait_for(runs.start("payer", "Pay the invoice."), 30)
            assert isinstance(asked, RunResult) and asked.reason == "need_help"
            await asyncio.to_thread(served, runs, lambda api: stale_pages(api, asked.run_id))
            return await asyncio.wait_for(runs.result(asked.run_id), 60)

    done = asyncio.run(scenario())
    assert (done.reason, PAID) == ("success", [7])  # only the payment a person read was made


async def asked_to_pay(runs: TemporalRuns, run_id: str, amount: int) -> None:
    for _ in range(600):
        record = await runs.record(run_id)
        pending = record.pending if record is not None else None
        if pending is not None and pending.arguments == {"amount": amount}:
            return
        await asyncio.sleep(0.1)
    raise AssertionError(f"run {run_id} did not wait to pay {amount}")


def test_a_stale_reply_to_a_resumed_run_on_temporal_is_refused_across_its_executions(
    temporal: TemporalServer,
) -> None:
    # The count a reply is checked against is the run's, not its execution's: a run cancelled while it
    # waited and resumed goes on in a new execution, whose own count starts again. A reply read before
    # (at the first call) must not match the resumed execution's count and approve the next call.
    PAID.clear()

    async def scenario() -> RunResult:
        async with worker(temporal) as runs:
            asked = await asyncio.wait_for(runs.start("payer", "Pay the invoice."), 30)
            assert isinstance(asked, RunResult) and asked.reason == "need_help"
            read = await runs.record(asked.run_id)
            assert read is not None and read.segments == 1
            await asyncio.wait_for(runs.submit(asked.run_id, approved=True, segments=read.segments), 30)
            await asked_to_pay(runs, asked.run_id, 700)
            await runs.cancel(asked.run_id)
            assert (await asyncio.wait_for(runs.result(asked.run_id), 60)).reason == "cancelled"
            waits = await asyncio.wait_for(runs.resume(asked.run_id), 60)
            assert waits.reason == "need_help" and waits.suspension and waits.suspension.pending
            assert waits.suspension.pending.arguments == {"amount": 700}
            now = await runs.record(asked.run_id)
            assert now is not None and now.segments > read.segments
            assert now.task == read.task == "Pay the invoice."  # the resumed execution's record too
            with pytest.raises(NotClaimable, match=r"moved on \(segment \d+, not 1; answered by someone who"):
                await runs.submit(asked.run_id, approved=True, segments=read.segments)  # a retry
            with pytest.raises(AnswerError, match="segments must be"):
                await runs.submit(asked.run_id, approved=True, segments=True)  # type: ignore[arg-type]
            await asyncio.wait_for(runs.submit(asked.run_id, approved=False, segments=now.segments), 30)
            return await asyncio.wait_for(runs.result(asked.run_id), 60)

    done = asyncio.run(scenario())
    assert (done.reason, PAID) == ("success", [7])


def test_a_start_sent_again_over_temporal_with_its_run_id_and_state_gets_that_run(
    temporal: TemporalServer,
) -> None:
    # The README: "A `POST /runs` sent again with the same `run_id` gets that run back, not a second." Over
    # Temporal a run's record held no state (visibility has none), so a start that gave a state, sent
    # again after a lost reply, was a 409 "taken by a different run", as if another client held the id.
    def starts(api: TestClient) -> None:
        start = {
            "agent": "payer",
            "task": "Pay the invoice.",
            "run_id": "p17a-retry",
            "state": {"po": "PO-7"},
        }
        first = api.post("/runs", json=start, headers=AUTH)
        assert first.status_code == 202, first.text
        again = api.post("/runs", json=start, headers=AUTH)
        assert again.status_code == 200, again.text
        assert again.json()["run_id"] == "p17a-retry" and again.json()["started_before"] is True
        other = api.post("/runs", json={**start, "state": {"po": "PO-8"}}, headers=AUTH)
        assert other.status_code == 409 and "taken by a different run" in other.json()["error"]

    async def scenario() -> None:
        async with worker(temporal) as runs:
            await asyncio.to_thread(served, runs, starts)

    asyncio.run(scenario())


async def cli(*argv: str) -> tuple[int, str, str]:
    """`endstate ARGV` in a process of its own, without `$ENDSTATE_TEMPORAL`: exit code, stdout, stderr."""
    env = {k: v for k, v in os.environ.items() if k != "ENDSTATE_TEMPORAL"}
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "agent.cli", *argv, stdout=PIPE, stderr=PIPE, env=env
    )
    out, err = await asyncio.wait_for(proc.communicate(), 120)
    return proc.returncode or 0, out.decode(), err.decode()


def test_the_commands_pending_and_runs_print_over_temporal_reach_the_same_runs(
    temporal: TemporalServer,
) -> None:
    # `endstate pending --store URL` prints `-> endstate approve ID --store URL`; over Temporal it printed
    # `-> endstate approve ID`, which, pasted, looked for the run in the local store ("no run with id") or,
    # with $ENDSTATE_TEMPORAL, on the default task queue. `runs` left out its line on the waiting runs.
    PAID.clear()

    async def scenario() -> str:
        async with worker(temporal) as runs:
            asked = await asyncio.wait_for(runs.start("payer", "Pay the invoice."), 30)
            assert isinstance(asked, RunResult)
            on = ("--temporal", temporal.address, "--task-queue", runs.task_queue)
            code, listed, _ = await cli("runs", *on)
            assert code == 0 and f"`endstate pending {' '.join(on)}` shows what they ask" in listed
            code, shown, _ = await cli("pending", *on)
            hint = next(line for line in shown.splitlines() if "->" in line)
            command = shlex.split(hint.split("->", 1)[1].split("   or   ")[0])
            assert command == ["endstate", "approve", asked.run_id, *on]
            code, said, err = await cli(*command[1:])
            assert code == 0, err
            code, started, err = await cli("start", "payer", "Pay the invoice.", *on)  # its hint too
            hint = next(line for line in started.splitlines() if "->" in line)
            assert code == 0 and shlex.split(hint.split("->", 1)[1].split("   or   ")[0])[3:] == list(on), err
            return said

    said = asyncio.run(scenario())
    assert "need_help" in said and PAID == [7]  # the pasted command approved the call it was shown for


@pytest.mark.parametrize("run_id", ["\udcff", ""])
def test_a_run_id_temporal_cannot_be_sent_is_no_such_run_in_one_line(
    temporal: TemporalServer, run_id: str
) -> None:
    # `endstate answer $'\xff' x --temporal ...` ended in a traceback (UnicodeEncodeError building the
    # request), and an empty id in "Temporal refused the call for run : WorkflowId is not set on request";
    # over the store both are "no run with id ...", exit 2.
    code, out, err = asyncio.run(cli("answer", run_id, "x", "--temporal", temporal.address))
    assert (code, out) == (2, "") and err.count("\n") == 1, err
    assert err.startswith("endstate: no run with id ")


def test_a_reply_with_segments_is_taken_by_a_worker_from_before_segments(
    temporal: TemporalServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Mid-deploy, a run may be served by a worker whose `approve`/`answer`/`deny` take no `segments`:
    # the inbox's form (which always sends the count it read) must still land there, as it did before
    # that release, not fail on the handler's arguments until the deploy ends.
    from temporal_before_segments import BeforeSegments

    from agent.temporal import worker as worker_module

    PAID.clear()
    monkeypatch.setattr(worker_module, "EndstateRun", BeforeSegments)

    async def scenario() -> RunResult:
        async with worker(temporal) as runs:
            asked = await asyncio.wait_for(runs.start("payer", "Pay the invoice."), 30)
            assert isinstance(asked, RunResult) and asked.reason == "need_help"
            read = await runs.record(asked.run_id)
            assert read is not None
            await asyncio.wait_for(runs.submit(asked.run_id, approved=True, segments=read.segments), 30)
            await asked_to_pay(runs, asked.run_id, 700)
            later = await runs.record(asked.run_id)
            assert later is not None
            await asyncio.wait_for(runs.submit(asked.run_id, approved=False, segments=later.segments), 30)
            return await asyncio.wait_for(runs.result(asked.run_id), 60)

    done = asyncio.run(scenario())
    assert (done.reason, PAID) == ("success", [7])


def test_a_worker_on_a_new_namespace_starts_without_a_listing_error(temporal: TemporalServer) -> None:
    """The README's first `endstate worker --temporal ...` on a namespace Endstate never used printed
    "the runs waiting for a person could not be listed (invalid query: invalid search attribute:
    EndstateWaiting)": it listed them before it registered the search attributes. It registers them
    first now, and says so once."""
    namespace = f"fresh-{uuid.uuid4().hex[:8]}"
    made = [
        temporal_cli(),
        "operator",
        "namespace",
        "create",
        "--namespace",
        namespace,
        "--address",
        temporal.address,
    ]
    subprocess.run(made, check=True, capture_output=True, timeout=60)
    argv = [
        sys.executable,
        "-m",
        "agent.cli",
        "worker",
        "--temporal",
        temporal.address,
        "--namespace",
        namespace,
    ]
    for _ in range(100):  # a new namespace is known to the frontend within a few seconds
        proc = subprocess.Popen(argv, stdout=PIPE, stderr=PIPE, text=True, env=cli_env())
        said = proc.stdout.readline() if proc.stdout else ""  # its first line: polling, or why not
        proc.terminate()  # the worker's own stop: it finishes the activities in hand (none)
        _, err = proc.communicate(timeout=60)
        if "not found" not in err:
            break
        time.sleep(0.2)
    assert said.startswith("endstate worker: polling task queue 'endstate' of namespace"), (said, err)
    assert "could not be listed" not in said + err
    assert f"registered the search attributes Endstate needs in namespace '{namespace}'" in err


def test_serve_over_temporal_says_where_its_inbox_is_and_refuses_a_taken_port(
    temporal: TemporalServer, tmp_path: Any
) -> None:
    """`endstate serve --temporal` printed its Temporal and token line and nothing else: not who may
    read, nor the inbox's URL (README: "`serve` prints the inbox's URL at start"), as `serve` over a
    store does. On a port another process held, uvicorn logged its own lines and it exited 3."""
    import socket

    held = socket.socket()
    held.bind(("127.0.0.1", 0))
    held.listen()
    with held:
        port = held.getsockname()[1]
        argv = [sys.executable, "-m", "agent.cli", "serve", "--temporal", temporal.address, "--port"]
        taken = subprocess.run(
            [*argv, str(port)], cwd=tmp_path, env=cli_env(), capture_output=True, text=True, timeout=120
        )
    assert (taken.returncode, taken.stdout) == (2, ""), taken.stderr
    assert taken.stderr.startswith(f"endstate: cannot listen on 127.0.0.1:{port} (Address already in use)")
    port = free_port()
    proc = subprocess.Popen(
        [*argv, str(port)], cwd=tmp_path, env=cli_env(), stdout=PIPE, stderr=PIPE, text=True
    )
    try:
        said = [proc.stdout.readline() for _ in range(3)] if proc.stdout else []
    finally:
        proc.terminate()
        try:
            _, err = proc.communicate(timeout=60)
        finally:  # a hang fails this test alone, not the next one by the process it left running
            if proc.poll() is None:
                proc.kill()
                proc.communicate(timeout=30)
    assert said[1].startswith("endstate serve: reads are open (loopback); hosts served: 127.0.0.1"), (
        said,
        err,
    )
    assert said[2] == f"endstate serve: inbox: http://127.0.0.1:{port}/inbox\n", (said, err)


def test_runs_on_an_empty_queue_says_how_to_start_one_there(temporal: TemporalServer) -> None:
    """`endstate runs --temporal HOST:PORT --task-queue Q` with no runs said to start one with
    `endstate start AGENT TASK --temporal ...`: the server and queue left for the reader to fill in."""
    queue = f"empty-{uuid.uuid4().hex[:8]}"
    on = ["--temporal", temporal.address, "--task-queue", queue]
    argv = [sys.executable, "-m", "agent.cli", "runs", *on]
    said = subprocess.run(argv, env=cli_env(), capture_output=True, text=True, timeout=120)
    assert said.returncode == 0, said.stderr
    assert said.stdout.endswith(f"; start one with `endstate start AGENT TASK {shlex.join(on)}`\n"), (
        said.stdout
    )
    cancelled = subprocess.run(
        [*argv, "--status", "cancelled"], env=cli_env(), capture_output=True, text=True, timeout=120
    )
    assert cancelled.stdout.startswith("no cancelled runs in ") and "start one" not in cancelled.stdout
