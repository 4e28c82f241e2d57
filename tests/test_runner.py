"""The durable runner: runs recorded in a store and resumed by another worker (SQLite and PostgreSQL)."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import socket
import subprocess
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from test_runner_agents import (
    Crash,
    catalog,
    counted,
    counter_state,
    deployed,
    make_counter,
    outlive_leases,
)

from agent import Agent, Extension, StopReason, tool
from agent.audit import SuccessAudit
from agent.clock import SYSTEM_CLOCK, Clock, SystemClock
from agent.durable.runner import AgentUnavailable, AnswerError, Catalog, Job, NotInCatalog, Runner
from agent.durable.store import (
    Lease,
    NewRun,
    NotClaimable,
    Outcome,
    RunExists,
    RunRecord,
    RunStatus,
    RunStore,
    StoreError,
    UnknownRun,
    open_store,
)
from agent.errors import ConfigError, SnapshotError
from agent.examples.scenarios import example_catalog
from agent.journal import Answer, Answered, Extended, Result, Stopped
from agent.models.base import ModelReply
from agent.models.scripted import ScriptedModel, call, finish
from agent.result import RunResult
from agent.snapshot import Checkpoint, SnapshotKind


class Workers:
    """Runners that share a store URL but not a connection, as separate processes would."""

    def __init__(
        self, url: str, catalog_: Catalog, lease_seconds: float = 30.0, clock: Clock = SYSTEM_CLOCK
    ) -> None:
        self.url, self.catalog, self.lease, self.clock = url, catalog_, lease_seconds, clock
        self.stores: list[RunStore] = []
        self.owners: list[str] = []

    def new(self) -> Runner:
        store = open_store(self.url)
        self.stores.append(store)
        runner = Runner(store, self.catalog, lease_seconds=self.lease, clock=self.clock)
        self.owners.append(runner.owner)
        return runner

    def outlive_leases(self) -> None:
        """These (dead) workers' leases run out: their length and one second more pass for them by the
        store's clock (`outlive_leases`), no more: a worker whose clock is minutes behind would not
        see them run out if it judged them."""
        assert outlive_leases(self.url, self.lease + 1, *self.owners) > 0, "these workers hold no lease"

    def close(self) -> None:
        for s in self.stores:
            s.close()
        self.catalog.close()


# The lease of a worker that is about to die, in seconds: long, so that it has not run out by the
# store's clock until a test says time passed for it (`Workers.outlive_leases`), and no heartbeat of
# the worker comes after the test's "it died".
DYING_LEASE = 600.0


class Later(SystemClock):
    """The system's clocks, `seconds` ahead (behind, when negative): a deadline set now has passed
    for this runner; a lease has not (the store's clock judges leases)."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds

    def time(self) -> float:
        return super().time() + self.seconds


class Heartbeats:
    """The heartbeats of a runner's store, watched: each `after_now()` gives the run ids that the
    first beat to begin after it renewed (polled: a busy default thread pool holds nothing up). A
    beat that began before the call, and ends after it, is not that beat."""

    def __init__(self, store: RunStore) -> None:
        self._lock, self._asked, self._renewed = threading.Lock(), 0, dict[int, list[str]]()
        beat = store.heartbeat

        def watched(lease: Lease, run_ids: Sequence[str] | None = None) -> int:
            with self._lock:
                asked = self._asked  # the latest call this beat begins after (0: none)
            renewed = beat(lease, run_ids)
            with self._lock:
                self._renewed.setdefault(asked, list(run_ids or ()))
            return renewed

        store.heartbeat = watched  # type: ignore[method-assign]

    async def after_now(self) -> list[str]:
        with self._lock:
            self._asked += 1
            asked = self._asked
        await polled(lambda: self._renewed_after(asked) is not None, "a heartbeat")
        return self._renewed_after(asked) or []

    def _renewed_after(self, asked: int) -> list[str] | None:
        with self._lock:
            return self._renewed.get(asked)


async def polled(check: Callable[[], bool], what: str) -> None:
    """Until `check()` is true; a failure after a minute."""
    deadline = time.monotonic() + 60
    while not check():
        assert time.monotonic() < deadline, f"waited a minute for {what}"
        await asyncio.sleep(0.02)


def spy_checkpoints(store: RunStore) -> list[Checkpoint]:
    """The checkpoints the store is given, written (PostgreSQL: sent ahead) or not, and the last
    entries a segment's record writes with its result (`Outcome.rest`)."""
    seen: list[Checkpoint] = []
    for name in ("checkpoint", "send_checkpoint"):
        if (write := getattr(store, name, None)) is not None:

            def spy(run_id: str, checkpoint: Checkpoint, *args: Any, write: Any = write) -> Any:
                seen.append(checkpoint)
                return write(run_id, checkpoint, *args)

            setattr(store, name, spy)
    record = store.record

    def spy_record(run_id: str, outcome: Outcome, *args: Any) -> Any:
        if outcome.rest is not None:
            seen.append(outcome.rest)
        return record(run_id, outcome, *args)

    store.record = spy_record  # type: ignore[method-assign]
    return seen


@pytest.fixture
def examples(store_url: str, tmp_path: Path) -> Iterator[Workers]:
    w = Workers(store_url, example_catalog(tmp_path / "worlds"))
    yield w
    w.close()


@pytest.fixture
def counters(store_url: str) -> Iterator[Workers]:
    w = Workers(store_url, catalog())
    yield w
    w.close()


def test_a_question_asked_in_one_worker_is_answered_in_another(examples: Workers, tmp_path: Path) -> None:
    first = asyncio.run(examples.new().start("invoice-downloader", "Get the September invoice"))
    assert first.reason is StopReason.NEED_HELP
    other = examples.new()
    waiting = other.store.get(first.run_id)
    assert waiting is not None and waiting.status is RunStatus.WAITING
    assert waiting.question and "INV-0913" in waiting.question and waiting.deadline
    assert waiting.state["scenario"] == "invoice/which-one"
    workdir = Path(waiting.state["workdir"])
    assert workdir.is_relative_to(tmp_path / "worlds")

    done = asyncio.run(other.resume(first.run_id, "INV-0913, the corrected one."))
    assert done.reason is StopReason.SUCCESS and done.verified
    rec = other.store.get(first.run_id)
    assert rec is not None and (rec.status, rec.stop_reason, rec.segments) == (
        RunStatus.FINISHED, StopReason.SUCCESS, 2,
    )  # fmt: skip
    assert rec.turns == done.turns == 4 and rec.ended_at is not None and rec.question is None
    assert rec.waiting_seconds > 0 and not workdir.exists()  # the world of a finished run is removed


def test_a_pending_tool_call_is_approved_from_another_worker(examples: Workers) -> None:
    first = asyncio.run(examples.new().start("ci-fixer", "Fix CI", state={"scenario": "ci/approved-push"}))
    rec = examples.new().store.get(first.run_id)
    assert rec is not None and rec.pending is not None
    assert (rec.pending.name, rec.pending.arguments) == ("push", {"branch": "fix/add-cents"})
    with pytest.raises(AnswerError, match="waits for approval of the call 'push'"):
        asyncio.run(examples.new().resume(first.run_id, "yes"))
    done = asyncio.run(examples.new().resume(first.run_id, approved=True))
    assert done.reason is StopReason.SUCCESS


def test_a_denied_call_never_runs_and_the_reason_reaches_the_model(counters: Workers, tmp_path: Path) -> None:
    state = counter_state(tmp_path / "run", "approve")
    first = asyncio.run(counters.new().start("counter", "wire money", state=state))
    assert first.reason is StopReason.NEED_HELP
    runner = counters.new()
    seen = spy_checkpoints(runner.store)
    done = asyncio.run(runner.resume(first.run_id, "over budget", approved=False))
    assert done.reason is StopReason.SUCCESS and done.turns == 3
    assert not (tmp_path / "run" / "wired.txt").exists()
    [denial] = [e for e in seen[0].entries if isinstance(e, Result)]
    assert denial.text.startswith("Denied by a person: over budget.")
    assert isinstance(seen[0].entries[0], Answered)  # the answer is journaled before its result


def test_bad_answers_change_nothing(counters: Workers, tmp_path: Path) -> None:
    first = asyncio.run(counters.new().start("counter", "ask", state=counter_state(tmp_path / "r", "ask")))
    runner = counters.new()
    before = runner.store.get(first.run_id)
    with pytest.raises(AnswerError, match="waits for an answer to 'Which number next"):
        asyncio.run(runner.resume(first.run_id, "  "))
    with pytest.raises(AnswerError, match="not for an approval"):
        asyncio.run(runner.resume(first.run_id, approved=True))
    with pytest.raises(UnknownRun):
        asyncio.run(runner.resume("no-such-run", "2"))
    with pytest.raises(AnswerError, match="an answer must be text, not int"):
        asyncio.run(runner.resume(first.run_id, 2))  # type: ignore[arg-type]
    with pytest.raises(AnswerError, match="approved must be True or False, not 'yes'"):
        asyncio.run(runner.resume(first.run_id, approved="yes"))  # type: ignore[arg-type]
    assert runner.store.get(first.run_id) == before
    asyncio.run(runner.resume(first.run_id, "2"))
    with pytest.raises(NotClaimable, match="is finished, not waiting"):
        asyncio.run(runner.resume(first.run_id, "2 again"))


def test_concurrent_answers_resume_the_run_exactly_once(counters: Workers, tmp_path: Path) -> None:
    folder = tmp_path / "r"
    first = asyncio.run(counters.new().start("counter", "ask", state=counter_state(folder, "ask")))
    runners = [counters.new() for _ in range(4)]
    barrier = threading.Barrier(len(runners))
    outcomes: list[str] = []

    def answer(runner: Runner) -> None:
        barrier.wait()
        try:
            result = asyncio.run(runner.resume(first.run_id, "2"))
            outcomes.append(str(result.reason))
        except NotClaimable as exc:
            outcomes.append(f"refused: {exc}")

    threads = [threading.Thread(target=answer, args=(r,)) for r in runners]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(o.split(":")[0] for o in outcomes) == ["refused"] * 3 + ["success"]
    assert counted(folder) == [1, 2]  # the resumed half ran once
    rec = runners[0].store.get(first.run_id)
    assert rec is not None and rec.segments == 2


def test_every_completed_turn_is_checkpointed(counters: Workers, tmp_path: Path) -> None:
    runner = counters.new()
    seen = spy_checkpoints(runner.store)
    result = asyncio.run(runner.start("counter", "count", state=counter_state(tmp_path / "r", "plain")))
    assert result.reason is StopReason.SUCCESS
    assert [cp.head.usage.turns for cp in seen] == [1, 2, 3]  # after each completed turn, and at the end
    assert all(isinstance(cp.entries[-1], Result) for cp in seen[:2])  # one call a turn: saved with its turn
    assert isinstance(seen[-1].entries[-1], Stopped)  # the last entries, down to the stop
    assert all(cp.head.kind is SnapshotKind.CHECKPOINT for cp in seen[:-1])
    assert seen[-1].head.kind is SnapshotKind.FINISHED


def test_a_run_given_more_turns_checkpoints_each_turn_after_the_extension(
    counters: Workers, tmp_path: Path
) -> None:
    runner = counters.new()
    seen = spy_checkpoints(runner.store)
    folder = tmp_path / "r"
    first = asyncio.run(runner.start("counter", "count", state=counter_state(folder, "plain", max_turns=1)))
    assert (first.reason, first.turns) == (StopReason.LIMIT, 1)
    job = runner.claim(first.run_id, more=Extension(turns=5))
    done = asyncio.run(runner.drive(job))
    assert (done.reason, done.turns) == (StopReason.SUCCESS, 3) and counted(folder) == [1, 2]
    assert [cp.head.usage.turns for cp in seen] == [1, 1, 2, 3]  # turn 1, the limit stop, turns 2 and 3
    assert seen[1].head.kind is SnapshotKind.LIMITED and isinstance(seen[2].entries[0], Extended)
    kept = runner.store.snapshot(first.run_id)
    assert kept is not None and isinstance(kept.journal[-1], Stopped)


def test_a_run_extended_by_the_most_turns_and_tokens_is_saved_and_read_back(
    counters: Workers, tmp_path: Path
) -> None:
    """decide18: an extension past 2**63 - 1 turns was taken and saved, and the run's snapshot could
    never be read back (stranded); now `Extension` refuses it, and the most it takes reads back."""
    from agent.budget import MAX_COUNT
    from agent.errors import ConfigError

    with pytest.raises(ConfigError, match="at most 9223372036854775807"):
        Extension(turns=10**25)
    runner = counters.new()
    first = asyncio.run(
        runner.start("counter", "count", state=counter_state(tmp_path / "r", "plain", max_turns=1))
    )
    job = runner.claim(first.run_id, more=Extension(turns=MAX_COUNT, tokens=MAX_COUNT, seconds=3600.0))
    assert asyncio.run(runner.drive(job)).reason is StopReason.SUCCESS
    kept = runner.store.snapshot(first.run_id)
    assert kept is not None and isinstance(kept.journal[-1], Stopped)


def test_the_deadline_sweep_ends_a_run_as_help_timeout(examples: Workers) -> None:
    first = asyncio.run(examples.new().start("ci-fixer", "Fix CI", state={"scenario": "ci/unanswered-push"}))
    assert first.reason is StopReason.NEED_HELP
    swept = asyncio.run(examples.new().sweep())
    assert [r.reason for r in swept] == [StopReason.HELP_TIMEOUT]
    rec = examples.new().store.get(first.run_id)
    assert rec is not None and (rec.status, rec.stop_reason) == (RunStatus.FINISHED, StopReason.HELP_TIMEOUT)
    assert asyncio.run(examples.new().sweep()) == []  # swept once


def test_a_wait_swept_long_after_its_deadline_counts_only_to_the_deadline(
    counters: Workers, tmp_path: Path
) -> None:
    """decide18: a sweep an hour late made the result's `waiting_seconds` run to the sweep, while the
    span and `agent_human_wait_seconds` stopped at the deadline. The sweep's time is injected."""
    runner = counters.new()
    first = asyncio.run(runner.start("counter", "ask", state=counter_state(tmp_path / "r", "ask", wait=60)))
    rec = runner.store.get(first.run_id)
    assert rec is not None and rec.deadline is not None and rec.suspended_at is not None
    [swept] = asyncio.run(counters.new().sweep(now=rec.deadline + 3600))
    assert swept.reason is StopReason.HELP_TIMEOUT
    assert swept.waiting_seconds == pytest.approx(rec.deadline - rec.suspended_at) == pytest.approx(60)
    done = runner.store.get(first.run_id)
    assert done is not None and done.waiting_seconds == pytest.approx(60)


def test_a_timeout_policy_of_resume_goes_on_with_the_default_answer(
    counters: Workers, tmp_path: Path
) -> None:
    folder = tmp_path / "r"
    first = asyncio.run(counters.new().start("patient-counter", "ask", state=counter_state(folder, "ask")))
    assert first.reason is StopReason.NEED_HELP
    swept = asyncio.run(counters.new().sweep())
    assert [r.reason for r in swept] == [StopReason.SUCCESS]
    assert counted(folder) == [1, 2]


def test_a_worker_that_died_mid_turn_is_recovered_without_repeating_recorded_calls(
    store_url: str, tmp_path: Path
) -> None:
    folder = tmp_path / "r"
    dying = Workers(store_url, catalog(), lease_seconds=DYING_LEASE)
    with pytest.raises(Crash):
        asyncio.run(dying.new().start("counter", "count", state=counter_state(folder, "crash")))
    assert counted(folder) == [1, 2, 3]
    survivor = Workers(store_url, catalog())
    try:
        runner = survivor.new()
        stuck = runner.store.list_runs(RunStatus.RUNNING)
        assert len(stuck) == 1 and stuck[0].turns == 3
        assert asyncio.run(runner.recover()) == []  # not before its lease ran out
        dying.outlive_leases()
        results = asyncio.run(runner.recover())
        assert [r.reason for r in results] == [StopReason.SUCCESS]
        assert counted(folder) == [1, 2, 3, 4]  # count(3) was recorded before the crash: not run again
        assert asyncio.run(runner.recover()) == []
    finally:
        survivor.close()
        dying.close()


def test_a_driven_run_records_its_end_and_its_audit_off_the_event_loop(store_url: str) -> None:
    """A store waiting for a lock (another process's write transaction) holds the writer thread,
    never the event loop that the service's other requests and runs share."""
    audited = Catalog()
    audit = SuccessAudit(check=lambda ctx: [], share=1.0, after=0)
    audited.register(
        "shipper", lambda state: Agent("shipper", ScriptedModel([[finish("done", "ok")]]), audit=audit)
    )
    workers = Workers(store_url, audited)
    try:
        runner = workers.new()
        writes: list[tuple[str, bool]] = []
        for name in ("record", "schedule_audit", "record_audit", "release"):
            real = getattr(runner.store, name)

            def watched(*args: Any, _real: Any = real, _name: str = name) -> Any:
                try:
                    asyncio.get_running_loop()
                    writes.append((_name, True))
                except RuntimeError:
                    writes.append((_name, False))
                return _real(*args)

            setattr(runner.store, name, watched)
        assert asyncio.run(runner.start("shipper", "ship it")).reason is StopReason.SUCCESS
        assert [a.outcome for a in asyncio.run(runner.audit_due(time.time() + 60))] == ["confirmed"]
        assert writes == [("record", False), ("schedule_audit", False), ("record_audit", False)]
    finally:
        workers.close()


def test_a_success_that_is_not_audited_plans_no_audit_and_one_that_is_plans_one(store_url: str) -> None:
    """Only a sampled success of an agent with an audit is planned (the writer thread is asked only
    then); an agent whose audit does not sample the run, and one with no audit, leave no audit due."""
    audits = Catalog()
    for name, share in (("never", 1e-9), ("always", 1.0)):  # (the least share samples no run id here)
        audit = SuccessAudit(check=lambda ctx: [], share=share, after=0)
        audits.register(name, lambda state, a=audit, n=name: done_agent(n, a))
    audits.register("plain", lambda state: done_agent("plain"))
    store = open_store(store_url)
    try:
        runner = Runner(store, audits)
        ran = {
            n: asyncio.run(runner.start(n, "ship it", run_id=f"{n}-1")) for n in ("never", "plain", "always")
        }
        assert all(r.reason is StopReason.SUCCESS for r in ran.values())
        assert [a.run_id for a in store.due_audits(time.time() + 60)] == [ran["always"].run_id]
    finally:
        store.close()


def test_a_run_ends_cancelled_by_any_of_its_signals_and_runs_on_when_none_is_set(store_url: str) -> None:
    """The caller's cancel signal, the catalog's `cancel(state)` and the runner's shutdown each cancel
    a run before its first turn; with none of them set it runs to its end."""
    own = threading.Event()
    signals = Catalog()
    signals.register(
        "quick", lambda state: Agent("quick", ScriptedModel([[finish("done", "ok")]])), cancel=lambda s: own
    )
    store = open_store(store_url)
    try:
        runner = Runner(store, signals)
        caller = threading.Event()
        unset = asyncio.run(runner.drive(runner.begin("quick", "go"), cancel=caller))
        assert unset.reason is StopReason.SUCCESS
        caller.set()
        cut = asyncio.run(runner.drive(runner.begin("quick", "go"), cancel=caller))
        own.set()
        cut_by_own = asyncio.run(runner.drive(runner.begin("quick", "go")))
        own.clear()
        runner.shutting_down.set()
        cut_by_shutdown = asyncio.run(runner.drive(runner.begin("quick", "go")))
        assert [r.reason for r in (cut, cut_by_own, cut_by_shutdown)] == [StopReason.CANCELLED] * 3
    finally:
        store.close()


def done_agent(name: str, audit: SuccessAudit | None = None) -> Agent:
    return Agent(name, ScriptedModel([[finish("done", "ok")]]), audit=audit)


def test_a_runners_lease_follows_its_owner_and_seconds(tmp_path: Path) -> None:
    """The lease a runner writes with (kept as one value) changes as soon as its seconds or owner do."""
    runner = Runner(open_store(str(tmp_path / "runs.db")), Catalog(), lease_seconds=30.0, owner="w1")
    try:
        assert runner.lease() == Lease("w1", 30.0) and runner.lease() is runner.lease()
        runner.lease_seconds = 5.0
        assert runner.lease() == Lease("w1", 5.0)
        runner.owner = "w2"
        assert runner.lease() == Lease("w2", 5.0)
    finally:
        runner.store.close()


def test_a_runner_in_a_server_writes_every_checkpoint_off_the_event_loop(
    store_url: str, tmp_path: Path
) -> None:
    """`checkpoints_on_loop=False` (what the service sets): even a model that answers at once, whose
    checkpoints the loop would otherwise write itself at its barriers, never writes on the loop."""
    store = open_store(store_url)
    runner = Runner(store, catalog(), checkpoints_on_loop=False)
    where: list[bool] = []
    for name in ("checkpoint", "send_checkpoint"):
        if (real := getattr(store, name, None)) is not None:

            def watched(*args: Any, _real: Any = real) -> Any:
                try:
                    asyncio.get_running_loop()
                    where.append(True)
                except RuntimeError:
                    where.append(False)
                return _real(*args)

            setattr(store, name, watched)
    try:
        result = asyncio.run(runner.start("counter", "count", state=counter_state(tmp_path / "r", "plain")))
        assert result.reason is StopReason.SUCCESS and counted(tmp_path / "r") == [1, 2]
        assert where and not any(where)
    finally:
        runner.catalog.close()
        store.close()


def test_a_worker_whose_clock_is_minutes_ahead_takes_no_run_another_worker_holds(
    store_url: str, tmp_path: Path
) -> None:
    """Leases run out by the store's clock: a worker 5 minutes behind holds its run for its whole
    lease, whatever the clock of a worker 5 minutes ahead says."""
    behind = Workers(store_url, catalog(), clock=Later(-300))
    ahead = Workers(store_url, catalog(), clock=Later(300))
    try:
        holder = behind.new()
        job = holder.begin("counter", "count", state=counter_state(tmp_path / "r", "plain"))
        other = ahead.new()
        assert other.recoverable() == [] and asyncio.run(other.recover()) == []
        held = other.store.get(job.run_id)
        assert held is not None and (held.owner, held.segments) == (holder.owner, 1)
        assert asyncio.run(holder.drive(job)).reason is StopReason.SUCCESS  # its holder finishes it
    finally:
        ahead.close()
        behind.close()


def test_a_worker_whose_clock_is_minutes_behind_takes_over_a_run_whose_lease_ran_out(
    store_url: str, tmp_path: Path
) -> None:
    folder = tmp_path / "r"
    dying = Workers(store_url, catalog(), lease_seconds=DYING_LEASE, clock=Later(300))
    survivor = Workers(store_url, catalog(), clock=Later(-300))
    try:
        with pytest.raises(Crash):
            asyncio.run(dying.new().start("counter", "count", state=counter_state(folder, "crash")))
        runner = survivor.new()
        assert asyncio.run(runner.recover()) == []  # not before its lease ran out
        dying.outlive_leases()
        assert [r.reason for r in asyncio.run(runner.recover())] == [StopReason.SUCCESS]
        assert counted(folder) == [1, 2, 3, 4]
    finally:
        survivor.close()
        dying.close()


def test_recovery_goes_on_past_a_run_that_cannot_be_rebuilt_and_ends_it_as_a_resumable_error(
    store_url: str, tmp_path: Path
) -> None:
    dying = Workers(store_url, catalog(), lease_seconds=DYING_LEASE)
    folders = {name: tmp_path / name for name in ("broken", "fine")}
    for name, folder in folders.items():
        state = counter_state(folder, "crash") | {"config": str(tmp_path / f"{name}.toml")}
        (tmp_path / f"{name}.toml").write_text("ok")
        with pytest.raises(Crash):
            asyncio.run(dying.new().start("configured-counter", "count", state=state, run_id=name))
    (tmp_path / "broken.toml").unlink()  # its agent's config file is gone
    survivor = Workers(store_url, catalog())
    try:
        runner = survivor.new()
        assert asyncio.run(runner.recover()) == []  # not before their leases ran out
        dying.outlive_leases()
        results = asyncio.run(runner.recover())
        assert [(r.run_id, r.reason) for r in results] == [("fine", StopReason.SUCCESS)]
        broken = runner.store.get("broken")
        assert broken is not None and (broken.status, broken.stop_reason) == (RunStatus.FINISHED, "error")
        assert broken.error_type == "agent_build_failed"
        assert "FileNotFoundError" in broken.note and "endstate resume broken" in broken.note
        assert runner.store.snapshot("broken") is not None  # its last checkpoint is kept
        assert asyncio.run(runner.recover()) == []  # not tried again and again

        (tmp_path / "broken.toml").write_text("ok")  # fixed: resume continues it from its checkpoint
        done = asyncio.run(survivor.new().resume("broken"))
        assert done.reason is StopReason.SUCCESS
        assert counted(folders["broken"]) == [1, 2, 3, 4]  # no recorded call ran twice
    finally:
        survivor.close()
        dying.close()


def test_a_catalog_entry_whose_build_or_prepare_raises_is_named_and_nothing_is_stored(
    store_url: str, tmp_path: Path
) -> None:
    """A catalog's own code failing raised its exception raw: a traceback out of `endstate start`."""

    def broken_build(state: dict[str, Any]) -> Agent:
        raise KeyError("model")

    def broken_prepare(state: dict[str, Any], run_id: str) -> dict[str, Any]:
        raise PermissionError(13, "Permission denied", "/srv/worlds")

    fine = Agent("fine", ScriptedModel([finish("done", "ok")]))
    broken = Catalog()
    broken.register("no-build", broken_build)
    broken.register("no-prepare", lambda state: fine, prepare=broken_prepare)
    broken.register("no-return", lambda state: None)  # a build that forgot its `return`
    store = open_store(store_url)
    try:
        runner = Runner(store, broken)
        with pytest.raises(
            AgentUnavailable, match=r"'no-build' could not be set up: .* build raised KeyError"
        ):
            runner.begin("no-build", "task", run_id="a")
        with pytest.raises(AgentUnavailable, match=r"prepare raised PermissionError: .*Permission denied"):
            runner.begin("no-prepare", "task", run_id="b")
        with pytest.raises(AgentUnavailable, match=r"'no-return' .* build returned NoneType, not an Agent"):
            runner.begin("no-return", "task", run_id="c")
        assert store.get("a") is None and store.get("b") is None and store.get("c") is None
    finally:
        store.close()


def test_a_shutdown_cuts_a_long_tool_off_after_its_grace_and_records_the_run_cancelled(
    counters: Workers, tmp_path: Path
) -> None:
    folder = tmp_path / "r"
    state = counter_state(folder, "hang")
    (folder / "hang.flag").write_text("block")  # hang() would block for good
    runner = counters.new()

    async def start_then_terminate() -> RunResult:
        job = runner.begin("counter", "count", state=state)
        task = asyncio.create_task(runner.drive(job))
        while counted(folder) != [1, 2, 3]:  # noqa: ASYNC110  (a tool thread writes the file)
            await asyncio.sleep(0.02)
        runner.stop_soon(grace=0.2)  # what SIGTERM does
        return await asyncio.wait_for(task, timeout=60)  # bounded by the grace, not by the tool

    try:
        result = asyncio.run(start_then_terminate())
        assert result.reason is StopReason.CANCELLED
        rec = runner.store.get(result.run_id)
        assert rec is not None and (rec.status, rec.interrupted) == (RunStatus.CANCELLED, True)
        snap = runner.store.snapshot(result.run_id)
        assert snap is not None
        cut = [e for e in snap.journal if isinstance(e, Result) and e.ran == "hang"]
        assert len(cut) == 1 and cut[0].text.startswith("Outcome unknown")
    finally:
        (folder / "hang.flag").unlink()


def test_a_run_held_by_a_live_worker_is_not_recovered(counters: Workers, tmp_path: Path) -> None:
    holder = counters.new()
    holder.begin("counter", "count", state=counter_state(tmp_path / "r", "plain"))
    assert counters.new().recoverable() == []


def test_a_shutdown_cancels_runs_resumably_and_recovery_finishes_them(
    counters: Workers, tmp_path: Path
) -> None:
    folder = tmp_path / "r"
    state = counter_state(folder, "slow", hold_at=2)
    (folder / "slow.flag").write_text("hold")  # the second turn ends only once the shutdown has begun
    runner = counters.new()

    async def run_then_stop() -> None:
        job = runner.begin("counter", "count slowly", state=state)
        task = runner.spawn(job)
        while len(counted(folder)) < 2:  # noqa: ASYNC110  (polls a file another thread writes)
            await asyncio.sleep(0.02)
        stopping = asyncio.create_task(runner.shutdown(grace=10))
        while not runner.shutting_down.is_set():  # noqa: ASYNC110  (set by the shutdown's first step)
            await asyncio.sleep(0)
        (folder / "slow.flag").unlink()
        await stopping
        assert task.done()

    asyncio.run(run_then_stop())
    [rec] = runner.store.list_runs()
    assert (rec.status, rec.stop_reason, rec.interrupted) == (RunStatus.CANCELLED, StopReason.CANCELLED, True)
    before = counted(folder)
    results = asyncio.run(counters.new().recover())
    assert [r.reason for r in results] == [StopReason.SUCCESS]
    assert counted(folder) == list(range(1, 9)) and before == list(range(1, len(before) + 1))


def test_a_run_cancelled_by_its_caller_waits_for_an_explicit_resume(examples: Workers) -> None:
    first = asyncio.run(examples.new().start("csv-cleaner", "Clean", state={"scenario": "csv/shutdown"}))
    assert first.reason is StopReason.CANCELLED
    runner = examples.new()
    assert runner.recoverable() == []  # not a shutdown: recovery leaves it alone
    done = asyncio.run(runner.resume(first.run_id))
    assert done.reason is StopReason.SUCCESS


def test_an_unknown_agent_or_a_bad_run_id_is_refused_before_anything_is_stored(counters: Workers) -> None:
    runner = counters.new()
    with pytest.raises(Exception, match="no agent named 'nobody'"):
        runner.begin("nobody", "task")
    with pytest.raises(Exception, match=r"run id '\.\./x' must be"):
        runner.begin("counter", "task", run_id="../x")
    assert runner.store.list_runs() == []


def test_a_state_json_cannot_hold_is_refused_at_the_start_before_anything_is_stored(
    counters: Workers, tmp_path: Path
) -> None:
    """Bad input from the caller: a ConfigError naming what is wrong and what to pass instead, not
    the JSON encoder's TypeError or RecursionError, and no run in the store."""
    runner = counters.new()
    deep: Any = 1
    for _ in range(5000):
        deep = [deep]
    for value, why in (
        (object(), "type object"),
        (b"raw", "type bytes"),
        ({1, 2}, "type set"),
        (deep, "deeper than 255 levels"),  # the same on every version (3.11's encoder gave up at ~1,000)
        (deep_as(300), "deeper than 255 levels"),  # the encoder writes it; every reader choked on it
    ):
        state = counter_state(tmp_path / "c", "plain") | {"extra": value}
        with pytest.raises(
            ConfigError, match=rf"the run's state cannot be stored: .*{why}.*keep JSON values"
        ):
            runner.begin("counter", "count", state=state)
    with pytest.raises(ConfigError, match="state must be a dict of JSON values, not list"):
        runner.begin("counter", "count", state=[("folder", "x")])  # type: ignore[arg-type]
    assert runner.store.list_runs() == []


def deep_as(levels: int) -> Any:
    """A list in a list ... `levels` lists deep."""
    value: Any = []
    for _ in range(levels - 1):
        value = [value]
    return value


def test_a_state_nested_as_deep_as_the_encoder_writes_is_kept(counters: Workers, tmp_path: Path) -> None:
    """The depth limit refuses only what nests past 255 levels: a state 254 levels deep is kept."""
    runner = counters.new()
    state = counter_state(tmp_path / "c", "plain") | {"extra": deep_as(254)}
    job = runner.begin("counter", "count", state=state)
    assert runner.store.get(job.run_id).state["extra"] == deep_as(254)


def test_an_approval_for_a_tool_the_redeployed_agent_no_longer_has_leaves_the_run_waiting(
    counters: Workers, tmp_path: Path
) -> None:
    """The agent was redeployed without the tool whose call waits for approval: approving it is
    refused, saying why and what to do, and the run still waits (it was ended as error, its
    approval spent, and no resume could take it back); denying it goes on as before."""
    folder = tmp_path / "w"
    first = asyncio.run(counters.new().start("counter", "wire", state=counter_state(folder, "approve")))
    assert first.reason is StopReason.NEED_HELP

    def without_wire(state: dict[str, Any]) -> Agent:
        agent = make_counter(state)
        return dataclasses.replace(agent, tools=[t for t in agent.tools if t.name != "wire"])

    redeployed = Catalog()
    redeployed.register("counter", without_wire)
    runner = Runner(counters.new().store, redeployed)
    with pytest.raises(ConfigError, match=r"agent 'counter' has no tool 'wire' any more.*deny the call"):
        asyncio.run(runner.resume(first.run_id, approved=True))
    rec = runner.store.get(first.run_id)
    assert rec is not None and (rec.status, rec.owner, rec.approved) == (RunStatus.WAITING, None, None)
    assert rec.pending is not None and rec.pending.name == "wire" and rec.segments == 1
    assert not (folder / "wired.txt").exists()
    denied = asyncio.run(runner.resume(first.run_id, "no wires today", approved=False))
    assert denied.reason is StopReason.SUCCESS


# -- windows where a crash, a shutdown or a race could lose an answer or a run ----------------------


def test_an_answer_taken_before_the_deadline_survives_its_worker_dying_after_the_claim(
    store_url: str, tmp_path: Path
) -> None:
    """The claim keeps the answer and when it came: recovery after the deadline still applies it."""
    folder = tmp_path / "r"
    asking = Workers(store_url, catalog())
    dying = Workers(store_url, catalog(), lease_seconds=DYING_LEASE)
    survivor = Workers(store_url, catalog(), clock=Later(60))  # past the deadline, for this runner
    try:
        state = counter_state(folder, "ask", wait=30.0)
        first = asyncio.run(asking.new().start("counter", "ask", state=state))
        assert first.reason is StopReason.NEED_HELP
        dying.new().claim(first.run_id, "2")  # claimed in time; the worker dies before driving it
        runner = survivor.new()
        assert asyncio.run(runner.recover()) == []  # not before its lease ran out
        dying.outlive_leases()
        results = asyncio.run(runner.recover())
        assert [r.reason for r in results] == [StopReason.SUCCESS]
        assert counted(folder) == [1, 2]
        assert 0 < results[0].waiting_seconds < 30  # the wait ended when the person answered
    finally:
        for workers in (asking, dying, survivor):
            workers.close()


def test_an_answer_after_the_deadline_is_refused_and_changes_nothing(
    counters: Workers, tmp_path: Path
) -> None:
    state = counter_state(tmp_path / "r", "ask", wait=0.0)
    first = asyncio.run(counters.new().start("counter", "ask", state=state))
    runner = counters.new()
    before = runner.store.get(first.run_id)
    with pytest.raises(NotClaimable, match=r"deadline passed at .* UTC; the answer came too late"):
        runner.claim(first.run_id, "2")
    assert runner.store.get(first.run_id) == before
    assert [r.reason for r in asyncio.run(runner.sweep())] == [StopReason.HELP_TIMEOUT]


def test_the_sweep_never_expires_a_question_asked_after_it_listed_the_run(
    counters: Workers, tmp_path: Path
) -> None:
    """The sweep lists runs past their deadline; if one is answered and asks again before the
    sweep claims it, the new question (with its new deadline) is left alone."""
    folder = tmp_path / "r"
    first = asyncio.run(counters.new().start("counter", "ask", state=counter_state(folder, "ask-twice")))
    assert first.suspension is not None
    sweeper, person = counters.new(), counters.new()
    listed = sweeper.store.expired

    def listed_then_answered(now: float) -> list[object]:
        stale = listed(now)
        again = asyncio.run(person.resume(first.run_id, "first answer"))
        assert again.reason is StopReason.NEED_HELP and again.note == "Second question?"
        return stale  # type: ignore[return-value]

    sweeper.store.expired = listed_then_answered  # type: ignore[method-assign,assignment]
    later = first.suspension.deadline + 1  # past the first deadline only
    assert sweeper.expiry_jobs(now=later) == []
    rec = person.store.get(first.run_id)
    assert rec is not None and (rec.status, rec.question, rec.owner) == (
        RunStatus.WAITING, "Second question?", None,
    )  # fmt: skip


def test_a_sweep_goes_on_when_one_run_cannot_be_expired(counters: Workers, tmp_path: Path) -> None:
    states = [counter_state(tmp_path / n, "ask", wait=0.0) for n in ("a", "b")]
    runs = [asyncio.run(counters.new().start("counter", "ask", state=state)) for state in states]
    sweeper = counters.new()
    make_job = sweeper._expiry_job
    broken = runs[0].run_id

    def job_for(record: RunRecord, now: float, built: Any) -> Job:
        job = make_job(record, now, built)
        if record.run_id != broken:
            return job

        async def refused(cancel: object) -> RunResult:
            raise SnapshotError("this worker cannot read the snapshot")

        return dataclasses.replace(job, segment=refused)

    sweeper._expiry_job = job_for  # type: ignore[method-assign]
    assert [r.run_id for r in asyncio.run(sweeper.sweep())] == [runs[1].run_id]
    rec = sweeper.store.get(broken)
    assert rec is not None and (rec.status, rec.owner) == (RunStatus.WAITING, None)


def test_a_sweep_whose_store_fails_on_one_run_still_expires_the_runs_it_claimed(
    counters: Workers, tmp_path: Path
) -> None:
    """The store fails on the second run's claim (a dropped connection, a full disk): the first run,
    claimed already, is still expired, and nothing is left held by the sweeper, which would renew
    its lease for ever so that no one recovers it; the second is swept next time."""
    states = [counter_state(tmp_path / n, "ask", wait=0.0) for n in ("a", "b")]
    runs = [asyncio.run(counters.new().start("counter", "ask", state=state)) for state in states]
    sweeper = counters.new()
    claim, claims = sweeper.store.claim, []

    def failing(run_id: str, *args: Any, **kwargs: Any) -> RunRecord:
        claims.append(run_id)
        if len(claims) == 2:
            raise StoreError("the store is down for a moment")
        return claim(run_id, *args, **kwargs)

    sweeper.store.claim = failing  # type: ignore[method-assign]
    first = asyncio.run(sweeper.sweep())
    assert [r.reason for r in first] == [StopReason.HELP_TIMEOUT]
    assert sweeper.held() == set()
    second = asyncio.run(sweeper.sweep())
    assert [r.run_id for r in first + second] == claims[:1] + claims[2:]
    for run in runs:
        rec = sweeper.store.get(run.run_id)
        assert rec is not None and rec.stop_reason is StopReason.HELP_TIMEOUT


def test_an_approved_call_cut_by_a_shutdown_is_resumed_with_its_approval(
    counters: Workers, tmp_path: Path
) -> None:
    """The approval was given and the call was cut off by the shutdown's grace: the run is
    recorded cancelled (resumable), keeps the approval, and recovery finishes it."""
    folder = tmp_path / "r"
    first = asyncio.run(counters.new().start("counter", "deploy", state=counter_state(folder, "deploy")))
    assert first.reason is StopReason.NEED_HELP
    (folder / "deploy.flag").write_text("block")
    runner = counters.new()

    async def approve_then_stop() -> None:
        runner.spawn(runner.claim(first.run_id, approved=True))
        while not deployed(folder):  # noqa: ASYNC110  (polls a file a tool thread writes)
            await asyncio.sleep(0.02)
        await runner.shutdown(grace=0.2)

    asyncio.run(approve_then_stop())
    rec = runner.store.get(first.run_id)
    assert rec is not None and (rec.status, rec.interrupted) == (RunStatus.CANCELLED, True)
    (folder / "deploy.flag").unlink()
    results = asyncio.run(counters.new().recover())
    assert [r.reason for r in results] == [StopReason.NEED_HELP]  # started, no result: a person checks
    assert "may or may not have happened" in results[0].note
    assert deployed(folder) == ["v2"]  # the cut call is never run again unasked
    done = asyncio.run(counters.new().resume(first.run_id, "it did not deploy; v2 is not live"))
    assert done.reason is StopReason.SUCCESS
    assert deployed(folder) == ["v2"]


def test_a_new_run_with_the_id_of_a_stored_run_leaves_that_run_alone(examples: Workers) -> None:
    first = asyncio.run(examples.new().start("invoice-downloader", "Get the September invoice"))
    rec = examples.new().store.get(first.run_id)
    assert rec is not None and rec.status is RunStatus.WAITING
    portal = Path(rec.state["workdir"]) / "portal.json"
    before = portal.read_text()
    offline = {"scenario": "invoice/portal-offline"}
    with pytest.raises(RunExists, match="already exists"):
        examples.new().begin("invoice-downloader", "t", state=offline, run_id=first.run_id)
    assert portal.read_text() == before  # the waiting run's world was not rebuilt
    assert examples.new().store.get(first.run_id) == rec


def test_a_run_whose_result_cannot_be_recorded_is_let_go_for_recovery(
    store_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """While another run keeps this worker's heartbeat going, a run whose result it failed to
    record must not stay leased to it: time passes for both leases, the next heartbeat renews the
    other run's only, and recovery finds this run."""
    import agent.durable.runner

    monkeypatch.setattr(agent.durable.runner, "RECORD_RETRIES", (0.01,))
    workers = Workers(store_url, catalog(), lease_seconds=6.0)  # renewed every 2 s
    held, lost = tmp_path / "h", "lost-run"
    try:
        runner, other = workers.new(), workers.new()
        record, beats = runner.store.record, Heartbeats(runner.store)

        def failing(run_id: str, *args: object) -> object:
            if run_id == lost:
                raise StoreError("the store is down")
            return record(run_id, *args)  # type: ignore[arg-type]

        runner.store.record = failing  # type: ignore[method-assign,assignment]

        async def scenario() -> tuple[list[str], list[str]]:
            state = counter_state(held, "hang-first")
            (held / "hang.flag").write_text("block")  # the run holds its lease until the flag goes
            holding = runner.spawn(runner.begin("counter", "held", state=state, run_id="held"))
            plain = counter_state(tmp_path / "p", "plain")
            await runner.spawn(runner.begin("counter", "plain", state=plain, run_id=lost))
            workers.outlive_leases()
            renewed = await beats.after_now()
            found = [r.run_id for r in other.recoverable()]
            (held / "hang.flag").unlink()
            assert await holding is not None
            return renewed, found

        assert asyncio.run(scenario()) == (["held"], [lost])
    finally:
        workers.close()


def test_a_long_tool_keeps_its_lease_and_no_other_worker_takes_the_run(
    counters: Workers, tmp_path: Path
) -> None:
    """A call that outlasts the lease three times over: each time the lease runs out by the store's
    clock, the next heartbeat renews it, and no other worker finds the run or takes it over."""
    workers = Workers(counters.url, catalog(), lease_seconds=6.0)  # renewed every 2 s
    try:
        runner = workers.new()
        assert asyncio.run(through_one_long_call(runner, workers, tmp_path / "l", lapses=3)) == []
    finally:
        workers.close()


def test_the_heartbeat_keeps_the_lease_through_one_call_longer_than_it(
    counters: Workers, tmp_path: Path
) -> None:
    """No checkpoint renews the lease during a single call that outlasts it: only the heartbeat does."""
    workers = Workers(counters.url, catalog(), lease_seconds=6.0)  # renewed every 2 s
    try:
        runner = workers.new()
        assert asyncio.run(through_one_long_call(runner, workers, tmp_path / "l")) == []
    finally:
        workers.close()


def test_the_heartbeat_keeps_the_lease_while_the_default_thread_pool_is_busy(
    counters: Workers, tmp_path: Path
) -> None:
    """Hung work on asyncio's default thread pool (an audit, a cleanup, a preview) does not hold up
    the lease's renewal: the heartbeat has a thread of its own."""
    workers = Workers(counters.url, catalog(), lease_seconds=6.0)  # renewed every 2 s
    try:
        runner = workers.new()

        async def scenario() -> list[str]:
            loop, hung = asyncio.get_running_loop(), threading.Event()
            loop.set_default_executor(ThreadPoolExecutor(max_workers=1))
            stuck = loop.run_in_executor(None, hung.wait, 120)  # its one thread, past a beat's wait
            try:
                return await through_one_long_call(runner, workers, tmp_path / "l")
            finally:
                hung.set()
                await stuck

        assert asyncio.run(scenario()) == []
    finally:
        workers.close()


async def through_one_long_call(runner: Runner, workers: Workers, folder: Path, lapses: int = 1) -> list[str]:
    """A run's one call outlasts its lease `lapses` times (time passes for the lease while the call
    blocks): the runs another worker found to recover, or took over, once the next heartbeat after
    each lapse renewed the run's lease."""
    beats, state = Heartbeats(runner.store), counter_state(folder, "long")
    (folder / "hang.flag").write_text("block")
    job = runner.begin("counter", "long", state=state)
    task = runner.spawn(job)
    await polled(lambda: (folder / "hanging").exists(), "the call to hang()")
    found: list[str] = []
    for _ in range(lapses):
        workers.outlive_leases()
        assert await beats.after_now() == [job.run_id]
        other = workers.new()
        found += [r.run_id for r in other.recoverable()] + [j.run_id for j in other.recovery_jobs()]
    (folder / "hang.flag").unlink()
    result = await task
    assert result is not None and (result.reason, result.turns) == (StopReason.SUCCESS, 3)
    return found


def test_a_shutdown_waits_for_runs_spawned_while_it_waits(counters: Workers, tmp_path: Path) -> None:
    folder = tmp_path / "d"
    waiting = asyncio.run(counters.new().start("counter", "deploy", state=counter_state(folder, "deploy")))
    (folder / "deploy.flag").write_text("block")  # the late run deploys only once the first is done
    runner = counters.new()

    async def scenario() -> tuple[bool, bool]:
        first = runner.spawn(runner.begin("counter", "slow", state=counter_state(tmp_path / "s", "slow")))
        stopping = asyncio.create_task(runner.shutdown(grace=10))
        while not runner.shutting_down.is_set():  # noqa: ASYNC110  (then the shutdown waits for `first`)
            await asyncio.sleep(0)
        late = runner.spawn(runner.claim(waiting.run_id, approved=True))  # e.g. an answer posted just then
        await asyncio.wait([first])
        (folder / "deploy.flag").unlink()
        await stopping
        return first.done(), late.done()

    assert asyncio.run(scenario()) == (True, True)
    rec, snap = runner.store.get(waiting.run_id), runner.store.snapshot(waiting.run_id)
    assert rec is not None and rec.status is RunStatus.CANCELLED and deployed(folder) == ["v2"]
    assert snap is not None  # the late run's deploy was waited for, not cut off:
    assert [e.text for e in snap.journal if isinstance(e, Result) and e.ran == "deploy"] == ["deployed v2"]


def test_who_holds_a_run_is_judged_by_host_pid_namespace_and_process(counters: Workers) -> None:
    """A restarted container has the same host name and pid as the worker that died in it; other
    containers may share the host name but not the pid numbers: only the lease tells for them."""
    runner = counters.new()
    here, pid, _ = runner.owner.split(":")
    assert here.startswith(socket.gethostname() + "/")  # the pid namespace, on Linux
    dead, name = _dead_pid(), socket.gethostname()
    cases = {
        "earlier-process": f"{here}:{pid}:0ldpr0c",  # this pid, but no runner of this process
        "dead-here": f"{here}:{dead}:deadbeef",
        "live-here": runner.owner,
        "same-name-other-pids": f"{name}/4026500000:{dead}:c0ffee00",
        "same-name-unknown-pids": f"{name}:{dead}:c0ffee01",
    }
    lease_until = time.time() + 60
    for run_id, owner in cases.items():
        runner.store.create(
            NewRun(run_id, "counter", "t", "counting"), Lease(owner, lease_until), time.time()
        )
    assert sorted(r.run_id for r in counters.new().recoverable()) == ["dead-here", "earlier-process"]


def _dead_pid() -> int:
    child = subprocess.Popen(["true"])
    child.wait()
    return child.pid


def test_a_run_the_sweep_continues_stops_at_a_shutdown_like_any_other(
    counters: Workers, tmp_path: Path
) -> None:
    folder = tmp_path / "r"
    first = asyncio.run(counters.new().start("patient-counter", "ask", state=counter_state(folder, "ask")))
    assert first.reason is StopReason.NEED_HELP
    sweeper = counters.new()
    sweeper.shutting_down.set()
    [result] = asyncio.run(sweeper.sweep())
    assert result.reason is StopReason.CANCELLED and counted(folder) == [1]  # stopped before count(2)
    rec = sweeper.store.get(first.run_id)
    assert rec is not None and (rec.status, rec.interrupted) == (RunStatus.CANCELLED, True)


def test_a_result_recorded_whose_reply_was_lost_is_not_taken_for_a_take_over(
    examples: Workers, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The store wrote the result, then the connection broke before it said so: the retry finds
    the run no longer held. That is this worker's own write, not another worker's take-over."""
    import agent.durable.runner

    monkeypatch.setattr(agent.durable.runner, "RECORD_RETRIES", (0.01,))
    runner = examples.new()
    record = runner.store.record

    def lost_reply(*args: object) -> object:
        runner.store.record = record  # type: ignore[method-assign]
        record(*args)  # type: ignore[arg-type]
        raise StoreError("server closed the connection unexpectedly")

    runner.store.record = lost_reply  # type: ignore[method-assign,assignment]
    job = runner.begin("csv-cleaner", "Clean", state={"scenario": "csv/clean"})
    workdir = Path(job.record.state["workdir"])
    assert asyncio.run(runner.drive(job)).reason is StopReason.SUCCESS
    assert not workdir.exists()  # cleaned up, as for any finished run
    assert "taken over" not in caplog.text


def test_a_worker_dying_between_the_question_and_its_record_loses_no_question(
    store_url: str, tmp_path: Path
) -> None:
    """The agent suspended but the worker died before the store recorded it: recovery continues
    from the last checkpoint, the question is asked again and waits; no recorded call runs again."""
    folder = tmp_path / "r"
    dying = Workers(store_url, catalog(), lease_seconds=DYING_LEASE)
    survivor = Workers(store_url, catalog())
    try:
        runner = dying.new()

        def die(*args: object) -> None:
            raise Crash()

        runner.store.record = die  # type: ignore[method-assign,assignment]
        with pytest.raises(Crash):
            asyncio.run(runner.start("counter", "ask", state=counter_state(folder, "ask")))
        recovering = survivor.new()
        assert asyncio.run(recovering.recover()) == []  # not before its lease ran out
        dying.outlive_leases()
        [again] = asyncio.run(recovering.recover())
        assert again.reason is StopReason.NEED_HELP and again.note == "Which number next?"
        rec = survivor.new().store.get(again.run_id)
        assert rec is not None and (rec.status, rec.question) == (RunStatus.WAITING, "Which number next?")
        assert counted(folder) == [1]
    finally:
        survivor.close()
        dying.close()


def test_a_task_type_is_a_label_so_only_the_catalogs_are_taken(store_url: str, tmp_path: Path) -> None:
    c = Catalog()
    c.register("counter", make_counter, task_types=("bulk-counting",))
    workers = Workers(store_url, c)
    try:
        runner = workers.new()
        with pytest.raises(ConfigError, match="does not run task type 'free-text'"):
            runner.begin(
                "counter", "count", task_type="free-text", state=counter_state(tmp_path / "a", "plain")
            )
        assert runner.store.list_runs(limit=None) == []
        result = asyncio.run(
            runner.start(
                "counter", "count", task_type="bulk-counting", state=counter_state(tmp_path / "b", "plain")
            )
        )
        assert (result.reason, result.task_type) == (StopReason.SUCCESS, "bulk-counting")
    finally:
        workers.close()


def task_typed(*task_types: str) -> Catalog:
    """The counter, running `task_types` besides its own (a deploy's catalog)."""
    c = Catalog()
    c.register("counter", make_counter, task_types=task_types)
    return c


def test_an_answer_to_a_run_whose_task_type_left_the_catalog_is_refused_and_the_run_keeps_waiting(
    store_url: str, tmp_path: Path
) -> None:
    """Task types are metric labels the catalog names: a run saved under one that a redeploy dropped
    (or that a newer replica added) does not go on under it unannounced; the refusal comes before any
    claim (the deployment lacks it, as it would lack an agent: `NotInCatalog`, a 503 over HTTP), names
    it and the fix, and the run still waits, untouched."""
    folder = tmp_path / "r"
    before, after = Workers(store_url, task_typed("bulk-counting")), Workers(store_url, task_typed())
    try:
        state = counter_state(folder, "ask")
        first = asyncio.run(before.new().start("counter", "ask", task_type="bulk-counting", state=state))
        assert first.reason is StopReason.NEED_HELP
        runner = after.new()
        asked = runner.store.get(first.run_id)
        with pytest.raises(
            NotInCatalog, match=r"task type 'bulk-counting'.*add 'bulk-counting' to .*task_types"
        ):
            runner.claim(first.run_id, "2")
        rec = runner.store.get(first.run_id)
        assert rec is not None and (rec.status, rec.segments, rec.answer) == (RunStatus.WAITING, 1, None)
        assert asked is not None and rec.updated_at == asked.updated_at  # never claimed, nor given back
        assert runner.held() == set() and counted(folder) == [1]
        again = asyncio.run(before.new().resume(first.run_id, "2"))  # the type is back in the catalog
        assert (again.reason, again.task_type) == (StopReason.SUCCESS, "bulk-counting")
        assert counted(folder) == [1, 2]
    finally:
        after.close()
        before.close()


def test_recovery_leaves_a_run_whose_task_type_left_the_catalog_for_a_runner_that_runs_it(
    store_url: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """It ended `error` (agent_build_failed): in a rolling deploy that adds a task type, the old
    replica's false error, counted on the dashboards, for a run the new one would have continued.
    Now it is left, as a run of an agent the catalog lacks is, and said once."""
    folder = tmp_path / "r"
    dying = Workers(store_url, task_typed("bulk-counting"), lease_seconds=DYING_LEASE)
    survivor = Workers(store_url, task_typed())
    try:
        state = counter_state(folder, "crash")
        with pytest.raises(Crash):
            asyncio.run(dying.new().start("counter", "count", task_type="bulk-counting", state=state))
        runner = survivor.new()
        assert asyncio.run(runner.recover()) == []  # not before its lease ran out: it still runs
        dying.outlive_leases()
        [before] = runner.store.list_runs(limit=None)
        with caplog.at_level(logging.WARNING, logger="endstate.runner"):
            assert asyncio.run(runner.recover()) == [] and asyncio.run(runner.recover()) == []
        [rec] = runner.store.list_runs(limit=None)
        assert (rec.status, rec.segments, rec.updated_at) == (RunStatus.RUNNING, 1, before.updated_at)
        said = [r.getMessage() for r in caplog.records if "'bulk-counting'" in r.getMessage()]
        assert len(said) == 1 and "left for a runner whose catalog entry runs that task type" in said[0]
        assert counted(folder) == [1, 2, 3]
        [done] = asyncio.run(dying.new().recover())  # a runner whose catalog runs the type
        assert (done.reason, done.task_type) == (StopReason.SUCCESS, "bulk-counting")
        assert counted(folder) == [1, 2, 3, 4]
    finally:
        survivor.close()
        dying.close()


def test_an_approval_runs_only_the_call_the_person_was_shown(counters: Workers, tmp_path: Path) -> None:
    """A store edited behind the runner's back (the pending column says one call, the journal
    another) is refused: the call a person approves is exactly the call that runs."""
    folder = tmp_path / "r"
    first = asyncio.run(counters.new().start("counter", "wire", state=counter_state(folder, "approve")))
    assert first.reason is StopReason.NEED_HELP
    runner = counters.new()
    runner.store._rows(  # type: ignore[attr-defined]
        "UPDATE endstate_runs SET pending = ? WHERE run_id = ?",
        ('{"arguments": {"amount": 1}, "name": "wire", "tool_use_id": "toolu_002_0"}', first.run_id),
    )
    before = runner.store.get(first.run_id)
    with pytest.raises(StoreError, match="does not match the run's journal; nothing was changed"):
        runner.claim(first.run_id, approved=True)
    assert runner.store.get(first.run_id) == before
    assert not (folder / "wired.txt").exists()


def test_an_answer_to_a_run_that_is_not_waiting_is_refused(counters: Workers, tmp_path: Path) -> None:
    runner = counters.new()
    runner.shutting_down.set()  # the run is cancelled at its first turn
    cancelled = asyncio.run(runner.start("counter", "c", state=counter_state(tmp_path / "c", "approve")))
    assert cancelled.reason is StopReason.CANCELLED
    other = counters.new()
    with pytest.raises(NotClaimable, match="not waiting for an answer; nothing was changed"):
        other.claim(cancelled.run_id, "no", approved=False)
    rec = other.store.get(cancelled.run_id)
    assert rec is not None and rec.status is RunStatus.CANCELLED and rec.approved is None


@pytest.mark.parametrize("odd", ["a NUL \x00 here", b"a name \xff here".decode("utf-8", "surrogateescape")])
def test_a_question_a_text_column_cannot_hold_exactly_is_answered_and_the_run_finishes(
    store_url: str, odd: str
) -> None:
    """PostgreSQL keeps NUL as U+FFFD and neither store keeps a lone surrogate: the stored question
    differs from the journal's, and the answer must still be taken (not refused as a damaged store)."""
    steps = [[finish("need_help", f"Which file: {odd}?")], [finish("done", f"used {odd}")]]
    odd_catalog = Catalog()
    odd_catalog.register("odd", lambda state: Agent(name="odd", model=ScriptedModel(steps)))
    w = Workers(store_url, odd_catalog)
    try:
        first = asyncio.run(w.new().start("odd", f"find {odd}"))
        assert first.reason is StopReason.NEED_HELP
        done = asyncio.run(w.new().resume(first.run_id, answer=f"the one with {odd}"))
        assert done.reason is StopReason.SUCCESS and done.output == f"used {odd}"
        record = w.stores[0].get(first.run_id)
        assert record is not None and record.stop_reason is StopReason.SUCCESS
        saved = w.stores[0].snapshot(first.run_id)
        assert saved is not None
        [answered] = [e for e in saved.journal if isinstance(e, Answered)]
        assert answered.reply == Answer(f"the one with {odd}")  # the journal keeps what was written
    finally:
        w.close()


class _NotJson:
    def __repr__(self) -> str:
        return "_NotJson()"


@pytest.mark.parametrize(
    "arguments",
    [
        {"x": {1, 2}},
        {"x": b"\xff"},
        {"x": _NotJson()},
        {"x": {1: "a", "b": 2}},
        {"x": {(1, 2): "a"}},
        {"x": {"at": uuid.UUID(int=1), "none": None}},  # orjson writes a UUID, json (for the null) not
    ],
    ids=["set", "bytes", "object", "mixed-keys", "tuple-key", "uuid-beside-null"],
)
def test_a_reply_the_journal_cannot_keep_ends_the_run_as_an_error_on_record(
    store_url: str, arguments: dict[str, Any], tmp_path: Path
) -> None:
    """A model adapter that gives tool arguments JSON cannot hold: the run ends as `error` saying
    which call, and its record says so (nothing escapes the runner, the run is not left running)."""
    ran: list[Any] = []

    def build(state: dict[str, Any]) -> Agent:
        def t(x: dict) -> str:  # type: ignore[type-arg]
            """Take anything."""
            ran.append(x)
            return "ok"

        steps = [[call("t", **arguments)], [finish("done", "x")]]
        return Agent(name="odd", model=ScriptedModel(steps), tools=[tool(t)])

    odd_catalog = Catalog()
    odd_catalog.register("odd", build)
    w = Workers(store_url, odd_catalog)
    try:
        result = asyncio.run(w.new().start("odd", "take it"))
        assert result.reason is StopReason.ERROR and ran == []
        assert "tool call 't'" in result.note and "JSON" in result.note
        record = w.stores[0].get(result.run_id)
        assert record is not None and record.status is RunStatus.FINISHED
        assert record.stop_reason is StopReason.ERROR
    finally:
        w.close()


class _Seen:
    """Hooks that note each segment they watch end (`who: reason`)."""

    def __init__(self, who: str, seen: list[str]) -> None:
        self.who, self.seen = who, seen

    def run_started(self, info: Any) -> Any:
        from agent.hooks import RunObserver

        seen, who = self.seen, self.who

        class Observer(RunObserver):
            def run_ended(self, result: RunResult) -> None:
                seen.append(f"{who}: {result.reason}")

        return Observer()


def test_a_runners_hooks_are_added_to_the_agents_own_not_put_in_their_place(store_url: str) -> None:
    """README: "The CLI and the service add their own telemetry hooks to agents built from a catalog";
    an agent's own hooks (its alerts, its audit trail) still see each of its runs."""
    seen: list[str] = []
    own = Catalog()
    own.register(
        "own",
        lambda state: Agent(
            name="own", model=ScriptedModel([[finish("done", "ok")]]), hooks=_Seen("agent", seen)
        ),
    )
    store = open_store(store_url)
    try:
        result = asyncio.run(Runner(store, own, hooks=_Seen("runner", seen)).start("own", "go"))
        assert result.reason is StopReason.SUCCESS
        assert sorted(seen) == ["agent: success", "runner: success"]
    finally:
        store.close()


@pytest.mark.parametrize(
    "arguments",
    [
        {"x": None, "n": 2**70},
        {"s": "caf\udce9", "nan": float("nan"), "inf": float("-inf")},
        {"t": (1, [2, {"b": 1, "a": None}]), "nul": "a\x00b"},
    ],
    ids=["null-and-big-int", "surrogate-and-nan", "tuple-and-nul"],
)
def test_a_repeated_call_is_seen_as_the_same_after_the_journal_went_through_the_store(
    store_url: str, arguments: dict[str, Any]
) -> None:
    """Progress is rebuilt from the stored journal: arguments that take the slow paths of the store's
    JSON and of the call signature must sign the same after the round trip (else no_progress is missed)."""

    def build(state: dict[str, Any]) -> Agent:
        @tool
        def look(q: dict) -> str:  # type: ignore[type-arg]
            """Look at the same thing."""
            return "the same"

        same = call("look", q=arguments)
        steps = [[same], [same], [finish("need_help", "go on?")], [same], [finish("done", "x")]]
        return Agent(name="looker", model=ScriptedModel(steps), tools=[look])

    lookers = Catalog()
    lookers.register("looker", build)
    w = Workers(store_url, lookers)
    try:
        first = asyncio.run(w.new().start("looker", "look"))
        assert first.reason is StopReason.NEED_HELP
        done = asyncio.run(w.new().resume(first.run_id, answer="yes"))
        assert done.reason is StopReason.NO_PROGRESS, done.note
    finally:
        w.close()


class _OneReply:
    """A model adapter that answers `need_help` with the given reply fields (a buggy adapter's)."""

    name, provider = "odd", "odd"

    def __init__(self, **fields: Any) -> None:
        self.fields = fields

    async def complete(self, request: Any) -> ModelReply:
        block = {"type": "tool_use", "id": "toolu_1", "name": "finish", "input": {"kind": "need_help"}}
        return ModelReply(content=[block], **self.fields)


@pytest.mark.parametrize(
    ("fields", "named"),
    [
        ({"input_tokens": 2**63}, "input_tokens"),
        ({"output_tokens": -5}, "output_tokens"),
        ({"cache_read_input_tokens": 1.5}, "cache_read_input_tokens"),
        ({"extra": {"cache_creation_input_tokens": -1}}, "cache_creation_input_tokens"),
        ({"stop_reason": None}, "stop_reason"),
        ({"model": None}, "model"),
    ],
    ids=["past-64-bits", "negative", "fraction", "negative-extra", "no-stop-reason", "no-model"],
)
def test_a_reply_with_fields_the_store_cannot_keep_ends_the_run_as_an_error_on_record(
    store_url: str, fields: dict[str, Any], named: str
) -> None:
    """A model API (or adapter) reporting a token count that is no count, or no model name: the run
    ends as `error` saying so, its record is written, and its journal reads back (not a run stuck as
    running, nor a suspended one whose snapshot cannot be read)."""
    odd = Catalog()
    odd.register("odd", lambda state: Agent(name="odd", model=_OneReply(**fields)))
    w = Workers(store_url, odd)
    try:
        result = asyncio.run(w.new().start("odd", "count"))
        assert result.reason is StopReason.ERROR and named in result.note, result.note
        record = w.stores[0].get(result.run_id)
        assert record is not None and (record.status, record.stop_reason) == ("finished", StopReason.ERROR)
        assert w.stores[0].snapshot(result.run_id) is not None
    finally:
        w.close()


@pytest.mark.parametrize(
    "steps",
    [
        [[call("put")], [call("count", n=1)], [finish("done", "x")]],  # found at the turn's checkpoint
        [[call("put"), call("count", n=1)], [finish("done", "x")]],  # found at the call's checkpoint
    ],
    ids=["turn", "call"],
)
@pytest.mark.parametrize("value", [{1, 2}, b"\xff", {(1, 2): "a"}], ids=["set", "bytes", "tuple-key"])
def test_a_state_json_cannot_hold_ends_the_run_as_an_error_on_record(
    store_url: str, value: Any, steps: list[Any]
) -> None:
    """A tool puts a value JSON cannot hold into `ctx.state` (saved with every checkpoint): the run
    ends as `error` naming the key, its record and journal are written (the key left out of the saved
    state), and no call runs after it."""
    counted: list[int] = []

    def build(state: dict[str, Any]) -> Agent:
        @tool
        def put(ctx: Any) -> str:
            """Keep something."""
            ctx.state["kept"] = "fine"
            ctx.state["odd"] = value
            return "kept"

        @tool
        def count(n: int) -> str:
            """Count."""
            counted.append(n)
            return "counted"

        return Agent(name="keeper", model=ScriptedModel(steps), tools=[put, count])

    keepers = Catalog()
    keepers.register("keeper", build)
    w = Workers(store_url, keepers)
    try:
        result = asyncio.run(w.new().start("keeper", "keep"))
        assert result.reason is StopReason.ERROR and "'odd'" in result.note and "state" in result.note
        assert counted == []
        record = w.stores[0].get(result.run_id)
        assert record is not None and (record.status, record.stop_reason) == ("finished", StopReason.ERROR)
        saved = w.stores[0].snapshot(result.run_id)
        assert saved is not None and saved.state == {"kept": "fine"}
        assert isinstance(saved.journal[-1], Stopped) and saved.journal[-1].reason is StopReason.ERROR
    finally:
        w.close()


def test_a_run_that_would_wait_with_a_state_json_cannot_hold_ends_as_an_error() -> None:
    """Without a store too: a waiting run's snapshot is for saving (`to_json`), so a state it cannot
    hold ends the run as `error` instead of handing back a snapshot that cannot be saved."""

    @tool
    def put(ctx: Any) -> str:
        """Keep something."""
        ctx.state["odd"] = {1, 2}
        return "kept"

    steps = [[call("put")], [finish("need_help", "which?")]]
    result = Agent(name="keeper", model=ScriptedModel(steps), tools=[put]).run("keep")
    assert result.reason is StopReason.ERROR and "'odd'" in result.note


def test_a_run_taken_over_mid_turn_is_finished_by_the_new_holder_and_journaled_once(
    store_url: str,
) -> None:
    """Worker A stalls inside a tool past its lease and B takes the run over: A's next checkpoint is
    refused (A's segment ends `cancelled`, no end of the run, its result dropped), B continues from
    the last checkpoint A wrote (the stalled call, unrecorded, runs again) and finishes; the stored
    journal holds each entry once."""
    inside, go_on = threading.Event(), threading.Event()
    ran: list[int] = []

    @tool
    def step(n: int) -> str:
        """Take a step (step 2 stalls until released)."""
        ran.append(n)
        if n == 2 and not go_on.is_set():
            inside.set()
            assert go_on.wait(30), "never released"
        return f"did {n}"

    steps = [[call("step", n=1)], [call("step", n=2)], [call("step", n=3)], [finish("done", "ok")]]
    stepper = Catalog()
    stepper.register("stepper", lambda state: Agent(name="stepper", model=ScriptedModel(steps), tools=[step]))
    w = Workers(store_url, stepper)
    try:
        a, b = w.new(), w.new()

        async def scenario() -> tuple[RunResult, RunResult]:
            job = a.begin("stepper", "step", run_id="taken")
            first = asyncio.create_task(a.drive(job))
            assert await asyncio.to_thread(inside.wait, 30)
            owner = b.store.get("taken").owner  # type: ignore[union-attr]
            held = b.store.take_over("taken", owner or "", b.lease(), time.time(), only_lapsed=False)
            resumed = b._resume_job(b._hold(held), release_to=None, recovering=True)
            go_on.set()
            return await first, await b.drive(resumed)

        lost, done = asyncio.run(scenario())
        assert lost.reason is StopReason.CANCELLED and "another worker took it over" in lost.note
        assert done.reason is StopReason.SUCCESS and ran == [1, 2, 2, 3]
        record, saved = w.stores[0].get("taken"), w.stores[0].snapshot("taken")
        assert record is not None and (record.status, record.stop_reason) == ("finished", StopReason.SUCCESS)
        assert saved is not None
        results = [e.call_id for e in saved.journal if isinstance(e, Result)]
        assert len(results) == len(set(results)) == 3
        assert [type(e).__name__ for e in saved.journal][-2:] == ["Reply", "Stopped"]
    finally:
        w.close()


def test_a_verifiers_model_call_with_token_counts_that_are_no_counts_is_not_charged(
    store_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    """A judge's (or a summary's) reply reporting 2**63 tokens: not counted (the store's columns could
    not hold the run's usage, and the record would fail every time), with a warning; the run ends."""

    def judge(ctx: Any) -> list[str]:
        ctx.charge("scripted", ModelReply([], input_tokens=2**63, output_tokens=-1))
        return []

    judged = Catalog()
    judged.register(
        "judged",
        lambda state: Agent(name="judged", model=ScriptedModel([[finish("done", "ok")]]), verifiers=[judge]),
    )
    w = Workers(store_url, judged)
    try:
        result = asyncio.run(w.new().start("judged", "judge it"))
        assert result.reason is StopReason.SUCCESS and result.input_tokens < 2**63
        record = w.stores[0].get(result.run_id)
        assert record is not None and (record.status, record.stop_reason) == ("finished", StopReason.SUCCESS)
        assert "was not counted: input_tokens is 9223372036854775808" in caplog.text
    finally:
        w.close()


def test_a_cancel_signal_that_is_no_signal_is_refused_naming_what_returned_it(store_url: str) -> None:
    """A catalog whose `cancel(state)` returns no cancel signal (here `True`) is a ConfigError saying
    so, not a run ended by an AttributeError; the run is kept, and recovery ends it as a resumable
    error once its worker is gone. A caller's own `cancel` that is no signal is refused the same way."""
    bad = Catalog()
    bad.register(
        "quick", lambda state: Agent("quick", ScriptedModel([[finish("done", "ok")]])), cancel=lambda s: True
    )
    store = open_store(store_url)
    try:
        here = Runner(store, bad).owner.split(":")[0]
        gone = Runner(store, bad, owner=f"{here}:{_dead_pid()}:gone")  # a worker about to be gone
        with pytest.raises(ConfigError, match=r"catalog's cancel\(state\) of agent 'quick'.*not bool"):
            asyncio.run(gone.start("quick", "go", run_id="bad-cancel"))
        kept = store.get("bad-cancel")
        assert kept is not None and kept.status is RunStatus.RUNNING  # nothing lost
        [ended] = asyncio.run(Runner(store, bad).recover()) or [None]
        record = store.get("bad-cancel")
        assert ended is None and record is not None and record.stop_reason == "error"
        assert "cancel(state) of agent 'quick'" in record.note and "is_set()" in record.note
        good = Catalog()
        good.register("quick", lambda state: Agent("quick", ScriptedModel([[finish("done", "ok")]])))
        runner = Runner(store, good)
        with pytest.raises(ConfigError, match="cancel must have is_set"):
            asyncio.run(runner.drive(runner.begin("quick", "go", run_id="caller-cancel"), cancel="yes"))  # type: ignore[arg-type]
        assert runner.held() == set()  # let go: its lease lapses and recovery takes it, not renewed forever
    finally:
        store.close()
