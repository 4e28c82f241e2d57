"""An OTLP endpoint with a password in it (`http://user:secret@collector:4318`) is never printed.

When export failed, the one line that says so named the endpoint as given, password included, on
the terminal and in every log that keeps stderr. It now shows `user:***@`, as the store's URLs do.
(telemetry/setup.py: the smallest change, in `Delivery`.)
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_the_delivery_warning_masks_the_endpoints_password(tmp_path: Path) -> None:
    with socket.socket() as s:  # a port nothing listens on: every export fails at once
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "OTEL_EXPORTER_OTLP_ENDPOINT": f"http://u:s3c@r3t@127.0.0.1:{port}",
    }
    env.pop("OTEL_TRACES_EXPORTER", None)
    done = subprocess.run(
        [sys.executable, "-m", "agent.cli", "demo", "csv/clean"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "could not be delivered" in done.stderr
    assert f"http://u:***@127.0.0.1:{port}" in done.stderr
    assert "s3c" not in done.stderr and "r3t" not in done.stderr
