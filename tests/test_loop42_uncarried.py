"""A sync tool or verifier that raises `StopIteration` or `GeneratorExit` ends as any other failure.

Both run on a daemon thread whose outcome comes back through an asyncio future, and a future carries
neither as itself: it refuses a `StopIteration` (so it was never settled, and the call "timed out",
or hung for ever with no timeout and no time budget: `next()` on an empty iterator in a tool), and a
`GeneratorExit` is thrown into the run's outermost coroutine, past every handler (it escaped
`Agent.run`). Now the tool's is its error result for the model, and the verifier's ends the run
`error` saying what it raised, as an `async def` tool's or verifier's already did.
"""

from __future__ import annotations

from agent import Agent, Budget, StopReason, tool, within
from agent.context import RunContext
from agent.journal import Result
from agent.models.scripted import ScriptedModel, call, finish


@tool(timeout=2)
def first_match(word: str) -> str:
    """The first line that holds the word."""
    return next(line for line in ["alpha", "beta"] if word in line)  # none: StopIteration


@tool(timeout=2)
def closed_stream() -> str:
    """Read a stream that a library closed."""
    raise GeneratorExit("the stream was closed")


def _tool_results(model: ScriptedModel) -> list[Result]:
    return [e for e in model.requests[-1].journal if isinstance(e, Result)]


def test_a_sync_tool_whose_next_finds_nothing_is_an_error_result_at_once_not_a_timeout() -> None:
    model = ScriptedModel([[call("first_match", word="gamma")], [finish("done", "none found")]])
    agent = Agent(name="finder", model=model, tools=[first_match], budget=Budget(max_seconds=None))

    result = agent.run("find gamma")

    assert (result.reason, result.turns) == (StopReason.SUCCESS, 2)
    [told] = _tool_results(model)
    assert told.is_error
    assert "StopIteration" in told.text and "timed out" not in told.text


def test_a_sync_tool_that_raises_generator_exit_is_an_error_result_and_the_run_goes_on() -> None:
    model = ScriptedModel([[call("closed_stream")], [finish("done", "gave up on the stream")]])
    agent = Agent(name="reader", model=model, tools=[closed_stream])

    result = agent.run("read the stream")  # raised GeneratorExit before

    assert (result.reason, result.turns) == (StopReason.SUCCESS, 2)
    [told] = _tool_results(model)
    assert told.is_error and told.text == "Error: GeneratorExit: the stream was closed"


def _no_rows(ctx: RunContext) -> list[str]:
    first = next(iter(ctx.state.get("rows", [])))
    return [] if first else ["the first row is empty"]


def _closed(ctx: RunContext) -> list[str]:
    raise GeneratorExit("closed")


def test_a_sync_verifier_that_raises_stop_iteration_ends_the_run_as_error_saying_so() -> None:
    model = ScriptedModel([[finish("done", "ok")]])
    agent = Agent(name="checked", model=model, verifiers=[within(2, _no_rows)])

    result = agent.run("check the rows")

    assert (result.reason, result.error_type) == (StopReason.ERROR, "verifier_error")
    assert "StopIteration" in result.note and "did not finish" not in result.note


def test_a_sync_verifier_that_raises_generator_exit_ends_the_run_as_error_not_an_exception() -> None:
    agent = Agent(name="checked", model=ScriptedModel([[finish("done", "ok")]]), verifiers=[_closed])

    result = agent.run("check")

    assert (result.reason, result.error_type) == (StopReason.ERROR, "verifier_error")
    assert "GeneratorExit: closed" in result.note
