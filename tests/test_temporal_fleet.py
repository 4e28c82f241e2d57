"""Endstate on Temporal across processes: the CLI, worker processes killed, two workers sharing 200 runs."""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest
from ports import PortTaken, held_by, on_free_port, port_clash
from temporal_server import TemporalServer, cli_env, completed_activities, endstate, temporal_fixture

from agent.durable.store import RunStatus
from agent.result import StopReason
from agent.temporal import TemporalRuns
from agent.temporal import _wire as w

pytestmark = pytest.mark.slow
TESTS = Path(__file__).parent
CATALOG = "temporal_agents:catalog"


temporal = temporal_fixture()


class WorkerProcess:
    """`endstate worker` in a process of its own, ready once it says it polls.

    Its output goes to a file (a pipe nobody reads could fill and stop it).
    """

    def __init__(self, server: TemporalServer, queue: str, heartbeat: float = 1) -> None:
        argv = endstate(
            "worker",
            "--temporal",
            server.address,
            "--task-queue",
            queue,
            "--catalog",
            CATALOG,
            "--heartbeat",
            str(heartbeat),
        )
        self.log = Path(tempfile.mkstemp(prefix="endstate-worker-", suffix=".log")[1])
        with self.log.open("w") as out:
            self.proc = subprocess.Popen(argv, env=cli_env(), stdout=out, stderr=subprocess.STDOUT, text=True)
        for _ in range(1200):
            if "endstate worker: polling task queue" in self.log.read_text():
                return
            if self.proc.poll() is not None:
                break
            time.sleep(0.05)
        self.stop()
        raise AssertionError(f"the worker did not start:\n{self.log.read_text()}")

    def kill(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.unlink(missing_ok=True)


def run_cli(*argv: str) -> str:
    done = subprocess.run(endstate(*argv), env=cli_env(), capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout


def log_of(folder: Path, run_id: str) -> list[str]:
    path = folder / f"{run_id}.log"
    return path.read_text().splitlines() if path.exists() else []


def test_a_run_started_on_one_host_is_answered_from_another_and_finished_by_a_third(
    temporal: TemporalServer, tmp_path: Path
) -> None:
    queue = f"cli-{uuid.uuid4().hex[:8]}"
    worker = WorkerProcess(temporal, queue)
    try:
        state = json.dumps({"script": "question", "dir": str(tmp_path)})
        where = ["--temporal", temporal.address, "--task-queue", queue]
        started = json.loads(run_cli("start", "counter", "count", "--state", state, "--json", *where))
        assert started["reason"] == "need_help" and started["note"] == "Count to 2 or 3?"
        run_id = started["run_id"]
        pending = run_cli("pending", *where)
        assert run_id in pending and f'endstate answer {run_id} {" ".join(where)} "your answer"' in pending
        answered = run_cli("answer", run_id, "3", *where)
        assert answered.startswith(f"run {run_id}: success verified after 4 turns.")
        listed = run_cli("runs", "--json", *where)
        assert run_id in listed
    finally:
        worker.stop()
    assert log_of(tmp_path, run_id) == ["start 1", "end 1", "start 3", "end 3"]


def test_the_cli_refuses_an_answer_to_an_unknown_run(temporal: TemporalServer) -> None:
    done = subprocess.run(
        endstate("answer", "no-such-run", "yes", "--temporal", temporal.address),
        env=cli_env(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2 and "no run with id 'no-such-run'" in done.stderr


def test_a_killed_worker_is_replaced_and_no_completed_call_runs_again(
    temporal: TemporalServer, tmp_path: Path
) -> None:
    queue = f"kill-{uuid.uuid4().hex[:8]}"
    first = WorkerProcess(temporal, queue)

    async def scenario() -> None:
        runs = await TemporalRuns.connect(temporal.address, task_queue=queue)
        hold = tmp_path / "hold.flag"  # count(3) waits for it on the first worker: killed mid-run, always
        hold.write_text("hold")
        state = {"script": "slow", "dir": str(tmp_path), "sleep": 0.5, "max_turns": 10}
        state |= {"hold": str(hold), "hold_at": 3}
        run_id = await runs.start("counter", "count", state=state, wait=False)
        assert isinstance(run_id, str)
        # Two calls whose completion Temporal recorded: a call that logged its end but had not
        # reported it is retried, as Temporal retries any activity whose worker died (at least once).
        for _ in range(600):
            if await completed_activities(runs.client, run_id, w.TOOL_CHUNKED) >= 2:
                break
            await asyncio.sleep(0.05)
        first.kill()
        hold.unlink()
        recorded = await completed_activities(runs.client, run_id, w.TOOL_CHUNKED)  # a dead worker adds none
        assert recorded == 2  # the third was held
        done_before = {f"end {i}" for i in range(1, recorded + 1)}
        second = WorkerProcess(temporal, queue)
        try:
            result = await runs.result(run_id)
        finally:
            second.stop()
        assert result.reason is StopReason.SUCCESS and result.turns == 7
        lines = log_of(tmp_path, run_id)
        assert {f"end {i}" for i in range(1, 7)} <= set(lines)
        for line in done_before:  # a call that had completed before the kill never ran again
            assert lines.count(line.replace("end", "start")) == 1, lines

    try:
        asyncio.run(scenario())
    finally:
        first.stop()


def test_two_workers_share_200_runs_and_each_ends_once_with_a_reason(
    temporal: TemporalServer, tmp_path: Path
) -> None:
    queue = f"fleet-{uuid.uuid4().hex[:8]}"
    # No worker dies here: a heartbeat timeout of 10 s (not 1 s) keeps a loaded machine's stall of
    # a second from timing out a live activity, which Temporal then retries (at least once).
    workers = [WorkerProcess(temporal, queue, heartbeat=10), WorkerProcess(temporal, queue, heartbeat=10)]

    async def scenario() -> None:
        runs = await TemporalRuns.connect(temporal.address, task_queue=queue)
        # the agent's own 120 s: a run's budget counts the time its calls ran, not the time they or
        # their answers waited for a worker (one of 200 runs once stopped `limit` under a whole suite's
        # load: its verification's answer waited past the budget's timer, and was thrown away)
        state = {"script": "many", "dir": str(tmp_path), "max_seconds": 120}
        ids = [f"fleet-{i:03d}-{uuid.uuid4().hex[:6]}" for i in range(200)]
        for run_id in ids:
            await runs.start("counter", "count", state=state, run_id=run_id, wait=False)
        results = await asyncio.gather(*(runs.result(run_id) for run_id in ids))
        odd = [(r.run_id, r.reason, r.limit, r.active_seconds, r.note) for r in results]
        odd = [o for o in odd if o[1] is not StopReason.SUCCESS]
        assert Counter(r.reason for r in results) == {StopReason.SUCCESS: 200}, odd
        for run_id in ids:
            assert log_of(tmp_path, run_id) == ["start 1", "end 1"]  # its one call ran once
            executions = [e async for e in runs.client.list_workflows(f"WorkflowId = '{run_id}'")]
            assert len(executions) <= 1  # visibility may lag; never two executions of one run

    try:
        asyncio.run(scenario())
    finally:
        for w in workers:
            w.stop()


def test_the_http_api_and_inbox_work_over_temporal(temporal: TemporalServer, tmp_path: Path) -> None:
    import httpx

    queue = f"http-{uuid.uuid4().hex[:8]}"
    worker = WorkerProcess(temporal, queue)
    token = "t" * 24

    try:
        server, port = _served(temporal, queue, token, tmp_path)
    except BaseException:
        worker.stop()
        raise
    base = f"http://127.0.0.1:{port}"
    auth = {"Authorization": f"Bearer {token}"}

    def until(path: str, check: Callable[[dict[str, object]], bool]) -> dict[str, object]:
        for _ in range(600):
            response = httpx.get(base + path, timeout=10)
            if response.status_code == 200 and check(response.json()):
                return dict(response.json())
            time.sleep(0.1)
        raise AssertionError(f"{path} never met the check: {response.text}")

    try:
        body = {"agent": "counter", "task": "count", "state": {"script": "question", "dir": str(tmp_path)}}
        assert httpx.post(base + "/runs", json=body, timeout=10).status_code == 401
        started = httpx.post(base + "/runs", json=body, headers=auth, timeout=10)
        assert started.status_code == 202, started.text
        run_id = started.json()["run_id"]
        waiting = until(f"/runs/{run_id}", lambda r: r["status"] == "waiting")
        assert waiting["question"] == "Count to 2 or 3?" and waiting["task"] == "count"
        pending = until("/pending", lambda p: any(i["run_id"] == run_id for i in p["pending"]))  # type: ignore[union-attr,index]
        assert pending
        assert "Count to 2 or 3?" in httpx.get(base + "/inbox", timeout=10).text
        wrong = httpx.post(f"{base}/runs/{run_id}/approve", json={}, headers=auth, timeout=10)
        assert wrong.status_code == 422, wrong.text
        answered = httpx.post(f"{base}/runs/{run_id}/answer", json={"answer": "3"}, headers=auth, timeout=10)
        assert answered.status_code == 202, answered.text
        done = until(f"/runs/{run_id}", lambda r: r["status"] == "finished")
        assert done["stop_reason"] == "success" and done["turns"] == 4
        again = httpx.post(f"{base}/runs/{run_id}/answer", json={"answer": "4"}, headers=auth, timeout=10)
        assert again.status_code == 409, again.text
        assert httpx.get(f"{base}/runs/nope", timeout=10).status_code == 404
    finally:
        _stop(server)
        worker.stop()


def test_the_api_and_cli_refuse_another_task_queues_run_naming_its_queue(temporal: TemporalServer) -> None:
    """Two deployments share a namespace: the service and the CLI of one do not act on the other's
    runs (404 / exit 2, as for an unknown run), and say which queue the run is on."""
    import httpx

    from agent.temporal import ensure_search_attributes

    ours, theirs = f"ours-{uuid.uuid4().hex[:8]}", f"theirs-{uuid.uuid4().hex[:8]}"

    async def started() -> str:  # on their queue, which no worker polls: it stays as it is
        runs = await TemporalRuns.connect(temporal.address, task_queue=theirs)
        await ensure_search_attributes(runs.client)
        run_id = await runs.start("counter", "count", wait=False)
        assert isinstance(run_id, str)
        return run_id

    run_id = asyncio.run(started())
    token = "t" * 24
    server, port = _served(temporal, ours, token)
    base, auth = f"http://127.0.0.1:{port}", {"Authorization": f"Bearer {token}"}
    said = f"it is on task queue '{theirs}'"
    try:
        read = httpx.get(f"{base}/runs/{run_id}", timeout=30)
        assert read.status_code == 404 and said in read.text, read.text
        for action, body in [("answer", {"answer": "3"}), ("approve", {}), ("deny", {}), ("resume", {})]:
            refused = httpx.post(f"{base}/runs/{run_id}/{action}", json=body, headers=auth, timeout=30)
            assert refused.status_code == 404 and said in refused.text, (action, refused.text)
        again = {"agent": "counter", "task": "count", "run_id": run_id}
        taken = httpx.post(f"{base}/runs", json=again, headers=auth, timeout=30)
        assert taken.status_code == 409 and said in taken.text, taken.text
    finally:
        _stop(server)
    where = ["--temporal", temporal.address, "--task-queue", ours]
    for argv in (["answer", run_id, "3"], ["approve", run_id], ["deny", run_id], ["resume", run_id]):
        done = subprocess.run(
            endstate(*argv, *where), env=cli_env(), capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 2 and said in done.stderr, (argv, done.stderr)

    async def left() -> None:  # its own queue's client sees it as it was: running, nothing asked of it
        runs = await TemporalRuns.connect(temporal.address, task_queue=theirs)
        record = await runs.record(run_id)
        assert record is not None and record.status is RunStatus.RUNNING
        await runs.cancel(run_id)  # named explicitly (its queue): acted on

    asyncio.run(left())


def _served(
    temporal: TemporalServer, queue: str, token: str, cwd: Path | None = None
) -> tuple[subprocess.Popen[bytes], int]:
    """`endstate serve --temporal` for `queue`, ready, on a port of its own (another, if it was taken)."""

    def serve(port: int) -> tuple[subprocess.Popen[bytes], int]:
        argv = endstate("serve", "--temporal", temporal.address, "--task-queue", queue, "--port", str(port))
        env_ = {**cli_env(), "ENDSTATE_TOKEN": token}
        proc = subprocess.Popen(argv, env=env_, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        try:
            _wait_ready(proc, port)
        except BaseException:
            _stop(proc)
            raise
        return proc, port

    return on_free_port(serve, "endstate serve --temporal")


def _wait_ready(proc: subprocess.Popen[bytes], port: int) -> None:
    """Until `endstate serve` on `port` is ready; `PortTaken` when it exited saying the port was taken."""
    import httpx

    for _ in range(600):
        if proc.poll() is not None:
            err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
            if port_clash(err):
                raise PortTaken(err[-500:])
            raise AssertionError(f"endstate serve --temporal exited with {proc.returncode}: {err}")
        try:
            if httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=2).text == "ready" and held_by(
                proc.pid, port
            ):
                return
        except httpx.TransportError:
            pass
        time.sleep(0.1)
    raise AssertionError("endstate serve --temporal never became ready")


def _stop(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    proc.wait(timeout=30)
    if proc.stderr:
        proc.stderr.close()


def test_a_command_that_loaded_temporals_client_exits_with_its_code_output_and_exit_handlers() -> None:
    """Such a process skips the interpreter's teardown (the client's Rust threads can abort it
    there, exit -6): its code, all it printed and its exit handlers (span flushes) still hold."""
    script = (
        "import atexit, importlib, temporalio.client\n"
        "cli = importlib.import_module('agent.cli.main')\n"
        "atexit.register(lambda: print('exit handlers ran'))\n"
        "cli.main = lambda: (print('x' * 100000, end=''), 3)[1]\n"
        "cli.run()\n"
        "print('never here')\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == 3, done.stderr
    assert done.stdout == "x" * 100000 + "exit handlers ran\n"
