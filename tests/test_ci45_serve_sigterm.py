"""ci45: a SIGTERM that reaches `endstate serve` just before uvicorn puts in its own handler."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from ports import free_port
from test_runner_agents import env_with_tests

# `endstate serve ARGS` with a real SIGTERM sent to itself as uvicorn begins to serve, before uvicorn
# has put in its signal handlers (as a `systemctl stop` or a test's terminate() can land)
SIGTERM_BEFORE_UVICORN = """
import os, signal, sys
import uvicorn
real = uvicorn.Server.serve
async def serve(self, sockets=None):
    os.kill(os.getpid(), signal.SIGTERM)
    await real(self, sockets)
uvicorn.Server.serve = serve
sys.argv = ["endstate", *sys.argv[1:]]
from agent.cli.main import run
run()
"""


def test_a_sigterm_before_uvicorn_handles_signals_still_stops_serve_with_exit_0(tmp_path: Path) -> None:
    """Before: `serve` ignored SIGTERM from the moment it set its own handler (so that uvicorn's
    re-raised one would not kill it) until uvicorn put in its own; one landing there was lost and the
    service ran on (CI: `serve --temporal` terminated as it started did not exit in 60 s)."""
    store = f"sqlite:///{tmp_path / 'runs.db'}"
    argv = [sys.executable, "-c", SIGTERM_BEFORE_UVICORN, "serve", "--store", store]
    env = {**env_with_tests(), "ENDSTATE_TOKEN": "t" * 32}
    proc = subprocess.Popen(
        [*argv, "--port", str(free_port())], cwd=tmp_path, env=env, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        out, err = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, (out, err)
    assert "endstate serve: inbox: http://127.0.0.1:" in out, out
    assert "Traceback" not in err, err
