"""Recovery of durable runs at points other tests do not reach (probe19b), on SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
import dataclasses
import json
from pathlib import Path

import pytest
from test_runner_agents import (
    Crash,
    EndingHooks,
    catalog,
    counted,
    counter_state,
    make_counter,
    outlive_leases,
)
from test_service_support import endstate, spawn, wait_for

from agent import Agent, Extension, StopReason
from agent.checks import TurnVerdict
from agent.clock import SystemClock
from agent.context import RunContext
from agent.durable.runner import Catalog, Runner
from agent.durable.store import Outcome, RunStatus, open_store
from agent.models.scripted import ScriptedModel, call, finish

DYING_LEASE = 600.0  # seconds: a dead worker's lease, run out only when a test says so


def _runner(url: str, catalog_: Catalog, lease: float = 30.0) -> Runner:
    return Runner(open_store(url), catalog_, lease_seconds=lease)


@pytest.mark.parametrize(("script", "reply"), [("ask", {"answer": "2"}), ("approve", {"approved": True})])
def test_an_answer_whose_worker_died_and_whose_run_could_not_be_rebuilt_is_kept_for_the_resume(
    store_url: str, tmp_path: Path, script: str, reply: dict[str, object]
) -> None:
    """A person answered; the worker holding the claim died before the answer was journaled; the worker
    that recovered the run could not rebuild its agent (a config file gone), so the run ended `error`,
    "resumable once fixed". Fixed, `endstate resume` continues it with the person's answer: the answer
    was not dropped (the run no longer waits, so nobody could give it again)."""
    folder, config = tmp_path / "r", tmp_path / "agent.toml"
    config.write_text("ok")
    state = counter_state(folder, script, config=str(config))
    asking, dying = _runner(store_url, catalog()), _runner(store_url, catalog(), DYING_LEASE)
    survivor, fixed = _runner(store_url, catalog()), _runner(store_url, catalog())
    try:
        first = asyncio.run(asking.start("configured-counter", "count", state=state))
        assert first.reason is StopReason.NEED_HELP
        dying.claim(first.run_id, **reply)  # type: ignore[arg-type]  # claimed; it dies before driving it
        config.unlink()  # and the deploy that recovers the run lost the agent's config
        assert outlive_leases(store_url, DYING_LEASE + 1, dying.owner) == 1
        assert asyncio.run(survivor.recover()) == []
        ended = survivor.store.get(first.run_id)
        assert ended is not None
        assert (ended.status, ended.error_type) == (RunStatus.FINISHED, "agent_build_failed")
        assert f"endstate resume {first.run_id}" in ended.note
        config.write_text("ok")  # fixed
        done = asyncio.run(fixed.resume(first.run_id))
        assert done.reason is StopReason.SUCCESS, done.note
        if script == "ask":
            assert counted(folder) == [1, 2]
        else:
            assert (folder / "wired.txt").read_text() == "7\n"
    finally:
        for runner in (asking, dying, survivor, fixed):
            runner.store.close()


def test_a_run_given_more_budget_whose_worker_died_before_it_went_on_is_a_limit_stop_again(
    store_url: str, tmp_path: Path
) -> None:
    """`resume --more-turns` (or POST /resume) claimed a run that stopped at its turn limit; its worker
    died before the run's first checkpoint (the extension is journaled there). Recovery records the
    limit stop its journal ends with again, so more budget can be asked for again: it is not ended as
    a `bad_snapshot` error that neither a plain resume nor one with more budget could continue."""
    folder = tmp_path / "r"
    state = counter_state(folder, "plain", max_turns=1)
    first_, dying = _runner(store_url, catalog()), _runner(store_url, catalog(), DYING_LEASE)
    survivor = _runner(store_url, catalog())
    try:
        first = asyncio.run(first_.start("counter", "count", state=state))
        assert (first.reason, first.limit) == (StopReason.LIMIT, "turns")
        dying.claim(first.run_id, more=Extension(turns=5))  # claimed; it dies before driving it
        assert outlive_leases(store_url, DYING_LEASE + 1, dying.owner) == 1
        [again] = asyncio.run(survivor.recover())
        assert (again.reason, again.limit, again.turns) == (StopReason.LIMIT, "turns", 1)
        back = survivor.store.get(first.run_id)
        assert back is not None
        assert (back.status, back.stop_reason, back.stop_limit, back.owner) == (
            RunStatus.FINISHED,
            StopReason.LIMIT,
            "turns",
            None,
        )
        done = asyncio.run(survivor.resume(first.run_id, more=Extension(turns=5)))
        assert done.reason is StopReason.SUCCESS, done.note
        assert counted(folder) == [1, 2]
    finally:
        for runner in (first_, dying, survivor):
            runner.store.close()


def _repeating(state: dict[str, object]) -> Agent:
    """The counter, counting 1 again and again: the third time, the run stops as `no_progress`."""
    steps = [[call("count", n=1)]] * 5 + [[finish("done", "counted")]]
    return dataclasses.replace(make_counter(state), model=ScriptedModel(steps))


def _repeating_then_killed(state: dict[str, object]) -> Agent:
    """`_repeating`, which stops dead after its segment ended, before the record (`EndingHooks`)."""
    hooks = EndingHooks(Path(str(state["dir"])) / "ended.flag")
    return dataclasses.replace(_repeating(state), hooks=hooks)


def probe_catalog() -> Catalog:
    """For `endstate --catalog test_probe19b_recovery:probe_catalog`."""
    c = Catalog()
    c.register("repeat-killed", _repeating_then_killed)
    return c


def test_kill_9_after_the_segments_last_checkpoint_and_before_its_record_keeps_the_stop(
    store_url: str, tmp_path: Path
) -> None:
    """The same, with a real `kill -9` of `endstate start` where the segment ended (its last
    checkpoint durable) and its record is not written; then `endstate recover` from another process."""
    folder = tmp_path / "run"
    state = counter_state(folder, "plain")
    (folder / "ended.flag").write_text("block")
    catalog_ = "test_probe19b_recovery:probe_catalog"
    proc = spawn(
        "start", "repeat-killed", "count", "--state", json.dumps(state), "--catalog", catalog_,
        "--lease", "60", store=store_url, log=tmp_path / "start.log",
    )  # fmt: skip
    try:
        wait_for(lambda: (folder / "ended.txt").exists(), what="the segment's end")
    finally:
        proc.kill()
        proc.wait(timeout=30)
    (folder / "ended.flag").unlink()
    assert (folder / "ended.txt").read_text() == "no_progress"
    done = endstate("recover", "--catalog", catalog_, store=store_url)
    assert done.returncode == 0, done.stderr
    store = open_store(store_url)
    try:
        [rec] = store.list_runs(limit=None)
    finally:
        store.close()
    assert (rec.status, rec.stop_reason, rec.error_type, rec.turns) == (
        RunStatus.FINISHED,
        StopReason.NO_PROGRESS,
        None,
        3,
    )
    assert counted(folder) == [1, 1, 1]


def test_a_worker_killed_after_its_segments_last_checkpoint_and_before_its_record_keeps_the_stop(
    store_url: str, tmp_path: Path
) -> None:
    """A segment ended (`no_progress`: its last checkpoint, which holds the last tool's result, is
    durable) and its worker died before the record. Recovery records the stop the journal holds,
    runs nothing again, and does not turn the run into a `bad_snapshot` error."""
    folder = tmp_path / "r"
    repeating = Catalog()
    repeating.register("repeater", _repeating)
    dying, survivor = _runner(store_url, repeating, DYING_LEASE), _runner(store_url, repeating)

    def dies(run_id: str, outcome: Outcome, *_: object) -> None:
        raise Crash("killed before the record")

    dying.store.record = dies  # type: ignore[method-assign]
    try:
        with pytest.raises(Crash):
            asyncio.run(dying.start("repeater", "count", state=counter_state(folder, "plain")))
        assert counted(folder) == [1, 1, 1]
        stuck = survivor.store.list_runs(limit=None)
        assert [(r.status, r.stop_reason) for r in stuck] == [(RunStatus.RUNNING, None)]
        assert outlive_leases(store_url, DYING_LEASE + 1, dying.owner) == 1
        asyncio.run(survivor.recover())
        [rec] = survivor.store.list_runs(limit=None)
        assert (rec.status, rec.stop_reason, rec.turns, rec.owner) == (
            RunStatus.FINISHED,
            StopReason.NO_PROGRESS,
            3,
            None,
        )
        assert "count" in rec.note and rec.error_type is None
        assert counted(folder) == [1, 1, 1]  # nothing ran again
        assert asyncio.run(survivor.recover()) == []
    finally:
        dying.store.close()
        survivor.store.close()


class _Skewed(SystemClock):
    """The system's clocks, `seconds` ahead (behind, when negative), as another host's may be."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds

    def time(self) -> float:
        return super().time() + self.seconds


def test_a_run_the_sweep_claimed_and_whose_sweeper_died_ends_at_its_deadline_on_any_workers_clock(
    store_url: str, tmp_path: Path
) -> None:
    """The sweep claimed a run past its deadline and its worker died before driving the expiry. The
    worker that recovers it has a clock minutes behind (leases do not care: the store's clock judges
    them): the run still ends `help_timeout` under its help policy, not as a `bad_snapshot` error
    ("the run waits for an answer"), and no answer was given."""
    folder = tmp_path / "r"
    asking = _runner(store_url, catalog())
    sweeper = Runner(open_store(store_url), catalog(), lease_seconds=DYING_LEASE, clock=_Skewed(60))
    behind = Runner(open_store(store_url), catalog(), clock=_Skewed(-180))
    try:
        first = asyncio.run(asking.start("counter", "ask", state=counter_state(folder, "ask", wait=30.0)))
        assert first.reason is StopReason.NEED_HELP
        [job] = sweeper.expiry_jobs()  # claimed past the deadline; the sweeper dies before driving it
        assert job.run_id == first.run_id
        assert outlive_leases(store_url, DYING_LEASE + 1, sweeper.owner) == 1
        [ended] = asyncio.run(behind.recover())
        assert (ended.reason, ended.error_type) == (StopReason.HELP_TIMEOUT, None), ended.note
        assert counted(folder) == [1]
        assert 29 < ended.waiting_seconds < 31  # the wait ran to the deadline
    finally:
        for runner in (asking, sweeper, behind):
            runner.store.close()


def _goal_after_two(state: dict[str, object]) -> Agent:
    """The counter with a per-turn check: once 2 was counted, the goal is reached (success)."""

    def reached(ctx: RunContext) -> TurnVerdict | None:
        counts = [c.arguments.get("n") for c in ctx.calls]
        return TurnVerdict(StopReason.SUCCESS, f"counted {counts}") if 2 in counts else None

    return dataclasses.replace(make_counter({**state, "script": "plain"}), checks=[reached])


def test_a_goal_reached_by_a_check_whose_worker_died_before_its_record_keeps_its_output(
    store_url: str, tmp_path: Path
) -> None:
    """A per-turn check ended the run as success (its last checkpoint, with count(2)'s result, is
    durable); the worker died before the record. The recorded success has the check's output and
    is verified, as the lost result was: the check is asked again of the journal, no tool runs."""
    folder = tmp_path / "r"
    goals = Catalog()
    goals.register("goal", _goal_after_two)
    dying, survivor = _runner(store_url, goals, DYING_LEASE), _runner(store_url, goals)

    def dies(run_id: str, outcome: Outcome, *_: object) -> None:
        raise Crash("killed before the record")

    dying.store.record = dies  # type: ignore[method-assign]
    try:
        with pytest.raises(Crash):
            asyncio.run(dying.start("goal", "count", state=counter_state(folder, "plain")))
        assert outlive_leases(store_url, DYING_LEASE + 1, dying.owner) == 1
        [done] = asyncio.run(survivor.recover())
        assert (done.reason, done.output, done.verified, done.turns) == (
            StopReason.SUCCESS,
            "counted [1, 2]",
            True,
            2,
        )
        rec = survivor.store.get(done.run_id)
        assert rec is not None and (rec.output, rec.verified) == ("counted [1, 2]", True)
        assert counted(folder) == [1, 2]
    finally:
        dying.store.close()
        survivor.store.close()


def test_a_run_that_died_before_its_first_checkpoint_and_could_not_be_rebuilt_resumes_once_fixed(
    store_url: str, tmp_path: Path
) -> None:
    """Its worker died in the first model call (no checkpoint yet); recovery could not rebuild the
    agent (its config gone) and ended the run `error`, saying `endstate resume` continues it once
    fixed. Fixed, it does: the task starts again (nothing of it was recorded)."""
    folder, config = tmp_path / "r", tmp_path / "agent.toml"
    config.write_text("ok")
    state = counter_state(folder, "plain", config=str(config))
    dying, survivor = _runner(store_url, catalog(), DYING_LEASE), _runner(store_url, catalog())
    try:
        job = dying.begin("configured-counter", "count", state=state)  # it dies before its first checkpoint
        config.unlink()
        assert outlive_leases(store_url, DYING_LEASE + 1, dying.owner) == 1
        assert asyncio.run(survivor.recover()) == []
        ended = survivor.store.get(job.run_id)
        assert ended is not None
        assert (ended.status, ended.error_type) == (RunStatus.FINISHED, "agent_build_failed")
        assert f"endstate resume {job.run_id}" in ended.note
        config.write_text("ok")
        done = asyncio.run(survivor.resume(job.run_id))
        assert done.reason is StopReason.SUCCESS, done.note
        assert counted(folder) == [1, 2]
    finally:
        dying.store.close()
        survivor.store.close()
