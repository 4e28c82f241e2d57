"""red41a: Ctrl-C on a command waiting over Temporal for a run's segment (`start`, `answer`, `resume` ...
with --temporal) stops the wait quietly with exit 130; the run stays with Temporal."""

from __future__ import annotations

import signal
import socket
import subprocess
import urllib.request
import uuid
from pathlib import Path

import pytest
from temporal_server import TemporalServer, cli_env, endstate, temporal_cli, temporal_fixture
from test_service_support import wait_for

pytestmark = pytest.mark.slow

temporal = temporal_fixture()


def _described(server: TemporalServer, run_id: str) -> bool:
    """Whether Temporal has the run's workflow."""
    argv = [temporal_cli(), "workflow", "describe", "--workflow-id", run_id, "--address", server.address]
    return subprocess.run(argv, capture_output=True, text=True, timeout=30).returncode == 0


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_on_a_start_waiting_over_temporal_stops_the_wait_without_asyncio_noise(
    temporal: TemporalServer, tmp_path: Path, sig: signal.Signals
) -> None:
    """Before: Ctrl-C printed "endstate: error: unhandled exception during asyncio.run() shutdown" and a
    line naming the SDK's Task and its WorkflowUpdateRPCTimeoutOrCancelledError; SIGTERM killed the
    command outright (exit -15, nothing said)."""
    run_id = queue = f"nobody-{uuid.uuid4().hex[:8]}"  # no worker polls it: the start waits
    argv = endstate("start", "csv-cleaner", "clean it", "--run-id", run_id, "--temporal", temporal.address)
    start = subprocess.Popen(
        [*argv, "--task-queue", queue], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env=cli_env(), cwd=tmp_path,
    )  # fmt: skip
    try:
        wait_for(lambda: _described(temporal, run_id), what="the run's workflow on Temporal")
        start.send_signal(sig)
        _, err = start.communicate(timeout=60)
    finally:
        if start.poll() is None:
            start.kill()
            start.wait()
    said = [line for line in err.splitlines() if "registered the search attributes" not in line]
    assert start.returncode == 128 + sig, err
    assert said == ["endstate: stopped waiting; the run goes on with Temporal"], err
    assert _described(temporal, run_id)


@pytest.mark.parametrize(("sig", "code"), [(signal.SIGTERM, 0), (signal.SIGINT, 130)])
def test_serve_over_temporal_stops_on_a_signal_as_over_a_store(
    temporal: TemporalServer, tmp_path: Path, sig: signal.Signals, code: int
) -> None:
    """Before: on SIGTERM `serve --temporal` died by the signal uvicorn raised again once it had shut down
    (exit -15), before it closed its Temporal client and sent what telemetry held; over a store, exit 0."""
    port = _a_free_port()
    argv = endstate("serve", "--temporal", temporal.address, "--port", str(port))
    serve = subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=cli_env(), cwd=tmp_path
    )
    try:
        wait_for(lambda: _answers(port), what="serve --temporal answering /healthz")
        serve.send_signal(sig)
        _, err = serve.communicate(timeout=60)
    finally:
        if serve.poll() is None:
            serve.kill()
            serve.wait()
    assert serve.returncode == code, err
    assert "Traceback" not in err and "Exception ignored" not in err, err


def _a_free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _answers(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=5) as reply:
            return bool(reply.status == 200)
    except OSError:
        return False
