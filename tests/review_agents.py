"""A team's own agent in its own catalog, for the review tests (helpers; no tests here).

`refunder` refunds orders from `orders.json` in the run's folder, made by the
entry's `prepare` under `base` (the folder lands in the state as `workdir`, as
the seed catalog does). Its tools say which file they read, so a replayed run
shows the `{workdir}` placeholder at work. With `$REFUNDER_POLICY=lenient` the
order book says otherwise: the same agent "changed" in the way a deploy would.
Subprocesses load it with `--catalog review_agents:catalog` and `tests/` on PYTHONPATH.
"""

from __future__ import annotations

import base64
import json
import os
import tempfile
from pathlib import Path
from typing import Any

from media_files import pdf, png

from agent import Agent, Budget, Document, Image, ToolOutput, tool
from agent.durable.catalog import Catalog
from agent.models.scripted import ScriptedModel, call, finish
from agent.verify import predicate

TASK = "Refund order 42 if the rules allow it."
SCRIPTS: dict[str, list[Any]] = {
    "shipped": [  # the order shipped: no refund, so it gives up and says why
        [call("lookup_order", order_id=42)],
        [finish("give_up", "Order 42 shipped on 2026-11-02; shipped orders are not refunded.")],
    ],
    "unshipped": [  # not shipped yet: refund it, then the check sees the refund
        [call("lookup_order", order_id=7)],
        [call("refund", order_id=7)],
        [finish("done", "Refunded order 7.")],
    ],
}


def orders(lenient: bool) -> dict[str, dict[str, str]]:
    shipped = "returned" if lenient else "shipped"
    return {"42": {"status": shipped, "date": "2026-11-02"}, "7": {"status": "paid", "date": "2026-11-20"}}


def prepare(state: dict[str, Any], run_id: str) -> dict[str, Any]:
    base = Path(os.environ.get("REFUNDER_WORLDS") or tempfile.gettempdir()) / "refunder"
    folder = base / run_id
    folder.mkdir(parents=True, exist_ok=True)
    lenient = os.environ.get("REFUNDER_POLICY") == "lenient"
    (folder / "orders.json").write_text(json.dumps(orders(lenient)))
    return {**state, "workdir": str(folder)}


def build(state: dict[str, Any]) -> Agent:
    folder = Path(state["workdir"])

    @tool
    def lookup_order(order_id: int) -> str:
        """An order's status and date."""
        found = json.loads((folder / "orders.json").read_text()).get(str(order_id))
        return f"{folder}/orders.json: order {order_id}: {found}"

    @tool
    def refund(order_id: int) -> str:
        """Refund an order that has not shipped."""
        with (folder / "refunds.txt").open("a") as f:
            f.write(f"{order_id}\n")
        return f"refunded {order_id}"

    refunded = predicate(lambda ctx: (folder / "refunds.txt").exists(), "nothing was refunded")
    return Agent(
        name="refunder",
        model=ScriptedModel(SCRIPTS[state.get("script", "shipped")]),
        tools=[lookup_order, refund],
        verifiers=[refunded],
        budget=Budget(max_turns=8, max_seconds=60),
        task_type="refund",
    )


def inspect_page(state: dict[str, Any]) -> Agent:
    """The inspector: looks at a page twice (a screenshot and its PDF, the same each time), then is done.
    `$INSPECTOR_CONTEXT` is the PDF's context, which its text does not show: a change only its blocks
    tell apart."""

    @tool
    def screenshot(page: str) -> ToolOutput:
        """A screenshot of a page and its print as a PDF."""
        context = os.environ.get("INSPECTOR_CONTEXT", "printed by the browser")
        printed = Document(data=base64.b64encode(pdf(2)).decode(), title=f"Page {page}", context=context)
        return ToolOutput(f"the page {page}", Image.from_bytes(png(4, 3)), printed)

    model = ScriptedModel(
        [[call("screenshot", page="home")], [call("screenshot", page="home")], [finish("done", "Looked.")]]
    )
    return Agent(name="inspector", model=model, tools=[screenshot], task_type="inspect")


def catalog() -> Catalog:
    c = Catalog()
    c.register("refunder", build, prepare=prepare)
    c.register("inspector", inspect_page)
    return c
