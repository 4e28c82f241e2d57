"""Two starts of one run id at once on one SQLite store file: one prepares, the other is refused.

PostgreSQL held a run id being started (an advisory lock); SQLite held none, so an `endstate run
--run-id X` beside `serve` on one store file, or two store objects in one process, both ran the catalog
entry's `prepare` (which may clone a repository or create resources) and the store then refused one,
whose world was left. A start with a given id now holds it with a file lock beside the store, which a
process that dies lets go."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from agent import Agent
from agent.durable.runner import Catalog, Runner
from agent.durable.store import RunExists, StartingNow, open_store
from agent.durable.store._starts import starts_of
from agent.models.scripted import ScriptedModel, finish


def _agent(state: dict[str, Any]) -> Agent:
    return Agent("x", ScriptedModel([[finish("done")]]))


def _catalog(prepared: list[str], seconds: float = 0.0) -> Catalog:
    def prepare(state: dict[str, Any], run_id: str) -> dict[str, Any]:
        prepared.append(run_id)
        time.sleep(seconds)
        return {**state, "world": run_id}

    catalog = Catalog()
    catalog.register("x", _agent, prepare=prepare)
    return catalog


def test_two_store_objects_on_one_file_starting_one_run_id_prepare_it_once(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    prepared: list[str] = []
    catalog = _catalog(prepared, seconds=1.0)
    stores = [open_store(f"sqlite:///{path}"), open_store(f"sqlite:///{path}")]
    outcomes: list[Any] = []

    def start(runner: Runner) -> None:
        try:
            outcomes.append(runner.begin("x", "task", run_id="same"))
        except RunExists as exc:
            outcomes.append(exc)

    try:
        threads = [threading.Thread(target=start, args=(Runner(store, catalog),)) for store in stores]
        for thread in threads:
            thread.start()
            time.sleep(0.3)  # the first is preparing when the second comes
        for thread in threads:
            thread.join(30)
        refused = [o for o in outcomes if isinstance(o, RunExists)]
        assert prepared == ["same"], prepared  # the refused start prepared nothing
        assert len(outcomes) == 2 and len(refused) == 1, outcomes
        assert isinstance(refused[0], StartingNow) and "being started now" in str(refused[0])
        record = stores[0].get("same")
        assert record is not None and record.state["world"] == "same"
        assert list(starts_of(path).iterdir()) == []  # no start under way: nothing left beside the store
    finally:
        for store in stores:
            store.close()


_PREPARING = """
import sys, time
from pathlib import Path
from agent import Agent
from agent.durable.runner import Catalog, Runner
from agent.durable.store import open_store
from agent.models.scripted import ScriptedModel, finish

def prepare(state, run_id):
    Path(sys.argv[2]).write_text("preparing")
    time.sleep(120)
    return state

catalog = Catalog()
catalog.register("x", lambda state: Agent("x", ScriptedModel([[finish("done")]])), prepare=prepare)
Runner(open_store("sqlite:///" + sys.argv[1]), catalog).begin("x", "task", run_id="same")
"""


def test_a_start_in_another_process_holds_the_id_until_that_process_dies(tmp_path: Path) -> None:
    """Another process preparing the id: refused at once, nothing prepared here; once that process is
    killed (-9, mid-prepare), the id is free and a start here prepares and stores the run."""
    path, ready = tmp_path / "runs.db", tmp_path / "ready"
    open_store(f"sqlite:///{path}").close()  # made (and migrated) before either start
    other = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(_PREPARING), str(path), str(ready)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    prepared: list[str] = []
    store = open_store(f"sqlite:///{path}")
    try:
        give_up = time.monotonic() + 60
        while not ready.exists():
            assert other.poll() is None, other.stderr.read() if other.stderr else ""
            assert time.monotonic() < give_up, "the other process never began to prepare"
            time.sleep(0.05)
        runner = Runner(store, _catalog(prepared))
        with pytest.raises(StartingNow, match="is being started now"):
            runner.begin("x", "task", run_id="same")
        assert prepared == [] and store.get("same") is None
        os.kill(other.pid, signal.SIGKILL)
        other.wait(30)
        assert runner.begin("x", "task", run_id="same").run_id == "same"
        assert prepared == ["same"]
        record = store.get("same")
        assert record is not None and record.state["world"] == "same"
    finally:
        if other.poll() is None:
            other.kill()
            other.wait(30)
        if other.stderr is not None:
            other.stderr.close()
        store.close()


def test_a_start_that_failed_lets_its_id_go(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    calls: list[str] = []

    def prepare(state: dict[str, Any], run_id: str) -> dict[str, Any]:
        calls.append(run_id)
        if len(calls) == 1:
            raise RuntimeError("the clone failed")
        return state

    catalog = Catalog()
    catalog.register("x", _agent, prepare=prepare)
    store, other = open_store(f"sqlite:///{path}"), open_store(f"sqlite:///{path}")
    try:
        with pytest.raises(Exception, match="the clone failed"):
            Runner(store, catalog).begin("x", "task", run_id="again")
        assert Runner(other, catalog).begin("x", "task", run_id="again").run_id == "again"
        assert calls == ["again", "again"] and list(starts_of(path).iterdir()) == []
    finally:
        store.close()
        other.close()


def test_the_hold_is_one_id_not_the_store(tmp_path: Path) -> None:
    """While one id is held, another id starts at once, from another store object on the file."""
    path = tmp_path / "runs.db"
    store, other = open_store(f"sqlite:///{path}"), open_store(f"sqlite:///{path}")
    try:
        with store.starting("one"):
            with pytest.raises(StartingNow), other.starting("one"):
                pass
            assert Runner(other, _catalog([])).begin("x", "task", run_id="two").run_id == "two"
        with other.starting("one"):  # let go at the block's end
            pass
    finally:
        store.close()
        other.close()
