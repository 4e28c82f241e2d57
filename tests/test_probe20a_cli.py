"""probe20a: `endstate worker` and the commands over Temporal refuse settings no run could live with.

`worker --heartbeat nan` started and polled: every run whose activity it took ended as `error`
("ValueError: cannot convert float NaN to integer"); `--heartbeat -1` left its runs' workflow tasks
failing and the run never ended; `--heartbeat 0` set no heartbeat at all (a dead worker never
noticed). `--grace 1e300` and `--metrics-port 99999` were tracebacks once it had connected, and
`--task-queue ''` polled a queue no start may name. Each is now a usage error naming the argument,
before any server is asked.
"""

from __future__ import annotations

import asyncio
import math
from pathlib import Path
from typing import Any, cast

import pytest

from agent.cli.main import main
from agent.durable.catalog import Catalog
from agent.durable.store import open_store
from agent.errors import ConfigError
from agent.temporal import build_worker

NOWHERE = ["--temporal", "127.0.0.1:1"]  # asked only after the arguments are checked


@pytest.mark.parametrize(
    ("argv", "what"),
    [
        (["worker", "--heartbeat", "nan"], "--heartbeat"),
        (["worker", "--heartbeat", "-1"], "--heartbeat"),
        (["worker", "--heartbeat", "0"], "--heartbeat"),
        (["worker", "--heartbeat", "1e9"], "--heartbeat"),
        (["worker", "--grace", "1e300"], "--grace"),
        (["worker", "--metrics-port", "99999"], "--metrics-port"),
        (["worker", "--task-queue", ""], "--task-queue"),
        (["worker", "--namespace", " "], "--namespace"),
        (["start", "counter", "count", "--task-queue", ""], "--task-queue"),
        (["pending", "--namespace", ""], "--namespace"),
    ],
)
def test_a_worker_setting_no_run_could_live_with_is_a_usage_error_naming_it(
    argv: list[str], what: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        main([*argv, *NOWHERE])
    err = capsys.readouterr().err
    assert exited.value.code == 2
    assert f"error: argument {what}: " in err.splitlines()[-1], err
    assert "Traceback" not in err and "cannot reach Temporal" not in err


@pytest.mark.parametrize(
    "given",
    [
        {"heartbeat_seconds": math.nan},
        {"heartbeat_seconds": -1.0},
        {"heartbeat_seconds": 0.0},
        {"heartbeat_seconds": 1e-9},  # under a microsecond: Temporal's duration is 0, no heartbeat
        {"model_timeout": math.inf},
    ],
)
def test_build_worker_refuses_a_timeout_no_run_could_live_with(given: dict[str, float]) -> None:
    [(name, _)] = given.items()
    nothing_asked = cast(Any, None)  # refused before the client is used
    with pytest.raises(ConfigError, match=f"{name} must be a number of seconds"):
        asyncio.run(build_worker(nothing_asked, Catalog(), **given))  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="task queue"):
        asyncio.run(build_worker(nothing_asked, Catalog(), task_queue=" "))


def test_end_with_endstate_temporal_set_ends_the_run_on_temporal_and_makes_no_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # `end` has a Temporal form now (temporal51): with $ENDSTATE_TEMPORAL set it goes there, as `answer`
    # does; no local store is made. (It said to `temporal workflow terminate`, which counts no stop.)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("ENDSTATE_TEMPORAL", "127.0.0.1:1")
    monkeypatch.delenv("ENDSTATE_STORE", raising=False)
    assert main(["end", "run-1", "--note", "agent retired"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "cannot reach Temporal at '127.0.0.1:1'" in err, err
    assert not (tmp_path / ".endstate").exists()


@pytest.mark.parametrize("command", ["recover", "audit"])
def test_a_store_only_command_with_endstate_temporal_set_says_so_and_makes_no_store(
    command: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # With $ENDSTATE_TEMPORAL exported (the documented way to point the commands at Temporal),
    # `endstate recover` made ./.endstate/runs.db and said "0 runs recovered or swept": an operator
    # on Temporal read that nothing needed recovering. Named stores are acted on as before.
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("ENDSTATE_TEMPORAL", "127.0.0.1:1")
    monkeypatch.delenv("ENDSTATE_STORE", raising=False)
    assert main([command]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"`endstate {command}` works on a run store" in err, err
    assert "pass --store (or set $ENDSTATE_STORE)" in err
    assert not (tmp_path / ".endstate").exists()

    for name in ("runs.db", "other.db"):  # a missing store is refused too (test_probe21b_review_store)
        open_store(str(tmp_path / name)).close()
    assert main([command, "--store", str(tmp_path / "runs.db")]) == 0  # a store named: acted on
    monkeypatch.setenv("ENDSTATE_STORE", str(tmp_path / "other.db"))
    assert main([command]) == 0
