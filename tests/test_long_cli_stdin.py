"""A run's text given to `endstate` as `-` is read from standard input: Linux takes at most 128 KiB in one
argument, so a longer task (a 1 MB log to triage) or answer could not be given on the command line at
all (the shell's "Argument list too long"), though the README said to give such a text with `endstate`."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from test_runner_agents import counter_state, env_with_tests

from agent.durable.store import open_store

CATALOG = "test_runner_agents:catalog"
TASK = "Triage this log:\n" + "2026-12-06 15:00:00 worker-7 retry 3/5 after 503\n" * 21_000  # about 1 MB


def endstate_with_input(*args: str, given: bytes, store: str) -> subprocess.CompletedProcess[str]:
    """`endstate ARGS --store STORE --catalog CATALOG --json`, with `given` on its standard input."""
    argv = [sys.executable, "-m", "agent.cli", *args, "--store", store, "--catalog", CATALOG, "--json"]
    done = subprocess.run(argv, input=given, capture_output=True, timeout=120, env=env_with_tests())
    return subprocess.CompletedProcess(done.args, done.returncode, done.stdout.decode(), done.stderr.decode())


def test_a_long_task_and_a_long_answer_are_read_from_standard_input(tmp_path: Path) -> None:
    store_url = str(tmp_path / "runs.db")
    assert len(TASK.encode()) > 1_000_000
    with pytest.raises(OSError, match="Argument list too long"):  # why `-`: no argument holds it
        subprocess.run(["true", TASK], check=False)
    state = json.dumps(counter_state(tmp_path / "run", "ask"))
    started = endstate_with_input(
        "start", "counter", "-", "--state", state, given=TASK.encode(), store=store_url
    )
    assert started.returncode == 0, started.stderr
    run_id = json.loads(started.stdout)["run_id"]
    answer = "Use the retry budget of the September config.\n" * 3_000  # 141 kB: over one argument too
    answered = endstate_with_input("answer", run_id, "-", given=answer.encode(), store=store_url)
    assert answered.returncode == 0, answered.stderr
    assert json.loads(answered.stdout)["reason"] == "success"
    store = open_store(store_url)
    try:
        record = store.get(run_id)
        assert record is not None and record.task == TASK
        assert record.last_answer == answer
    finally:
        store.close()


def test_standard_input_that_is_not_utf8_is_refused_by_name(tmp_path: Path) -> None:
    state = json.dumps(counter_state(tmp_path / "run", "plain"))
    done = endstate_with_input(
        "start", "counter", "-", "--state", state, given=b"caf\xe9 task", store=str(tmp_path / "runs.db")
    )
    assert done.returncode == 2
    assert "the task holds bytes that are not UTF-8" in done.stderr, done.stderr
