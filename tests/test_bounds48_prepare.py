"""A catalog entry's `prepare` has a deadline: one that hangs holds no start, no request, for ever.

`Runner.begin` called `prepare` and waited as long as it took: a `prepare` that hung (a server that
never answers, a lock, a prompt) held the start, the service's request and its thread for ever. Now it
runs on a daemon thread within `prepare_seconds` (`$ENDSTATE_PREPARE_TIMEOUT`, else 300 s); past them
the start fails `PrepareHangs` (an `AgentUnavailable`: the service answers 503), nothing is stored,
and what the late `prepare` makes is let go by the entry's `cleanup`.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agent import Agent
from agent.cli._help import ENVIRONMENT
from agent.durable.runner import AgentUnavailable, Catalog, Runner
from agent.durable.store import open_store
from agent.errors import ConfigError
from agent.models.scripted import ScriptedModel, finish
from agent.result import StopReason

ENV_PREPARE_TIMEOUT = "ENDSTATE_PREPARE_TIMEOUT"
WAIT = 60.0  # the most a test waits for what should happen within a second or two (CI is loaded)


@pytest.fixture
def release() -> Iterator[threading.Event]:
    event = threading.Event()
    yield event
    event.set()  # no hung prepare outlives its test


def _agent(state: dict[str, Any]) -> Agent:
    return Agent("x", ScriptedModel([[finish("done", "ok")]]))


def test_a_prepare_that_hangs_fails_the_start_at_its_deadline_and_its_late_world_is_let_go(
    tmp_path: Path, release: threading.Event, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(ENV_PREPARE_TIMEOUT, "0.5")
    cleaned: list[dict[str, Any]] = []
    let_go = threading.Event()

    def prepare(state: dict[str, Any], run_id: str) -> dict[str, Any]:
        release.wait(WAIT)
        return {**state, "folder": f"/tmp/{run_id}"}

    def cleanup(state: dict[str, Any]) -> None:
        cleaned.append(state)
        let_go.set()

    catalog = Catalog()
    catalog.register("x", _agent, prepare=prepare, cleanup=cleanup)
    store = open_store(str(tmp_path / "runs.db"))
    try:
        runner = Runner(store, catalog)
        begun: list[BaseException] = []

        def start() -> None:
            try:
                runner.begin("x", "task", run_id="r1")
            except BaseException as exc:
                begun.append(exc)

        starting = threading.Thread(target=start, daemon=True)
        starting.start()
        starting.join(WAIT)

        assert begun, f"the start still waited on prepare after {WAIT:g} s"
        assert isinstance(begun[0], AgentUnavailable), begun[0]
        assert "prepare did not finish within 0.5 s" in str(begun[0])
        assert ENV_PREPARE_TIMEOUT in str(begun[0])
        assert list(store.list_runs(limit=None)) == []
        release.set()  # the late prepare ends: what it made is no run's
        assert let_go.wait(WAIT)
        assert cleaned == [{"folder": "/tmp/r1"}]
    finally:
        store.close()


def test_a_prepare_within_its_deadline_starts_the_run_with_its_state(tmp_path: Path) -> None:
    catalog = Catalog()
    catalog.register("x", _agent, prepare=lambda state, run_id: {**state, "ready": run_id})
    store = open_store(str(tmp_path / "runs.db"))
    try:
        result = asyncio.run(Runner(store, catalog, prepare_seconds=WAIT).start("x", "task", run_id="r2"))
        assert result.reason is StopReason.SUCCESS
        record = store.get("r2")
        assert record is not None and record.state == {"ready": "r2"}
    finally:
        store.close()


def test_a_prepare_raising_in_time_is_refused_as_before(tmp_path: Path) -> None:
    def prepare(state: dict[str, Any], run_id: str) -> dict[str, Any]:
        raise OSError("no disk")

    catalog = Catalog()
    catalog.register("x", _agent, prepare=prepare)
    store = open_store(str(tmp_path / "runs.db"))
    try:
        with pytest.raises(AgentUnavailable, match="prepare raised OSError: no disk; nothing was changed"):
            Runner(store, catalog).begin("x", "task")
    finally:
        store.close()


def test_the_deadline_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from agent.durable.catalog import PREPARE_TIMEOUT, prepare_timeout

    monkeypatch.delenv(ENV_PREPARE_TIMEOUT, raising=False)
    assert prepare_timeout() == PREPARE_TIMEOUT == 300.0
    monkeypatch.setenv(ENV_PREPARE_TIMEOUT, "12.5")
    store = open_store(str(tmp_path / "runs.db"))
    try:
        assert Runner(store, Catalog()).prepare_seconds == 12.5
        for bad in ("0", "-1", "soon", "nan", "1e9"):
            monkeypatch.setenv(ENV_PREPARE_TIMEOUT, bad)
            with pytest.raises(ConfigError, match=rf"\${ENV_PREPARE_TIMEOUT} must be a number of seconds"):
                Runner(store, Catalog())
        with pytest.raises(ConfigError, match="prepare_seconds must be a number of seconds above 0"):
            Runner(store, Catalog(), prepare_seconds=0)
    finally:
        store.close()


def test_the_commands_that_start_runs_list_the_variable() -> None:
    for command in ("start", "serve", "recover"):
        assert ENV_PREPARE_TIMEOUT in ENVIRONMENT[command], command
