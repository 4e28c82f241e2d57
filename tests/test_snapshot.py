"""Snapshots: JSON round trips, resuming in a fresh process, and bad snapshots refused clearly."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import resume_worker

from agent import Agent, PendingAction, Snapshot, SnapshotError, StopReason, Usage
from agent.context import CallRecord
from agent.models.scripted import ScriptedModel, finish
from agent.result import Suspension
from agent.snapshot import SNAPSHOT_VERSION

WORKER = Path(__file__).with_name("resume_worker.py")


def suspended() -> tuple[Agent, Snapshot]:
    agent = resume_worker.build_agent()
    result = agent.run("Instant payments market share in 2026", run_id="run-fresh-process")
    assert result.reason is StopReason.NEED_HELP
    return agent, result.snapshot


def test_snapshot_round_trips_through_json():
    _, snap = suspended()
    text = snap.to_json()
    again = Snapshot.from_json(text)
    assert again == snap
    assert again.to_json() == text
    assert isinstance(again.usage, Usage)
    assert isinstance(again.calls[0], CallRecord)
    assert isinstance(again.suspension, Suspension)
    assert again.reason is StopReason.NEED_HELP
    assert json.loads(text)["version"] == SNAPSHOT_VERSION


def test_a_pending_action_round_trips():
    snap = Snapshot(
        run_id="r",
        agent="a",
        task="t",
        task_type="default",
        reason=StopReason.NEED_HELP,
        segment=1,
        messages=[{"role": "user", "content": "t"}],
        usage=Usage(turns=1),
        suspension=Suspension("Approve?", 200.0, 100.0, PendingAction("toolu_1", "pay", {"amount": 5})),
        open_results=[None],
    )
    assert Snapshot.from_json(snap.to_json()) == snap


@pytest.mark.slow
def test_a_suspended_run_resumes_in_a_fresh_process(tmp_path):
    _, snap = suspended()
    first_active = snap.usage.active_seconds
    data = json.loads(snap.to_json())
    data["suspension"]["suspended_at"] -= 600  # the person took ten minutes to answer
    path = tmp_path / "snapshot.json"
    path.write_text(json.dumps(data))

    done = subprocess.run(
        [sys.executable, str(WORKER), str(path), "EU"], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)

    assert result["reason"] == "success"
    assert result["verified"] is True
    assert result["run_id"] == "run-fresh-process"
    assert result["turns"] == 3  # two before the question, one after
    assert "Instant payments share in EU" in result["output"]  # the answer reached the model
    assert result["waiting_seconds"] >= 600
    assert first_active <= result["active_seconds"] < 600  # the wait is not active time
    assert result["input_tokens"] > snap.usage.input_tokens  # usage carried over and grew


def test_a_cancelled_run_resumes_from_json(make_agent):
    import threading

    cancel = threading.Event()
    cancel.set()
    agent = make_agent([finish("done", "ok")])
    first = agent.run("task", cancel=cancel)
    again = Snapshot.from_json(first.snapshot.to_json())
    result = make_agent([finish("done", "ok")]).resume(again)
    assert result.reason is StopReason.SUCCESS
    assert result.run_id == first.run_id


# -- bad snapshots -------------------------------------------------------------------------


def good() -> dict:
    _, snap = suspended()
    return json.loads(snap.to_json())


def without(key: str) -> str:
    data = good()
    del data[key]
    return json.dumps(data)


def with_field(key: str, value: object) -> str:
    return json.dumps({**good(), key: value})


@pytest.mark.parametrize(
    ("make_text", "message"),
    [
        (lambda: "not json at all", "snapshot is not JSON"),
        (lambda: "", "snapshot is not JSON"),
        (lambda: "[1, 2]", "snapshot must be a JSON object"),
        (lambda: '"a string"', "snapshot must be a JSON object"),
        (
            lambda: with_field("version", 99),
            "snapshot version 99 is not supported; this Endstate reads version 1",
        ),
        (lambda: without("version"), "snapshot version None is not supported"),
        (lambda: without("run_id"), "snapshot is missing or has a bad field: .*run_id"),
        (lambda: without("usage"), "snapshot is missing or has a bad field: .*usage"),
        (lambda: without("reason"), "snapshot is missing or has a bad field: .*reason"),
        (lambda: with_field("reason", "sleeping"), "snapshot is missing or has a bad field: .*sleeping"),
        (
            lambda: with_field("usage", {"turns": 1, "dollars": 3}),
            "snapshot is missing or has a bad field: .*dollars",
        ),
        (lambda: with_field("surprise", 1), "snapshot is missing or has a bad field: .*surprise"),
        (lambda: with_field("suspension", "tomorrow"), "snapshot is missing or has a bad field"),
        (lambda: with_field("calls", [{"name": "x"}]), "snapshot is missing or has a bad field"),
    ],
    ids=[
        "not-json",
        "empty",
        "array",
        "string",
        "wrong-version",
        "no-version",
        "no-run_id",
        "no-usage",
        "no-reason",
        "unknown-reason",
        "bad-usage",
        "unknown-field",
        "suspension-not-an-object",
        "bad-call-record",
    ],
)
def test_bad_snapshots_give_a_clear_snapshot_error(make_text, message):
    text = make_text()
    with pytest.raises(SnapshotError, match=message):
        Snapshot.from_json(text)


def test_a_snapshot_of_another_agent_is_refused():
    _, snap = suspended()
    other = Agent("billing", ScriptedModel([finish("done", "x")]))
    with pytest.raises(SnapshotError, match="belongs to agent 'research', not 'billing'"):
        other.resume(snap, "EU")


@pytest.mark.parametrize("reason", ["success", "limit", "gave_up", "no_progress", "help_timeout", "error"])
def test_a_terminal_run_does_not_resume(reason):
    data = good()
    data["reason"] = reason
    snap = Snapshot.from_json(json.dumps(data))
    with pytest.raises(SnapshotError, match=f"ended as {reason}; only need_help and cancelled resume"):
        resume_worker.build_agent().resume(snap, "EU")
