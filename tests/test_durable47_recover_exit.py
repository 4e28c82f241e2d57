"""`endstate recover` exits 2 when it leaves a run it could not take (the store failed on it), so a
timer or a script that runs it sees that runs are still to recover (durable47). A run it handled,
ended `error` because it cannot be rebuilt, still exits 0 (`test_runner_cli`)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from test_runner_agents import Crash, catalog, counted, counter_state, outlive_leases

from agent.cli.main import main
from agent.durable.runner import Runner
from agent.durable.store import StoreError, open_store
from agent.durable.store.sqlite import SqliteStore

CATALOG = "test_runner_agents:catalog"


def crashed(path: Path, folder: Path) -> str:
    """A `crash` counter run whose worker died after count(1..3); its lease has run out. Its id."""
    runner = Runner(open_store(str(path)), catalog(), lease_seconds=600)
    try:
        with pytest.raises(Crash):
            asyncio.run(runner.start("counter", "c", state=counter_state(folder, "crash"), run_id="crashed"))
    finally:
        runner.store.close()
    assert outlive_leases(str(path), 601, runner.owner) == 1
    return "crashed"


def test_recover_exits_2_naming_a_run_it_could_not_take_and_recovers_it_next_time(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    path, folder = tmp_path / "runs.db", tmp_path / "run"
    run_id = crashed(path, folder)

    def full(*args: object, **kwargs: object) -> None:
        raise StoreError("the run store failed: database or disk is full")

    with monkeypatch.context() as patched:
        patched.setattr(SqliteStore, "take_over", full)
        assert main(["recover", "--store", str(path), "--catalog", CATALOG]) == 2
    said = capsys.readouterr()
    assert "0 runs recovered or swept" in said.out
    assert f"run {run_id} cannot be recovered: the run store failed: database or disk is full" in caplog.text
    assert f"1 run is left to recover or sweep: {run_id}" in said.err and "`endstate recover`" in said.err
    assert main(["recover", "--store", str(path), "--catalog", CATALOG]) == 0
    assert f"run {run_id}: success" in capsys.readouterr().out and counted(folder) == [1, 2, 3, 4]
