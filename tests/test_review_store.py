"""Reviews and retention in the run store: every test runs against SQLite and a real PostgreSQL."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pg
import pytest

from agent import StopReason
from agent.durable.store import (
    Lease,
    NewRun,
    NotClaimable,
    Outcome,
    RunStatus,
    RunStore,
    UnknownRun,
    open_store,
)
from agent.durable.store._sql import migrations
from agent.models.scripted import call, finish
from agent.result import RunResult

NOW = 1_800_000_000.0


@pytest.fixture(params=pg.BACKENDS)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[RunStore]:
    s = open_store(pg.url_for(request.param, tmp_path))
    yield s
    s.close()


def lease() -> Lease:
    return Lease("w1", NOW + 1e6)


def ended(
    store: RunStore, make_agent, run_id: str, steps: list, at: float, task_type: str = "t"
) -> RunResult:  # type: ignore[no-untyped-def,type-arg]
    """A run of `steps` created, checkpointed and recorded in the store; it ends at `at`."""
    store.create(NewRun(run_id, "test-agent", "do it", task_type), lease(), at)
    agent = make_agent(
        *steps, checkpoint=lambda cp: store.checkpoint(run_id, cp, lease(), at), task_type=task_type
    )
    result: RunResult = agent.run("do it", run_id=run_id)
    store.record(run_id, Outcome.of(result), lease(), at)
    return result


GIVE_UP = [[finish("give_up", "cannot")]]
DONE = [[finish("done", "ok")]]
ASK = [[finish("need_help", "which one?")]]


def test_a_label_is_kept_with_the_runs_agent_and_task_type_and_the_latest_counts(
    store: RunStore, make_agent
) -> None:  # type: ignore[no-untyped-def]
    ended(store, make_agent, "r1", GIVE_UP, NOW, task_type="invoice")
    first = store.add_review("r1", "fine", "", NOW + 1)
    second = store.add_review("r1", "should_have_succeeded", "the portal was up", NOW + 2)
    assert (second.agent, second.task_type, second.label, second.note) == (
        "test-agent", "invoice", "should_have_succeeded", "the portal was up",
    )  # fmt: skip
    assert second.id > first.id
    assert [r.label for r in store.reviews()] == ["fine", "should_have_succeeded"]
    assert [r.id for r in store.reviews(after=first.id)] == [second.id]
    assert store.reviews(run_ids=["nope"]) == [] and store.reviews(run_ids=[]) == []


def test_only_a_finished_run_can_be_labelled(store: RunStore, make_agent) -> None:  # type: ignore[no-untyped-def]
    ended(store, make_agent, "waits", ASK, NOW)
    with pytest.raises(NotClaimable, match="waiting, not finished"):
        store.add_review("waits", "fine", "", NOW)
    with pytest.raises(UnknownRun, match="no run with id 'ghost'"):
        store.add_review("ghost", "fine", "", NOW)
    assert store.reviews() == []


def test_the_queue_holds_unlabelled_failures_oldest_first_and_a_stable_sample_of_successes(
    store: RunStore, make_agent
) -> None:  # type: ignore[no-untyped-def]
    ended(store, make_agent, "late-give-up", GIVE_UP, NOW + 20)
    ended(store, make_agent, "early-give-up", GIVE_UP, NOW + 10)
    ended(store, make_agent, "labelled", GIVE_UP, NOW + 5)
    ended(store, make_agent, "waits", ASK, NOW)
    for i in range(40):
        ended(store, make_agent, f"ok-{i:02}", DONE, NOW + i * 0.0371)
    store.add_review("labelled", "correct_give_up", "", NOW + 30)

    def queue(share: float) -> list[str]:
        return [r.run_id for r in store.review_queue([StopReason.GAVE_UP], share, limit=None)]

    assert queue(0.0) == ["early-give-up", "late-give-up"]
    everything = queue(1.0)
    assert len(everything) == 42 and everything[-2:] == ["early-give-up", "late-give-up"]
    half = queue(0.5)
    assert 5 <= len(half) - 2 <= 35  # a sample, not all or none
    assert queue(0.5) == half  # the same runs each time: a queue people can work through
    assert set(half) <= set(everything)
    assert [r.run_id for r in store.review_queue([StopReason.GAVE_UP], 0.0, limit=1)] == ["early-give-up"]


def test_the_queue_pages_and_filters_by_agent_and_task_type_and_counts_what_it_holds(
    store: RunStore, make_agent
) -> None:  # type: ignore[no-untyped-def]
    for i in range(5):
        ended(store, make_agent, f"inv-{i}", GIVE_UP, NOW + i, task_type="invoice")
    ended(store, make_agent, "csv-0", GIVE_UP, NOW + 2.5, task_type="csv")
    ended(store, make_agent, "ok", DONE, NOW + 9, task_type="csv")
    gave_up = [StopReason.GAVE_UP]

    def ids(**page: object) -> list[str]:
        return [r.run_id for r in store.review_queue(gave_up, 0.0, **page)]  # type: ignore[arg-type]

    assert ids(limit=2) == ["inv-0", "inv-1"]
    assert ids(limit=2, offset=2) == ["inv-2", "csv-0"]
    assert ids(limit=None, offset=4) == ["inv-3", "inv-4"]  # SQLite needs a LIMIT for its OFFSET
    assert ids(limit=2, offset=1, task_type="invoice") == ["inv-1", "inv-2"]
    assert ids(limit=10, agent="test-agent", task_type="csv") == ["csv-0"]
    assert ids(limit=10, agent="someone-else") == []
    assert store.review_counts(gave_up, 0.0) == [("test-agent", "csv", 1), ("test-agent", "invoice", 5)]
    assert store.review_counts(gave_up, 1.0) == [("test-agent", "csv", 2), ("test-agent", "invoice", 5)]
    store.add_review("inv-0", "correct_give_up", "", NOW + 20, by="ana")
    assert store.review_counts(gave_up, 0.0)[-1] == ("test-agent", "invoice", 4)  # labelled: out


def test_a_label_keeps_who_gave_it_and_the_labelled_list_is_latest_first(store: RunStore, make_agent) -> None:  # type: ignore[no-untyped-def]
    for run_id, task_type in (("a", "invoice"), ("b", "csv"), ("c", "invoice")):
        ended(store, make_agent, run_id, GIVE_UP, NOW, task_type=task_type)
    given = store.add_review("a", "fine", "", NOW + 1, by="ana")
    assert given.by == "ana" and store.reviews()[0].by == "ana"
    store.add_review("b", "correct_give_up", "down", NOW + 2, by="bo")
    store.add_review("c", "fine", "", NOW + 3)
    store.add_review("a", "should_have_succeeded", "it was up", NOW + 4, by="cy")  # replaces ana's
    latest = store.labelled(10)
    assert [(r.run_id, r.label, r.by) for r in latest] == [
        ("a", "should_have_succeeded", "cy"), ("c", "fine", ""), ("b", "correct_give_up", "bo"),
    ]  # fmt: skip
    assert [r.run_id for r in store.labelled(1, offset=1)] == ["c"]
    assert [r.run_id for r in store.labelled(10, task_type="invoice")] == ["a", "c"]
    assert store.labelled(10, agent="someone-else") == []


def test_prune_deletes_finished_runs_older_than_the_cutoff_with_their_journal(
    store: RunStore, make_agent
) -> None:  # type: ignore[no-untyped-def]
    for i in range(7):
        ended(store, make_agent, f"old-{i}", GIVE_UP, NOW + i)
    ended(store, make_agent, "new", GIVE_UP, NOW + 100)
    ended(store, make_agent, "old-waits", ASK, NOW)
    store.create(NewRun("old-running", "test-agent", "do it", "t"), lease(), NOW)
    store.add_review("old-1", "fine", "kept after the run goes", NOW + 1)
    assert store.snapshot("old-1") is not None

    assert store.prune(NOW + 50, batch=3) == 7  # in batches, until none is left
    assert store.get("old-1") is None and store.snapshot("old-1") is None
    left = {r.run_id: r.status for r in store.list_runs(limit=None)}
    assert left == {
        "new": RunStatus.FINISHED,
        "old-waits": RunStatus.WAITING,
        "old-running": RunStatus.RUNNING,
    }
    assert store.snapshot("old-waits") is not None and store.snapshot("new") is not None
    assert [r.run_id for r in store.reviews()] == ["old-1"]  # a person's label outlives the run
    assert store.prune(NOW + 50) == 0


def test_prune_never_deletes_a_cancelled_run_it_can_still_resume(store: RunStore, make_agent) -> None:  # type: ignore[no-untyped-def]
    store.create(NewRun("c1", "test-agent", "do it", "t"), lease(), NOW)
    agent = make_agent([call("nothing")], checkpoint=lambda cp: store.checkpoint("c1", cp, lease(), NOW))
    result = agent.run("do it", run_id="c1", cancel=_Set())
    assert result.reason is StopReason.CANCELLED
    store.record("c1", Outcome.of(result), lease(), NOW)
    assert store.prune(NOW + 1e9) == 0
    assert store.get("c1") is not None


class _Set:
    def is_set(self) -> bool:
        return True


def test_a_store_migrated_past_the_reviews_version_without_it_gets_the_reviews_table(
    request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    """A store made by a build that had migration 6 but not 5 (merged later) still gets version 5
    (and 8, which adds a column to its table)."""
    url = pg.url_for("sqlite", tmp_path)
    first = open_store(url)
    first._rows("DROP TABLE endstate_reviews")  # type: ignore[attr-defined]
    first._rows("DROP INDEX endstate_runs_ended")  # type: ignore[attr-defined]
    first._rows("ALTER TABLE endstate_runs DROP COLUMN refused")  # type: ignore[attr-defined]  (version 11)
    first._rows("ALTER TABLE endstate_runs DROP COLUMN head_version")  # type: ignore[attr-defined]  (12)
    first._rows("ALTER TABLE endstate_runs DROP COLUMN lease_seconds")  # type: ignore[attr-defined]  (13)
    for column in ("last_answer_by", "last_answer_at", "last_answer_kind", "last_answer"):  # (14)
        first._rows(f"ALTER TABLE endstate_runs DROP COLUMN {column}")  # type: ignore[attr-defined]
    first._rows("ALTER TABLE endstate_runs DROP COLUMN journal_length")  # type: ignore[attr-defined]  (15)
    first._rows("DELETE FROM endstate_schema WHERE version = 5 OR version >= 8")  # type: ignore[attr-defined]
    first.close()
    again = open_store(url)
    try:
        assert again.reviews() == []  # the table is back, with who labelled
        versions = again._rows("SELECT version FROM endstate_schema ORDER BY version")  # type: ignore[attr-defined]
        assert [r["version"] for r in versions] == [v for v, _ in migrations("sqlite")]
    finally:
        again.close()


def test_prune_keeps_a_run_whose_success_audit_is_still_due(store: RunStore, make_agent) -> None:  # type: ignore[no-untyped-def]
    from agent.audit import Audit, AuditOutcome

    ended(store, make_agent, "audited", DONE, NOW)
    ended(store, make_agent, "checked", DONE, NOW)
    store.schedule_audit(Audit("audited", "test-agent", "t", NOW + 10))
    store.schedule_audit(Audit("checked", "test-agent", "t", NOW + 10))
    assert store.record_audit("checked", AuditOutcome.CONFIRMED, "", NOW + 10)
    assert store.prune(NOW + 100) == 1
    assert store.get("audited") is not None and store.get("checked") is None
