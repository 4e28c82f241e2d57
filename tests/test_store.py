"""The run store suite: every test runs against SQLite and a real PostgreSQL server."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import datetime
import gc
import json
import logging
import os
import sqlite3
import subprocess
import threading
import time
import weakref
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pg
import ports
import pytest
from test_service_support import wait_for

from agent import Agent, HelpPolicy, StopReason, tool
from agent.durable.store import (
    Lease,
    LeaseLost,
    NewRun,
    NotClaimable,
    Outcome,
    RunExists,
    RunStatus,
    RunStore,
    StoreError,
    UnknownRun,
    open_store,
)
from agent.durable.store._sql import latest_version, migrations, split_statements
from agent.durable.store.sqlite import FOLD_EVERY
from agent.errors import SnapshotError
from agent.journal import Result, Stopped
from agent.models.scripted import call, finish
from agent.result import RunResult
from agent.snapshot import Checkpoint, Snapshot, SnapshotKind

NOW = 1_800_000_000.0


def lease(owner: str = "w1", seconds: float = 30) -> Lease:
    return Lease(owner, seconds)


def held_for(store: RunStore, run_id: str, seconds: float, write: Callable[[], object]) -> float:
    """Call `write` and return the run's lease end, checked to be `seconds` past the store's clock
    at the write (between its readings before and after): set by the store's clock, not the caller's."""
    before = store.now()
    write()
    after = store.now()
    got = store.get(run_id)
    assert got is not None and got.lease_until is not None
    assert before <= got.lease_until - seconds <= after
    return got.lease_until


@tool(needs_approval=True)
def wire(amount: int) -> str:
    """Send money."""
    return f"sent {amount}"


def suspended(make_agent, run_id: str = "r1", wait: float = 3600) -> RunResult:  # type: ignore[no-untyped-def]
    agent: Agent = make_agent([call("wire", amount=5)], tools=[wire], help=HelpPolicy(wait_seconds=wait))
    return agent.run("pay the invoice", run_id=run_id)


def checkpoint_of(snap: Snapshot) -> Checkpoint:
    """A first checkpoint holding the whole of `snap`'s journal."""
    head = dataclasses.replace(snap, kind=SnapshotKind.CHECKPOINT, journal=[])
    return Checkpoint(head, 0, list(snap.journal))


def started(store: RunStore, run_id: str = "r1") -> None:
    store.create(NewRun(run_id, "test-agent", "pay the invoice", "default", {"k": 1}), lease(), NOW)


def test_a_new_run_is_running_and_held(store: RunStore) -> None:
    started(store)
    rec = store.get("r1")
    assert rec is not None
    assert (rec.status, rec.owner, rec.state, rec.segments) == (RunStatus.RUNNING, "w1", {"k": 1}, 1)
    assert rec.started_at == NOW and rec.stop_reason is None
    assert [r.run_id for r in store.list_runs()] == ["r1"]


def test_a_duplicate_run_id_is_refused(store: RunStore) -> None:
    started(store)
    with pytest.raises(StoreError, match="already exists"):
        started(store)


def test_a_suspended_run_keeps_its_question_pending_action_deadline_and_snapshot(
    store: RunStore, make_agent
) -> None:  # type: ignore[no-untyped-def]
    started(store)
    result = suspended(make_agent)
    rec = store.record("r1", Outcome.of(result), lease(), NOW + 1)
    assert rec.status is RunStatus.WAITING and rec.stop_reason is StopReason.NEED_HELP
    assert result.suspension is not None
    assert rec.question == result.suspension.question
    assert rec.pending is not None and (rec.pending.name, rec.pending.arguments) == ("wire", {"amount": 5})
    assert rec.deadline == pytest.approx(result.suspension.deadline)
    assert rec.owner is None and rec.ended_at is None
    full = store.snapshot("r1")
    assert full is not None
    assert full.to_json() == result.snapshot.to_json()  # type: ignore[union-attr]
    assert store.pending_groups() == [("test-agent", "default", 1, pytest.approx(rec.suspended_at))]


def test_a_finished_run_keeps_its_result_and_its_whole_journal(store: RunStore, make_agent) -> None:  # type: ignore[no-untyped-def]
    started(store)
    result = make_agent(
        [finish("done", "paid")], checkpoint=lambda cp: store.checkpoint("r1", cp, lease(), NOW)
    ).run("pay", run_id="r1")
    rec = store.record("r1", Outcome.of(result), lease(), NOW + 2)
    assert (rec.status, rec.stop_reason, rec.output, rec.turns) == (
        RunStatus.FINISHED, StopReason.SUCCESS, "paid", 1,
    )  # fmt: skip
    assert rec.ended_at == NOW + 2 and rec.input_tokens == result.input_tokens
    assert rec.summary == result.summary and rec.trace_id == result.trace_id
    kept = store.snapshot("r1")  # for review and replay: the journal down to its stop
    assert kept is not None and isinstance(kept.journal[-1], Stopped)
    assert kept.journal[-1].reason is StopReason.SUCCESS


def test_a_checkpoint_saves_the_snapshot_and_progress_under_the_lease(store: RunStore, make_agent) -> None:  # type: ignore[no-untyped-def]
    started(store)
    snap = suspended(make_agent).snapshot
    assert snap is not None
    held_for(store, "r1", 60, lambda: store.checkpoint("r1", checkpoint_of(snap), lease(seconds=60), NOW + 1))
    rec = store.get("r1")
    assert rec is not None and store.snapshot("r1") == dataclasses.replace(snap, kind=SnapshotKind.CHECKPOINT)
    assert rec.turns == 1 and rec.input_tokens == snap.usage.input_tokens
    with pytest.raises(LeaseLost):
        store.checkpoint("r1", checkpoint_of(snap), lease("intruder"), NOW + 2)


def test_a_checkpoint_keeps_what_the_two_json_writers_see_differently(store: RunStore, make_agent) -> None:  # type: ignore[no-untyped-def]
    """orjson writes a checkpoint; what it refuses (an int key, an int past 64 bits) goes to the
    standard library, so the store reads back what `json` would have kept; non-ASCII stays whole."""
    started(store)
    snap = suspended(make_agent).snapshot
    assert snap is not None
    odd = {"ключ": "значение ✓", "by_id": {7: "int keys"}, "big": 2**70, "nested": [{"b": 1, "a": [1.5]}]}
    head = dataclasses.replace(snap, kind=SnapshotKind.CHECKPOINT, journal=[], state={"odd": odd})
    first = dataclasses.replace(snap.journal[0], text="заказ № 5 ✓")  # type: ignore[call-arg]
    store.checkpoint("r1", Checkpoint(head, 0, [first, *snap.journal[1:]]), lease(), NOW + 1)
    kept = store.snapshot("r1")
    assert kept is not None and kept.state == json.loads(json.dumps({"odd": odd}))
    assert kept.journal[0] == first and kept.journal[1:] == snap.journal[1:]


def test_infinities_in_a_checkpoint_come_back_as_they_went(store: RunStore, make_agent) -> None:  # type: ignore[no-untyped-def]
    """orjson would write them as null; such a text is written by the standard library instead."""
    started(store)
    snap = suspended(make_agent).snapshot
    assert snap is not None
    state = {"best": float("inf"), "worst": float("-inf"), "none": None, "x": [1.5]}
    head = dataclasses.replace(snap, kind=SnapshotKind.CHECKPOINT, journal=[], state=state)
    store.checkpoint("r1", Checkpoint(head, 0, list(snap.journal)), lease(), NOW + 1)
    kept = store.snapshot("r1")
    assert kept is not None and kept.state == state


def test_a_checkpoint_of_a_value_json_cannot_hold_fails_as_before(store: RunStore, make_agent) -> None:  # type: ignore[no-untyped-def]
    started(store)
    snap = suspended(make_agent).snapshot
    assert snap is not None
    for value in (dataclasses.make_dataclass("D", [("x", int)])(1), datetime.datetime(2026, 11, 30)):
        head = dataclasses.replace(snap, kind=SnapshotKind.CHECKPOINT, journal=[], state={"v": value})
        with pytest.raises(TypeError, match="not JSON serializable"):
            store.checkpoint("r1", Checkpoint(head, 0, []), lease(), NOW + 1)
    assert store.snapshot("r1") is None  # nothing of either was written


def test_only_the_holder_records_a_result(store: RunStore, make_agent) -> None:  # type: ignore[no-untyped-def]
    started(store)
    with pytest.raises(LeaseLost):
        store.record("r1", Outcome.of(suspended(make_agent)), lease("w2"), NOW)
    rec = store.get("r1")
    assert rec is not None and rec.status is RunStatus.RUNNING and rec.owner == "w1"


def test_claiming_a_waiting_run_hands_it_to_one_worker(store: RunStore, make_agent) -> None:  # type: ignore[no-untyped-def]
    started(store)
    store.record("r1", Outcome.of(suspended(make_agent)), lease(), NOW)
    rec = store.claim("r1", (RunStatus.WAITING,), lease("w2"), NOW + 5)
    assert (rec.status, rec.owner, rec.segments) == (RunStatus.RUNNING, "w2", 2)
    assert store.snapshot("r1") is not None
    with pytest.raises(NotClaimable, match="is running, not waiting"):
        store.claim("r1", (RunStatus.WAITING,), lease("w3"), NOW + 6)
    with pytest.raises(UnknownRun):
        store.claim("nope", (RunStatus.WAITING,), lease("w3"), NOW + 6)


def test_an_answer_read_for_an_earlier_question_is_refused(store: RunStore, make_agent) -> None:  # type: ignore[no-untyped-def]
    started(store)
    store.record("r1", Outcome.of(suspended(make_agent)), lease(), NOW)
    seen = store.get("r1")  # a person reads question 1 ...
    assert seen is not None and seen.segments == 1
    store.claim("r1", (RunStatus.WAITING,), lease("w2"), NOW + 1, "yes", None, seen.segments)
    store.record("r1", Outcome.of(suspended(make_agent)), lease("w2"), NOW + 2)  # ... and question 2 came
    with pytest.raises(NotClaimable, match="moved on"):
        store.claim("r1", (RunStatus.WAITING,), lease("w3"), NOW + 3, "yes", None, seen.segments)
    rec = store.get("r1")
    assert rec is not None and (rec.status, rec.owner, rec.segments) == (RunStatus.WAITING, None, 2)


def test_a_released_claim_waits_again(store: RunStore, make_agent) -> None:  # type: ignore[no-untyped-def]
    started(store)
    store.record("r1", Outcome.of(suspended(make_agent)), lease(), NOW)
    store.claim("r1", (RunStatus.WAITING,), lease("w2"), NOW)
    store.release("r1", RunStatus.WAITING, lease("w2"), NOW)
    rec = store.get("r1")
    assert rec is not None and (rec.status, rec.owner, rec.segments) == (RunStatus.WAITING, None, 1)


def test_concurrent_claims_exactly_one_wins(store_url: str, make_agent) -> None:  # type: ignore[no-untyped-def]
    setup = open_store(store_url)
    started(setup)
    setup.record("r1", Outcome.of(suspended(make_agent)), lease(), NOW)
    workers = [open_store(store_url) for _ in range(6)]
    barrier = threading.Barrier(len(workers))
    outcomes: list[str] = []

    def claim(i: int, s: RunStore) -> None:
        barrier.wait()
        try:
            s.claim("r1", (RunStatus.WAITING,), lease(f"w{i}"), NOW)
            outcomes.append(f"won w{i}")
        except NotClaimable:
            outcomes.append("lost")

    threads = [threading.Thread(target=claim, args=(i, s)) for i, s in enumerate(workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    winners = [o for o in outcomes if o.startswith("won")]
    rec = setup.get("r1")
    for s in [setup, *workers]:
        s.close()
    assert len(winners) == 1 and len(outcomes) == 6
    assert rec is not None and rec.owner == winners[0].split()[1] and rec.segments == 2


def test_take_over_is_a_compare_and_swap_on_the_owner(store: RunStore) -> None:
    store.create(NewRun("r1", "test-agent", "pay", "default"), lease(seconds=-1), NOW)  # ran out
    rec = store.take_over("r1", "w1", lease("w2"), NOW)
    assert rec.owner == "w2"
    with pytest.raises(NotClaimable):
        store.take_over("r1", "w1", lease("w3"), NOW, only_lapsed=False)
    held_for(store, "r1", 99, lambda: store.heartbeat(lease("w2", 99)))


def test_a_held_lease_is_taken_over_only_once_it_ran_out_by_the_stores_clock(store: RunStore) -> None:
    """The caller's `now` (a worker's clock, minutes ahead here) decides nothing about a lease."""
    ahead = time.time() + 600
    started(store)  # held for 30 s from the store's clock
    with pytest.raises(NotClaimable, match="renewed the lease"):
        store.take_over("r1", "w1", lease("w2"), ahead)
    assert store.heartbeat(lease("w1", -1)) == 1  # its holder's last renewal ran out a second ago
    assert store.take_over("r1", "w1", lease("w2"), time.time() - 600).owner == "w2"
    taken = store.get("r1")
    assert taken is not None and taken.lease_until is not None and taken.lease_until > store.now()


def test_a_take_over_of_a_worker_known_gone_does_not_wait_for_its_lease(store: RunStore) -> None:
    started(store)
    assert store.take_over("r1", "w1", lease("w2"), NOW, only_lapsed=False).owner == "w2"


def test_the_stores_clock_is_the_epoch_in_seconds(store: RunStore) -> None:
    before = time.time()
    now = store.now()
    assert isinstance(now, float) and before - 5 < now < time.time() + 5  # one machine here: one clock


def test_expired_lists_waiting_runs_past_their_deadline(store: RunStore, make_agent) -> None:  # type: ignore[no-untyped-def]
    for run_id, wait in (("soon", 0.0), ("later", 3600.0)):
        started(store, run_id)
        store.record(run_id, Outcome.of(suspended(make_agent, run_id, wait)), lease(), NOW)
    assert [r.run_id for r in store.expired(time.time() + 1)] == ["soon"]
    assert {r.run_id for r in store.expired(time.time() + 7200)} == {"soon", "later"}


def test_interrupted_lists_runs_cancelled_by_a_shutdown(store: RunStore, make_agent) -> None:  # type: ignore[no-untyped-def]
    class Stop:
        def is_set(self) -> bool:
            return True

    for run_id, by_shutdown in (("a", True), ("b", False)):
        started(store, run_id)
        result = make_agent().run("t", run_id=run_id, cancel=Stop())
        assert result.reason is StopReason.CANCELLED
        store.record(run_id, Outcome.of(result, interrupted=by_shutdown), lease(), NOW)
    assert [r.run_id for r in store.interrupted()] == ["a"]
    assert {r.status for r in store.list_runs(RunStatus.CANCELLED)} == {RunStatus.CANCELLED}


def test_the_schema_is_versioned_and_reopening_does_not_migrate_again(store_url: str) -> None:
    for _ in range(2):
        s = open_store(store_url)
        assert s.schema_version() == latest_version(s.dialect)  # type: ignore[attr-defined]
        s.close()


def test_a_store_from_a_newer_endstate_is_refused(store_url: str) -> None:
    s = open_store(store_url)
    s._rows("INSERT INTO endstate_schema (version, applied_at) VALUES (?, ?)", (99, NOW))  # type: ignore[attr-defined]
    s.close()
    with pytest.raises(StoreError, match="schema version 99, newer than this Endstate"):
        open_store(store_url)


# -- SQLite files that are not a run store -------------------------------------------------------


def test_a_corrupt_sqlite_file_is_a_clear_error(tmp_path: Path) -> None:
    bad = tmp_path / "runs.db"
    bad.write_bytes(b"this is not a database, just some text\n" * 200)
    with pytest.raises(StoreError, match=r"runs.db is not an Endstate run store: file is not a database"):
        open_store(str(bad))


def test_a_store_path_that_is_a_folder_says_so_and_how_to_fix_it(tmp_path: Path) -> None:
    folder = tmp_path / "runs.db"
    folder.mkdir()
    for create in (True, False):
        with pytest.raises(
            StoreError, match=r"runs.db is a folder, not a file: .* such as .*runs.db/runs.db"
        ):
            open_store(f"sqlite:///{folder}", create=create)


def test_a_store_cut_short_is_called_damaged_not_something_else(tmp_path: Path) -> None:
    """A run store truncated (a full disk, a bad copy) is an Endstate store that is damaged: the
    error says so and what to do, not that the file is no run store."""
    path = tmp_path / "runs.db"
    open_store(str(path)).close()
    whole = path.read_bytes()
    path.write_bytes(whole[: len(whole) // 2])
    with pytest.raises(StoreError, match=r"runs.db is damaged \(database disk image is malformed\): restore"):
        open_store(str(path))


@contextlib.contextmanager
def read_only(folder: Path) -> Iterator[None]:
    """`folder` read-only for this process: its mode for a user, a read-only bind mount for root
    (whom modes do not stop)."""
    if os.geteuid() != 0:
        folder.chmod(0o555)
        try:
            yield
        finally:
            folder.chmod(0o755)
        return
    mounted = subprocess.run(["mount", "--bind", str(folder), str(folder)], capture_output=True, text=True)
    if mounted.returncode != 0:
        pytest.skip(f"root without the right to mount here, so nothing is read-only to it: {mounted.stderr}")
    try:
        subprocess.run(["mount", "-o", "remount,bind,ro", str(folder)], check=True)
        yield
    finally:
        subprocess.run(["umount", str(folder)], check=True)


def test_a_store_in_a_read_only_place_says_why_it_cannot_be_opened_and_what_to_do(tmp_path: Path) -> None:
    """SQLite writes the -wal and -shm files beside the store even to read it: a store on a read-only
    mount (a backup, say) or in a folder this user cannot write is refused saying that, not only
    "unable to open database file"."""
    folder = tmp_path / "backup"
    folder.mkdir()
    open_store(str(folder / "runs.db")).close()
    with read_only(folder):
        for create in (True, False):
            with pytest.raises(
                StoreError, match=r"unable to open database file\. The store needs write access"
            ) as e:
                open_store(str(folder / "runs.db"), create=create)
            assert "runs.db-wal" in str(e.value) and str(e.value).endswith("pass that with --store")


def test_a_foreign_sqlite_database_is_refused_and_left_alone(tmp_path: Path) -> None:
    path = tmp_path / "shop.db"
    with contextlib.closing(sqlite3.connect(path)) as conn, conn:
        conn.execute("CREATE TABLE customers (id INTEGER)")
    with pytest.raises(StoreError, match=r"SQLite database of something else \(tables: customers\)"):
        open_store(f"sqlite:///{path}")
    with contextlib.closing(sqlite3.connect(path)) as conn, conn:
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
        mode = conn.execute("PRAGMA journal_mode").fetchone()[0]
    assert tables == {"customers"}
    assert mode == "delete"  # not switched to WAL: nothing in the file was changed
    assert not (tmp_path / "shop.db-wal").exists()


def test_store_urls(tmp_path: Path) -> None:
    for url in (f"sqlite:///{tmp_path}/a.db", str(tmp_path / "b.db")):
        s = open_store(url)
        s.close()
    assert (tmp_path / "a.db").exists() and (tmp_path / "b.db").exists()
    with pytest.raises(StoreError, match="unknown store URL"):
        open_store("mysql://x/y")


def test_an_unreachable_postgres_is_a_clear_error() -> None:
    with pytest.raises(
        StoreError, match=r"cannot connect to the PostgreSQL run store postgresql://u:\*\*\*@"
    ):
        open_store(f"postgresql://u:secret@127.0.0.1:{ports.refused_port()}/db")


def _make_v1_store(url: str) -> None:
    """A store as Endstate's first schema left it, with one run in it."""
    dialect = "postgres" if url.startswith("postgresql") else "sqlite"
    statements = [
        "CREATE TABLE endstate_schema (version INTEGER NOT NULL, applied_at DOUBLE PRECISION)",
        *split_statements(migrations(dialect)[0][1]),
        f"INSERT INTO endstate_schema VALUES (1, {NOW})",
        "INSERT INTO endstate_runs (run_id, agent, task, task_type, status, started_at, updated_at) "
        f"VALUES ('old', 'a', 't', 'default', 'waiting', {NOW}, {NOW})",
    ]
    if dialect == "sqlite":
        conn = sqlite3.connect(url)
        for s in statements:
            conn.execute(s)
        conn.commit()
        conn.close()
        return
    import psycopg

    with psycopg.connect(url, autocommit=True) as pconn:
        for s in statements:
            pconn.execute(s)


def test_an_old_schema_is_migrated_and_keeps_its_runs(store_url: str, make_agent) -> None:  # type: ignore[no-untyped-def]
    _make_v1_store(store_url)
    s = open_store(store_url)
    try:
        assert s.schema_version() == latest_version(s.dialect)  # type: ignore[attr-defined]
        old = s.get("old")
        assert old is not None and old.status is RunStatus.WAITING and old.answer is None
        rec = s.claim("old", (RunStatus.WAITING,), lease(), NOW, answer="yes", approved=True)
        assert (rec.answer, rec.approved, rec.answered_at) == ("yes", True, NOW)
    finally:
        s.close()


def test_checkpoints_append_only_new_entries_and_the_store_gives_the_whole_journal_back(
    store: RunStore, make_agent
) -> None:  # type: ignore[no-untyped-def]
    started(store)
    seen: list[Checkpoint] = []

    def save(cp: Checkpoint) -> None:
        seen.append(cp)
        store.checkpoint("r1", cp, lease(), NOW)

    agent = make_agent([call("wire", amount=1)], then=lambda turn: [call("nope", n=turn)], checkpoint=save)
    result = agent.run("loop until the limit", run_id="r1")
    assert len(seen) > 5  # one checkpoint per completed turn
    assert [cp.first for cp in seen] == [
        0,
        *(sum(len(c.entries) for c in seen[:i]) for i in range(1, len(seen))),
    ]
    assert max(len(cp.entries) for cp in seen[1:]) <= 3  # a reply, its result (and the task at first): flat
    stored = store.snapshot("r1")
    assert stored is not None and stored.kind is SnapshotKind.FINISHED  # saved down to its stop
    assert stored.journal == result.snapshot.journal[: len(stored.journal)] if result.snapshot else True
    assert len(stored.journal) == sum(len(cp.entries) for cp in seen)


# -- claims, answers and leases: what a crash or a race must not lose ---------------------------


def test_an_answer_claims_only_before_the_deadline_and_the_sweep_only_after(
    store: RunStore, make_agent
) -> None:  # type: ignore[no-untyped-def]
    started(store)
    store.record("r1", Outcome.of(suspended(make_agent, wait=60)), lease(), NOW)
    rec = store.get("r1")
    assert rec is not None and rec.deadline is not None
    late, early = rec.deadline + 1, rec.deadline - 1
    with pytest.raises(NotClaimable, match=r"deadline passed at .* UTC; the answer came too late") as refused:
        store.claim("r1", (RunStatus.WAITING,), lease("w2"), late, None, True, rec.segments, expired=False)
    assert "without one, `endstate recover` does" in str(refused.value)  # what ends it from a shell
    with pytest.raises(NotClaimable, match="deadline has not passed"):
        store.claim("r1", (RunStatus.WAITING,), lease("w2"), early, None, None, rec.segments, expired=True)
    assert store.get("r1") == rec  # nothing changed
    got = store.claim("r1", (RunStatus.WAITING,), lease("w2"), early, None, True, rec.segments, expired=False)
    assert (got.owner, got.approved, got.answered_at) == ("w2", True, early)


def test_a_run_cut_off_before_its_answer_landed_keeps_the_answer(store: RunStore, make_agent) -> None:  # type: ignore[no-untyped-def]
    started(store)
    waiting = suspended(make_agent)
    store.record("r1", Outcome.of(waiting), lease(), NOW)
    store.claim("r1", (RunStatus.WAITING,), lease("w2"), NOW + 1, None, True)
    cut = dataclasses.replace(waiting, reason=StopReason.CANCELLED, suspension=None)  # still the old snapshot
    outcome = Outcome.of(cut, interrupted=True)
    assert outcome.keeps_answer
    rec = store.record("r1", outcome, lease("w2"), NOW + 2)
    assert (rec.status, rec.interrupted) == (RunStatus.CANCELLED, True)
    assert (rec.approved, rec.answered_at) == (True, NOW + 1)
    again = store.claim("r1", (RunStatus.CANCELLED,), lease("w3"), NOW + 3)  # recovery: no new answer
    assert (again.approved, again.answered_at) == (True, NOW + 1)
    store.release("r1", RunStatus.CANCELLED, lease("w3"), NOW + 4)
    kept = store.get("r1")
    assert kept is not None and (kept.status, kept.approved) == (RunStatus.CANCELLED, True)


def test_a_run_given_back_to_wait_forgets_the_answer_it_was_claimed_with(store: RunStore, make_agent) -> None:  # type: ignore[no-untyped-def]
    started(store)
    store.record("r1", Outcome.of(suspended(make_agent)), lease(), NOW)
    store.claim("r1", (RunStatus.WAITING,), lease("w2"), NOW + 1, "no", False)
    store.release("r1", RunStatus.WAITING, lease("w2"), NOW + 2)
    rec = store.get("r1")
    assert rec is not None and (rec.answer, rec.approved, rec.answered_at) == (None, None, None)
    store.claim("r1", (RunStatus.WAITING,), lease("w3"), NOW + 3, None, True)
    done = make_agent([finish("done", "paid")]).run("pay", run_id="r1")
    rec = store.record("r1", Outcome.of(done), lease("w3"), NOW + 4)
    assert (rec.answer, rec.approved, rec.answered_at) == (None, None, None)


def test_a_heartbeat_renews_only_the_runs_it_names(store: RunStore) -> None:
    for run_id in ("a", "b"):
        started(store, run_id)
    b = store.get("b")
    held_for(store, "a", 99, lambda: store.heartbeat(lease("w1", 99), ["a"]))
    assert store.heartbeat(lease("w1", 99), []) == 0
    assert store.get("b") == b


def test_concurrent_creates_of_one_id_give_one_run_and_run_exists_to_the_rest(store_url: str) -> None:
    workers = [open_store(store_url) for _ in range(6)]
    barrier = threading.Barrier(len(workers))
    outcomes: list[str] = []

    def create(s: RunStore) -> None:
        barrier.wait()
        try:
            started(s, "same")
            outcomes.append("created")
        except RunExists as exc:
            outcomes.append(f"exists: {exc}")

    threads = [threading.Thread(target=create, args=(s,)) for s in workers]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for s in workers:
        s.close()
    assert sorted(o.split(":")[0] for o in outcomes) == ["created"] + ["exists"] * 5, outcomes


def test_stores_opened_at_once_on_a_new_database_migrate_it_once(store_url: str, tmp_path: Path) -> None:
    """Processes starting together (say, replicas of the service) each open the new store."""
    fresh = [str(tmp_path / f"{i}.db") for i in range(8)]  # SQLite: the race is short, try it often
    latest = latest_version("sqlite")
    for url in [store_url] if store_url.startswith("postgresql") else fresh:
        assert _open_at_once(url, 4) == [latest] * 4
        s = open_store(url)
        try:
            rows = s._rows("SELECT version FROM endstate_schema ORDER BY version")  # type: ignore[attr-defined]
        finally:
            s.close()
        assert [r["version"] for r in rows] == [v for v, _ in migrations("sqlite")]  # each once


def _open_at_once(url: str, n: int) -> list[object]:
    """Open the store at `url` from `n` threads at once; each one's schema version, or its error."""
    barrier = threading.Barrier(n)
    versions: list[object] = []

    def open_one() -> None:
        barrier.wait()
        try:
            s = open_store(url)
            versions.append(s.schema_version())
            s.close()
        except StoreError as exc:
            versions.append(exc)

    threads = [threading.Thread(target=open_one) for _ in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return versions


def test_a_dropped_postgres_connection_is_replaced_and_checkpoints_go_on(make_agent, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """A server restart or a dropped socket must not end a run as `error`: reads, checkpoints and
    heartbeats are sent again on a new connection. A connection ended while idle is seen before a
    write is sent on it, so any write goes on a new one (one ended mid-statement fails once, clearly,
    not repeated blindly: test_probe36c_pg_terminated)."""
    import psycopg

    url = pg.url_for("postgres", tmp_path)
    store = open_store(url)

    def drop_connections() -> None:
        with psycopg.connect(pg.shared_server().admin_url, autocommit=True) as admin:
            admin.execute(  # each waited for until it has gone (and told its client so)
                "SELECT pg_terminate_backend(pid, 10000) FROM pg_stat_activity "
                "WHERE datname = %s AND pid <> pg_backend_pid()",
                (url.rsplit("/", 1)[1],),
            )

    try:
        started(store)
        snap = suspended(make_agent).snapshot
        assert snap is not None
        drop_connections()
        store.checkpoint("r1", checkpoint_of(snap), lease(), NOW + 1)
        drop_connections()
        got = store.snapshot("r1")
        assert got is not None and got.journal == snap.journal
        drop_connections()
        assert store.heartbeat(lease("w1", 60), ["r1"]) == 1
        drop_connections()
        rec = store.record(
            "r1", Outcome.of(suspended(make_agent)), lease(), NOW + 2
        )  # sent once, on a new one
        assert rec.status is RunStatus.WAITING
    finally:
        store.close()


def stepper_catalog(step: Any) -> Any:
    """A catalog of the agent `stepper`: three calls of the tool `step`, then done."""
    from agent.budget import Budget
    from agent.durable.runner import Catalog
    from agent.models.scripted import ScriptedModel

    steps = [[call("step", n=n)] for n in (1, 2, 3)] + [[finish("done", "all steps")]]
    catalog = Catalog()
    catalog.register(
        "stepper",
        lambda state: Agent("stepper", ScriptedModel(steps), tools=[step], budget=Budget(max_turns=9)),
    )
    return catalog


def three_steps_each_once(store: RunStore, step: Any, ran: list[int]) -> None:
    """The stepper run through `store` succeeds, each step run once and its result in the journal."""
    from agent.durable.runner import Runner

    result = asyncio.run(Runner(store, stepper_catalog(step)).start("stepper", "take three steps"))
    assert (result.reason, result.error_type) == (StopReason.SUCCESS, None), result.note
    assert ran == [1, 2, 3]
    saved = store.snapshot(result.run_id)
    assert saved is not None and [e.text for e in saved.journal if isinstance(e, Result)] == [
        "did 1", "did 2", "did 3",
    ]  # fmt: skip


def drop_connections_to(url: str) -> int:
    """Terminate every server connection to `url`'s database (as a server restart would); how many."""
    import psycopg

    with psycopg.connect(pg.shared_server().admin_url, autocommit=True) as admin:
        return len(
            admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE datname = %s AND pid <> pg_backend_pid()",
                (url.rsplit("/", 1)[1],),
            ).fetchall()
        )


def test_a_run_whose_connections_drop_between_its_checkpoints_sent_ahead_still_succeeds(
    tmp_path: Path,
) -> None:
    """The runner sends PostgreSQL checkpoints ahead on a connection of their own: one found broken
    (a restarted server, a killed backend) is replaced and the checkpoint sent again, as the store's
    own checkpoints are, not the run ended as error. Each tool runs once."""
    from agent.durable.runner import Runner

    url = pg.url_for("postgres", tmp_path)
    ran: list[int] = []

    @tool
    def step(n: int) -> str:
        """Do one step (the database drops its connections meanwhile)."""
        ran.append(n)
        assert drop_connections_to(url) > 0
        return f"did {n}"

    store = open_store(url)
    try:
        result = asyncio.run(Runner(store, stepper_catalog(step)).start("stepper", "take three steps"))
        assert (result.reason, result.error_type) == (StopReason.SUCCESS, None)
        assert ran == [1, 2, 3]
        record = store.get(result.run_id)
        assert record is not None and record.stop_reason is StopReason.SUCCESS
        saved = store.snapshot(result.run_id)
        assert saved is not None and [e.ran for e in saved.journal if isinstance(e, Result)] == ["step"] * 3
    finally:
        store.close()


@pytest.fixture
def unwritten() -> Iterator[threading.Event]:
    """An event set once the runner says a checkpoint was not written (and that it tries again)."""
    said = threading.Event()

    class Listener(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if record.getMessage().startswith("a checkpoint was not written"):
                said.set()

    listener, runner_log = Listener(logging.WARNING), logging.getLogger("endstate.runner")
    runner_log.addHandler(listener)
    try:
        yield said
    finally:
        runner_log.removeHandler(listener)


def test_a_run_goes_on_through_a_restart_of_its_postgresql_server(unwritten: threading.Event) -> None:
    """The server is stopped during a tool and started again once a checkpoint failed (a restart, a
    failover): the checkpoint that could not be written then is written again once the server is
    back, and the run succeeds, each tool run once (it ended as error, the restart its reason)."""

    server = pg.PostgresServer()
    ran: list[int] = []
    restarted: list[threading.Thread] = []

    @tool
    def step(n: int) -> str:
        """Do one step (during the second, the database restarts)."""
        ran.append(n)
        if n == 2:
            server.pause()
            restarted.append(threading.Thread(target=lambda: (unwritten.wait(60), server.resume())))
            restarted[0].start()
        return f"did {n}"

    try:
        import psycopg

        with psycopg.connect(server.admin_url, autocommit=True) as admin:
            admin.execute("CREATE DATABASE runs")
        store = open_store(f"postgresql://postgres@127.0.0.1:{server.port}/runs")
        try:
            three_steps_each_once(store, step, ran)
            assert unwritten.is_set()
        finally:
            store.close()
    finally:
        for thread in restarted:
            thread.join()
        server.stop()


def test_a_run_goes_on_when_another_process_holds_the_sqlite_file_past_the_busy_timeout(
    tmp_path: Path, unwritten: threading.Event
) -> None:
    """Another process holds a write transaction on the file longer than the store waits for a lock
    (its timeout: here 0.2 s; 10 s by default): the checkpoint fails as "database is locked" and is
    written again once the lock is gone, and the run succeeds, each tool run once."""
    path = tmp_path / "runs.db"
    ran: list[int] = []
    holders: list[threading.Thread] = []

    def hold_the_file(locked: threading.Event) -> None:
        other = sqlite3.connect(path, isolation_level=None)
        other.execute("BEGIN IMMEDIATE")
        locked.set()
        unwritten.wait(60)  # until a checkpoint failed on the lock
        other.execute("ROLLBACK")
        other.close()

    @tool
    def step(n: int) -> str:
        """Do one step (during the second, another process takes the file's write lock a while)."""
        ran.append(n)
        if n == 2:
            locked = threading.Event()
            holders.append(threading.Thread(target=hold_the_file, args=(locked,)))
            holders[0].start()
            assert locked.wait(10)
        return f"did {n}"

    store = open_store(str(path), timeout=0.2)
    try:
        three_steps_each_once(store, step, ran)
        assert unwritten.is_set()
    finally:
        for thread in holders:
            thread.join()
        store.close()


def test_a_row_another_session_keeps_locked_fails_a_claim_saying_so_not_a_wait_without_end(
    tmp_path: Path,
    make_agent,
    monkeypatch: pytest.MonkeyPatch,  # type: ignore[no-untyped-def]
) -> None:
    """An operator's session keeps the waiting run's row locked (an open transaction): an answer's
    claim gives up after the lock timeout with a StoreError saying what holds it and where to look,
    not wait for as long as the lock is held (the service answered nothing meanwhile, as the claim
    held its event loop); once the lock is gone the claim goes through. A lock_timeout the URL sets
    is kept."""
    import psycopg

    import agent.durable.store.postgres

    monkeypatch.setattr(agent.durable.store.postgres, "LOCK_TIMEOUT", "200ms", raising=False)
    url = pg.url_for("postgres", tmp_path)
    store = open_store(url)
    locker = psycopg.connect(url)
    try:
        started(store)
        store.record("r1", Outcome.of(suspended(make_agent)), lease(), NOW)
        locker.execute("SELECT run_id FROM endstate_runs WHERE run_id = 'r1' FOR UPDATE")
        failed: list[BaseException] = []

        def answer() -> None:
            try:
                store.claim("r1", (RunStatus.WAITING,), lease("w2"), NOW + 5, answer="yes")
            except StoreError as exc:
                failed.append(exc)

        claim = threading.Thread(target=answer, daemon=True)
        claim.start()
        claim.join(60)
        assert not claim.is_alive(), "the claim still waits for the lock another session holds"
        assert "lock timeout" in str(failed[0]) and "pg_stat_activity" in str(failed[0])
        locker.rollback()
        rec = store.claim("r1", (RunStatus.WAITING,), lease("w2"), NOW + 6, answer="yes")
        assert (rec.status, rec.owner, rec.answer) == (RunStatus.RUNNING, "w2", "yes")
    finally:
        locker.rollback()
        locker.close()
        store.close()
    own = open_store(url + "?options=-c%20lock_timeout%3D7s")
    try:
        assert own._rows("SELECT current_setting('lock_timeout') AS t")[0]["t"] == "7s"  # type: ignore[attr-defined]
    finally:
        own.close()


def test_a_sqlite_write_that_waited_out_another_process_lock_says_what_to_end(
    tmp_path: Path, make_agent
) -> None:  # type: ignore[no-untyped-def]
    """Another process keeps a write transaction open on the file (a sqlite3 shell left in BEGIN):
    an answer's claim that waited out the busy timeout says so and what to end, not only
    "database is locked"; nothing was changed, and the claim goes through once it is ended."""
    path = tmp_path / "runs.db"
    store = open_store(str(path), timeout=0.2)
    shell = sqlite3.connect(path, isolation_level=None)
    try:
        started(store)
        store.record("r1", Outcome.of(suspended(make_agent)), lease(), NOW)
        shell.execute("BEGIN IMMEDIATE")
        with pytest.raises(
            StoreError, match=r"database is locked; another process kept a write transaction open"
        ):
            store.claim("r1", (RunStatus.WAITING,), lease("w2"), NOW + 5, answer="yes")
        shell.execute("ROLLBACK")
        rec = store.claim("r1", (RunStatus.WAITING,), lease("w2"), NOW + 6, answer="yes")
        assert (rec.status, rec.segments, rec.answer) == (RunStatus.RUNNING, 2, "yes")
    finally:
        shell.close()
        store.close()


def test_text_with_nul_bytes_is_stored_on_both_stores(store: RunStore, make_agent) -> None:  # type: ignore[no-untyped-def]
    """A tool that read a binary file: the run still ends with its reason recorded."""

    @tool
    def read_file(path: str) -> str:
        """Read a file."""
        return "PK\x03\x04\x00\x00 binary"

    started(store)
    seen: list[Checkpoint] = []

    def save(cp: Checkpoint) -> None:
        seen.append(cp)
        store.checkpoint("r1", cp, lease(), NOW)

    agent = make_agent(
        [call("read_file", path="a.zip")],
        [finish("give_up", "it is a zip \x00 file")],
        tools=[read_file],
        checkpoint=save,
    )
    result = agent.run("read it", run_id="r1")
    rec = store.record("r1", Outcome.of(result), lease(), NOW + 1)
    assert rec.status is RunStatus.FINISHED and rec.stop_reason is StopReason.GAVE_UP
    assert rec.note.startswith("it is a zip ") and "file" in rec.note  # NUL shown as U+FFFD where it must be
    snap = store.snapshot("r1")
    assert snap is not None
    [stored] = [e for e in snap.journal if isinstance(e, Result)]
    assert stored.text == "PK\x03\x04\x00\x00 binary"  # the journal keeps the exact text


def test_text_that_is_not_utf8_is_stored_on_both_stores(store: RunStore, make_agent) -> None:  # type: ignore[no-untyped-def]
    """A file name decoded with `surrogateescape` (os.listdir of a non-UTF-8 name) holds lone
    surrogates, which no text column can hold: the run still records its task, its result and an
    answer (as U+FFFD), and the journal keeps the exact text."""
    odd = b"report-\xff.csv".decode("utf-8", "surrogateescape")

    @tool
    def list_dir(path: str) -> str:
        """List a folder."""
        return odd

    store.create(NewRun("r1", "test-agent", f"read {odd}", "default", {}), lease(), NOW)

    def save(cp: Checkpoint) -> None:
        store.checkpoint("r1", cp, lease(), NOW)

    agent = make_agent(
        [call("list_dir", path=odd)], [finish("need_help", f"open {odd}?")], tools=[list_dir], checkpoint=save
    )
    result = agent.run(f"read {odd}", run_id="r1")
    rec = store.record("r1", Outcome.of(result), lease(), NOW + 1)
    assert rec.status is RunStatus.WAITING and rec.question == "open report-\ufffd.csv?"
    assert store.get("r1").task == "read report-\ufffd.csv"  # type: ignore[union-attr]
    claimed = store.claim("r1", (RunStatus.WAITING,), lease("w2"), NOW + 2, answer=f"yes, {odd}")
    assert claimed.answer == "yes, report-\ufffd.csv"
    snap = store.snapshot("r1")
    assert snap is not None and snap.task == f"read {odd}"
    [stored] = [e for e in snap.journal if isinstance(e, Result)]
    assert stored.text == odd  # the journal keeps the exact text


def edit_row(store_url: str, sql: str, *params: object) -> None:
    """Change the store behind its back, as a person with a SQL prompt (or a bad disk) would."""
    if store_url.startswith("postgresql://"):
        import psycopg

        with psycopg.connect(store_url, autocommit=True) as conn:
            conn.execute(sql.replace("?", "%s"), params)
    else:
        with contextlib.closing(sqlite3.connect(store_url)) as conn, conn:
            conn.execute(sql, params)


REPAIRED = {"state": "{}", "pending": None}


@pytest.mark.parametrize(
    "column, value",
    [
        ("state", "{oops"),
        ("state", "[1]"),
        ("pending", '{"x": 1}'),
        ("status", "zombie"),
        ("stop_reason", "??"),
    ],
)
def test_a_damaged_run_row_is_a_clear_error_and_never_hides_the_other_runs(
    store_url: str, column: str, value: str, caplog: pytest.LogCaptureFixture
) -> None:
    store = open_store(store_url)
    try:
        for run_id in ("good", "bad"):
            store.create(NewRun(run_id, "test-agent", "task", "default", {}), lease(), NOW)
        edit_row(store_url, f"UPDATE endstate_runs SET {column} = ? WHERE run_id = 'bad'", value)
        with pytest.raises(StoreError, match=f"run bad.*{column}.*damaged"):
            store.get("bad")
        listing = store.list_runs()
        assert [r.run_id for r in listing] == ["good"] and listing.damaged == ["bad"]
        assert [r.run_id for r in store.list_runs(RunStatus.RUNNING)] == ["good"]
        assert "run bad" in caplog.text and column in caplog.text  # left out, and said so
        if column in ("state", "pending"):  # a claim of the row it cannot read is undone
            with pytest.raises(StoreError, match=f"run bad.*{column}.*damaged"):
                store.claim("bad", (RunStatus.RUNNING,), lease("w2"), NOW + 1)
            edit_row(
                store_url, f"UPDATE endstate_runs SET {column} = ? WHERE run_id = 'bad'", REPAIRED[column]
            )
            after = store.get("bad")
            assert after is not None and (after.owner, after.segments) == (lease().owner, 1)
    finally:
        store.close()


@pytest.mark.parametrize(
    "column", ["started_at", "deadline", "suspended_at", "turns", "segments", "cost_usd", "input_tokens"]
)
def test_a_number_column_edited_into_text_is_a_damaged_row_that_hides_no_other(
    tmp_path: Path, column: str, caplog: pytest.LogCaptureFixture
) -> None:
    """SQLite keeps text typed into a REAL or INTEGER column as text: such a row is damaged like one
    whose state is not JSON. It made /pending and the inbox a 500 for everyone (their sort compared
    text with numbers), and GET /runs too for a cost or token count (float('x'))."""
    url = str(tmp_path / "runs.db")
    store = open_store(url)
    try:
        for run_id in ("good", "bad"):
            store.create(NewRun(run_id, "test-agent", "task", "default", {}), lease(), NOW)
        edit_row(url, f"UPDATE endstate_runs SET {column} = 'soon' WHERE run_id = 'bad'")
        damaged = f"run bad: its {column} column is damaged .*'soon'.*fix the row"
        with pytest.raises(StoreError, match=damaged):
            store.get("bad")
        listing = store.list_runs()
        assert [r.run_id for r in listing] == ["good"] and listing.damaged == ["bad"]
        assert "run bad" in caplog.text and column in caplog.text  # left out, and said so
    finally:
        store.close()


def test_a_journal_with_an_entry_missing_is_a_clear_error_not_a_shorter_run(
    store: RunStore, store_url: str, make_agent
) -> None:  # type: ignore[no-untyped-def]
    started(store)
    store.checkpoint("r1", checkpoint_of(suspended(make_agent).snapshot), lease(), NOW)  # type: ignore[arg-type]
    edit_row(store_url, "DELETE FROM endstate_entries WHERE run_id = 'r1' AND seq = 1")
    with pytest.raises(SnapshotError, match=r"run r1.*entry 1 is missing"):
        store.snapshot("r1")


def test_sqlite_folds_its_log_into_the_store_file_behind_the_writer(tmp_path: Path) -> None:
    """Every `FOLD_EVERY` commits the store's own thread folds the write-ahead log into the store
    file (SQLite's own folding, at 1,000 pages, ran on the committing thread: the loop's, for a
    checkpoint). Fewer pages than that here, so only the store's thread can have folded them."""
    path = tmp_path / "runs.db"
    store = open_store(f"sqlite:///{path}")
    try:
        for i in range(FOLD_EVERY):
            store.create(NewRun(f"r{i}", "test-agent", "pay the invoice", "default"), lease(), NOW)
        wait_for(lambda: runs_in_file(path, tmp_path / "copy.db") == FOLD_EVERY, what="the log folded")
        folder = store._folder  # type: ignore[attr-defined]
    finally:
        store.close()
    assert not folder._thread.is_alive()  # closing the store stopped its thread


def test_a_sqlite_store_never_closed_is_not_kept_alive_by_its_folding_thread(tmp_path: Path) -> None:
    """The folding thread held the store (its connect method) for ever: a store dropped without
    `close` kept its connections open and its thread waiting. Now the store is collected, and its
    thread stops and closes its own connection."""
    store = open_store(f"sqlite:///{tmp_path / 'runs.db'}")
    for i in range(FOLD_EVERY):  # the folding thread started
        store.create(NewRun(f"r{i}", "test-agent", "pay the invoice", "default"), lease(), NOW)
    folder = store._folder  # type: ignore[attr-defined]
    assert folder._thread is not None
    gone = weakref.ref(store)
    del store
    gc.collect()
    assert gone() is None
    folder._thread.join(60)
    assert not folder._thread.is_alive()


def test_a_sqlite_store_never_closed_closes_its_connections_when_collected(tmp_path: Path) -> None:
    """A store dropped without `close` kept its two connections open until they were collected on
    their own, which Python 3.13 reports as a ResourceWarning (unclosed database) in whatever code
    runs then. Now the store closes them when it is collected."""
    store = open_store(f"sqlite:///{tmp_path / 'runs.db'}")
    store.create(NewRun("r1", "test-agent", "pay the invoice", "default"), lease(), NOW)
    connections = [store._conn, store._reader]  # type: ignore[attr-defined]
    del store
    gc.collect()
    for conn in connections:
        with pytest.raises(sqlite3.ProgrammingError, match="closed database"):
            conn.execute("SELECT 1")


def runs_in_file(path: Path, copy: Path) -> int | None:
    """The runs in the store file alone (a copy without its write-ahead log); None if the copy
    caught a folding half done."""
    copy.write_bytes(path.read_bytes())
    try:
        with contextlib.closing(sqlite3.connect(copy)) as conn:
            return int(conn.execute("SELECT COUNT(*) FROM endstate_runs").fetchone()[0])
    except sqlite3.DatabaseError:
        return None
    finally:
        for leftover in (copy, copy.with_name(copy.name + "-wal"), copy.with_name(copy.name + "-shm")):
            leftover.unlink(missing_ok=True)
