"""Parts of the service tested in this process: the demo workload's stop, the inbox's rendering."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from test_service_defences import TOKEN, calls_on_the_loop

from agent.agent import Agent
from agent.budget import Spent
from agent.durable.catalog import Catalog
from agent.durable.runner import Runner
from agent.durable.store import RunRecord, RunStatus, open_store
from agent.examples.scenarios import example_catalog
from agent.journal import Call, Entry, Reply, Result, Task
from agent.models.scripted import ScriptedModel
from agent.result import PendingAction
from agent.service import briefing
from agent.service.app import Service, pending_item
from agent.service.auth import Token
from agent.service.briefing import Briefing, Preview, brief, last_steps, preview
from agent.service.inbox import View, item
from agent.service.workload import DemoWorkload
from agent.snapshot import Snapshot, SnapshotKind
from agent.tools import tool


def test_a_cancelled_demo_workload_leaves_no_follow_up_behind(tmp_path: Path) -> None:
    """The service cancels the workload at shutdown: its follow-ups must go with it, not be left
    pending on a loop that is about to close."""
    store = open_store(str(tmp_path / "runs.db"))
    runner = Runner(store, example_catalog(tmp_path / "worlds"))
    workload = DemoWorkload(runner, interval=0.01, answer_after=60)

    async def scenario() -> list[bool]:
        playing = asyncio.create_task(workload.run())
        while not workload._later:  # noqa: ASYNC110  (waits for a question to be scheduled)
            await asyncio.sleep(0.01)
        later = list(workload._later)
        playing.cancel()
        await asyncio.gather(playing, return_exceptions=True)
        left_behind = [not task.done() for task in later]
        await runner.shutdown(grace=10)
        return left_behind

    try:
        left_behind = asyncio.run(scenario())
    finally:
        runner.catalog.close()
        store.close()
    assert left_behind and not any(left_behind)


def test_the_demo_workload_starts_claims_and_adopts_runs_off_the_event_loop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As the service's own starts and claims, the workload's wait for the store's locks on the
    service's thread (`Service.off_loop`), never on the loop that answers /healthz and reads."""
    store = open_store(str(tmp_path / "runs.db"))
    runner = Runner(store, example_catalog(tmp_path / "worlds"))
    workload = DemoWorkload(runner, interval=3600, answer_after=0)
    service = Service(runner, Token(TOKEN), sweep_interval=3600, workload=workload)
    on_loop = calls_on_the_loop(store, monkeypatch, ("create", "claim", "list_runs"))

    async def scenario() -> None:
        async with service.lifespan(None):  # type: ignore[arg-type]  (the app is not used)
            while workload.rounds == 0 or workload._later:  # noqa: ASYNC110  (a round and its follow-ups)
                await asyncio.sleep(0.01)

    try:
        asyncio.run(scenario())
        assert on_loop == []
        resumed = [r for r in store.list_runs(limit=None) if r.segments > 1]
        assert resumed  # the follow-ups claimed runs and went on with them
    finally:
        runner.catalog.close()
        store.close()


def test_the_inbox_shows_a_deadline_in_utc_not_in_the_servers_zone() -> None:
    record = RunRecord(
        run_id="r1", agent="a", task="t", task_type="default", status=RunStatus.WAITING, state={},
        started_at=0.0, updated_at=0.0, question="Which?", deadline=1_800_000_000.0, suspended_at=0.0,
    )  # fmt: skip
    shown = item(Briefing(record, [], None, expired=False), 1_799_990_000.0, False, View())
    assert "deadline 2027-01-15 08:00:00 UTC" in shown


def _waiting(agent: str, tool: str, arguments: dict[str, Any], deadline: float = 2e9) -> RunRecord:
    return RunRecord(
        run_id="r1", agent=agent, task="t", task_type="default", status=RunStatus.WAITING, state={},
        started_at=0.0, updated_at=0.0, question=f"Approve {tool}?", deadline=deadline, suspended_at=0.0,
        pending=PendingAction("call-1", tool, arguments),
    )  # fmt: skip


def _catalog() -> Catalog:
    def shown(arguments: dict[str, Any]) -> str:
        return f"would delete {arguments['path']}"

    def broken(arguments: dict[str, Any]) -> str:
        raise RuntimeError("the preview cannot reach the repository")

    @tool(needs_approval=True, preview=shown)
    def delete(path: str) -> str:
        """Delete a file."""
        return "deleted"

    @tool(needs_approval=True, preview=broken)
    def push(branch: str) -> str:
        """Push."""
        return "pushed"

    @tool(needs_approval=True)
    def deploy(version: str) -> str:
        """Deploy."""
        return "deployed"

    catalog = Catalog()
    catalog.register(
        "tidy", lambda state: Agent(name="tidy", model=ScriptedModel([]), tools=[delete, push, deploy])
    )
    return catalog


def test_an_approval_is_previewed_by_its_tool_and_a_preview_that_fails_is_said_so() -> None:
    catalog = _catalog()
    said = asyncio.run(preview(_waiting("tidy", "delete", {"path": "a.txt"}), catalog))
    assert said == Preview(text="would delete a.txt")
    failed = asyncio.run(preview(_waiting("tidy", "push", {"branch": "main"}), catalog))
    assert failed.text == "" and "RuntimeError: the preview cannot reach the repository" in failed.missing
    none = asyncio.run(preview(_waiting("tidy", "deploy", {"version": "1"}), catalog))
    assert none.missing.startswith("This tool gives no preview")
    unknown = asyncio.run(preview(_waiting("gone", "deploy", {"version": "1"}), catalog))
    assert "could not be built here" in unknown.missing and "'gone'" in unknown.missing


def _hanging_catalog(preview_: Callable[[dict[str, Any]], str]) -> Catalog:
    @tool(needs_approval=True, preview=preview_)
    def push(branch: str) -> str:
        """Push."""
        return "pushed"

    catalog = Catalog()
    catalog.register("git", lambda state: Agent(name="git", model=ScriptedModel([]), tools=[push]))
    return catalog


def test_a_hanging_preview_holds_one_daemon_thread_however_often_the_page_is_loaded(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    release, started, entered = threading.Event(), threading.Event(), []

    def hangs(arguments: dict[str, Any]) -> str:
        entered.append(threading.current_thread().daemon)
        started.set()
        release.wait()
        return "never shown"

    monkeypatch.setattr(briefing, "PREVIEW_SECONDS", 0.05)
    catalog = _hanging_catalog(hangs)
    record = replace(_waiting("git", "push", {"branch": "main"}), run_id="hangs")

    async def loads() -> list[Preview]:  # the inbox refreshing itself, in the service's one loop
        try:
            first = await preview(record, catalog)
            started.wait(30)  # the hung preview runs before the next loads
            return [first] + [await preview(record, catalog) for _ in range(9)]
        finally:
            release.set()  # before the loop closes (it would wait for an executor's threads)

    shown = asyncio.run(loads())
    assert entered == [True]  # one thread, a daemon: the default executor's would block exit
    assert "took longer than 0.05 s" in shown[0].missing
    assert all("started earlier, still runs" in s.missing for s in shown[1:])


def test_the_previews_of_a_page_run_at_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(briefing, "PREVIEW_SECONDS", 60.0)  # three threads meet: seconds on a loaded machine
    together = threading.Barrier(3, timeout=60)

    def meets(arguments: dict[str, Any]) -> str:
        together.wait()  # one preview at a time never gets past this
        return f"push {arguments['branch']}"

    catalog = _hanging_catalog(meets)
    records = [replace(_waiting("git", "push", {"branch": b}), run_id=b) for b in ("a", "b", "c")]
    store = open_store(str(tmp_path / "runs.db"))  # holds none of them: no steps to show
    try:
        found = asyncio.run(brief(records, store, catalog, 0.0))
    finally:
        store.close()
    assert [b.preview for b in found] == [Preview(text=f"push {b}") for b in ("a", "b", "c")]


def test_an_expired_request_has_no_buttons_even_signed_in() -> None:
    record = _waiting("tidy", "delete", {"path": "a.txt"}, deadline=100.0)
    open_one = item(Briefing(record, [], Preview(text="x"), expired=False), 50.0, True, View())
    assert 'class="approve"' in open_one and "the call runs as shown" in open_one
    shown = item(Briefing(record, [], Preview(text="x"), expired=True), 160.0, True, View())
    assert "<form" not in shown and "<button" not in shown
    assert "Expired</strong> 60 s ago" in shown


def test_a_wait_past_its_deadline_is_shown_as_long_as_the_wait_was_not_longer() -> None:
    """The pending list and the inbox stop counting a wait at its deadline, as the run's
    `waiting_seconds` does once the sweep expires it: before that, both said the wait went on."""
    record = replace(_waiting("tidy", "delete", {"path": "a.txt"}, deadline=110.0), suspended_at=10.0)
    assert pending_item(record, 50.0)["waiting_seconds"] == 40.0
    late = pending_item(record, 3_700.0)
    assert late["expired"] is True and late["waiting_seconds"] == 100.0
    shown = item(Briefing(record, [], Preview(text="x"), expired=True), 3_700.0, True, View())
    assert 'Waiting <span class="waited">100 s</span>' in shown
    assert "Expired</strong> 60 min ago" in shown  # 3,590 s
    no_deadline = replace(record, deadline=None)
    assert pending_item(no_deadline, 3_700.0)["waiting_seconds"] == 3_690.0


def test_the_last_tool_calls_are_read_from_the_journal_shortened_and_oldest_first() -> None:
    replies: list[Entry] = [Task("t")]
    for i in range(7):
        replies.append(Reply((Call(f"c{i}", "read", {"page": i, "text": "x" * 1000}),)))
        replies.append(Result(f"c{i}", f"page {i} " + "y" * 1000, is_error=i == 6, ran="read"))
    replies.append(Reply((Call("p", "push", {"branch": "b"}),)))  # pending: no result, not a step
    snap = Snapshot("r1", "a", "default", SnapshotKind.SUSPENDED, 1, replies, Spent())
    steps = last_steps(snap)
    assert all(s.arguments.startswith(f'{{"page": {i},') for i, s in zip(range(2, 7), steps, strict=True))
    assert len(steps) == 5 and steps[-1].is_error and not steps[0].is_error
    assert all(len(s.arguments) <= 300 and len(s.result) <= 300 for s in steps)
    assert steps[0].result.startswith("page 2 ") and steps[0].result.endswith("...")
    assert last_steps(None) == []


def test_a_restarted_demo_workload_follows_up_the_requests_it_left_waiting(tmp_path: Path) -> None:
    """A fresh stack must not page itself: after a restart, the demo's old questions and
    approvals are answered (or its unanswered ones expired by the sweep), not left pending."""
    store = open_store(str(tmp_path / "runs.db"))
    runner = Runner(store, example_catalog(tmp_path / "worlds"))

    async def first_process() -> None:  # plays one round, then "dies" before any follow-up is due
        workload = DemoWorkload(runner, interval=3600, answer_after=3600)
        playing = asyncio.create_task(workload.run())
        while workload.rounds == 0:  # noqa: ASYNC110  (one round of every scenario)
            await asyncio.sleep(0.01)
        playing.cancel()
        await asyncio.gather(playing, return_exceptions=True)
        await runner.shutdown(grace=10)

    async def restarted() -> None:  # follow-ups due at once; stop after them, before a new round
        runner.shutting_down.clear()
        workload = DemoWorkload(runner, interval=3600, answer_after=0)
        playing = asyncio.create_task(workload.run())
        while workload.rounds == 0 or workload._later:  # noqa: ASYNC110
            await asyncio.sleep(0.01)
        workload.stop()
        await playing
        await runner.shutdown(grace=30)
        await runner.sweep()  # what the service's sweep does with the unanswered ones (deadline 0 s)

    try:
        asyncio.run(first_process())
        left = [r.run_id for r in store.list_runs(RunStatus.WAITING, limit=None)]
        assert left  # the first process left requests waiting
        asyncio.run(restarted())
        still = [r.run_id for r in store.list_runs(RunStatus.WAITING, limit=None) if r.run_id in left]
        assert still == []
    finally:
        runner.catalog.close()
        store.close()


def test_the_inbox_url_printed_at_start_opens_in_a_browser_here() -> None:
    from agent.service.server import inbox_url

    assert inbox_url("127.0.0.1", 8000) == "http://127.0.0.1:8000/inbox"
    assert inbox_url("0.0.0.0", 80) == "http://127.0.0.1:80/inbox"  # a wildcard is reached on loopback
    assert inbox_url("::", 8000) == "http://[::1]:8000/inbox"
    assert inbox_url("fd00::5", 8000) == "http://[fd00::5]:8000/inbox"
    assert inbox_url("inbox.example.com", 443) == "http://inbox.example.com:443/inbox"


def test_the_ci_fixers_push_previews_the_diff_against_the_original_files(tmp_path: Path) -> None:
    from agent.examples import fix_ci

    repo = fix_ci.make_world(tmp_path)
    push = next(t for t in fix_ci.tools_for(repo) if t.name == "push")
    assert push.preview is not None and push.needs_approval
    assert push.preview({"branch": "fix/x"}) == "Push to fix/x: no change from the original files."
    (repo / "calc" / "money.py").write_text(fix_ci.FILES["calc/money.py"].replace("a - b", "a + b"))
    (repo / "calc" / "extra.py").write_text("X = 1\n")
    shown = push.preview({"branch": "fix/x"})
    assert shown.startswith("Push to fix/x, publishing:\n--- a/calc/extra.py\n+++ b/calc/extra.py")
    assert "\n-    return a - b\n+    return a + b\n" in shown and "+X = 1" in shown
    assert not (repo / "PUSHED").exists()  # a preview publishes nothing
