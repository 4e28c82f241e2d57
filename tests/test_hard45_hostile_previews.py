"""A tool's `preview` that fails in any way is the preview's failure, shown on the inbox page.

Before, only an `Exception` raised by the preview was caught: a preview whose value fails to print
(`__str__` raises) made every `/inbox` page a 500, hiding every waiting run; a preview that raised
`SystemExit` (an argparse-based helper) or `KeyboardInterrupt` did so inside `wait_for`'s task,
which stopped the event loop: the service died the first time someone opened the inbox.
"""

from __future__ import annotations

import asyncio
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from agent import Agent, StopReason, tool
from agent.durable.catalog import Catalog
from agent.durable.runner import Runner
from agent.durable.store import RunRecord, open_store
from agent.models.scripted import ScriptedModel, call, finish
from agent.service import briefing
from agent.service.app import Service, create_app
from agent.service.auth import Token
from agent.service.briefing import preview

TOKEN = "t" * 32


class Unprintable:
    def __str__(self) -> str:
        raise RuntimeError("cannot print")


class ExitsWhenPrinted:
    def __str__(self) -> str:
        sys.exit(3)  # a value's `__str__` is the tool's own code too


class HangsWhenPrinted:
    def __init__(self, released: threading.Event) -> None:
        self.released = released

    def __str__(self) -> str:
        self.released.wait(120)  # released by the test; the preview's time limit must cut it first
        return "late"


def _exits(arguments: dict[str, Any]) -> str:
    sys.exit(2)


def _interrupted(arguments: dict[str, Any]) -> str:
    raise KeyboardInterrupt


def _unprintable(arguments: dict[str, Any]) -> str:
    return Unprintable()  # type: ignore[return-value]


def _exits_when_printed(arguments: dict[str, Any]) -> str:
    return ExitsWhenPrinted()  # type: ignore[return-value]


PREVIEWS: dict[str, tuple[Callable[[dict[str, Any]], str], str]] = {
    "exits": (_exits, "SystemExit: 2"),
    "interrupted": (_interrupted, "KeyboardInterrupt"),
    "unprintable": (_unprintable, "RuntimeError: cannot print"),
    "exits when printed": (_exits_when_printed, "SystemExit: 3"),
}


def _catalog(shows: Callable[[dict[str, Any]], str]) -> Catalog:
    @tool(needs_approval=True, preview=shows)
    def push(branch: str) -> str:
        """Push the branch."""
        return "pushed"

    def build(state: dict[str, Any]) -> Agent:
        steps = [[call("push", branch="main")], [finish("done", "ok")]]
        return Agent("x", ScriptedModel(steps), tools=[push])

    catalog = Catalog()
    catalog.register("x", build)
    return catalog


def _waiting(tmp_path: Path, catalog: Catalog) -> tuple[Runner, RunRecord]:
    runner = Runner(open_store(str(tmp_path / "runs.db")), catalog)
    asked = asyncio.run(runner.start("x", "push it"))
    assert asked.reason is StopReason.NEED_HELP, asked.note
    record = runner.store.get(asked.run_id)
    assert record is not None
    return runner, record


@pytest.mark.parametrize("kind", PREVIEWS)
def test_a_failing_preview_is_shown_as_failed(tmp_path: Path, kind: str) -> None:
    shows, said = PREVIEWS[kind]
    catalog = _catalog(shows)
    runner, record = _waiting(tmp_path, catalog)
    try:
        shown = asyncio.run(preview(record, catalog))

        assert shown.missing.startswith("No preview: the tool's preview failed"), shown
        assert said in shown.missing, shown
    finally:
        runner.store.close()


@pytest.mark.parametrize("kind", PREVIEWS)
def test_the_inbox_answers_beside_a_failing_preview(tmp_path: Path, kind: str) -> None:
    shows, _ = PREVIEWS[kind]
    catalog = _catalog(shows)
    runner, record = _waiting(tmp_path, catalog)
    app = create_app(Service(runner, Token(TOKEN), sweep_interval=3600))
    try:
        with TestClient(app, base_url="http://127.0.0.1", raise_server_exceptions=False) as client:
            for _ in range(2):  # the page, and the page again: the service is still there
                page = client.get("/inbox")
                assert page.status_code == 200, page.text[:300]
                assert "the tool&#x27;s preview failed" in page.text
                assert record.run_id in page.text
            assert client.get("/healthz").status_code == 200
    finally:
        runner.store.close()


def test_a_value_slow_to_print_is_cut_by_the_preview_time_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Printed on the event loop, a value whose `__str__` hangs held the whole service (no page, no
    API, no heartbeat) past PREVIEW_SECONDS; it is printed within the preview's time limit."""
    monkeypatch.setattr(briefing, "PREVIEW_SECONDS", 0.5)
    released = threading.Event()
    catalog = _catalog(lambda arguments: HangsWhenPrinted(released))  # type: ignore[arg-type,return-value]
    runner, record = _waiting(tmp_path, catalog)
    try:
        shown = asyncio.run(preview(record, catalog))

        assert shown.missing.startswith("No preview: the tool's preview took longer than"), shown
    finally:
        released.set()
        runner.store.close()
