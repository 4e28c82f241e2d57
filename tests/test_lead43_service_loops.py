"""The service's periodic loops (deadline sweep, audits, recovery) go on after a failure that is no
EndstateError (a bug, a driver's own exception): one that escaped ended its loop for good, and
nothing said so until the process ended ("Task exception was never retrieved")."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import pytest

from agent.durable.runner import Runner
from agent.durable.store import open_store
from agent.examples.scenarios import example_catalog
from agent.service.app import Service
from agent.service.auth import Token


def test_the_sweep_and_the_audits_go_on_after_an_unexpected_failure(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    store = open_store(str(tmp_path / "runs.db"))
    catalog = example_catalog(tmp_path / "worlds")
    runner = Runner(store, catalog)
    calls = {"sweep": 0, "audit": 0}

    async def expiry_jobs(**where: object) -> list:  # the service's sweep (`calls` in `where`)
        calls["sweep"] += 1
        if calls["sweep"] == 1:
            raise RuntimeError("a driver's own failure")
        return []

    async def audit_due() -> None:
        calls["audit"] += 1
        if calls["audit"] == 1:
            raise KeyError("a bug")

    runner.aexpiry_jobs = expiry_jobs  # type: ignore[method-assign]
    runner.audit_due = audit_due  # type: ignore[method-assign]
    service = Service(runner, Token("t" * 32), sweep_interval=0.02)

    async def main() -> None:
        async with service.lifespan(None):  # type: ignore[arg-type]
            for _ in range(500):
                if calls["sweep"] >= 3 and calls["audit"] >= 3:
                    break
                await asyncio.sleep(0.02)

    try:
        with caplog.at_level(logging.ERROR):
            asyncio.run(asyncio.wait_for(main(), 60))
    finally:
        catalog.close()
        store.close()
    assert calls["sweep"] >= 3 and calls["audit"] >= 3, calls
    failed = [r for r in caplog.records if "trying again later" in r.getMessage()]
    assert {r.getMessage() for r in failed} >= {
        "the deadline sweep failed; trying again later",
        "making the due success audits failed; trying again later",
    }
    assert all(r.exc_info for r in failed)  # not ours: the traceback says where
