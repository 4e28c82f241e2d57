"""Runs across processes through the CLI: suspend in one, answer from another; concurrent answers."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pg
import pytest
from test_runner_agents import counted, counter_state
from test_service_support import endstate, spawn

from agent.store import RunStatus, open_store

pytestmark = pytest.mark.slow
CATALOG = "test_runner_agents:catalog"


@pytest.fixture(params=pg.BACKENDS)
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    return pg.url_for(request.param, tmp_path)


def test_suspend_in_one_process_answer_from_another_and_the_run_completes(
    store_url: str, tmp_path: Path
) -> None:
    env_worlds = {"ENDSTATE_WORLDS": str(tmp_path / "worlds")}
    import os

    env = {**os.environ, **env_worlds}
    first = endstate("start", "invoice-downloader", "Get the invoice", "--json", store=store_url, env=env)
    assert first.returncode == 0, first.stderr
    result = json.loads(first.stdout)
    assert result["reason"] == "need_help"
    pending = endstate("pending", store=store_url, env=env)
    assert result["run_id"] in pending.stdout and "Which one should I download?" in pending.stdout

    second = endstate(
        "answer", result["run_id"], "INV-0913, the corrected one.", "--json", store=store_url, env=env
    )
    assert second.returncode == 0, second.stderr
    done = json.loads(second.stdout)
    assert (done["reason"], done["verified"], done["turns"]) == ("success", True, 4)
    runs = endstate("runs", "--json", store=store_url, env=env)
    assert json.loads(runs.stdout.splitlines()[0])["status"] == "finished"


def test_concurrent_answers_from_two_processes_resume_exactly_once(store_url: str, tmp_path: Path) -> None:
    folder = tmp_path / "run"
    state = json.dumps(counter_state(folder, "ask"))
    first = endstate(
        "start", "counter", "ask", "--state", state, "--catalog", CATALOG, "--json", store=store_url
    )
    run_id = json.loads(first.stdout)["run_id"]
    procs = [
        spawn("answer", run_id, "2", "--catalog", CATALOG, store=store_url, log=tmp_path / f"answer{i}.log")
        for i in range(3)
    ]
    codes = [p.wait(timeout=120) for p in procs]
    logs = [(tmp_path / f"answer{i}.log").read_text() for i in range(3)]
    assert sorted(codes) == [0, 2, 2], logs
    refused = [log for code, log in zip(codes, logs, strict=True) if code == 2]
    assert all("not waiting" in log and "Traceback" not in log for log in refused), refused
    assert counted(folder) == [1, 2]  # the second half ran once
    store = open_store(store_url)
    rec = store.get(run_id)
    store.close()
    assert rec is not None and rec.status is RunStatus.FINISHED and rec.segments == 2


def test_a_corrupt_or_foreign_sqlite_file_is_a_clear_error_not_a_traceback(tmp_path: Path) -> None:
    corrupt = tmp_path / "corrupt.db"
    corrupt.write_bytes(b"\x00garbage, not SQLite\n" * 300)
    foreign = tmp_path / "foreign.db"
    subprocess.run(
        ["python3", "-c", f"import sqlite3; sqlite3.connect({str(foreign)!r}).execute('create table t(x)')"]
    )
    for path, message in (
        (corrupt, "file is not a database"),
        (foreign, "SQLite database of something else"),
    ):
        for command in (["runs"], ["pending"], ["answer", "some-run", "yes"]):
            done = endstate(*command, store=str(path))
            assert done.returncode == 2, done.stderr
            assert done.stderr.startswith("endstate: ") and message in done.stderr
            assert "Traceback" not in done.stderr
