"""A verifier's returned value is read within its bound: a value of its own type whose iteration or
`repr` hangs is a verifier that did not finish, never an event loop held for good."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from agent import RunContext
from agent.verify import checked_in_thread, run_verifiers, within

pytestmark = pytest.mark.timeout(180)  # a regression fails here, not at the suite's 15 minutes

WAY_OUT = 60.0  # seconds a hung read waits at most: a failing test never holds CI for ever


@pytest.fixture
def release() -> Iterator[threading.Event]:
    event = threading.Event()
    yield event
    event.set()


def ctx() -> RunContext:
    return RunContext("run-1", "agent", "task", "default")


def stuck_reasons(release: threading.Event) -> list[str]:
    class Stuck(list):  # type: ignore[type-arg]
        def __iter__(self) -> Any:
            release.wait(WAY_OUT)
            return super().__iter__()

        def __repr__(self) -> str:
            release.wait(WAY_OUT)
            return "Stuck()"

    return Stuck(["never read"])


@pytest.mark.parametrize("sync", [True, False], ids=["def", "async-def"])
def test_a_verifier_value_whose_reading_hangs_is_a_verifier_that_did_not_finish(sync, release) -> None:
    value = stuck_reasons(release)

    def check(ctx: RunContext) -> Any:
        return value

    async def check_async(ctx: RunContext) -> Any:
        await asyncio.sleep(0)
        return value

    verdict = asyncio.run(run_verifiers([within(0.5, check if sync else check_async)], ctx()))
    assert verdict.failures == [f"`{'check' if sync else 'check_async'}` did not finish within 0.5 s"]


def test_a_verifier_value_whose_reading_hangs_is_cut_by_the_runs_time_budget(release) -> None:
    verdict = asyncio.run(run_verifiers([lambda ctx: stuck_reasons(release)], ctx(), limit=0.5))
    assert verdict.budget_cut


def test_a_verifier_of_its_own_list_type_still_gives_its_reasons() -> None:
    class Reasons(list):  # type: ignore[type-arg]
        pass

    verdict = asyncio.run(run_verifiers([lambda ctx: Reasons(["no header row"])], ctx()))
    assert (verdict.failures, verdict.budget_cut) == (["no header row"], False)


def test_a_foreign_runs_check_reads_the_value_within_the_timeout_too(release) -> None:
    """`checked_in_thread` (a foreign framework's run ending, no event loop to spare): its caller
    waits the verifier's timeout at most."""
    check = within(0.5, lambda ctx: stuck_reasons(release))
    assert checked_in_thread(check, lambda: stuck_reasons(release)) == [
        "`<lambda>` did not finish within 0.5 s"
    ]
