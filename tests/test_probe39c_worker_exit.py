"""probe39c: how `endstate worker` exits when its stop cannot be graceful (a subprocess worker, a real
Temporal Server).

A second signal exits 2 at once, but first sends what telemetry holds (at most `FLUSH_ON_EXIT_S`): before,
it exited by `os._exit` with the spans of the turns already ended still queued, and they were lost. A call
that goes on after its cancel (a tool's long cleanup) keeps Temporal's SDK from ever ending the worker's
shutdown: the worker exits 2 anyway at `--grace` + 5 s, saying so in one line.
"""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path
from typing import Any

import pytest
from otlp_receiver import OtlpReceiver
from temporal_server import TemporalServer, cli_env, temporal_fixture
from temporalio.client import Client
from test_probe38d_worker_stop import GRACE, ROOM, SLACK, Worker, calls, held_run

from agent.cli.temporal import FLUSH_ON_EXIT_S, STOP_SLACK_S
from agent.temporal import TemporalRuns, ensure_search_attributes
from telemetry import names as n

pytestmark = pytest.mark.slow


def with_attributes() -> TemporalServer:
    """A dev server whose namespace holds Endstate's search attributes already, as once any worker
    started on it: a worker that registers them says so in a line of its own, and which test of this
    module starts the first worker on the module's server (or its only one, on a pytest-xdist worker
    that took the test alone) would change what the workers say."""
    server = TemporalServer()
    try:
        asyncio.run(registered(server.address))
    except BaseException:
        server.stop()
        raise
    return server


async def registered(address: str) -> None:
    await ensure_search_attributes(await Client.connect(address))  # the namespace the workers use


temporal = temporal_fixture(make=with_attributes)


def exporting_env(receiver: OtlpReceiver) -> dict[str, str]:
    """The worker's environment: spans to `receiver` over OTLP/HTTP, and a batch that is never sent on
    its own schedule (10 minutes): only a flush sends it."""
    env = {key: value for key, value in cli_env().items() if key != "OTEL_SDK_DISABLED"}
    env.pop("ENDSTATE_TRACES_FILE", None)
    return env | {
        "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint,
        "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
        "OTEL_BSP_SCHEDULE_DELAY": "600000",
    }


async def begun(folder: Path, run_id: str, line: str) -> None:
    """Until the run's tool calls have written `line`."""
    for _ in range(600):
        if line in calls(folder, run_id):
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"the run never wrote {line!r}: {calls(folder, run_id)}")


def test_a_second_signal_sends_the_ended_turns_spans_before_it_exits_2(
    temporal: TemporalServer, tmp_path: Path
) -> None:
    assert SLACK == STOP_SLACK_S
    with OtlpReceiver() as receiver:
        worker = Worker(temporal, tmp_path, env=exporting_env(receiver))

        async def scenario() -> str:
            runs = await TemporalRuns.connect(temporal.address, task_queue=worker.queue)
            state, flag = held_run(tmp_path)
            state["hold_at"] = 2  # turn 1 ends (its spans queued), turn 2's call is in hand
            run_id = str(await runs.start("counter", "Count", state=state, wait=False))
            await begun(tmp_path, run_id, "start 2")
            worker.signal(signal.SIGTERM)
            await worker.stopping()
            assert not receiver.requests  # nothing sent yet: the batch waits for its schedule
            sent = worker.signal(signal.SIGINT)
            code, at = await asyncio.to_thread(worker.exited, ROOM)
            assert code == 2 and at - sent < FLUSH_ON_EXIT_S + 1.0, (code, at - sent, worker.said())
            flag.unlink()
            return run_id

        try:
            run_id = asyncio.run(scenario())
        finally:
            worker.kill()
        spans = receiver.spans()
    turns = [s for _, s in spans if s.name == n.SPAN_TURN]
    tools = [s for _, s in spans if s.name.startswith(n.SPAN_EXECUTE_TOOL)]
    assert len(turns) == 1 and len(tools) == 1, [s.name for _, s in spans]  # turn 1, and its count
    assert {s.trace_id for _, s in spans} == {turns[0].trace_id}  # one run's
    assert "start 2" in calls(tmp_path, run_id) and "end 2" not in calls(tmp_path, run_id)  # cut in hand
    last = worker.said()[-1]
    assert last.startswith("endstate: ") and "second signal (SIGINT)" in last, worker.said()
    assert f"at most {FLUSH_ON_EXIT_S:g} s" in last and "1 call in hand cut" in last, worker.said()


def test_a_shutdown_the_sdk_never_ends_exits_2_at_the_grace_and_5_s_in_one_line(
    temporal: TemporalServer, tmp_path: Path
) -> None:
    worker = Worker(temporal, tmp_path)

    async def scenario() -> tuple[str, float]:
        runs = await TemporalRuns.connect(temporal.address, task_queue=worker.queue)
        held, flag = held_run(tmp_path)
        state: dict[str, Any] = {**held, "stubborn": True}
        run_id = str(await runs.start("counter", "Count", state=state, wait=False))
        await begun(tmp_path, run_id, "start 1")
        sent = worker.signal(signal.SIGTERM)
        code, at = await asyncio.to_thread(worker.exited, GRACE + SLACK + ROOM)
        assert code == 2, (code, worker.said())
        flag.unlink()
        return run_id, at - sent

    try:
        run_id, took = asyncio.run(scenario())
    finally:
        worker.kill()
    assert "cancelled 1" in calls(tmp_path, run_id), calls(tmp_path, run_id)  # the SDK cut it, at the grace
    assert GRACE + SLACK <= took <= GRACE + SLACK + 2.0, (took, worker.said())
    ended = [line for line in worker.said() if line.startswith("endstate: ")]
    assert len(ended) == 1 and ended == worker.said()[-1:], worker.said()
    assert f"did not stop within --grace {GRACE:g} s + {SLACK:g} s of SIGTERM" in ended[0], ended
    assert "1 call in hand cut" in ended[0] and "Traceback" not in worker.log.read_text(), worker.said()
