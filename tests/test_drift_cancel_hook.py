"""drift: a redeployed catalog entry whose `cancel(state)` fails on the state older runs keep.

A run waits for a person; a deploy changes the entry's `cancel(state)` (the run's own cancel signal)
so that it reads a key the runs stored before lack. Before, the answer (or approval) was claimed, the
hook raised as the segment was about to begin, and the run ended `error` (its error type the hook's
`KeyError`) saying "It saved no checkpoint to resume from: start its task again", though its journal
was whole and nothing had run: the person's answer and the run were lost to a bug a fix would have
mended. Now the hook's failure is the entry's, as its build's: the reply is refused (`AgentUnavailable`,
an HTTP 503, exit 2) and the run waits on, answerable once the entry is fixed; a run recovery takes
ends `error` (`agent_build_failed`) keeping its checkpoint, and `endstate resume` continues it.
"""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

import pytest
from drift_support import started
from test_runner_agents import counted, counter_state, make_counter

from agent import StopReason
from agent.durable.runner import AgentUnavailable, Catalog, Runner
from agent.durable.store import RunStatus, open_store


def strict_cancel(state: dict[str, Any]) -> threading.Event:
    """The new release's cancel signal: it reads a key only the runs it starts have."""
    state["cancel_file"]  # a KeyError for every run stored before
    return threading.Event()


def runner(store_url: str, cancel: Any = None, **options: Any) -> Runner:
    catalog = Catalog()
    catalog.register("counter", make_counter, **({"cancel": cancel} if cancel else {}))
    return Runner(open_store(store_url), catalog, **options)


@pytest.mark.parametrize(("script", "reply"), [("ask", {"answer": "3"}), ("approve", {"approved": True})])
def test_a_reply_to_a_run_the_new_cancel_hook_fails_on_is_refused_and_the_run_waits(
    store_url: str, tmp_path: Path, script: str, reply: dict[str, Any]
) -> None:
    first = started(store_url, counter_state(tmp_path, script), "c1")
    assert first.reason is StopReason.NEED_HELP

    new = runner(store_url, strict_cancel)
    try:
        with pytest.raises(AgentUnavailable, match=r"cancel\(state\) raised KeyError: 'cancel_file'"):
            asyncio.run(new.resume("c1", reply.get("answer"), approved=reply.get("approved")))
        after = new.store.get("c1")
        assert after is not None and after.status is RunStatus.WAITING, after and after.note
        assert after.refused is not None and "was not taken" in after.refused
        assert not (tmp_path / "wired.txt").exists()  # nothing ran
    finally:
        new.store.close()

    fixed = runner(store_url)
    try:
        done = asyncio.run(fixed.resume("c1", reply.get("answer"), approved=reply.get("approved")))
        assert done.reason is StopReason.SUCCESS, done.note
    finally:
        fixed.store.close()


def test_a_cancelled_run_resumed_under_the_new_cancel_hook_stays_cancelled(
    store_url: str, tmp_path: Path
) -> None:
    """A run a shutdown cancelled, resumed once the new release is deployed: refused, still cancelled
    (before, it ended `error` with no checkpoint to resume from, though its journal was whole)."""
    old = runner(store_url)
    try:
        job = old.begin("counter", "count", state=counter_state(tmp_path, "plain"), run_id="c2")
        stopped = threading.Event()
        stopped.set()
        assert asyncio.run(old.drive(job, stopped)).reason is StopReason.CANCELLED
    finally:
        old.store.close()

    new = runner(store_url, strict_cancel)
    try:
        with pytest.raises(AgentUnavailable, match=r"cancel\(state\) raised KeyError: 'cancel_file'"):
            asyncio.run(new.resume("c2"))
        after = new.store.get("c2")
        assert after is not None and (after.status, after.stop_reason) == (
            RunStatus.CANCELLED,
            StopReason.CANCELLED,
        ), after.note
    finally:
        new.store.close()

    fixed = runner(store_url)
    try:
        done = asyncio.run(fixed.resume("c2"))
        assert done.reason is StopReason.SUCCESS, done.note
        assert counted(tmp_path) == [1, 2]
    finally:
        fixed.store.close()


def test_a_run_past_its_deadline_under_the_new_cancel_hook_ends_as_a_build_that_fails_in_a_sweep(
    store_url: str, tmp_path: Path
) -> None:
    """The deadline sweep takes a run no person answered: a hook that fails there ends it as a build
    that fails there does (`agent_build_failed`, resumable), not given back to fail again (and be
    logged) at every sweep; once fixed, `resume` ends it under its help policy."""
    old = runner(store_url)
    try:
        state = counter_state(tmp_path, "ask", wait=60)
        assert (
            asyncio.run(old.start("counter", "count", state=state, run_id="c3")).reason
            is StopReason.NEED_HELP
        )
        deadline = old.store.get("c3").deadline  # type: ignore[union-attr]
        assert deadline is not None
    finally:
        old.store.close()

    new = runner(store_url, strict_cancel)
    try:
        asyncio.run(new.sweep(now=deadline + 1))
        ended = new.store.get("c3")
        assert ended is not None and ended.status is RunStatus.FINISHED, ended and ended.status
        assert (ended.stop_reason, ended.error_type) == (StopReason.ERROR, "agent_build_failed"), ended.note
        assert "cancel(state) raised KeyError" in ended.note and "endstate resume c3" in ended.note
    finally:
        new.store.close()

    fixed = runner(store_url)
    try:
        assert asyncio.run(fixed.resume("c3")).reason is StopReason.HELP_TIMEOUT
    finally:
        fixed.store.close()
