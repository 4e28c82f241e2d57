"""red40: `endstate pending --json` says what `/pending` and the line say: the words to look closely at,
and whether the deadline passed."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from agent import Agent, Catalog, HelpPolicy
from agent.cli.main import main
from agent.durable.runner import Runner
from agent.durable.store import open_store
from agent.models.scripted import ScriptedModel, finish

QUESTION = "Send the refund to p\u0430ypal.com/acct?"  # a Cyrillic a among Latin letters


def _catalog() -> Catalog:
    catalog = Catalog()
    for name, wait in (("asks", 3600.0), ("late", 0.0)):
        model = ScriptedModel([[finish("need_help", QUESTION)], [finish("done", "ok")]])
        catalog.register(name, lambda state, m=model, w=wait: Agent(name="asks", model=m, help=HelpPolicy(w)))
    return catalog


def test_pending_json_names_the_lookalike_words_and_the_expired_waits(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: --json printed the bare record: no `look_closely` (the line's `! look closely:`), no
    `expired`, so a script reading it approved what a person would have been warned of."""
    store = open_store(tmp_path / "runs.db")
    runner = Runner(store, _catalog())
    try:
        for agent in ("asks", "late"):
            assert asyncio.run(runner.start(agent, "refund")).reason == "need_help"
    finally:
        store.close()
    assert main(["pending", "--json", "--store", str(tmp_path / "runs.db")]) == 0
    rows = {r["agent"]: r for r in map(json.loads, capsys.readouterr().out.splitlines())}
    said = ['"p\u0430ypal.com/acct?" mixes Cyrillic "\u0430" (U+0430) with Latin']
    for agent, expired in (("asks", False), ("late", True)):
        assert rows[agent]["question"] == QUESTION and rows[agent]["expired"] is expired
        assert rows[agent]["look_closely"] == said
