"""audits52: `endstate audit --list` lists what the success audits found (`RunStore.list_audits`), the
newest verdict first, filtered by outcome, agent and task type, with each run's trace id; on SQLite
and PostgreSQL.

Before: no command listed them; the false-success alert's runbook had the person on call write SQL
against the store's `endstate_audits` table.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pg
import pytest

from agent import Agent, RunContext, StopReason
from agent.audit import Audit, AuditOutcome, SuccessAudit
from agent.cli.main import main
from agent.durable.runner import Catalog, Runner
from agent.durable.store import Lease, NewRun, Outcome, RunStore, open_store
from agent.models.scripted import ScriptedModel, finish

NOW = 1_800_000_000.0
F, C, E = AuditOutcome.FALSE_SUCCESS, AuditOutcome.CONFIRMED, AuditOutcome.ERROR
AUDITS: list[tuple[str, str, str, AuditOutcome | None, str, str | None]] = [
    # run id, agent, task type, outcome (None: still due), note, the run's trace id (None: no run row);
    # each checked (or due) a minute after the one before
    ("ci-1", "ci-fixer", "fix_ci", F, "the build is\nstill red", "a" * 32),
    ("ci-2", "ci-fixer", "triage", C, "", "b" * 32),
    ("re-1", "researcher", "fix_ci", E, "the check raised: boom", "c" * 32),
    ("gone", "ci-fixer", "fix_ci", F, "pruned run: its audit is kept", None),
    ("ci-3", "ci-fixer", "fix_ci", None, "", "d" * 32),
    ("ci-4", "ci-fixer", "fix_ci", F, "tests \x1b[2J deleted", "e" * 32),
]


@pytest.fixture(params=pg.BACKENDS)
def url(request: pytest.FixtureRequest, tmp_path: Path, make_agent: Any) -> str:
    """A store holding `AUDITS`, and the runs they audit (but `gone`), each with its trace id."""
    url = pg.url_for(request.param, tmp_path)
    store = open_store(url)
    try:
        for i, (run_id, agent, task_type, outcome, note, trace_id) in enumerate(AUDITS):
            at = NOW + 60 * i
            if trace_id is not None:
                lease = Lease("w1", 1e6)
                store.create(NewRun(run_id, agent, "do it", task_type), lease, at)
                result = make_agent(finish("done", "ok"), name=agent, task_type=task_type).run("do it")
                result = dataclasses.replace(result, run_id=run_id, trace_id=trace_id)
                store.record(run_id, Outcome.of(result), lease, at)
            store.schedule_audit(Audit(run_id, agent, task_type, at))
            if outcome is not None:
                assert store.record_audit(run_id, outcome, note, at)
    finally:
        store.close()
    return url


@pytest.fixture
def store(url: str) -> Iterator[RunStore]:
    opened = open_store(url)
    yield opened
    opened.close()


def test_the_store_lists_the_audits_made_the_newest_verdict_first_with_each_runs_trace(
    store: RunStore,
) -> None:
    audits = store.list_audits()
    assert [a.run_id for a in audits] == ["ci-4", "gone", "re-1", "ci-2", "ci-1"]  # ci-3 is still due
    first = audits[-1]
    assert (first.agent, first.task_type, first.outcome) == ("ci-fixer", "fix_ci", F)
    assert (first.note, first.checked_at, first.trace_id) == ("the build is\nstill red", NOW, "a" * 32)
    assert audits[1].trace_id is None  # its run was pruned
    with_due = store.list_audits(due=True)
    assert [a.run_id for a in with_due] == ["ci-4", "ci-3", "gone", "re-1", "ci-2", "ci-1"]
    assert with_due[1].outcome is None and with_due[1].checked_at is None


def test_the_store_filters_the_audits_by_outcome_agent_and_task_type_and_keeps_the_newest(
    store: RunStore,
) -> None:
    def ids(**only: Any) -> list[str]:
        return [a.run_id for a in store.list_audits(**only)]

    assert ids(outcome=F) == ["ci-4", "gone", "ci-1"]
    assert ids(outcome=E) == ["re-1"]
    assert ids(outcome=F, due=True) == ["ci-4", "gone", "ci-1"]  # an audit still due has no outcome
    assert ids(agent="researcher") == ["re-1"]
    assert ids(task_type="triage") == ["ci-2"]
    assert ids(agent="ci-fixer", task_type="fix_ci", due=True) == ["ci-4", "ci-3", "gone", "ci-1"]
    assert ids(outcome=C, agent="researcher") == []
    assert ids(limit=2) == ["ci-4", "gone"]
    assert ids(agent="ci-fixer' OR '1'='1") == []  # a value is bound, never SQL


def listed(capsys: pytest.CaptureFixture[str], *argv: str) -> list[str]:
    """What `endstate audit --list ARGV` prints (exit 0), line by line."""
    capsys.readouterr()
    assert main(["audit", "--list", *argv]) == 0
    return capsys.readouterr().out.splitlines()


def test_audit_list_prints_one_line_per_audit_with_what_it_found(
    url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = listed(capsys, "--outcome", "false_success", "--store", url)
    assert len(lines) == 3
    newest, _, oldest = lines
    assert "false_success" in oldest and "run ci-1 (ci-fixer, fix_ci)" in oldest
    assert f"trace {'a' * 32}" in oldest and oldest.endswith(": the build is still red")
    assert "\x1b" not in newest and "tests \\x1b[2J deleted" in newest  # the note is shown, not obeyed
    [due] = [line for line in listed(capsys, "--due", "--store", url) if "ci-3" in line]
    assert "  due  " in due


def test_audit_list_cuts_a_long_note_to_one_short_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = str(tmp_path / "runs.db")
    store = open_store(url)
    try:
        store.schedule_audit(Audit("long", "ci-fixer", "fix_ci", NOW))
        store.record_audit("long", F, "missing: " + "x\n" * 5000, NOW)
    finally:
        store.close()
    [line] = listed(capsys, "--store", url)
    assert line.endswith("...") and len(line) < 400


def test_audit_list_json_gives_one_object_per_audit(url: str, capsys: pytest.CaptureFixture[str]) -> None:
    objects = [json.loads(line) for line in listed(capsys, "--json", "--agent", "ci-fixer", "--store", url)]
    assert [o["run_id"] for o in objects] == ["ci-4", "gone", "ci-2", "ci-1"]
    assert objects[-1] == {
        "run_id": "ci-1",
        "agent": "ci-fixer",
        "task_type": "fix_ci",
        "outcome": "false_success",
        "note": "the build is\nstill red",
        "checked_at": NOW,
        "due_at": NOW,
        "trace_id": "a" * 32,
    }
    objects = [json.loads(line) for line in listed(capsys, "--json", "--due", "--limit", "2", "--store", url)]
    assert [(o["run_id"], o["outcome"], o["checked_at"]) for o in objects] == [
        ("ci-4", "false_success", NOW + 300),
        ("ci-3", None, None),
    ]


def test_audit_list_says_when_none_match(url: str, capsys: pytest.CaptureFixture[str]) -> None:
    [line] = listed(capsys, "--outcome", "confirmed", "--agent", "researcher", "--store", url)
    assert line.startswith("no confirmed audits of agent 'researcher' in ")
    assert listed(capsys, "--json", "--task-type", "nothing", "--store", url) == []


def test_audit_list_says_so_in_a_store_with_no_audit(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = str(tmp_path / "runs.db")
    open_store(url).close()
    assert listed(capsys, "--store", url) == [f"no audits made in sqlite:///{url}"]


BAD = [  # arguments `audit --list` refuses, and what the refusal says
    (["--outcome", "wrong"], "invalid choice: 'wrong'"),
    (["--agent", ""], "must not be empty"),
    (["--agent", "ci-fixer\n"], "control or invisible characters"),
    (["--task-type", "x" * 2049], "is over 2,048 bytes"),
    (["--limit", "0"], "argument --limit: '0' is not a whole number above 0"),
    (["--temporal"], "unrecognized arguments: --temporal"),
]


@pytest.mark.parametrize(("argv", "says"), BAD)
def test_audit_list_refuses_bad_input_with_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], says: str
) -> None:
    with pytest.raises(SystemExit) as exit:
        main(["audit", "--list", *argv, "--store", str(tmp_path / "runs.db")])
    assert exit.value.code == 2
    assert says in capsys.readouterr().err


def test_the_listings_options_without_list_are_refused_and_no_audit_is_made(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = str(tmp_path / "runs.db")
    open_store(url).close()
    assert main(["audit", "--outcome", "false_success", "--json", "--store", url]) == 2
    err = capsys.readouterr().err
    assert "--outcome, --json only apply to the listing of audits: add --list" in err


def test_audit_list_on_temporal_is_refused_as_audit_is(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("ENDSTATE_TEMPORAL", "localhost:7233")
    monkeypatch.delenv("ENDSTATE_STORE", raising=False)
    assert main(["audit", "--list"]) == 2
    err = capsys.readouterr().err
    assert "on Temporal success audits are not made" in err and "pass --store" in err


SHIPPED = {"box-1"}  # what the outside world says was really shipped


def shipped(ctx: RunContext) -> list[str]:
    return [] if ctx.note in SHIPPED else [f"{ctx.note!r} was never shipped"]


def shipper(state: dict[str, Any]) -> Agent:
    audit = SuccessAudit(check=shipped, share=1.0, after=60)
    return Agent("shipper", ScriptedModel([[finish("done", state["item"])]]), task_type="ship", audit=audit)


def test_a_real_false_success_is_listed_with_what_its_audit_found(
    url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    catalog = Catalog()
    catalog.register("shipper", shipper)
    store = open_store(url)
    try:
        runner = Runner(store, catalog)
        ok = asyncio.run(runner.start("shipper", "ship box 1", state={"item": "box-1"}))
        fake = asyncio.run(runner.start("shipper", "ship box 2", state={"item": "box-2"}))
        assert ok.reason is fake.reason is StopReason.SUCCESS
        assert len(asyncio.run(runner.audit_due(now=10**10))) == 2
    finally:
        store.close()
    lines = listed(capsys, "--outcome", "false_success", "--agent", "shipper", "--store", url)
    assert len(lines) == 1 and f"run {fake.run_id} (shipper, ship)" in lines[0]
    assert lines[0].endswith(": 'box-2' was never shipped")
    [confirmed] = listed(capsys, "--outcome", "confirmed", "--task-type", "ship", "--json", "--store", url)
    assert json.loads(confirmed)["run_id"] == ok.run_id


def test_an_audit_row_with_an_outcome_it_does_not_know_is_left_out_and_logged(
    store: RunStore, caplog: pytest.LogCaptureFixture
) -> None:
    """A row whose outcome this release does not know (written by hand, or by a newer release) is left
    out of the listing and logged; the others are listed. Before, the listing raised `ValueError`."""
    store._count("UPDATE endstate_audits SET outcome = ? WHERE run_id = ?", ("overturned", "ci-2"))  # type: ignore[attr-defined]
    listed = [a.run_id for a in store.list_audits()]
    assert "ci-2" not in listed
    assert {"ci-1", "re-1", "gone", "ci-4"} <= set(listed)
    assert "ci-2" in caplog.text and "left out" in caplog.text
