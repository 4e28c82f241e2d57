"""`endstate demo`'s flags, tried as the README gives them and with the mistakes a person makes.

A bad `--metrics-port` (99999, a port another process holds) was a traceback, `--repeat 0` exited 1
(a failed run, not a usage error), and `--hold` without `--metrics-port` was silently ignored.
Each is now one line on stderr and exit 2, as the other commands' bad input is.
"""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from agent.cli.main import main


def demo(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    """Exit code (argparse's own usage errors included) and stderr of `endstate demo ARGV`."""
    try:
        code = main(["demo", *argv])
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    return code, capsys.readouterr().err


@pytest.fixture(autouse=True)
def in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # the demo writes .endstate/traces.jsonl here
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_ENDPOINT", raising=False)


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["--metrics-port", "99999", "csv/clean"], "--metrics-port"),
        (["--metrics-port", "0", "csv/clean"], "--metrics-port"),
        (["--repeat", "0", "csv/clean"], "--repeat"),
        (["--repeat", "-3", "csv/clean"], "--repeat"),
        (["--hold", "csv/clean"], "--metrics-port"),
    ],
)
def test_bad_flags_are_usage_errors(capsys: pytest.CaptureFixture[str], argv: list[str], said: str) -> None:
    code, err = demo(capsys, *argv)
    assert code == 2, err
    assert said in err and "Traceback" not in err


def test_a_port_in_use_is_said_in_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        code, err = demo(capsys, "--metrics-port", str(port), "csv/clean")
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and f"127.0.0.1:{port}" in lines[0] and "--metrics-port" in lines[0], err


def test_an_address_not_of_this_host_is_said(capsys: pytest.CaptureFixture[str]) -> None:
    code, err = demo(capsys, "--metrics-port", "1", "--metrics-addr", "no-such-host.invalid", "csv/clean")
    assert code == 2
    assert "no-such-host.invalid" in err and "--metrics-addr" in err and "Traceback" not in err


def test_good_flags_still_play(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["demo", "--repeat", "2", "--json", "csv/clean"])
    assert code == 0
    assert len(capsys.readouterr().out.strip().splitlines()) == 2  # one segment, played twice
