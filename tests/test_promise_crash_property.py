"""Property (issue 9): any run whose worker is killed (kill -9: `os._exit` in a real process) as its
Nth model call or tool call begins, then recovered by another process, and answered through the
store as often as it asks, ends as the same run carried through in one process: the same stop, the
same output, turns and usage, and the same tool calls made, none twice (a call whose result was
recorded is never run again; the call the worker died in had not begun).

Hypothesis draws the turns and answers as test_journal_property does, and where the first process
dies; every segment runs in a process of its own over SQLite and PostgreSQL.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pg
import pytest
import test_journal_property as prop
from hypothesis import HealthCheck, Phase, example, given, settings
from hypothesis import strategies as st
from promise_crash_agents import DIE_AT_MODEL, DIE_AT_TOOL, RAN, URL
from test_runner_agents import env_with_tests, outlive_leases

from agent.durable.store import RunStatus, open_store

pytestmark = pytest.mark.slow
SCRIPT = str(Path(__file__).with_name("promise_crash_agents.py"))
LEASE = 30.0  # the runner's default: a dead worker's lease is moved past it on the store's clock


def segment(url: str, env: dict[str, str], *args: str) -> dict[str, Any] | None:
    """One segment in a process of its own: its result, or None when the process died (exit 9)."""
    done = subprocess.run(
        [sys.executable, SCRIPT, url, *args], env=env, capture_output=True, text=True, timeout=120
    )
    if done.returncode == 9:
        return None
    assert done.returncode == 0, done.stderr
    said: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return said


def recovered(url: str, env: dict[str, str], run_id: str) -> dict[str, Any]:
    """The dead worker's run, its lease run out by the store's clock, recovered by another process."""
    store = open_store(url)
    try:
        record = store.get(run_id)
        assert record is not None and record.status is RunStatus.RUNNING and record.owner
        owner = record.owner
    finally:
        store.close()
    assert outlive_leases(url, LEASE + 1, owner) == 1
    result = segment(url, env, "recover", run_id)
    assert result is not None and result["run_id"] == run_id
    return result


def stored_journal(url: str) -> list[Any]:
    store = open_store(url)
    try:
        snapshot = store.snapshot("r1")
        assert snapshot is not None
        return list(snapshot.journal)
    finally:
        store.close()


def answer_for(result: dict[str, Any], answers: list[str]) -> tuple[str | None, bool | None]:
    """The answer `prop.reply_for` gives the in-memory run, as the runner takes it."""
    choice = answers.pop(0) if answers else "answer"
    if result["suspension"]["pending"] is None:
        return f"said {choice}", None
    return ("not now", False) if choice == "deny" else (None, True)


def killed_and_recovered(
    url: str, tmp: Path, turns: list[prop.Turn], answers: list[str], die: tuple[str, int]
) -> tuple[dict[str, Any], list[str], bool]:
    """The run through processes, the first one dying where `die` says: its last result, the tool
    calls made, and whether a process died."""
    ran = tmp / "ran.txt"
    ran.write_text("")
    env = {**env_with_tests(), RAN: str(ran), URL: url}
    kind, nth = die
    dying = {**env, (DIE_AT_TOOL if kind == "tool" else DIE_AT_MODEL): str(nth)}
    result = segment(url, dying, "start", "r1", json.dumps({"turns": turns}))
    died = result is None
    if result is None:
        result = recovered(url, env, "r1")
    while result["reason"] == "need_help":
        answer, approved = answer_for(result, answers)
        result = segment(url, env, "resume", "r1", json.dumps(answer), json.dumps(approved)) or {}
    return result, ran.read_text().splitlines(), died


points = st.tuples(st.sampled_from(["tool", "model"]), st.integers(1, 6))


@pytest.mark.parametrize("backend", pg.BACKENDS)
def test_a_run_killed_anywhere_and_recovered_ends_as_the_run_carried_through(
    backend: str, tmp_path_factory: Any
) -> None:
    deaths: list[bool] = []

    @settings(
        max_examples=8,
        deadline=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture],
        phases=[Phase.explicit, Phase.generate],  # shown as drawn: each shrink step costs processes
    )
    @given(turns=prop.turns, answers=prop.answers, die=points)
    # each point of a turn, always: its model call; its second call, the first one's result recorded;
    # a call of a turn that would then wait for a person's approval
    @example(turns=[[("echo", 1)], [("echo", 2)]], answers=[], die=("model", 2))
    @example(turns=[[("echo", 1), ("echo", 2), ("echo", 0)]], answers=[], die=("tool", 2))
    @example(
        turns=[[("echo", 1)], [("echo", 2), ("approve", 1), ("echo", 0)]],
        answers=["approve"],
        die=("tool", 2),
    )
    def check(turns: list[prop.Turn], answers: list[str], die: tuple[str, int]) -> None:
        tmp = Path(tmp_path_factory.mktemp("crash"))
        prop.RAN.clear()
        expected, reference = prop.in_memory(turns, list(answers))
        url = pg.url_for(backend, tmp)  # PostgreSQL: a new database each time
        actual, ran, died = killed_and_recovered(url, tmp, turns, list(answers), die)
        deaths.append(died)
        assert ran == prop.RAN  # no recorded call ran again, none was lost
        assert (actual["reason"], actual["output"], actual["turns"]) == (
            str(expected.reason),
            expected.output,
            expected.turns,
        )
        assert (actual["input_tokens"], actual["output_tokens"]) == (
            expected.usage.input_tokens,
            expected.usage.output_tokens,
        )
        sent = list(reference.model.requests[-1].journal)  # the last request: all but the run's end
        assert stored_journal(url)[: len(sent)] == sent

    check()
    assert any(deaths), "no drawn run had its worker killed"
