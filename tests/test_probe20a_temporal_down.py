"""Runs on Temporal on an operator's bad day: a start before any worker ran, Temporal down under `serve`.

A fresh Temporal namespace has none of Endstate's search attributes until a worker registers them, so
a start sent before the workers came up (`endstate start --temporal`, `POST /runs` on `serve
--temporal`) was a traceback and a bare 500. A Temporal server that stops under `serve --temporal`
made every call a 400 ("Temporal refused the call": the client's fault?), and `/readyz` and `POST
/runs` bare 500s. Temporal not answering is the service's outage: a 503 with a JSON error and
`Retry-After`, one line and exit 2 from the CLI.
"""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import temporal_agents
from starlette.testclient import TestClient
from temporal_server import TemporalServer, cli_env, endstate

from agent.result import StopReason
from agent.service.app import create_app
from agent.service.auth import Token
from agent.service.config import Service
from agent.temporal import TemporalRuns, build_worker
from agent.temporal import service as temporal_service
from agent.temporal.client import TemporalUnavailable
from agent.temporal.service import Bridge, TemporalRunner

pytestmark = pytest.mark.slow
TESTS = Path(__file__).parent
SECRET = "probe20a-token-0123456789"
AUTH = {"Authorization": f"Bearer {SECRET}"}


@pytest.fixture
def fresh() -> Iterator[TemporalServer]:
    """A Temporal server of its own: its `default` namespace as an operator first gets it (no
    worker ran on it yet), or one this test stops."""
    server = TemporalServer()
    yield server
    server.stop()


def cli(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(endstate(*argv), env=cli_env(), capture_output=True, text=True, timeout=180)


class Served:
    """`serve --temporal`'s app in this process (the runner and store that speak to Temporal)."""

    def __init__(self, address: str, queue: str) -> None:
        self.bridge = Bridge()
        self.runs = self.bridge.call(TemporalRuns.connect(address, task_queue=queue))
        service = Service(TemporalRunner(self.runs, self.bridge), Token(SECRET), sweep_interval=3600.0)
        self.client = TestClient(
            create_app(service), base_url="http://127.0.0.1", raise_server_exceptions=False
        )

    def __enter__(self) -> TestClient:
        return self.client.__enter__()

    def __exit__(self, *exc: object) -> None:
        self.client.__exit__(*exc)
        self.bridge.close()


def state(tmp_path: Path, script: str = "success") -> dict[str, Any]:
    return {"script": script, "dir": str(tmp_path)}


def test_a_start_sent_before_any_worker_ran_waits_on_the_queue_for_one(
    fresh: TemporalServer, tmp_path: Path
) -> None:
    queue = f"first-{uuid.uuid4().hex[:8]}"
    where = ["--temporal", fresh.address, "--task-queue", queue]
    started = cli("start", "counter", "count", "--state", json.dumps(state(tmp_path)), "--no-wait", *where)
    assert started.returncode == 0, started.stderr  # was a traceback (RPCError: no mapping defined ...)
    assert "Traceback" not in started.stderr
    by_cli = started.stdout.strip()

    with Served(fresh.address, queue) as http:
        answered = http.post(
            "/runs", json={"agent": "counter", "task": "count", "state": state(tmp_path)}, headers=AUTH
        )
        assert answered.status_code == 202, answered.text  # was a bare 500
        by_http = answered.json()["run_id"]

    async def finished() -> list[Any]:
        runs = await TemporalRuns.connect(fresh.address, task_queue=queue)
        worker = await build_worker(runs.client, temporal_agents.catalog(), task_queue=queue)
        async with worker:  # the workers come up after the starts: the runs were waiting for them
            return [await asyncio.wait_for(runs.result(r), 60) for r in (by_cli, by_http)]

    results = asyncio.run(finished())
    assert [(r.reason, r.verified) for r in results] == [(StopReason.SUCCESS, True)] * 2


def test_temporal_stopping_under_serve_is_a_503_saying_so_and_the_cli_says_it_in_one_line(
    fresh: TemporalServer, tmp_path: Path
) -> None:
    queue = f"down-{uuid.uuid4().hex[:8]}"
    with Served(fresh.address, queue) as http:
        assert http.get("/readyz").text == "ready"
        fresh.stop()
        ready = http.get("/readyz")
        assert ready.status_code == 503 and "Temporal" in ready.text, ready.text  # was a bare 500
        asked = [
            ("GET", "/runs", None),
            ("GET", "/runs/some-run", None),
            ("POST", "/runs", {"agent": "counter", "task": "count", "state": state(tmp_path)}),
            ("POST", "/runs/some-run/answer", {"answer": "3"}),
            ("POST", "/runs/some-run/resume", {}),
        ]
        for method, path, body in asked:
            got = http.request(method, path, json=body, headers=AUTH)
            assert got.status_code == 503, (method, path, got.status_code, got.text)  # were 400s and a 500
            assert "Temporal did not answer" in got.json()["error"], got.text
            if path == "/runs" and method == "GET":  # not "the call for run list"
                assert "Temporal did not answer the call listing the runs" in got.json()["error"]
            assert got.headers["retry-after"] == "5"

    said = cli("answer", "some-run", "3", "--temporal", fresh.address)  # a server that went away
    assert said.returncode == 2 and "Traceback" not in said.stderr, said.stderr
    assert said.stderr.startswith("endstate: ") and len(said.stderr.strip().splitlines()) == 1, said.stderr


def test_a_call_temporal_never_answers_is_a_503_not_a_bare_500(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(temporal_service, "CALL_TIMEOUT_S", 0.2)
    bridge = Bridge()
    try:
        started = time.monotonic()
        with pytest.raises(TemporalUnavailable, match=r"did not answer within 0\.2 s"):
            bridge.call(asyncio.sleep(30))  # a network that drops packets: no answer, no error
        assert time.monotonic() - started < 20  # was: waited for the 30 s sleep
    finally:
        bridge.close()


def test_a_worker_whose_metrics_port_is_taken_says_so_in_one_line(fresh: TemporalServer) -> None:
    with socket.socket() as held:  # another process serves that port already
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        said = cli(
            "worker",
            "--temporal",
            fresh.address,
            "--catalog",
            "temporal_agents:catalog",
            "--metrics-port",
            str(port),
        )
    assert said.returncode == 2 and "Traceback" not in said.stderr, said.stderr  # was a traceback, exit 1
    lines = said.stderr.strip().splitlines()
    assert lines[-1].startswith(f"endstate: cannot serve /metrics on 127.0.0.1:{port}: "), said.stderr
    assert "--metrics-port" in lines[-1]


def _worker_on(served: Served, queue: str) -> Any:
    """A worker for `queue` on the served app's Temporal loop; call the result to stop it."""
    loop = served.bridge.loop
    stop = asyncio.run_coroutine_threadsafe(_event(), loop).result(timeout=10)

    async def work() -> None:
        worker = await build_worker(served.runs.client, temporal_agents.catalog(), task_queue=queue)
        async with worker:
            await stop.wait()

    working = asyncio.run_coroutine_threadsafe(work(), loop)

    def stopped() -> None:
        loop.call_soon_threadsafe(stop.set)
        working.result(timeout=60)

    return stopped


async def _event() -> asyncio.Event:
    return asyncio.Event()


def _status(http: TestClient, run_id: str, wanted: str) -> dict[str, Any]:
    for _ in range(300):
        got = http.get(f"/runs/{run_id}", headers=AUTH)
        if got.status_code == 200 and got.json()["status"] == wanted:
            return dict(got.json())
        time.sleep(0.1)
    raise AssertionError(f"run {run_id} never {wanted}: {got.text}")


def test_a_reply_no_worker_takes_in_time_says_it_may_still_be_taken_not_send_it_again(
    fresh: TemporalServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # With every worker gone (a deploy, a crash), an answer over `serve --temporal` waited 30 s for
    # a worker to take the workflow update and was a bare 500 (then "send it again"); Temporal keeps
    # the update, so the answer was taken once a worker came back: a resend, blind, could have
    # answered the run's next question.
    monkeypatch.setattr(temporal_service, "CALL_TIMEOUT_S", 3.0)
    queue = f"gone-{uuid.uuid4().hex[:8]}"
    served = Served(fresh.address, queue)
    with served as http:
        stop = _worker_on(served, queue)
        start = {"agent": "counter", "task": "count", "state": state(tmp_path, "question"), "run_id": "asks"}
        assert http.post("/runs", json=start, headers=AUTH).status_code == 202
        read = _status(http, "asks", "waiting")
        stop()  # no worker polls now

        reply = {"answer": "3", "segments": read["segments"]}
        answered = http.post("/runs/asks/answer", json=reply, headers=AUTH)
        assert answered.status_code == 503, answered.text  # was a bare 500
        said = answered.json()["error"]
        assert "no worker took the reply to run asks within 3 s" in said and "may still take it" in said
        assert "retry-after" not in answered.headers  # a retry is not what it needs
        assert _status(http, "asks", "waiting")["segments"] == read["segments"]

        stop = _worker_on(served, queue)  # a worker comes back: it takes the reply Temporal kept
        try:
            done = _status(http, "asks", "finished")
            assert (done["stop_reason"], done["turns"]) == ("success", 4)
            again = http.post("/runs/asks/answer", json=reply, headers=AUTH)
            assert again.status_code == 409, again.text  # read first, as told: it was taken
        finally:
            stop()


def test_the_review_queue_over_temporal_says_it_is_not_served_there_not_a_bare_500(
    fresh: TemporalServer,
) -> None:
    # The inbox links "To review" and "Labelled" on every page; over `serve --temporal` they were
    # bare 500s (AttributeError: 'TemporalStore' object has no attribute 'review_counts').
    with Served(fresh.address, f"review-{uuid.uuid4().hex[:8]}") as http:
        assert http.get("/inbox", headers=AUTH).status_code == 200
        asked = [
            ("GET", "/inbox/review"),
            ("GET", "/inbox/review?page=2&agent=counter"),
            ("GET", "/inbox/review/labelled"),
            ("GET", "/inbox/review/runs/some-run"),
            ("POST", "/inbox/review/runs/some-run/label"),
        ]
        for method, path in asked:
            got = http.request(method, path, headers=AUTH)
            assert got.status_code == 501, (method, path, got.status_code, got.text[:200])
            assert got.headers["content-type"].startswith("text/html")
            assert "The review queue is not served over Temporal" in got.text


class WorkerProcess:
    """`endstate worker` for the test catalog in a process of its own, once it polls."""

    def __init__(self, server: TemporalServer, queue: str, log: Path) -> None:
        argv = [
            "worker",
            "--temporal",
            server.address,
            "--task-queue",
            queue,
            "--catalog",
            "temporal_agents:catalog",
        ]
        with log.open("w") as out:
            self.proc = subprocess.Popen(endstate(*argv), env=cli_env(), stdout=out, stderr=subprocess.STDOUT)
        for _ in range(1200):
            if "polling task queue" in log.read_text() or self.proc.poll() is not None:
                break
            time.sleep(0.05)
        assert self.proc.poll() is None, log.read_text()

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=60)


def test_a_reply_from_the_cli_with_no_worker_polling_says_what_it_waits_for_and_lands_once_one_does(
    fresh: TemporalServer, tmp_path: Path
) -> None:
    # `endstate answer --temporal` waits for the run's next segment; with every worker gone it waited
    # in silence for ever. It now says, after 10 s, what it waits for and what to do.
    queue = f"cli-{uuid.uuid4().hex[:8]}"
    where = ["--temporal", fresh.address, "--task-queue", queue]
    worker = WorkerProcess(fresh, queue, tmp_path / "worker.log")
    try:
        asked = cli(
            "start", "counter", "count", "--state", json.dumps(state(tmp_path, "question")), "--json", *where
        )
    finally:
        worker.stop()
    run_id = json.loads(asked.stdout)["run_id"]

    err = tmp_path / "answer.err"
    with err.open("w") as to:
        answering = subprocess.Popen(
            endstate("answer", run_id, "3", *where),
            env=cli_env(),
            stdout=subprocess.PIPE,
            stderr=to,
            text=True,
        )
    try:
        for _ in range(300):
            if "still waiting" in err.read_text() or answering.poll() is not None:
                break
            time.sleep(0.1)
        said = err.read_text()
        assert answering.poll() is None, said
        assert said.startswith("endstate: still waiting after 10 s for the run's segment to end"), said
        assert f"no `endstate worker` polls task queue {queue!r}" in said and said.count("\n") == 1

        worker = WorkerProcess(fresh, queue, tmp_path / "worker.log")  # one comes back: the reply lands
        try:
            out, _ = answering.communicate(timeout=120)
        finally:
            worker.stop()
    finally:
        if answering.poll() is None:
            answering.kill()
            answering.wait()
    assert answering.returncode == 0 and out.startswith(f"run {run_id}: success verified after 4 turns."), out


def test_pending_over_temporal_past_a_deadline_names_what_ends_the_run_not_a_command_it_lacks(
    fresh: TemporalServer, tmp_path: Path
) -> None:
    # A run past its deadline that no worker has ended yet (none polls) was listed with "too late to
    # answer: `endstate recover --temporal ...` ends it": `recover` takes no --temporal (a usage error),
    # and with $ENDSTATE_TEMPORAL it would have swept a local SQLite store instead.
    queue = f"late-{uuid.uuid4().hex[:8]}"
    where = ["--temporal", fresh.address, "--task-queue", queue]
    worker = WorkerProcess(fresh, queue, tmp_path / "worker.log")
    try:
        asked = cli(
            "start",
            "counter",
            "count",
            "--state",
            json.dumps({**state(tmp_path, "question"), "wait": 2}),
            *where,
        )
    finally:
        worker.stop()
    assert asked.returncode == 0 and "need_help" in asked.stdout, asked.stdout + asked.stderr
    time.sleep(3)  # past the deadline; no worker runs the timer's workflow task
    listed = cli("pending", *where)
    assert listed.returncode == 0, listed.stderr
    assert "too late to answer: its deadline's timer ends it under its help policy" in listed.stdout, (
        listed.stdout
    )
    assert f"once an `endstate worker` polls task queue {queue!r}" in listed.stdout
    assert "endstate recover" not in listed.stdout
    recover = cli("recover", *where)  # what the old line said to run
    assert recover.returncode == 2 and "unrecognized arguments: --temporal" in recover.stderr
