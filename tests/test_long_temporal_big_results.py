"""A tool result or state too large for one Temporal payload: the tool runs once and the run ends named.

The tool activity's answer was sent whole: one over the server's blob size limit (2 MiB by default) was
refused, and Temporal ran the tool again, 5 times in all (an export written 5 times), before the run went
on without its result. Now an answer over 2 MB is the tool's error, the tool having run once, and a state
that large stops the run `error`/`payload_too_large`."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from temporal_server import TemporalServer, serving, temporal_fixture

from agent import Agent, Budget, RunContext, tool
from agent.durable.runner import Catalog
from agent.journal import Entry, Result
from agent.models.base import ModelRequest
from agent.models.scripted import ScriptedModel, call, finish
from agent.result import RunResult, StopReason

pytestmark = pytest.mark.slow

temporal = temporal_fixture()
ROWS = 750_000  # "row\n" each: 3,750,002 bytes of JSON, over Temporal's 2 MiB blob size limit


def exporter(ran: list[str], seen: list[Entry]) -> Catalog:
    """`export` returns a big table; `remember` keeps one in the run's state. Each call is noted in `ran`,
    and the last entry the model was sent after it in `seen`."""

    @tool
    def export(table: str) -> str:
        """Export a table and return its rows."""
        ran.append(f"export {table}")
        return "row\n" * ROWS

    @tool
    def remember(ctx: RunContext, table: str) -> str:
        """Keep a table's rows in the run's state."""
        ran.append(f"remember {table}")
        ctx.state["rows"] = "row\n" * ROWS
        return "kept"

    def then_finish(request: ModelRequest) -> list[dict[str, Any]]:
        seen.append(request.journal[-1])
        return [finish("done", "exported")]

    catalog = Catalog()
    for name in ("export", "remember"):
        script = [[call(name, table="orders")], then_finish]
        catalog.register(
            name,
            lambda state, s=script, n=name: Agent(
                n, ScriptedModel(s), tools=[export, remember], budget=Budget(max_turns=5)
            ),
        )
    return catalog


def started(temporal: TemporalServer, catalog: Catalog, agent: str) -> RunResult:
    async def scenario() -> RunResult:
        async with serving(temporal, catalog) as runs:
            result = await runs.start(agent, "Export the orders")
            assert isinstance(result, RunResult)
            return result

    return asyncio.run(scenario())


def test_a_result_over_a_payload_is_the_tools_error_and_the_tool_runs_once(temporal: TemporalServer) -> None:
    ran: list[str] = []
    seen: list[Entry] = []
    result = started(temporal, exporter(ran, seen), "export")
    assert ran == ["export orders"]  # was: 5 times, each answer refused by the server
    [told] = seen
    assert isinstance(told, Result) and told.is_error
    assert "ran, but its result is 3,750,002 bytes, over the 2,000,000" in told.text
    assert "a page, a range, a filter" in told.text
    assert result.reason is StopReason.SUCCESS  # the model was told, and went on


def test_a_state_over_a_payload_stops_the_run_named_and_the_tool_runs_once(temporal: TemporalServer) -> None:
    ran: list[str] = []
    result = started(temporal, exporter(ran, []), "remember")
    assert ran == ["remember orders"]
    assert (result.reason, result.error_type) == (StopReason.ERROR, "payload_too_large"), result.note
    assert "the run's state is" in result.note and "after the call of 'remember'" in result.note


def test_a_verification_whose_failures_pass_a_payload_is_cut_and_the_run_goes_on(
    temporal: TemporalServer,
) -> None:
    """A check that fails with a test suite's whole output (3 MB): its answer was refused and the verifiers
    run again (3 times in all, then the run ended `error`, "A verifier raised PayloadsTooLarge"), so a
    check that passed when run again (a flaky suite) made the failed verification a success the model was
    never told of. Now the failures are cut to fit, the model is told, and its next `done` is checked."""
    checked: list[int] = []
    seen: list[Entry] = []

    def suite(ctx: RunContext) -> list[str]:
        checked.append(1)
        return ["FAILED test_orders\n" + "E   assert row\n" * (ROWS // 4)] if len(checked) == 1 else []

    def again(request: ModelRequest) -> list[dict[str, Any]]:
        seen.append(request.journal[-1])
        return [finish("done", "fixed")]

    script = [[finish("done", "fixed")], again]
    catalog = Catalog()
    catalog.register("fixer", lambda state: Agent("fixer", ScriptedModel(script), verifiers=[suite]))
    result = started(temporal, catalog, "fixer")
    assert len(seen) == 1, "the model was never told its done was rejected"
    assert (result.reason, result.verified) == (StopReason.SUCCESS, True), result.note
    assert len(checked) == 2
    [told] = seen
    assert isinstance(told, Result) and told.text.startswith("Criterion not met: FAILED test_orders")
