"""Agents whose runs older Endstate releases saved in tests/data/compat/ (see its README).

The same module is imported by the old release that wrote a store (tests/data/compat/generate.py,
run with that release on PYTHONPATH) and by today's code that finishes its runs, so only the
public API every release since the journal (store schema 4) shares is used here.
"""

from __future__ import annotations

import inspect
import os
from collections.abc import Callable
from typing import Any

from agent import Agent, Budget, HelpPolicy, tool
from agent.models.scripted import ScriptedModel, call, finish

AUDITS = "audit" in inspect.signature(Agent).parameters  # success audits: store schema 6 on
try:
    from agent.durable.runner import Catalog
except ImportError:  # releases before the agent/durable layout (store schema 8 and older)
    from agent.runner import Catalog  # type: ignore[import-not-found,no-redef]

COUNTS: dict[str, int] = {}  # tool name -> calls run in this process
HOOKS: list[Callable[[str], None]] = []  # called with the customer before each lookup (to crash or stop)
# run id -> (agent, what the old release did with the run; what today's code must end it as)
RUNS = {
    "c-question": ("c-question", "waiting for an answer"),
    "c-approval": ("c-approval", "waiting for an approval of send_invoice"),
    "c-expired": ("c-expired", "waiting, its deadline (1 s) long past"),
    "c-crashed": ("c-ledger", "running: its worker died mid-turn (os._exit), one result of two checkpointed"),
    "c-cancelled": ("c-ledger", "cancelled by a shutdown mid-turn"),
    "c-done": ("c-ledger", "finished: success"),
    "c-limit": ("c-limit", "finished: limit (turns)"),
    "c-gave-up": ("c-gave-up", "finished: gave_up"),
    "c-audited": ("c-audited", "finished: success, its audit due a minute later (schema 6 on)"),
    "c-deny": ("c-approval", "waiting for an approval of send_invoice (to be denied)"),
    "c-timeout": ("c-timeout", "waiting, its deadline (1 s) long past; the help policy ends it"),
    "c-answered": ("c-followup", "running: answered, its worker died mid-turn after the answer"),
    "c-cut": ("c-slow", "cancelled by a shutdown that cut its tool call off (outcome unknown)"),
}


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


def question(_: Any = None) -> Agent:
    steps = [
        [call("lookup", customer="ACME")],
        [finish("need_help", "Which region: EU or US?")],
        [finish("done", "EU share: 40%")],
    ]
    return Agent("c-question", ScriptedModel(steps), tools=[lookup], budget=Budget(max_turns=10))


def approval(_: Any = None) -> Agent:
    steps = [
        [call("lookup", customer="ACME"), call("send_invoice", customer="ACME", amount=120.0)],
        [finish("done", "billed")],
    ]
    return Agent(
        "c-approval", ScriptedModel(steps), tools=[lookup, send_invoice], budget=Budget(max_turns=10)
    )


def expired(_: Any = None) -> Agent:
    steps = [[finish("need_help", "Ship today?")], [finish("done", "not shipped")]]
    help_ = HelpPolicy(wait_seconds=1.0, on_timeout="resume", default_answer="No answer: do not ship.")
    return Agent("c-expired", ScriptedModel(steps), budget=Budget(max_turns=10), help=help_)


def timeout(_: Any = None) -> Agent:
    steps = [[finish("need_help", "Refund twice?")], [finish("done", "refunded")]]
    return Agent(
        "c-timeout", ScriptedModel(steps), budget=Budget(max_turns=10), help=HelpPolicy(wait_seconds=1.0)
    )


def followup(_: Any = None) -> Agent:
    steps = [
        [finish("need_help", "Which customer?")],
        [call("lookup", customer="DELTA")],
        [finish("done", "DELTA: net 30")],
    ]
    return Agent("c-followup", ScriptedModel(steps), tools=[lookup], budget=Budget(max_turns=10))


def slow(_: Any = None) -> Agent:
    steps = [[call("lookup", customer="SLOW")], [finish("done", "slow one looked up")]]
    return Agent("c-slow", ScriptedModel(steps), tools=[lookup], budget=Budget(max_turns=10))


def ledger(_: Any = None) -> Agent:
    steps = [
        [call("lookup", customer="ACME"), call("lookup", customer="BETA")],
        [call("lookup", customer="GAMMA")],
        [finish("done", "three customers looked up")],
    ]
    return Agent("c-ledger", ScriptedModel(steps), tools=[lookup], budget=Budget(max_turns=10))


def limited(_: Any = None) -> Agent:
    steps = [[call("lookup", customer="ACME")], [call("lookup", customer="BETA")]]
    return Agent("c-limit", ScriptedModel(steps), tools=[lookup], budget=Budget(max_turns=1))


def gave_up(_: Any = None) -> Agent:
    return Agent(
        "c-gave-up", ScriptedModel([[finish("give_up", "no such customer")]]), budget=Budget(max_turns=3)
    )


def confirmed(ctx: Any) -> list[str]:
    """The audit's independent check: the run's note is what the world holds."""
    return [] if ctx.note == "audited" else [f"{ctx.note!r} is not what the world holds"]


def audited(_: Any = None) -> Agent:
    model = ScriptedModel([[finish("done", "audited")]])
    if not AUDITS:
        return Agent("c-audited", model, budget=Budget(max_turns=3))
    from agent.audit import SuccessAudit

    audit = SuccessAudit(check=confirmed, share=1.0, after=60.0)
    return Agent("c-audited", model, budget=Budget(max_turns=3), audit=audit)


def catalog() -> Catalog:
    c = Catalog()
    for build in (question, approval, expired, timeout, followup, slow, ledger, limited, gave_up, audited):
        c.register(build().name, build)
    return c


def die_at(customer: str) -> Callable[[str], None]:
    """A hook that ends the process at once (no cleanup: a worker killed) before `customer`'s lookup."""

    def hook(seen: str) -> None:
        if seen == customer:
            os._exit(0)

    return hook
