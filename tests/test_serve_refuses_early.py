"""`endstate serve` refuses settings it cannot run with in one line, before it makes a store or a token.

A port another process holds gave uvicorn's own log lines and exit 3, after the store and the token
file were made; `ENDSTATE_READ_AUTH=maybe` (argparse does not check a default from the environment
against its choices) was refused only after them too.
"""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from agent.cli.main import main


def test_a_port_in_use_is_one_line_and_exit_2_and_nothing_is_made(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = tmp_path / "state" / "runs.db"
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        assert main(["serve", "--host", "127.0.0.1", "--port", str(port), "--store", str(store)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"endstate: cannot listen on 127.0.0.1:{port}"), err
    assert "choose another --port" in err and "\n" not in err
    assert not store.parent.exists()


def test_a_bad_read_auth_from_the_environment_is_refused_before_anything_is_made(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ENDSTATE_READ_AUTH", "maybe")
    store = tmp_path / "state" / "runs.db"
    assert main(["serve", "--host", "127.0.0.1", "--port", "1", "--store", str(store)]) == 2
    err = capsys.readouterr().err.strip()
    assert err == "endstate: read auth must be one of auto, token, open, not 'maybe'", err
    assert not store.parent.exists()
