"""Every verifier runs within a timeout: one that never returns is a failure told to the model, not a
run held forever (a command had its own 300 s; a function, an `async def` and a judge had none)."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator

import pytest
from temporal_server import TemporalServer, serving, temporal_fixture
from temporalio.testing import ActivityEnvironment

from agent import (
    Agent,
    Budget,
    ConfigError,
    NoHooks,
    RunContext,
    StopReason,
    all_of,
    observe_run,
    predicate,
    verify,
    within,
)
from agent.durable.catalog import Catalog
from agent.models.scripted import ScriptedModel, finish
from agent.temporal._activities import EndstateActivities
from agent.verify import Verdict, VerifierError, evaluator, run_verifiers


def ctx() -> RunContext:
    return RunContext("run-1", "agent", "task", "default")


def verdict(verifiers, limit=None) -> Verdict:
    return asyncio.run(run_verifiers(verifiers, ctx(), limit))


@pytest.fixture
def release() -> Iterator[threading.Event]:
    """Lets a hung verifier's abandoned thread end when the test is over."""
    event = threading.Event()
    yield event
    event.set()


@pytest.fixture
def short_default(monkeypatch: pytest.MonkeyPatch) -> float:
    """The default timeout, shortened so that a hung verifier's failure comes in the test's time."""
    monkeypatch.setattr(verify, "DEFAULT_TIMEOUT", 0.3, raising=False)
    return 0.3


@pytest.mark.timeout(60)
def test_a_hung_function_with_no_time_budget_is_a_failure_at_the_default_timeout(release, short_default):
    def never_returns(c: RunContext) -> list[str]:
        release.wait(120)
        return []

    assert verdict([never_returns]) == Verdict(["`never_returns` did not finish within 0.3 s"])


def test_the_default_timeout_is_300_seconds_as_a_commands():
    assert verify.DEFAULT_TIMEOUT == 300.0
    assert verify.timeout_of(lambda c: []) == 300.0
    assert predicate(lambda c: True, "r").timeout == 300.0


@pytest.mark.timeout(60)
def test_a_hung_async_verifier_is_a_failure_at_its_own_timeout():
    async def waits_forever(c: RunContext) -> list[str]:
        await asyncio.Event().wait()
        return []

    assert verdict([within(0.2, waits_forever)], limit=30) == Verdict(
        ["`waits_forever` did not finish within 0.2 s"]
    )


@pytest.mark.timeout(60)
def test_a_hung_predicate_is_named_by_its_function_and_the_next_verifier_still_runs(release):
    def ticket_closed(c: RunContext) -> bool:
        return release.wait(120)

    checks = [predicate(ticket_closed, "the ticket is open", timeout=0.2), predicate(lambda c: False, "next")]
    assert verdict(checks, limit=30) == Verdict(["`ticket_closed` did not finish within 0.2 s", "next"])


@pytest.mark.timeout(60)
def test_a_hung_part_of_all_of_is_named_and_the_other_parts_still_run(release):
    def hangs(c: RunContext) -> list[str]:
        release.wait(120)
        return []

    checks = [
        all_of(predicate(lambda c: False, "first"), within(0.2, hangs), predicate(lambda c: False, "last"))
    ]
    assert verdict(checks, limit=30) == Verdict(["first", "`hangs` did not finish within 0.2 s", "last"])


@pytest.mark.timeout(60)
def test_a_time_budget_shorter_than_the_verifiers_timeout_still_cuts_the_run(release):
    def hangs(c: RunContext) -> list[str]:
        release.wait(120)
        return []

    assert verdict([within(30, hangs)], limit=0.2) == Verdict([], budget_cut=True)


def test_a_timeout_error_the_verifier_raises_itself_is_its_error_not_the_budget():
    """It was taken for the time budget running out: the run ended `limit` for a verifier's bug."""

    def raises(c: RunContext) -> list[str]:
        raise TimeoutError("the check's own HTTP call timed out")

    with pytest.raises(TimeoutError, match="own HTTP call"):
        verdict([raises], limit=30)


@pytest.mark.timeout(60)
def test_a_run_whose_verifier_hangs_tells_the_model_and_goes_on_with_no_seconds_budget(short_default):
    """The loop with no time budget: the hung check is a failed `finish`; the model's next one passes."""
    calls = []
    held = threading.Event()

    def tests_pass(c: RunContext) -> list[str]:
        calls.append(c.note)
        if len(calls) == 1:
            held.wait(120)  # the model's code hangs the first time
        return []

    agent = Agent(
        name="hangs",
        model=ScriptedModel([[finish("done", "first try")], [finish("done", "fixed the hang")]]),
        verifiers=[tests_pass],
        budget=Budget(max_turns=5),
    )
    result = agent.run("task")
    held.set()
    assert (result.reason, result.output) == (StopReason.SUCCESS, "fixed the hang")
    assert result.verifier_failures == ("`tests_pass` did not finish within 0.3 s",)
    seen = agent.model.requests[1].messages[-1]["content"][0]
    assert seen["is_error"] and "`tests_pass` did not finish within 0.3 s" in seen["content"]


@pytest.mark.parametrize(
    ("make", "says"),
    [
        (lambda: within(0, lambda c: []), "within()'s timeout is a number of seconds > 0"),
        (lambda: within("60", lambda c: []), "say timeout=600; not '60'"),
        (lambda: within(float("inf"), lambda c: []), "not inf"),
        (lambda: within(5, "check"), "within(seconds, verifier) takes a function of the RunContext, not str"),
        (
            lambda: predicate(lambda c: True, "r", timeout=-1),
            "predicate()'s timeout is a number of seconds > 0",
        ),
        (lambda: evaluator(ScriptedModel([]), "c", timeout=None), "evaluator()'s timeout is a number"),
    ],
)
def test_a_bad_verifier_timeout_is_refused_saying_what_to_write(make, says):
    with pytest.raises(ConfigError) as info:
        make()
    assert says in str(info.value)


@pytest.mark.timeout(60)
def test_a_foreign_runs_hung_verifier_is_a_failure_not_a_held_run(release, short_default):
    def never_returns(c: RunContext) -> list[str]:
        release.wait(120)
        return []

    with observe_run(NoHooks(), agent="raw_loop", task_type="t", verifiers=[never_returns]) as run:
        run.stop("success")
    assert run.result is not None
    assert (run.result.reason, run.result.verified) == (StopReason.SUCCESS, False)
    assert run.result.verifier_failures == ("`never_returns` did not finish within 0.3 s",)


def test_a_foreign_runs_verifier_that_raises_still_ends_it_error():
    def broken(c: RunContext) -> list[str]:
        raise ValueError("bad check")

    with observe_run(NoHooks(), agent="raw_loop", task_type="t", verifiers=[broken]) as run:
        run.stop("success")
    assert run.result is not None and run.result.reason is StopReason.ERROR
    assert "ValueError: bad check" in run.result.note


@pytest.mark.timeout(60)
def test_temporals_verify_activity_bounds_each_verifier_and_runs_async_ones(release, short_default):
    """The worker's verify activity ran each verifier in `asyncio.to_thread` with no bound (an
    `async def` one's coroutine was iterated: a TypeError)."""

    def hangs(c: RunContext) -> list[str]:
        release.wait(120)
        return []

    async def cites(c: RunContext) -> list[str]:
        return [] if "http" in c.note else ["no source cited"]

    catalog = Catalog()
    catalog.register("checked", lambda state: Agent("checked", ScriptedModel([]), verifiers=[hangs, cites]))
    run = {"run_id": "r-1", "agent": "checked", "task": "t", "task_type": "default", "state": {}}
    failures = asyncio.run(
        ActivityEnvironment().run(EndstateActivities(catalog).verify, {"run": run, "note": "done"})
    )
    assert failures == ["`hangs` did not finish within 0.3 s", "no source cited"]


def test_a_verifier_returning_no_list_is_named_when_it_is_a_part():
    def forgot_return(c: RunContext) -> None:
        return None

    with pytest.raises(VerifierError, match="verifier 'forgot_return' returned None"):
        verdict([all_of(forgot_return)])


@pytest.mark.timeout(60)
def test_a_timeout_attribute_of_a_verifier_class_of_yours_is_not_taken_for_its_bound(release, short_default):
    """A class's own `timeout` (its HTTP client's, None for none) does not unbound it, nor set its bound."""

    class HealthCheck:
        timeout = None  # the client's: wait as long as the server takes

        def __call__(self, c: RunContext) -> list[str]:
            release.wait(120)
            return []

    assert verdict([HealthCheck()]) == Verdict(["`HealthCheck` did not finish within 0.3 s"])


temporal = temporal_fixture()


@pytest.mark.timeout(300)
def test_on_temporal_the_verify_activity_lasts_as_long_as_the_verifiers_may(temporal: TemporalServer):
    """The verify activity was ended at the worker's `model_timeout` whatever the verifiers' own
    timeouts said: a check within its 30 s that took longer than that ended the run `error`."""

    def slow_tests(c: RunContext) -> list[str]:
        time.sleep(4)  # longer than the worker's model_timeout below, well within its own 30 s
        return []

    def build(state: dict) -> Agent:
        checks = [within(30, slow_tests)]
        return Agent("slow-check", ScriptedModel([[finish("done", "ok")]]), verifiers=checks)

    catalog = Catalog()
    catalog.register("slow-check", build)

    async def scenario() -> None:
        async with serving(temporal, catalog, model_timeout=2.0) as runs:
            result = await runs.start("slow-check", "check it")
        assert (result.reason, result.verified) == (StopReason.SUCCESS, True), result.note

    asyncio.run(scenario())
