"""Agents whose runs were saved by Endstate's version-1 code (tests/fixtures/v1_*.json).

Only the public API both versions share is used here, so the same agents
built by today's code must finish those runs: a run suspended before an
upgrade is answered after it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agent import Agent, Budget, tool
from agent.clock import SystemClock
from agent.durable.runner import Catalog
from agent.models.scripted import ScriptedModel, call, finish

FIXTURES = Path(__file__).with_name("fixtures")
WRITTEN_AT = 1796029999.2  # when the fixtures' runs were suspended (2026-11-30 09:13 UTC)


class AsWritten(SystemClock):
    """The system's clocks set back to a minute after the fixtures were written, then running:
    their runs' deadlines (a day after) are ahead whatever the date the tests run on."""

    def __init__(self) -> None:
        self.offset = WRITTEN_AT + 60 - time.time()

    def time(self) -> float:
        return super().time() + self.offset


COUNTS: dict[str, int] = {}  # tool name -> runs in this process
HOOKS: list[Callable[[str], None]] = []  # called with the customer before each lookup (to crash or stop)


@tool
def lookup(customer: str) -> str:
    """Look up a customer's payment terms."""
    for hook in HOOKS:
        hook(customer)
    COUNTS["lookup"] = COUNTS.get("lookup", 0) + 1
    return f"{customer}: net 30"


@tool(needs_approval=True)
def send_invoice(customer: str, amount: float) -> str:
    """Send an invoice; a person approves every one."""
    COUNTS["send_invoice"] = COUNTS.get("send_invoice", 0) + 1
    return f"invoice of {amount:.2f} sent to {customer}"


def question(_: dict[str, Any] | None = None) -> Agent:
    steps = [
        [call("lookup", customer="ACME")],
        [finish("need_help", "Which region: EU or US?")],
        [finish("done", "EU share: 40%")],
    ]
    return Agent("v1-question", ScriptedModel(steps), tools=[lookup], budget=Budget(max_turns=10))


def approval(_: dict[str, Any] | None = None) -> Agent:
    steps = [
        [call("lookup", customer="ACME"), call("send_invoice", customer="ACME", amount=120.0)],
        [finish("done", "billed")],
    ]
    return Agent(
        "v1-approval", ScriptedModel(steps), tools=[lookup, send_invoice], budget=Budget(max_turns=10)
    )


def ledger(_: dict[str, Any] | None = None) -> Agent:
    steps = [
        [call("lookup", customer="ACME"), call("lookup", customer="BETA")],
        [call("lookup", customer="GAMMA")],
        [finish("done", "three customers looked up")],
    ]
    return Agent("v1-ledger", ScriptedModel(steps), tools=[lookup], budget=Budget(max_turns=10))


def catalog() -> Catalog:
    c = Catalog()
    for build in (question, approval, ledger):
        c.register(build().name, build)
    return c
