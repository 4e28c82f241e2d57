"""A long run on Temporal: each chunk of its journal (and of its calls) is decoded once on a worker.

Every model call's input names the journal's settled prefix by chunks, which the worker keeps; but it
decoded every chunk again at every call (and every tool call that takes the context its calls'), so a
turn's cost grew with the run: a turn of a 2,000-turn run took 2.6 times one at its start, and the
decoded copies the scripted model keeps made garbage collections of seconds. Now a chunk is decoded at
its first call and kept decoded with the run's texts: a call decodes its tail (under `CHUNK` entries)
and the chunks it has not seen. Counted, not timed."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from temporal_server import TemporalServer, serving, temporal_fixture

from agent import Agent, Budget, RunContext, tool
from agent.context import CallRecord
from agent.durable.runner import Catalog
from agent.journal import Entry, Result
from agent.models.base import ModelRequest
from agent.models.scripted import ScriptedModel, call, finish, say
from agent.result import RunResult, StopReason
from agent.temporal import _activities
from agent.temporal import _wire as w

pytestmark = pytest.mark.slow

temporal = temporal_fixture()
TURNS = 200  # 401 entries and 199 calls before the last turn: 6 chunks of the journal, 3 of the calls


class Seen:
    """What the model, the tool and the verifier were given."""

    def __init__(self) -> None:
        self.journals: list[tuple[Entry, ...]] = []
        self.calls: list[int] = []
        self.checked: list[tuple[Entry, ...]] = []


def counter(seen: Seen) -> Catalog:
    @tool
    def count(ctx: RunContext, n: int) -> str:
        """Count to n."""
        seen.calls.append(len(ctx.calls))
        assert [c.result for c in ctx.calls] == [f"counted {i}" for i in range(1, n)]
        return f"counted {n}"

    def step(i: int) -> Any:
        def play(request: ModelRequest) -> list[dict[str, Any]]:
            seen.journals.append(tuple(request.journal))
            return (
                [say(f"Counting {i}."), call("count", n=i)]
                if i <= TURNS - 1
                else [finish("done", "Counted.")]
            )

        return play

    def checked(ctx: RunContext) -> list[str]:
        seen.checked.append(tuple(ctx.journal.entries))
        return []

    catalog = Catalog()
    script = [step(i) for i in range(1, TURNS + 1)]
    catalog.register(
        "counter",
        lambda state: Agent(
            "counter",
            ScriptedModel(script),
            tools=[count],
            verifiers=[checked],
            budget=Budget(max_turns=TURNS + 5, max_seconds=600),
        ),
    )
    return catalog


def test_each_chunk_is_decoded_once_on_a_worker(
    temporal: TemporalServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen = Seen()
    decoded = [0]
    records = [0]
    decode, record = w.decode_entry, _activities.CallRecord

    def counted_decode(data: Any, index: int) -> Entry:
        decoded[0] += 1
        return decode(data, index)

    def counted_record(*args: Any) -> CallRecord:
        records[0] += 1
        return record(*args)

    monkeypatch.setattr(w, "decode_entry", counted_decode)
    monkeypatch.setattr(_activities, "CallRecord", counted_record)

    async def scenario() -> RunResult:
        async with serving(temporal, counter(seen)) as runs:
            result = await runs.start("counter", "Count")
            assert isinstance(result, RunResult)
            return result

    result = asyncio.run(scenario())
    assert result.reason is StopReason.SUCCESS and result.turns == TURNS, result.note

    lengths = [len(j) for j in seen.journals]
    assert lengths == [1 + 2 * i for i in range(TURNS)]
    last = seen.journals[-1]  # the journal as decoded, chunks and tail, is the run's, in order
    assert [e.text for e in last if isinstance(e, Result)] == [f"counted {i}" for i in range(1, TURNS)]
    [checked] = seen.checked
    assert checked[: len(last)] == last

    # each call decodes its tail (under a chunk) and each chunk once: was every entry at every call (40,000)
    tails = sum(n % w.CHUNK for n in [*lengths, len(checked)])
    assert decoded[0] <= tails + len(checked), (decoded[0], tails, sum(lengths))
    # and so for the calls a tool that takes the context is given: was every call at every call (19,900)
    assert seen.calls == list(range(TURNS - 1))
    call_tails = sum(n % w.CHUNK for n in [*seen.calls, TURNS - 1])
    assert records[0] <= call_tails + TURNS - 1, (records[0], call_tails, sum(seen.calls))


def test_decoded_chunks_count_toward_the_bound_on_what_a_worker_keeps() -> None:
    """A chunk kept decoded counts `DECODED_COST` times its JSON's characters among the run's texts: the
    least recently used runs go, texts and decoded chunks together, past the bound."""
    kept = _activities.KeptResults(10_000)
    entry = Result("toolu_1", "counted 1")
    kept.keep_as("a", "chunk-a", "x" * 500)
    kept.keep_chunk("a", "journal", "chunk-a", (entry,), 500)  # 500 + 8 * 500
    kept.keep_as("b", "chunk-b", "y" * 500)
    kept.keep_chunk("b", "journal", "chunk-b", (entry,), 500)  # 9,000 in all
    assert kept.chunk("a", "journal", "chunk-a") == (entry,) and kept.chunk("a", "calls", "chunk-a") is None
    kept.keep_as("c", "text-c", "z" * 1_500)  # 10,500: run a goes, its decoded chunk with it
    assert kept.get("a", "chunk-a") is None and kept.chunk("a", "journal", "chunk-a") is None
    assert kept.chunk("b", "journal", "chunk-b") == (entry,)
    kept.keep_chunk("a", "journal", "chunk-a", (entry,), 500)  # its definition is gone: not kept
    assert kept.chunk("a", "journal", "chunk-a") is None
    kept.drop("b")
    kept.keep_as("d", "text-d", "w" * 8_400)  # 1,500 + 8,400: within the bound once b's chunk is gone
    assert kept.get("c", "text-c") is not None
