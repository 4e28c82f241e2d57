"""Verifiers a user writes: an `async def` one that swallows its cancellation (a bare `except:` in a
retry loop) is cut at the time budget all the same (the run stops `limit`/`seconds`, its late verdict
not taken); a command whose output is no UTF-8 is a failure for the model, not the run's error."""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path

import pytest

from agent import Agent, Budget, ConfigError, LimitKind, RunContext, StopReason, all_of, command, predicate
from agent.models.scripted import ScriptedModel, finish
from agent.verify import CommandVerifier


async def polls_until_green(ctx: RunContext) -> list[str]:
    """Polls a CI status, retrying on any failure: gives up after 60 half-second waits (30 s), so the
    old code ends the test late rather than hanging it."""
    for _ in range(60):
        try:
            await asyncio.sleep(0.5)
        except:  # noqa: E722  # the mistake under test: it catches CancelledError too
            continue
    return []  # "green": a verdict that came after the budget ran out


def test_an_async_verifier_that_swallows_its_cancellation_is_cut_at_the_time_budget() -> None:
    model = ScriptedModel([[finish("done", "the build is green")]])
    agent = Agent("ci", model, verifiers=[polls_until_green], budget=Budget(max_seconds=0.5))
    start = time.monotonic()
    result = agent.run("Make the build green.")
    took = time.monotonic() - start
    assert (result.reason, result.limit) == (StopReason.LIMIT, LimitKind.SECONDS), result.note
    assert not result.verified
    assert took < 12, f"the verifier held the run {took:.1f} s with a 0.5 s budget"


def test_an_async_verifier_still_gives_its_verdict() -> None:
    async def rejects_once(ctx: RunContext) -> list[str]:
        await asyncio.sleep(0.01)
        return [] if "again" in ctx.note else ["no tests ran"]

    model = ScriptedModel([[finish("done", "green")], [finish("done", "green again")]])
    result = Agent("ci", model, verifiers=[rejects_once], budget=Budget(max_seconds=30)).run("Make it green.")
    assert (result.reason, result.verified, result.verifier_failures) == (
        StopReason.SUCCESS,
        True,
        ("no tests ran",),
    )


def test_a_command_whose_output_is_no_utf8_fails_back_to_the_model_not_the_run() -> None:
    failing = "import sys; sys.stdout.buffer.write(b'FAILED test_caf\\xe9.py'); sys.exit(1)"
    model = ScriptedModel([[finish("done", "fixed")], [finish("give_up", "the test still fails")]])
    agent = Agent("ci", model, verifiers=[command(sys.executable, "-c", failing)], budget=Budget(max_turns=5))
    result = agent.run("Fix the test.")
    assert (result.reason, result.error_type) == (StopReason.GAVE_UP, None), result.note
    (failure,) = result.verifier_failures
    assert "exited 1" in failure and "FAILED test_caf\ufffd.py" in failure


def test_a_command_given_as_paths_names_its_failure_back_to_the_model() -> None:
    script = Path(sys.executable)  # a path among the words, which the verifier takes
    check = CommandVerifier((script, "-c", "import sys; print('2 failed'); sys.exit(1)"))
    model = ScriptedModel([[finish("done", "fixed")], [finish("give_up", "still failing")]])
    result = Agent("ci", model, verifiers=[check], budget=Budget(max_turns=5)).run("Fix it.")
    assert (result.reason, result.error_type) == (StopReason.GAVE_UP, None), result.note
    (failure,) = result.verifier_failures
    assert failure.startswith(f"`{script} -c ") and "exited 1:\n2 failed" in failure


def test_an_async_def_verifier_inside_all_of_gives_its_reasons() -> None:
    async def links_open(ctx: RunContext) -> list[str]:
        await asyncio.sleep(0.01)
        return [] if "v2" in ctx.note else ["a cited link does not open"]

    checks = all_of(links_open, predicate(lambda ctx: True, "never"))
    model = ScriptedModel([[finish("done", "report v1")], [finish("done", "report v2")]])
    result = Agent("researcher", model, verifiers=[checks], budget=Budget(max_turns=5)).run("Write it.")
    assert (result.reason, result.verified) == (StopReason.SUCCESS, True), result.note
    assert result.verifier_failures == ("a cited link does not open",)


def test_a_part_of_all_of_that_returns_no_list_is_named_as_a_verifier_at_the_top_is() -> None:
    def forgot_return(ctx: RunContext) -> list[str]:
        ctx.state["checked"] = True  # and no return: None
        return None  # type: ignore[return-value]

    model = ScriptedModel([[finish("done", "done")]])
    result = Agent("a", model, verifiers=[all_of(forgot_return)]).run("Do it.")
    assert (result.reason, result.error_type) == (StopReason.ERROR, "verifier_error")
    assert "verifier 'forgot_return' returned None (NoneType): a verifier returns a list" in result.note


def test_an_async_def_predicate_that_says_no_is_a_failure_not_a_success() -> None:
    async def deployed(ctx: RunContext) -> bool:
        await asyncio.sleep(0)
        return False  # the coroutine itself is true: the done was taken, verified

    model = ScriptedModel([[finish("done", "deployed it")], [finish("give_up", "cannot deploy")]])
    agent = Agent("deployer", model, verifiers=[predicate(deployed, "the service is not deployed")])
    result = agent.run("Deploy the service.")
    assert (result.reason, result.verified) == (StopReason.GAVE_UP, False)
    assert result.verifier_failures == ("the service is not deployed",)


def test_a_command_told_to_show_no_output_shows_none() -> None:
    loud = CommandVerifier((sys.executable, "-c", "print('x' * 5000); raise SystemExit(1)"), tail_chars=0)
    (failure,) = loud(RunContext("r", "a", "t", "x"))
    assert failure.endswith("exited 1") and "xxx" not in failure  # [-0:] was the whole output


def test_a_negative_tail_is_refused_when_made() -> None:
    with pytest.raises(ConfigError, match="tail_chars is a whole number >= 0, not -5"):
        CommandVerifier(("true",), tail_chars=-5)
