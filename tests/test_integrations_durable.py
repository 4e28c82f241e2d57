"""Foreign runs suspended into Endstate's store and answered through its CLI, on SQLite and PostgreSQL.

An OpenAI Agents SDK interruption, a Pydantic AI deferred tool call and a LangGraph `interrupt()`
each stop a run `need_help`; the store keeps it as it keeps Endstate's own suspensions (question,
pending call, deadline) plus the framework's state, `endstate pending` lists it, and
`endstate approve/deny/answer` rebuild the agent from the catalog by name and finish the run
through the framework. The agents are in `foreign_agents.py`.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pg
import pytest
from foreign_agents import ENV_CHECKPOINTS, TASK_TYPE, catalog
from integrations_support import Rig, rigged

from agent.cli.main import main
from agent.durable.catalog import Catalog
from agent.durable.runner import Runner
from agent.durable.store import RunRecord, RunStatus, RunStore, open_store
from agent.errors import ConfigError
from agent.result import RunResult, StopReason
from agent.snapshot import ForeignState, Snapshot, SnapshotKind
from telemetry import names as n

CATALOG = "foreign_agents:catalog"
DAY = 24 * 3600.0
FRAMEWORK = {"oa-remover": "openai_agents", "pai-deleter": "pydantic_ai", "lg-deleter": "langgraph"}
TOOL = {"oa-remover": "remove", "pai-deleter": "erase", "lg-deleter": "delete"}
APPROVED = {"oa-remover": "done: removed a", "pai-deleter": "done: erased a", "lg-deleter": "done: deleted"}
DENIED = {  # what each framework tells its model about a denial "not that one"
    "oa-remover": "done: not that one",
    "pai-deleter": "done: not that one",
    "lg-deleter": "done: not deleted",  # interrupt() returns False; the graph decides what it says
}


@pytest.fixture(params=pg.BACKENDS)
def store_url(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A fresh store; LangGraph's checkpoints beside it (the same PostgreSQL database, or a SQLite file)."""
    url = pg.url_for(request.param, tmp_path)
    monkeypatch.setenv(ENV_CHECKPOINTS, url if url.startswith("postgresql://") else str(tmp_path / "lg.db"))
    return url


@pytest.fixture
def store(store_url: str) -> Iterator[RunStore]:
    opened = open_store(store_url)
    yield opened
    opened.close()


@pytest.fixture
def rig() -> Iterator[Rig]:
    with rigged() as rig:
        yield rig


def start(store: RunStore, agent: str, hooks: Any = None) -> RunResult:
    """Start a run of a catalog agent in this process, as `endstate start` or the service would."""
    return asyncio.run(Runner(store, catalog(), hooks=hooks).start(agent, "clean up a"))


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """`endstate ARGV` in this process with the foreign catalog (for the commands that run an agent:
    `pending` and `runs` refuse one): its exit code, stdout and stderr."""
    capsys.readouterr()
    code = main([*argv] if argv[0] in ("pending", "runs") else [*argv, "--catalog", CATALOG])
    out, err = capsys.readouterr()
    return code, out, err


def waiting(store: RunStore, run_id: str) -> RunRecord:
    record = store.get(run_id)
    assert record is not None and record.status is RunStatus.WAITING, record
    return record


# -- a suspension is stored as Endstate's own are ------------------------------------------------


@pytest.mark.parametrize("agent", list(FRAMEWORK))
def test_a_foreign_approval_is_stored_waiting_with_its_call_deadline_and_framework_state(
    store: RunStore, agent: str
) -> None:
    res = start(store, agent)
    assert res.reason is StopReason.NEED_HELP and res.suspension is not None
    record = waiting(store, res.run_id)
    assert (record.agent, record.task_type, record.task) == (agent, TASK_TYPE, "clean up a")
    assert record.pending is not None
    assert (record.pending.name, record.pending.arguments) == (TOOL[agent], {"path": "a"})
    assert record.question == f'Approve {TOOL[agent]}({{"path": "a"}})?'
    assert record.deadline == pytest.approx(record.suspended_at + DAY)  # the help policy's wait
    assert record.turns == 1 and record.input_tokens > 0
    snap = store.snapshot(res.run_id)
    assert snap is not None and snap.kind is SnapshotKind.SUSPENDED
    assert snap.suspension == res.suspension  # what an approval is checked against
    assert snap.foreign is not None and snap.foreign.framework == FRAMEWORK[agent]
    assert snap.foreign.state and snap.foreign.error == ""
    json.loads(snap.foreign.state)  # the framework's own saved state, as JSON text


def test_a_foreign_snapshot_round_trips_and_plain_snapshots_do_not_change() -> None:
    snap = Snapshot("r1", "a", "t", SnapshotKind.SUSPENDED, 1, [], usage=_usage(), foreign=None)
    assert "foreign" not in snap.head()  # Endstate's own snapshots are written as before
    foreign = ForeignState("langgraph", '{"configurable": {"thread_id": "r1"}}')
    again = Snapshot.from_json(Snapshot.from_json(snap.to_json()).to_json())
    assert again.foreign is None
    snap.foreign = foreign
    assert Snapshot.from_json(snap.to_json()).foreign == foreign
    snap.foreign = ForeignState("openai_agents", None, "UserError: not a mapping")
    assert Snapshot.from_json(snap.to_json()).foreign == snap.foreign


def _usage() -> Any:
    from agent.budget import Spent

    return Spent(turns=1)


# -- listed, approved, denied and answered through the CLI -----------------------------------------


@pytest.mark.parametrize("agent", list(FRAMEWORK))
def test_a_foreign_run_is_listed_pending_and_the_cli_approval_finishes_it_through_the_framework(
    store: RunStore, store_url: str, agent: str, capsys: pytest.CaptureFixture[str]
) -> None:
    res = start(store, agent)
    code, out, _ = cli(capsys, "pending", "--store", store_url, "--json")
    (listed,) = [json.loads(line) for line in out.splitlines()]
    assert code == 0 and listed["run_id"] == res.run_id
    assert listed["pending"]["name"] == TOOL[agent] and listed["deadline"] > time.time() + DAY - 60
    code, out, _ = cli(capsys, "pending", "--store", store_url)
    assert f"endstate approve {res.run_id}" in out and "deadline in" in out
    code, out, err = cli(capsys, "approve", res.run_id, "--store", store_url, "--json")
    assert code == 0, err
    done = json.loads(out)
    assert (done["reason"], done["output"], done["turns"]) == ("success", APPROVED[agent], 2)
    assert done["run_id"] == res.run_id and done["waiting_seconds"] > 0
    record = store.get(res.run_id)
    assert record is not None
    assert (record.status, record.stop_reason, record.segments) == (RunStatus.FINISHED, "success", 2)
    assert (record.question, record.pending, record.output) == (None, None, APPROVED[agent])


@pytest.mark.parametrize("agent", list(FRAMEWORK))
def test_a_cli_denial_reaches_the_framework_and_the_run_finishes(
    store: RunStore, store_url: str, agent: str, capsys: pytest.CaptureFixture[str]
) -> None:
    res = start(store, agent)
    code, out, err = cli(capsys, "deny", res.run_id, "not that one", "--store", store_url, "--json")
    assert code == 0, err
    assert (json.loads(out)["reason"], json.loads(out)["output"]) == ("success", DENIED[agent])
    record = store.get(res.run_id)
    assert record is not None and (record.status, record.stop_reason) == (RunStatus.FINISHED, "success")


def test_a_deferred_external_call_is_a_question_the_cli_answer_is_its_result(
    store: RunStore, store_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    res = start(store, "pai-asker")
    record = waiting(store, res.run_id)
    assert (record.question, record.pending) == ('Answer ask_owner({"path": "a"})?', None)
    code, _, err = cli(capsys, "approve", res.run_id, "--store", store_url)
    assert code == 2 and "waits for an answer" in err
    code, out, err = cli(capsys, "answer", res.run_id, "b.txt", "--store", store_url, "--json")
    assert code == 0, err
    assert (json.loads(out)["reason"], json.loads(out)["output"]) == ("success", "done: b.txt")


# -- telemetry, deadlines and what cannot be resumed ----------------------------------------------


def test_the_resumed_foreign_segment_reports_the_wait_links_its_span_and_counts_one_run(
    store: RunStore, rig: Rig
) -> None:
    res = start(store, "lg-deleter", rig.hooks)
    runner = Runner(store, catalog(), hooks=rig.hooks)  # another worker: the agent rebuilt by name
    done = asyncio.run(runner.resume(res.run_id, approved=True))
    assert (done.reason, done.output, done.turns) == (StopReason.SUCCESS, "done: deleted", 2)
    assert rig.value("agent_runs_started_total", agent="lg-deleter", task_type=TASK_TYPE) == 1
    assert (
        rig.stops("lg-deleter", TASK_TYPE, "need_help") == rig.stops("lg-deleter", TASK_TYPE, "success") == 1
    )
    labels = {"agent": "lg-deleter", "task_type": TASK_TYPE, "outcome": "answered"}
    assert rig.value("agent_human_wait_seconds_count", **labels) == 1
    first, second = sorted(rig.run_spans(), key=lambda s: s.start_time or 0)
    assert (second.attributes or {})[n.STOP_REASON] == "success"
    assert [link.context.span_id for link in second.links] == [first.context.span_id]
    continued = [s for s in rig.spans() if (s.attributes or {}).get(n.AGENT_TURN_CONTINUED)]
    assert [(s.attributes or {})[n.AGENT_TURN_INDEX] for s in continued] == [1]
    assert [s.name for s in rig.spans() if s.name == n.SPAN_HUMAN_WAIT] == [n.SPAN_HUMAN_WAIT]


@pytest.mark.parametrize("agent", list(FRAMEWORK))
def test_a_foreign_run_nobody_answers_ends_as_help_timeout_at_its_deadline(
    store: RunStore, agent: str, rig: Rig
) -> None:
    res = start(store, agent, rig.hooks)
    assert res.suspension is not None
    runner = Runner(store, catalog(), hooks=rig.hooks)
    assert asyncio.run(runner.sweep(now=res.suspension.deadline - 1)) == []  # not yet
    (ended,) = asyncio.run(runner.sweep(now=res.suspension.deadline + 1))
    assert (ended.reason, ended.run_id, ended.turns) == (StopReason.HELP_TIMEOUT, res.run_id, 1)
    record = store.get(res.run_id)
    assert record is not None and (record.status, record.stop_reason) == (RunStatus.FINISHED, "help_timeout")
    assert rig.stops(agent, TASK_TYPE, "help_timeout") == 1
    labels = {"agent": agent, "task_type": TASK_TYPE, "outcome": "expired"}
    assert rig.value("agent_human_wait_seconds_count", **labels) == 1
    assert rig.value("agent_runs_started_total", agent=agent, task_type=TASK_TYPE) == 1
    expiry = max(rig.run_spans(), key=lambda s: s.start_time or 0)
    assert not rig.children(expiry, n.SPAN_TURN)  # no turn: nothing ran


def test_a_help_policy_that_resumes_gives_the_framework_its_default_denial(store: RunStore) -> None:
    res = start(store, "oa-patient")
    assert res.suspension is not None
    (done,) = asyncio.run(Runner(store, catalog()).sweep(now=res.suspension.deadline + 1))
    assert (done.reason, done.output) == (StopReason.SUCCESS, "done: nobody came: keep it")


def test_state_the_framework_cannot_serialize_keeps_the_suspension_and_an_answer_is_a_clear_error(
    store: RunStore, store_url: str, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    res = start(store, "oa-opaque")  # its context is no mapping: the SDK would drop it silently
    before = waiting(store, res.run_id)
    assert "state cannot be saved" in caplog.text
    snap = store.snapshot(res.run_id)
    assert snap is not None and snap.foreign is not None
    assert snap.foreign.state is None and "mapping" in snap.foreign.error
    code, _, err = cli(capsys, "approve", res.run_id, "--store", store_url)
    assert code == 2 and "cannot be resumed from the store" in err and "Traceback" not in err
    after = waiting(store, res.run_id)  # nothing was changed: it still waits, for the same call
    assert (after.question, after.pending, after.segments) == (
        before.question,
        before.pending,
        before.segments,
    )
    assert before.deadline is not None
    (ended,) = asyncio.run(Runner(store, catalog()).sweep(now=before.deadline + 1))
    assert ended.reason is StopReason.HELP_TIMEOUT


def test_a_langgraph_checkpointer_that_lost_the_interrupt_is_a_clear_error_and_the_run_waits(
    store: RunStore, store_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    res = start(store, "lg-forgetful")  # a new in-memory checkpointer per segment
    code, _, err = cli(capsys, "approve", res.run_id, "--store", store_url)
    assert code == 2 and "holds no pending interrupt" in err and "persistent" in err
    waiting(store, res.run_id)


def test_a_foreign_entry_says_what_is_missing_when_registered() -> None:
    c = Catalog()
    with pytest.raises(ConfigError, match="checkpointer"):
        c.register_foreign("lg", "langgraph", lambda saver: None)
    with pytest.raises(ConfigError, match="openai_agents, pydantic_ai, langgraph"):
        c.register_foreign("crew", "crewai", lambda: None)
    c.register_foreign("broken", "pydantic_ai", lambda: 1 / 0)
    agent = c.entry("broken").build({})
    with pytest.raises(ConfigError, match="cannot build the pydantic_ai agent 'broken': ZeroDivisionError"):
        asyncio.run(agent.arun("x"))


@pytest.mark.parametrize(
    ("framework", "options", "named"),
    [("openai_agents", {"max_turn": 8}, "max_turn"), ("pydantic_ai", {"usage_limit": 3}, "usage_limit")],
)
def test_a_foreign_entrys_options_the_framework_does_not_take_are_refused_when_registered(
    framework: str, options: dict[str, Any], named: str
) -> None:
    """Not at each start: a runner given a ConfigError there gives the run back for another try,
    and every try is refused the same way."""
    with pytest.raises(ConfigError, match=f"options got '{named}', which .* does not take"):
        Catalog().register_foreign("typo", framework, lambda: None, options=options)


def test_a_foreign_run_that_asks_again_is_stored_waiting_for_the_next_call_in_the_next_segment(
    store: RunStore, rig: Rig
) -> None:
    res = start(store, "pai-careful", rig.hooks)
    runner = Runner(store, catalog(), hooks=rig.hooks)
    again = asyncio.run(runner.resume(res.run_id, approved=True))
    assert again.reason is StopReason.NEED_HELP and again.suspension and again.suspension.pending
    record = waiting(store, res.run_id)
    assert record.pending is not None and record.pending.arguments == {"path": "b"}
    assert (record.segments, record.turns) == (2, 2)
    snap = store.snapshot(res.run_id)
    assert snap is not None and snap.segment == 2 and snap.suspension == again.suspension
    done = asyncio.run(runner.resume(res.run_id, "not b", approved=False))
    assert (done.reason, done.output, done.turns) == (StopReason.SUCCESS, "done: erased a, not b", 3)
    waits = {"agent": "pai-careful", "task_type": TASK_TYPE, "outcome": "answered"}
    assert rig.value("agent_human_wait_seconds_count", **waits) == 2
    spans = sorted(rig.run_spans(), key=lambda s: s.start_time or 0)
    assert [[link.context.span_id for link in s.links] for s in spans] == [
        [],
        [spans[0].context.span_id],
        [spans[1].context.span_id],
    ]
