"""temporal54: `runs`/`pending` over Temporal by `agent` or `task_type` read a bounded part of the queue.

Before: a name Temporal's visibility query cannot quote (a quote, a backslash, a character that is not
printable) was left out of the query and checked by the client, which so paged every run of the task queue
(2,000 runs: 1.1 s against 0.01 s for a name it quotes, measured here). Now the query narrows by the name's
longest start it can quote (`STARTS_WITH`), the client keeps the exact name; a name that begins with such a
character has no such start: the listing refuses it (`ConfigError`, HTTP 400) rather than page the whole
queue, and a start over Temporal refuses it, so a run made by Endstate's client never has one.

Against a real Temporal Server (the `temporal` dev server); the runs never meet a worker (they stay
`running`), which is all a listing needs.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest
from starlette.testclient import TestClient
from temporal_server import TemporalServer, temporal_fixture
from temporalio.common import SearchAttributePair, TypedSearchAttributes

from agent.cli.main import main
from agent.errors import ConfigError
from agent.service.app import Service, create_app
from agent.service.auth import Token
from agent.temporal import TemporalRuns
from agent.temporal import _wire as w
from agent.temporal.service import Bridge, TemporalRunner

pytestmark = pytest.mark.slow

temporal = temporal_fixture()
TOKEN = "test-token-0123456789abcdef"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
HOSTILE = "x' OR '1'='1"  # a quote that would close the query's string: never sent in it
NAMES = {
    "o'brien": 3,
    "other": 4,
    "zeta": 12,
    HOSTILE: 2,
    "xylophone": 3,
    "50%'s": 2,
    "50 cents": 3,
    "tab\there": 2,
}
LEADING = "'lead"  # begins with a quote: no start of it the query can quote


async def made(server: TemporalServer) -> TemporalRuns:
    """A queue holding `NAMES`' runs (and two of `LEADING`, started by hand as a run from before could be),
    each listed by visibility."""
    runs = await TemporalRuns.connect(server.address, task_queue=f"t54-f-{uuid.uuid4().hex[:8]}")
    for name, count in NAMES.items():
        for _ in range(count):
            await runs.start(name, "Task.", wait=False)
    for i in range(2):
        await runs.client.start_workflow(
            w.WORKFLOW,
            {"agent": LEADING, "task": "Task."},
            id=f"lead-{i}-{uuid.uuid4().hex[:8]}",
            task_queue=runs.task_queue,
            search_attributes=TypedSearchAttributes([SearchAttributePair(w.SA_AGENT, LEADING)]),
        )
    total = sum(NAMES.values()) + 2
    for _ in range(600):
        if len(await runs.runs(limit=None)) == total:
            return runs
        await asyncio.sleep(0.1)
    raise AssertionError("visibility never listed the runs")


def paging(runs: TemporalRuns) -> list[int]:
    """Count the executions each listing pages from Temporal (one count a listing, in order)."""
    counts: list[int] = []
    listing = runs.client.list_workflows

    def counted(query: str, **options: Any) -> AsyncIterator[Any]:
        async def each() -> AsyncIterator[Any]:
            counts.append(0)
            async for execution in listing(query, **options):
                counts[-1] += 1
                yield execution

        return each()

    runs.client.list_workflows = counted  # type: ignore[method-assign]
    return counts


def test_a_name_the_query_cannot_quote_pages_only_the_runs_whose_names_begin_as_it_does(
    temporal: TemporalServer,
) -> None:
    async def scenario() -> None:
        runs = await made(temporal)
        paged = paging(runs)
        for name, count in NAMES.items():
            found = await runs.runs(limit=None, agent=name)
            assert [r.agent for r in found] == [name] * count, name
        by_name = dict(zip(NAMES, paged, strict=True))
        assert by_name["zeta"] == NAMES["zeta"]  # quoted as it is
        assert by_name["o'brien"] == NAMES["o'brien"] + NAMES["other"]  # was: every run of the queue
        assert by_name[HOSTILE] == NAMES[HOSTILE] + NAMES["xylophone"]
        assert by_name["50%'s"] == NAMES["50%'s"]  # a '%' in the start is the character, not a wildcard
        assert by_name["tab\there"] == NAMES["tab\there"]
        assert await runs.pending(agent="o'brien") == []  # none waits: the same narrowing, no error

    asyncio.run(scenario())


def test_a_name_that_begins_with_what_the_query_cannot_quote_is_refused_not_paged_for(
    temporal: TemporalServer,
) -> None:
    async def scenario() -> None:
        runs = await made(temporal)
        paged = paging(runs)
        for listing in (
            runs.runs(agent=LEADING),
            runs.runs(task_type="\\batch"),
            runs.pending(agent="\x1bx"),
        ):
            with pytest.raises(ConfigError, match="cannot be looked up in Temporal's visibility"):
                await listing
        assert paged == []  # refused before any page was read (was: every run of the queue)
        with pytest.raises(ConfigError, match="begins with"):
            await runs.start(LEADING, "Task.", wait=False)
        with pytest.raises(ConfigError, match="begins with"):
            await runs.start("fine", "Task.", task_type='"quoted"', wait=False)
        assert len(await runs.runs(limit=None)) == sum(NAMES.values()) + 2  # nothing was started

    asyncio.run(scenario())


def test_serve_temporal_answers_such_a_filter_with_a_400(temporal: TemporalServer) -> None:
    def use(address: str, queue: str) -> tuple[int, str, int]:
        bridge = Bridge()
        try:
            here = bridge.call(TemporalRuns.connect(address, task_queue=queue))
            service = Service(TemporalRunner(here, bridge), Token(TOKEN), sweep_interval=3600)
            with TestClient(create_app(service), base_url="http://127.0.0.1:8000") as api:
                refused = api.get("/runs", params={"agent": LEADING}, headers=AUTH)
                listed = api.get("/runs", params={"agent": "o'brien"}, headers=AUTH)
                return refused.status_code, refused.text, len(listed.json()["runs"])
        finally:
            bridge.close()
            bridge.loop.close()

    async def scenario() -> tuple[int, str, int]:
        runs = await made(temporal)
        return await asyncio.to_thread(use, temporal.address, runs.task_queue)

    status, said, listed = asyncio.run(scenario())
    assert status == 400 and "cannot be looked up" in said, said
    assert listed == NAMES["o'brien"]


def test_the_command_refuses_such_a_filter_in_one_line_with_exit_2(
    temporal: TemporalServer, capsys: pytest.CaptureFixture[str]
) -> None:
    runs = asyncio.run(made(temporal))
    on = ["--temporal", temporal.address, "--task-queue", runs.task_queue]
    capsys.readouterr()
    for argv in (["runs", "--agent", LEADING], ["pending", "--task-type", "\\batch"]):
        assert main([*argv, *on]) == 2, argv  # was 0: every run of the queue read
        err = capsys.readouterr().err
        assert err.startswith("endstate: ") and err.count("\n") == 1, err
        assert "cannot be looked up in Temporal's visibility" in err, err
    assert main(["runs", "--agent", "o'brien", "--json", *on]) == 0
    listed = [json.loads(line)["agent"] for line in capsys.readouterr().out.splitlines()]
    assert listed == ["o'brien"] * NAMES["o'brien"]
