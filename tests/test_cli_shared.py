"""What the faces share: one `--catalog` declaration, one way to build their runner."""

from __future__ import annotations

import argparse
from pathlib import Path

from prometheus_client import CollectorRegistry
from test_runner_agents import catalog

from agent.cli.main import build_parser
from agent.durable.runner import runner_with_telemetry
from agent.durable.store import open_store
from telemetry import Telemetry
from telemetry import names as n


def _catalog_option(command: str) -> tuple[object, str | None]:
    """The default and help of `endstate COMMAND --catalog`."""
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    option = next(a for a in sub.choices[command]._actions if "--catalog" in a.option_strings)
    return option.default, option.help


def test_worker_and_the_store_commands_take_the_same_catalog_option() -> None:
    expected = (None, "agents as module:attr (default: the seed examples)")
    for command in ("worker", "start", "resume", "serve", "recover", "audit"):
        assert _catalog_option(command) == expected, command


def test_the_faces_runner_reports_through_their_telemetry(tmp_path: Path) -> None:
    registry = CollectorRegistry()
    telemetry = Telemetry.from_env({"OTEL_SDK_DISABLED": "true"}, registry)
    store = open_store(str(tmp_path / "runs.db"))
    try:
        runner = runner_with_telemetry(store, catalog(), telemetry, lease_seconds=12.0)
        assert runner.hooks is telemetry.hooks and runner.lease_seconds == 12.0
        runner.on_audit("probe", "triage", n.AUDIT_FALSE_SUCCESS)  # type: ignore[misc]
        labels = {"agent": "probe", "task_type": "triage", "outcome": n.AUDIT_FALSE_SUCCESS}
        assert registry.get_sample_value("agent_success_audits_total", labels) == 1.0
    finally:
        store.close()
        telemetry.shutdown()
