"""audit12: `--temporal` (and `$ENDSTATE_TEMPORAL`) takes HOST:PORT, and says so when given anything else.

Before: `--temporal localhost` (the port left out, as `temporal`'s own CLI allows) went to port 80 and
said only that Temporal could not be reached there ("tcp connect error ... 127.0.0.1:80"), after the
SDK's retries; `--temporal http://127.0.0.1:7233` printed a Python `UserWarning` from the SDK and then
echoed the URL in the commands it suggested. Now either is a usage error (exit 2) saying what to give,
before any connection is made.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from agent.cli.temporal import temporal_address


def _endstate(*argv: str, **env: str) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if k != "ENDSTATE_TEMPORAL"} | env
    return subprocess.run(
        [sys.executable, "-m", "agent.cli", *argv], env=environ, capture_output=True, text=True, timeout=120
    )


@pytest.mark.parametrize(
    ("given", "says"),
    [
        ("localhost", "no port"),
        ("127.0.0.1", "no port"),
        ("http://127.0.0.1:7233", "no scheme"),
        ("127.0.0.1:0", "port"),
        ("127.0.0.1:70000", "port"),
        ("127.0.0.1:72a", "port"),
        (":7233", "no host"),
        ("a b:7233", "HOST:PORT"),
    ],
)
def test_an_address_that_is_not_host_port_is_refused_saying_what_to_give(given: str, says: str) -> None:
    done = _endstate("runs", "--temporal", given)
    assert done.returncode == 2, done.stderr
    assert "HOST:PORT" in done.stderr and says in done.stderr, done.stderr
    assert "7233" in done.stderr  # Temporal's own default port, as an example
    assert "Warning" not in done.stderr and "tcp connect" not in done.stderr


def test_the_variable_is_checked_the_same_way() -> None:
    done = _endstate("pending", ENDSTATE_TEMPORAL="localhost")
    assert done.returncode == 2 and "HOST:PORT" in done.stderr and "no port" in done.stderr, done.stderr


@pytest.mark.parametrize(
    "good", ["127.0.0.1:7233", "localhost:7233", "temporal:7233", "ns.a1b2.tmprl.cloud:7233", "[::1]:7233"]
)
def test_host_port_is_taken_as_it_is(good: str) -> None:
    assert temporal_address(good) == good
