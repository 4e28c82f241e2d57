"""The invoice-download agent: its portal may be offline, and some choices are the business's."""

from __future__ import annotations

import json
from pathlib import Path

from agent.agent import Agent
from agent.budget import Budget
from agent.context import RunContext
from agent.models.base import Model
from agent.tools import Tool, tool
from agent.verify import Verifier

TASK_TYPE = "invoice_download"
TASK = "Download the September invoice from the supplier portal into invoices/."
INSTRUCTIONS = (
    "You download invoices from the supplier portal. Give up if the portal cannot be reached; "
    "ask for help when a choice belongs to the business."
)

SEPTEMBER = [
    {"id": "INV-0912", "month": "2026-09", "amount": 1200.0, "note": "original"},
    {"id": "INV-0913", "month": "2026-09", "amount": 980.0, "note": "corrected after dispute"},
]


class PortalOffline(ConnectionError):
    """The portal does not answer."""


def make_world(workdir: Path, *, online: bool) -> Path:
    """A download folder and the portal's state (online or offline)."""
    (workdir / "invoices").mkdir(parents=True, exist_ok=True)
    (workdir / "portal.json").write_text(json.dumps({"online": online, "invoices": SEPTEMBER}))
    return workdir


def tools_for(workdir: Path) -> list[Tool]:
    def portal() -> dict[str, object]:
        state = json.loads((workdir / "portal.json").read_text())
        if not state["online"]:
            raise PortalOffline("portal.supplier.example: connection refused (HTTP 503 for 2 hours)")
        return dict(state)

    @tool(timeout=10)
    def list_invoices(month: str) -> str:
        """List the portal's invoices for a month (YYYY-MM)."""
        invoices = portal()["invoices"]
        assert isinstance(invoices, list)
        return json.dumps([i for i in invoices if i["month"] == month])

    @tool(timeout=10)
    def download_invoice(invoice_id: str) -> str:
        """Download one invoice by id into invoices/."""
        invoices = portal()["invoices"]
        assert isinstance(invoices, list)
        match = next((i for i in invoices if i["id"] == invoice_id), None)
        if match is None:
            raise ValueError(f"no invoice {invoice_id!r} on the portal")
        (workdir / "invoices" / f"{invoice_id}.json").write_text(json.dumps(match))
        return f"saved invoices/{invoice_id}.json"

    return [list_invoices, download_invoice]


def verifier(workdir: Path) -> Verifier:
    """Exactly one invoice saved, a September one, exactly as the portal lists it."""

    def invoice_saved(ctx: RunContext) -> list[str]:
        saved = sorted((workdir / "invoices").glob("*"))
        if not saved:
            return ["no invoice was saved in invoices/"]
        if len(saved) > 1:
            return [f"the task asks for one invoice; invoices/ holds {[p.name for p in saved]}"]
        return _matches_portal(saved[0])

    return invoice_saved


def _matches_portal(path: Path) -> list[str]:
    listed = {f"{i['id']}.json": i for i in SEPTEMBER}
    if path.name not in listed:
        return [f"invoices/{path.name} is not a September invoice of the portal"]
    try:
        content = json.loads(path.read_text())
    except (ValueError, UnicodeDecodeError):
        content = None
    if content != listed[path.name]:
        return [f"invoices/{path.name} does not hold the invoice as the portal lists it"]
    return []


def make_agent(model: Model, workdir: Path, budget: Budget | None = None, **options: object) -> Agent:
    """The invoice agent over `workdir` (see `make_world`)."""
    return Agent(
        name="invoice-downloader",
        model=model,
        instructions=INSTRUCTIONS,
        tools=tools_for(workdir),
        verifiers=[verifier(workdir)],
        budget=budget or Budget(max_turns=10, max_seconds=120),
        task_type=TASK_TYPE,
        **options,  # type: ignore[arg-type]
    )
