"""A catalog entry whose code raises `SystemExit` (a config read with argparse, a wrapped CLI) is the
entry's failure, not a request to end the process.

Before, the runner caught only `Exception` from an entry's `build`, `prepare` and `cleanup`:
- `recover` raised SystemExit at a run whose build did so, and recovered none of the others, at
  every attempt (issue 11, item 1, by another exception class);
- `start` raised SystemExit where a failing build is an `AgentUnavailable` (an HTTP 503);
- a `cleanup` raising it after a run's success was recorded escaped `start` (a service's task), and
  the success audit the run was due was never planned;
- the inbox's preview of a pending call raised it from the page's handler.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agent import Agent, StopReason, tool
from agent.audit import SuccessAudit
from agent.durable.catalog import Catalog
from agent.durable.runner import AgentUnavailable, Runner, machine
from agent.durable.store import Lease, NewRun, RunStatus, open_store
from agent.models.scripted import ScriptedModel, call, finish
from agent.service.briefing import preview


def _dead_pid() -> int:
    """The pid of a process of this machine that has ended (reaped): a worker that died."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait(timeout=60)
    return child.pid


def _argparse_config(state: dict[str, Any]) -> None:
    if state.get("bad"):
        raise SystemExit(2)  # what argparse does with arguments it cannot read


def _done(state: dict[str, Any]) -> Agent:
    _argparse_config(state)
    return Agent("x", ScriptedModel([[finish("done", "ok")]]))


def test_recovery_ends_the_run_whose_build_exits_and_recovers_the_others(tmp_path: Path) -> None:
    store = open_store(str(tmp_path / "runs.db"))
    try:
        dead = Lease(f"{machine()}:{_dead_pid()}:w1", 30.0)
        store.create(NewRun("bad", "x", "task", "default", {"bad": True}), dead, store.now())
        store.create(NewRun("good", "x", "task", "default", {}), dead, store.now())
        catalog = Catalog()
        catalog.register("x", _done)

        recovered = asyncio.run(Runner(store, catalog).recover())

        assert [(r.run_id, r.reason) for r in recovered] == [("good", StopReason.SUCCESS)]
        bad = store.get("bad")
        assert bad is not None
        assert (bad.status, bad.error_type) == (RunStatus.FINISHED, "agent_build_failed")
        assert "build raised SystemExit: 2" in bad.note and "endstate resume bad" in bad.note, bad.note
    finally:
        store.close()


def test_a_start_whose_build_exits_is_refused_as_the_agent_unavailable(tmp_path: Path) -> None:
    store = open_store(str(tmp_path / "runs.db"))
    try:
        catalog = Catalog()
        catalog.register("x", _done)

        with pytest.raises(AgentUnavailable, match="build raised SystemExit: 2"):
            asyncio.run(Runner(store, catalog).start("x", "task", state={"bad": True}))

        assert list(store.list_runs(limit=None)) == []
    finally:
        store.close()


def test_a_cleanup_that_exits_after_a_success_leaves_the_result_and_its_audit(tmp_path: Path) -> None:
    store = open_store(str(tmp_path / "runs.db"))
    try:
        catalog = Catalog()

        def audited(state: dict[str, Any]) -> Agent:
            model = ScriptedModel([[finish("done", "ok")]])
            return Agent("x", model, audit=SuccessAudit(lambda ctx: [], share=1.0, after=0.0))

        catalog.register("x", audited, cleanup=lambda state: sys.exit(3))

        result = asyncio.run(Runner(store, catalog).start("x", "task"))

        assert result.reason is StopReason.SUCCESS, result.note
        assert store.audit_of(result.run_id) is not None, "the success audit was planned"
    finally:
        store.close()


def test_the_inbox_preview_of_an_agent_whose_build_exits_says_so(tmp_path: Path) -> None:
    @tool(needs_approval=True)
    def push() -> str:
        """Push."""
        return "pushed"

    def asking(state: dict[str, Any]) -> Agent:
        _argparse_config(state)
        return Agent("x", ScriptedModel([[call("push")], [finish("done", "ok")]]), tools=[push])

    store = open_store(str(tmp_path / "runs.db"))
    try:
        catalog = Catalog()
        catalog.register("x", asking)
        asked = asyncio.run(Runner(store, catalog).start("x", "task"))
        assert asked.reason is StopReason.NEED_HELP, asked.note
        record = store.get(asked.run_id)
        assert record is not None and record.pending is not None
        record.state["bad"] = True  # this deployment's build now exits

        shown = asyncio.run(preview(record, catalog))

        assert "could not be built here (SystemExit: 2)" in shown.missing, shown
    finally:
        store.close()
