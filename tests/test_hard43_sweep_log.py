"""A store that fails while the service sweeps (PostgreSQL restarted, its connections ended) is said
in one log line naming the cause, each time, not a traceback of thirty lines at every sweep."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any

import pytest

from agent.durable.runner import Catalog, Runner
from agent.durable.store import StoreError, open_store
from agent.service.app import Service
from agent.service.auth import Token

CAUSE = "the PostgreSQL run store failed: terminating connection due to administrator command"


def test_a_store_failing_during_the_sweep_is_one_line_naming_the_cause(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    store = open_store(str(tmp_path / "runs.db"))
    runner = Runner(store, Catalog())
    service = Service(runner, Token("t" * 32), sweep_interval=0.01)

    def down(*args: Any, **kwargs: Any) -> Any:
        raise StoreError(CAUSE)

    async def main() -> None:
        async with service.lifespan(None):  # type: ignore[arg-type]
            for name in ("expired", "due_audits", "interrupted"):
                monkeypatch.setattr(store, name, down)
            await asyncio.sleep(0.5)

    try:
        with caplog.at_level(logging.ERROR, logger="endstate.service"):
            asyncio.run(main())
    finally:
        store.close()
    failed = [r for r in caplog.records if "trying again later" in r.getMessage()]
    for what in (
        "the deadline sweep failed",
        "recovering runs failed",
        "making the due success audits failed",
    ):
        assert any(r.getMessage().startswith(what) for r in failed), (what, [r.getMessage() for r in failed])
    for record in failed:
        assert CAUSE in record.getMessage(), record.getMessage()
        assert record.exc_info is None, "a traceback where one line is due"
