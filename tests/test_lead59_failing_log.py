"""A periodic task that goes on failing (a store down for an hour) is logged when it starts failing,
again at most once a minute with how many times it failed meanwhile, at once when it fails otherwise,
and once when it works again: not three lines every five seconds burying the first."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any

import pytest

from agent.durable.runner import Catalog, Runner
from agent.durable.store import StoreError, open_store
from agent.service.app import Service
from agent.service.auth import Token
from agent.service.failing import Failing

DOWN = StoreError("the PostgreSQL run store failed: connection refused")


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def said(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "endstate.service"]


def test_the_same_failure_is_said_once_a_minute_with_its_count_and_its_end_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    clock = Clock()
    failing = Failing(clock, every=60.0)
    with caplog.at_level(logging.WARNING, logger="endstate.service"):
        for _ in range(12):  # a minute of sweeps every 5 s
            failing.failed("the deadline sweep", DOWN)
            clock.now += 5.0
        failing.failed("the deadline sweep", DOWN)  # 60 s after the first line
        clock.now += 5.0
        failing.worked("the deadline sweep")
        failing.worked("the deadline sweep")  # working on: nothing more to say
    assert said(caplog) == [
        f"the deadline sweep failed; trying again later: {DOWN}",
        f"the deadline sweep failed again (13 times in 60 s, 11 not logged); trying again later: {DOWN}",
        "the deadline sweep works again, after failing 13 times over 65 s",
    ]
    assert caplog.records[-1].levelno == logging.WARNING
    assert all(r.exc_info is None for r in caplog.records)


def test_a_different_failure_is_said_at_once_and_each_task_on_its_own(
    caplog: pytest.LogCaptureFixture,
) -> None:
    clock = Clock()
    failing = Failing(clock, every=60.0)
    with caplog.at_level(logging.WARNING, logger="endstate.service"):
        failing.failed("recovering runs", DOWN)
        failing.failed("making the due success audits", DOWN)
        clock.now += 5.0
        failing.failed("recovering runs", StoreError("the run store failed: disk full"))
        failing.failed("recovering runs", KeyError("a bug"))
        failing.failed("recovering runs", KeyError("a bug"))  # the same again, within the minute
        failing.worked("making the due success audits")
    lines = said(caplog)
    assert lines[:4] == [
        f"recovering runs failed; trying again later: {DOWN}",
        f"making the due success audits failed; trying again later: {DOWN}",
        "recovering runs failed again (2 times in 5 s); trying again later: the run store failed: disk full",
        "recovering runs failed again (3 times in 5 s); trying again later",
    ]
    assert caplog.records[3].exc_info is not None  # a new failure that is no EndstateError: where it was
    assert lines[4:] == ["making the due success audits works again, after failing 1 times over 5 s"]


def test_a_service_whose_store_is_down_says_so_once_per_task_then_that_it_works_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    store = open_store(str(tmp_path / "runs.db"))
    service = Service(Runner(store, Catalog()), Token("t" * 32), sweep_interval=0.01)
    sweeps = {"n": 0}
    real = store.expired

    def down(*args: Any, **kwargs: Any) -> Any:
        sweeps["n"] += 1
        raise DOWN

    async def main() -> None:
        async with service.lifespan(None):  # type: ignore[arg-type]
            monkeypatch.setattr(store, "expired", down)
            for _ in range(3000):  # twenty sweeps fail (the thread of `off_loop` counts them)
                if sweeps["n"] >= 20:
                    break
                await asyncio.sleep(0.01)
            monkeypatch.setattr(store, "expired", real)
            for _ in range(500):
                if "the deadline sweep works again" in " ".join(said(caplog)):
                    break
                await asyncio.sleep(0.01)

    try:
        with caplog.at_level(logging.WARNING, logger="endstate.service"):
            asyncio.run(asyncio.wait_for(main(), 60))
    finally:
        store.close()
    sweep = [line for line in said(caplog) if line.startswith("the deadline sweep")]
    assert sweep[0] == f"the deadline sweep failed; trying again later: {DOWN}"
    assert len(sweep) == 2, sweep  # twenty failures: one line, then one when it works again
    assert sweep[1].startswith("the deadline sweep works again, after failing ")
