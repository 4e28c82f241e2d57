"""review23: a refused answer's note (`refused`) stays on the run until the run moves on.

`SqlStore.release` wrote `refused = ?` on every release, so a release that had nothing to say (a
sweep's failed expiry, which no person asked for) erased the note a person's refused answer had left:
the inbox and `/pending` stopped saying why that answer was not taken although the run had not moved
on, as `release` documents it keeps it. On SQLite and PostgreSQL.
"""

from __future__ import annotations

import time
from typing import Any

from test_probe22c_help_age import stored_waiting
from test_store import lease, suspended

from agent.durable.store import Outcome, RunStatus, RunStore

NOTE = "the answer given at 10:00 was not taken: its state could not be loaded"


def test_a_release_with_nothing_to_say_keeps_the_refusal_a_person_was_given(
    store: RunStore, make_agent: Any
) -> None:
    now = time.time()
    stored_waiting(store, suspended(make_agent), "run-1", "default", now - 60, now - 60)  # a day's wait
    store.claim("run-1", (RunStatus.WAITING,), lease(), now, "yes", None, 1, expired=False)
    store.release("run-1", RunStatus.WAITING, lease(), now, NOTE)  # the person's answer, not taken
    past = now + 86400  # the deadline has passed: a sweep's expiry...
    store.claim("run-1", (RunStatus.WAITING,), lease(), past, expired=True)
    store.release("run-1", RunStatus.WAITING, lease(), past)  # ...that failed too, no person's answer
    record = store.get("run-1")
    assert record is not None and record.status is RunStatus.WAITING
    assert record.refused == NOTE  # was: None, the person's note erased


def test_a_later_refusal_replaces_it_and_moving_on_clears_it(store: RunStore, make_agent: Any) -> None:
    now = time.time()
    stored_waiting(store, suspended(make_agent), "run-1", "default", now - 60, now - 60)
    for note in (NOTE, "the approval given at 10:05 was not taken: X"):
        store.claim("run-1", (RunStatus.WAITING,), lease(), now, "yes", None, None, expired=False)
        store.release("run-1", RunStatus.WAITING, lease(), now, note)
        record = store.get("run-1")
        assert record is not None and record.refused == note
    store.claim("run-1", (RunStatus.WAITING,), lease(), now, "yes", None, None, expired=False)
    store.record("run-1", Outcome.of(suspended(make_agent)), lease(), now + 2)  # it asks again
    record = store.get("run-1")
    assert record is not None and record.refused is None
