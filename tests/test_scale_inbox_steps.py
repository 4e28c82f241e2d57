"""A waiting run's last steps (the inbox, `/pending`'s briefings, the review pages) are read from its
journal's end, not from the whole journal: a page of 50 long runs decoded every entry of each."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from damaged_journals import drop_entry

import agent.snapshot
from agent import Agent, Budget, NoHooks, tool
from agent.durable.runner import Catalog, Runner
from agent.durable.store import open_store
from agent.models.scripted import ScriptedModel, call, finish
from agent.service.briefing import STEPS_SHOWN, journal_end, last_steps, steps_of


@tool
def note(n: int) -> str:
    """Write down a number."""
    return f"noted {n}"


def waiting_run(url: str, turns: int, calls_a_turn: int = 1) -> str:
    """A run that calls `note` for `turns` turns (`calls_a_turn` calls each), then asks a question."""
    steps: list[Any] = [[call("note", n=t * 1000 + i) for i in range(calls_a_turn)] for t in range(turns)]
    steps.append([finish("need_help", "Which number next?")])
    catalog = Catalog()
    catalog.register(
        "noter",
        lambda state: Agent(
            "noter", ScriptedModel(steps), tools=[note], budget=Budget(max_turns=turns + 5), hooks=NoHooks()
        ),
    )
    store = open_store(url)
    result = asyncio.run(Runner(store, catalog, hooks=NoHooks()).start("noter", "note numbers"))
    store.close()
    assert result.reason == "need_help"
    return result.run_id


def decoded_in(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """A list that counts the journal entries decoded from now on."""
    decoded: list[int] = []
    decode = agent.snapshot.decode_entry

    def counting(data: Any, index: int) -> Any:
        decoded.append(index)
        return decode(data, index)

    monkeypatch.setattr(agent.snapshot, "decode_entry", counting)
    return decoded


def test_the_last_steps_of_a_long_run_read_only_its_end(
    store_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = store_url
    run_id = waiting_run(url, turns=1_500)
    store = open_store(url)
    record = store.get(run_id)
    assert record is not None and (record.journal_length or 0) > 3_000
    whole = last_steps(store.snapshot(run_id))
    decoded = decoded_in(monkeypatch)
    steps, unreadable = steps_of(store, record)
    store.close()
    assert unreadable == "" and steps == whole and len(steps) == STEPS_SHOWN
    assert [s.arguments for s in steps] == [f'{{"n": {n}}}' for n in range(1_495_000, 1_500_000, 1_000)]
    assert len(decoded) <= 64, len(decoded)  # was every entry: 3,000 and more


def test_a_reply_of_many_calls_is_read_back_to_the_reply(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The last calls' arguments are in the reply that made them, 100 results back: the end read grows
    until it holds that reply (arguments shown as the whole journal shows them)."""
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    run_id = waiting_run(url, turns=30, calls_a_turn=100)
    store = open_store(url)
    whole = last_steps(store.snapshot(run_id))
    decoded = decoded_in(monkeypatch)
    end = journal_end(store, run_id)
    store.close()
    assert end is not None and last_steps(end) == whole
    assert [s.arguments for s in whole] == [f'{{"n": {n}}}' for n in range(29_095, 29_100)]
    assert len(decoded) < 3 * 256, len(decoded)  # 64, 128, 256: not the 6,000 entries


def test_a_short_run_is_read_whole(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    run_id = waiting_run(url, turns=3)
    store = open_store(url)
    end, whole = journal_end(store, run_id), store.snapshot(run_id)
    store.close()
    assert end is not None and whole is not None and end.journal == whole.journal


@pytest.mark.parametrize("last", [True, False])
def test_a_damaged_end_is_still_told(store_url: str, last: bool) -> None:
    """An entry missing from the end read (or the journal's last ones lost) is told as when the whole
    journal was read; one missing before the end read is for resuming to find (`snapshot`)."""
    run_id = waiting_run(store_url, turns=100)
    store = open_store(store_url)
    record = store.get(run_id)
    assert record is not None
    if last:
        drop_entry(store_url, run_id, last=True)
        steps, unreadable = steps_of(store, record)
        assert steps == [] and "its last 1 is missing" in unreadable
    else:
        drop_entry(store_url, run_id, last=False)  # the second entry, far before the end
        steps, unreadable = steps_of(store, record)
        assert unreadable == "" and len(steps) == STEPS_SHOWN
    store.close()
