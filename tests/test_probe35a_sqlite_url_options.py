"""A `sqlite:` store URL with options, as SQLAlchemy and SQLite's own URIs take them
(`sqlite:///runs.db?mode=ro`, `?timeout=30`): Endstate takes none, and the options became part of the
file's name, so `start` made a new, empty store `runs.db?mode=ro` (a read-only wish answered with a
writable store) and its runs were in a store no command with the plain URL reads. Now such a URL
naming no store is refused, saying why and what to give instead; nothing is created.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from test_service_support import endstate

from agent.durable.store import StoreError, open_store


@pytest.mark.parametrize("options", ["mode=ro", "timeout=30", "cache=shared&mode=rwc"])
def test_a_sqlite_url_with_options_is_refused_and_creates_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, options: str
) -> None:
    monkeypatch.chdir(tmp_path)
    open_store("runs.db").close()  # the store the user means
    before = sorted(os.listdir(tmp_path))
    with pytest.raises(StoreError) as refused:
        open_store(f"sqlite:///runs.db?{options}")
    message = str(refused.value)
    assert f"has options ({options}), which Endstate does not take" in message, message
    assert "Give the URL without them (sqlite:///runs.db)" in message, message
    assert sorted(os.listdir(tmp_path)) == before  # nothing new beside it


def test_start_with_a_sqlite_url_with_options_exits_2_and_starts_nothing(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'runs.db'}?mode=ro"
    done = endstate(
        "start", "invoice-downloader", "Get the invoice", "--scenario", "invoice/which-one", store=url
    )
    assert done.returncode == 2, done.stdout + done.stderr
    assert "which Endstate does not take" in done.stderr and "Traceback" not in done.stderr
    assert not any(p.name.startswith("runs.db") for p in tmp_path.iterdir())


def test_a_store_file_whose_name_holds_a_question_mark_still_opens(tmp_path: Path) -> None:
    """One that exists is opened as before, by a plain path or a sqlite: URL."""
    odd = tmp_path / "runs?.db"
    open_store(str(odd)).close()
    for url in (str(odd), f"sqlite:///{odd}"):
        store = open_store(url)
        try:
            assert store.list_runs() == []
        finally:
            store.close()
