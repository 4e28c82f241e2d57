"""What a Prometheus (or whatever answers at its URL) says in an error is text from outside: an
escape sequence in it was printed raw to the terminal of `endstate limits suggest`. It is shown
with such characters escaped, on one line."""

from __future__ import annotations

import http.server
import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest


class _Refusing(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = json.dumps({"status": "error", "errorType": "bad_data", "error": "\x1b[31mboom\nsecond"})
        self.send_response(400)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(body.encode())

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def refusing() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Refusing)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_a_prometheus_error_with_an_escape_sequence_is_shown_escaped(refusing: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "agent.cli", "limits", "suggest", "--prometheus", refusing],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2, done.stderr
    assert "\x1b" not in done.stderr
    [line] = done.stderr.strip().splitlines()
    assert line.endswith(
        r"refused 'sum by (task_type, stop_reason) (increase(agent_stops_total[7d]))': \x1b[31mboom second"
    )


def test_a_task_type_with_an_escape_sequence_heads_its_block_escaped(tmp_path: Path) -> None:
    """A task type is read from run records (a JSON line, a store, a Prometheus label): one holding
    ESC [ 31 m or a line break was printed raw as the head of its block."""
    run = {"task_type": "\x1b[31mred\nsecond", "reason": "success", "turns": 5, "active_seconds": 3.0}
    path = tmp_path / "runs.jsonl"
    path.write_text(json.dumps(run) + "\n")
    done = subprocess.run(
        [sys.executable, "-m", "agent.cli", "limits", "suggest", "--jsonl", str(path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "\x1b" not in done.stdout
    assert done.stdout.splitlines()[0] == r"\x1b[31mred second: 1 run ended (success 1)"
