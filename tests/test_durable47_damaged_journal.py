"""A suspended run whose stored journal was damaged is refused with what is wrong and how to fix
it, changes nothing, and leaves the store's other runs answerable (durable47; SQLite and PostgreSQL)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from damaged_journals import drop_entry
from test_runner_agents import catalog, counted, counter_state

from agent.clock import SystemClock
from agent.durable.runner import Runner
from agent.durable.store import StoreError, open_store
from agent.result import StopReason


def asked(store_url: str, folder: Path) -> str:
    """A `counter` run that waits for an answer; its id."""
    runner = Runner(open_store(store_url), catalog())
    try:
        result = asyncio.run(runner.start("counter", "count", state=counter_state(folder, "ask")))
    finally:
        runner.store.close()
    assert result.reason is StopReason.NEED_HELP
    return result.run_id


@pytest.mark.parametrize("last", [False, True], ids=["a hole", "its end"])
def test_an_answer_to_a_run_missing_a_journal_entry_says_how_to_fix_it_and_the_others_go_on(
    store_url: str, tmp_path: Path, last: bool
) -> None:
    damaged, fine = asked(store_url, tmp_path / "damaged"), asked(store_url, tmp_path / "fine")
    drop_entry(store_url, damaged, last)
    runner = Runner(open_store(store_url), catalog())
    try:
        before = runner.store.get(damaged)
        with pytest.raises(StoreError) as refused:
            asyncio.run(runner.resume(damaged, "2"))
        said = str(refused.value)
        assert f"run {damaged}" in said and "nothing was changed" in said
        assert "restore" in said and f"`endstate end {damaged}`" in said  # how to fix it
        assert runner.store.get(damaged) == before and counted(tmp_path / "damaged") == [1]
        assert asyncio.run(runner.resume(fine, "2")).reason is StopReason.SUCCESS
        assert counted(tmp_path / "fine") == [1, 2]
    finally:
        runner.store.close()


class _Later(SystemClock):
    """The system's clock two hours on: the runs' deadlines (an hour) have passed for this runner."""

    def time(self) -> float:
        return super().time() + 7200


def test_a_run_missing_a_journal_entry_ended_at_its_deadline_says_resume_not_end(
    store_url: str, tmp_path: Path
) -> None:
    damaged = asked(store_url, tmp_path / "damaged")
    drop_entry(store_url, damaged, last=False)
    runner = Runner(open_store(store_url), catalog(), clock=_Later())
    try:
        assert asyncio.run(runner.sweep()) == []  # it cannot be expired: it ends, saying why
        record = runner.store.get(damaged)
        assert record is not None and (record.stop_reason, record.error_type) == ("error", "bad_snapshot")
        assert "journal entry 1 is missing" in record.note and "restore" in record.note
        assert f"`endstate resume {damaged}` continues it" in record.note
        assert "endstate end" not in record.note and "nothing was changed" not in record.note  # it ended
    finally:
        runner.store.close()
