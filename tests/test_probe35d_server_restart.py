"""probe35d: Temporal's development server restarted under a live worker, against a real server.

A worker reconnects to a server restarted under it and its runs go on (tried by hand, with the server's
`--db-filename`). Two defects, each tested here. The dev server keeps its state in memory: restarted, it
has lost Endstate's search attributes, which the worker registered only as it started. A run then started
by Temporal's own tools (`temporal workflow start --type EndstateRun`, a Schedule, as README documents)
failed every workflow task ("no mapping defined for search attribute EndstateAgent") and never ended, with
no stop reason. And a namespace made on the server is gone after such a restart: `endstate worker` on it
died in a 40-line traceback, exit 1.
"""

from __future__ import annotations

import asyncio
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from temporal_agents import catalog
from temporal_server import RestartableServer, cli_env, endstate, serving

from agent.result import StopReason
from agent.temporal import worker as worker_module

pytestmark = pytest.mark.slow


@pytest.fixture(name="server")
def server_fixture() -> Iterator[RestartableServer]:
    server = RestartableServer()
    yield server
    server.stop()


def test_a_run_started_by_hand_after_the_server_restarted_under_a_live_worker_ends_named(
    server: RestartableServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(worker_module, "ATTRIBUTES_EVERY", 0.5)  # the check's pace, not what it does

    async def scenario() -> None:
        async with serving(server, catalog()) as runs:
            await asyncio.to_thread(server.restart)  # the worker polls on through it
            run_id = f"by-hand-{uuid.uuid4().hex[:8]}"
            start = {
                "agent": "counter",
                "task": "Count",
                "state": {"script": "success", "dir": str(tmp_path)},
            }
            await runs.client.start_workflow("EndstateRun", start, id=run_id, task_queue=runs.task_queue)
            result = await asyncio.wait_for(runs.result(run_id), 120)  # was: no end, ever
            assert (result.reason, result.verified) == (StopReason.SUCCESS, True)
            [record] = await runs.runs()
            assert (record.run_id, record.agent, record.stop_reason) == (
                run_id,
                "counter",
                StopReason.SUCCESS,
            )

    asyncio.run(scenario())


class TeamServer(RestartableServer):
    extra_args = ("--namespace", "team-ns")  # made at start, as `temporal operator namespace create` makes it


def test_a_worker_whose_namespace_a_restart_lost_exits_2_saying_so_in_one_line(tmp_path: Path) -> None:
    server = TeamServer()
    log = tmp_path / "worker.log"
    argv = endstate(
        "worker",
        "--temporal",
        server.address,
        "--namespace",
        "team-ns",
        "--catalog",
        "temporal_agents:catalog",
    )
    try:
        with log.open("w") as out:
            worker = subprocess.Popen(argv, env=cli_env(), stdout=out, stderr=subprocess.STDOUT, text=True)
        try:
            polling(worker, log)
            server.restart(extra_args=())  # in memory: the namespace is gone
            code = stopped(worker, log)
        finally:
            if worker.poll() is None:
                worker.terminate()
                worker.wait(timeout=30)
    finally:
        server.stop()
    said = log.read_text()
    ours = [line for line in said.splitlines() if line.startswith("endstate: ") and "warning" not in line]
    assert code == 2 and "Traceback" not in said, said  # was: exit 1 and a traceback
    assert ours[-1].startswith("endstate: the worker stopped") and "'team-ns'" in ours[-1], ours
    assert "Namespace team-ns is not found" in ours[-1] and "temporal operator namespace create" in ours[-1]


def polling(worker: subprocess.Popen[str], log: Path) -> None:
    """Until the worker says it polls."""
    for _ in range(1200):
        if "endstate worker: polling task queue" in log.read_text():
            return
        assert worker.poll() is None, log.read_text()
        time.sleep(0.05)
    raise AssertionError(f"the worker did not start:\n{log.read_text()}")


def stopped(worker: subprocess.Popen[str], log: Path) -> int:
    """The worker's exit code, once it has noticed (its polls in flight end within about a minute)."""
    try:
        return worker.wait(timeout=150)
    except subprocess.TimeoutExpired:
        raise AssertionError(f"the worker did not stop:\n{log.read_text()}") from None
