"""red40: an allowed host given as a URL is refused at start, not taken as the host "http"."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest


@pytest.mark.parametrize(
    ("args", "env", "bad"),
    [
        (["--allowed-host", "http://inbox.example.com"], {}, "http://inbox.example.com"),
        (["--allowed-host", "inbox.example.com/inbox"], {}, "inbox.example.com/inbox"),
        (
            [],
            {"ENDSTATE_ALLOWED_HOSTS": "agent, https://inbox.example.com:8443"},
            "https://inbox.example.com:8443",
        ),
    ],
)
def test_an_allowed_host_that_is_a_url_is_refused(
    tmp_path: Path, args: list[str], env: dict[str, str], bad: str
) -> None:
    """Before: `serve --allowed-host http://inbox.example.com` started, serving the Host "http" and
    answering the clients of inbox.example.com 421."""
    environ = {**os.environ, "ENDSTATE_TOKEN": "test-token-0123456789abcdef", **env}
    argv = [
        sys.executable,
        "-m",
        "agent.cli",
        "serve",
        "--port",
        "1",
        "--store",
        str(tmp_path / "runs.db"),
        *args,
    ]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60, env=environ, cwd=tmp_path)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert f"not {bad!r}: leave out the scheme and path" in done.stderr


@pytest.mark.parametrize("name", ["", "  "])
def test_an_empty_allowed_host_is_refused(tmp_path: Path, name: str) -> None:
    """Before (red41a): `serve --allowed-host ""` started without a word, serving no name more."""
    environ = {**os.environ, "ENDSTATE_TOKEN": "test-token-0123456789abcdef"}
    argv = [sys.executable, "-m", "agent.cli", "serve", "--port", "1", "--store", str(tmp_path / "runs.db")]
    done = subprocess.run(
        [*argv, "--allowed-host", name], capture_output=True, text=True, timeout=60, env=environ, cwd=tmp_path
    )
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert "--allowed-host needs a name clients put in the Host header" in done.stderr
