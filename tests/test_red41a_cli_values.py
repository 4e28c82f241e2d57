"""red41a: values a command's --help bounds are refused at once, exit 2, one line saying what to give."""

from __future__ import annotations

import re
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from test_packaging import all_parsers

from agent.durable.store import open_store


def _endstate(*argv: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "agent.cli", *argv]
    try:
        return subprocess.run(command, capture_output=True, text=True, cwd=cwd, timeout=60)
    except subprocess.TimeoutExpired as exc:  # the command went on as if the value were good
        pytest.fail(f"{' '.join(argv)} was not refused: {exc.stderr!r}")


def _a_free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.parametrize("age", ["0d", "0s"])
def test_serve_refuses_a_retention_of_0_as_prune_does(tmp_path: Path, age: str) -> None:
    """Before: `serve --retention 0d` started, and its hourly prune failed (or would have deleted every
    finished run); `prune --older-than 0d` was refused."""
    store = str(tmp_path / "runs.db")
    open_store(store).close()
    for argv in (
        ["serve", "--retention", age, "--store", store, "--port", str(_a_free_port())],
        ["prune", "--older-than", age, "--store", store],
    ):
        done = _endstate(*argv, cwd=tmp_path)
        assert done.returncode == 2, done.stderr
        last = done.stderr.strip().splitlines()[-1]
        assert last.startswith("endstate: ") and "above 0" in last and "Traceback" not in done.stderr


def test_worker_refuses_a_continue_after_past_40000_before_it_connects(tmp_path: Path) -> None:
    """Before: `worker --continue-after 50000` (help: at most 40000) tried Temporal first: with none there
    it said Temporal was unreachable, and with one it was refused only once connected."""
    done = _endstate("worker", "--temporal", "127.0.0.1:1", "--continue-after", "40001", cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert "--continue-after: '40001' is not a whole number of history events from 1 to 40000" in last, last
    assert "Temporal" not in done.stderr


def test_every_variable_an_option_falls_back_to_is_in_its_commands_list_of_variables() -> None:
    """Before: `serve --help` listed neither ENDSTATE_MAX_RUNNING nor ENDSTATE_READY_TIMEOUT, `worker --help`
    not ENDSTATE_FIRST_SCRAPE_WAIT, the store commands not ENDSTATE_STORE_TIMEOUT or ENDSTATE_TEMPORAL,
    though their options fall back to them; and no help named ENDSTATE_TRACES_FILE, where the spans of
    `demo` and of every run go when no OTLP endpoint is set."""
    for parser in all_parsers():
        named = {v for a in parser._actions for v in re.findall(r"ENDSTATE_[A-Z_]+", a.help or "")}
        listed = (parser.epilog or "").split("environment variables read: ", 1)[-1]
        assert {v for v in named if v not in listed} == set(), parser.prog
    demo = next(p for p in all_parsers() if p.prog == "endstate demo")
    assert "ENDSTATE_TRACES_FILE" in (demo.epilog or "")


def test_no_help_shows_an_empty_default() -> None:
    """Before: `review label --help` said of --note "(default: )"."""
    for parser in all_parsers():
        assert "(default: )" not in parser.format_help(), parser.prog
