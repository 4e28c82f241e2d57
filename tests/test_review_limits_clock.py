"""review: `endstate limits suggest --store --window` reckons its window by the run store's clock,
which stamped when each run ended, as the clock audit made pruning and the review queue do.

Its cutoff was this host's wall clock less the window: a laptop or host two days ahead of the
PostgreSQL server's clock found no run within `--window 1d` (every run it was asked about left out),
one behind counted runs from before the window. The store's clock is put two days behind this
host's by giving the store an offset clock expression."""

from __future__ import annotations

from pathlib import Path

import pg
import pytest
from test_clock_prune_time import BEHIND, DAY, _behind
from test_prune import finished

from agent.durable.store.postgres import CLOCK, PostgresStore
from agent.evals.limits import history_from_store


def test_limits_suggest_s_window_is_reckoned_by_the_store_s_clock(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = pg.url_for("postgres", tmp_path)
    store = _behind(url)
    try:
        now = store.now()
        finished(store, "an-hour-ago", now - 3600)
        finished(store, "three-days-ago", now - 3 * DAY)
    finally:
        store.close()
    monkeypatch.setattr(PostgresStore, "clock", f"({CLOCK} - {BEHIND})")  # the store the command opens
    history = history_from_store(url, window_seconds=DAY)
    assert [r.run_id for r in history.runs] == ["an-hour-ago"]
