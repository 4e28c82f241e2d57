"""The CSV-cleaning agent from the seeds: done only when the output file checks out."""

from __future__ import annotations

import csv
import hashlib
import io
import re
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

from agent.agent import Agent
from agent.budget import Budget
from agent.context import RunContext
from agent.models.base import Model
from agent.tools import Tool, tool
from agent.verify import Verifier

TASK_TYPE = "csv_clean"
TASK = (
    "Clean orders.csv into orders_clean.csv: every order_date in ISO format (YYYY-MM-DD), "
    "no rows whose email is NULL, empty or n/a, and each order_id only once."
)
INSTRUCTIONS = "You clean CSV files with the tools given. Call finish(kind='done') when the file is clean."
BAD_EMAILS = {"", "null", "n/a"}
PAGE_ROWS = 5
DATE_FORMATS = ("%Y-%m-%d", "%m/%d/%Y", "%d.%m.%Y", "%B %d, %Y", "%Y/%m/%d")

DIRTY_ORDERS = """order_id,order_date,email,amount
1001,2026-03-02,ana@example.com,120.00
1002,03/04/2026,NULL,75.50
1003,05.03.2026,li@example.com,19.99
1003,05.03.2026,li@example.com,19.99
1004,"March 7, 2026",n/a,310.00
1005,2026/03/08,sam@example.com,42.00
1006,03/09/2026,,88.10
1007,2026-03-10,kim@example.com,15.00
"""


def make_world(workdir: Path) -> Path:
    """Write the dirty input file into `workdir`."""
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "orders.csv").write_text(DIRTY_ORDERS)
    return workdir


def _read(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as f:
        return list(csv.DictReader(f))


def _write(path: Path, rows: list[dict[str, str]]) -> None:
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=["order_id", "order_date", "email", "amount"])
    writer.writeheader()
    writer.writerows(rows)
    path.write_text(buf.getvalue())


def _iso(value: str) -> str | None:
    for fmt in DATE_FORMATS:
        try:
            return datetime.strptime(value.strip(), fmt).date().isoformat()
        except ValueError:
            continue
    return None


def check_output(workdir: Path) -> list[str]:
    """The code check from the seed: ISO dates, real emails, unique order ids; and every order
    with a real email kept, with its own date, email and amount (cleaning loses nothing)."""
    out = workdir / "orders_clean.csv"
    if not out.exists():
        return ["orders_clean.csv does not exist"]
    rows = _read(out)
    return _shape_failures(rows) + _fidelity_failures(_read(workdir / "orders.csv"), rows)


def _shape_failures(rows: list[dict[str, str]]) -> list[str]:
    failures = []
    bad_dates = [r["order_date"] for r in rows if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", r["order_date"])]
    if bad_dates:
        failures.append(f"order_date is not ISO in {len(bad_dates)} rows (e.g. {bad_dates[0]!r})")
    bad_emails = sum(r["email"].strip().lower() in BAD_EMAILS for r in rows)
    if bad_emails:
        failures.append(f"email is NULL, empty or n/a in {bad_emails} rows")
    ids = [r["order_id"] for r in rows]
    if len(ids) != len(set(ids)):
        failures.append(f"order_id is not unique: {len(ids) - len(set(ids))} duplicates")
    return failures


def _fidelity_failures(source: list[dict[str, str]], rows: list[dict[str, str]]) -> list[str]:
    """Orders lost, invented or changed, against what cleaning `source` must give."""
    want: dict[str, dict[str, str]] = {}
    for r in source:
        if r["email"].strip().lower() not in BAD_EMAILS:
            want.setdefault(r["order_id"], r | {"order_date": _iso(r["order_date"]) or r["order_date"]})
    got = {r["order_id"]: r for r in rows}
    failures = []
    if missing := sorted(want.keys() - got.keys()):
        failures.append(f"orders with a real email are missing: {', '.join(missing)}")
    if invented := sorted(got.keys() - want.keys()):
        failures.append(f"orders that must not be there: {', '.join(invented)}")
    changed = sorted(i for i in want.keys() & got.keys() if got[i] != want[i])
    failures += [f"order {i} changed: {got[i]} should be {want[i]}" for i in changed]
    return failures


def tools_for(workdir: Path) -> list[Tool]:
    """The agent's tools, bound to one working directory."""
    source, out = workdir / "orders.csv", workdir / "orders_clean.csv"

    def current() -> list[dict[str, str]]:
        return _read(out if out.exists() else source)

    @tool
    def read_rows(page: int) -> str:
        """Read one page (5 rows) of the current file, pages start at 1."""
        rows = current()[(page - 1) * PAGE_ROWS : page * PAGE_ROWS]
        return "\n".join(",".join(r.values()) for r in rows) or "(no rows on this page)"

    @tool
    def fix_dates() -> str:
        """Rewrite every order_date in ISO format."""
        rows = current()
        for r in rows:
            r["order_date"] = _iso(r["order_date"]) or r["order_date"]
        _write(out, rows)
        return f"dates rewritten in {len(rows)} rows"

    @tool
    def drop_rows_without_email() -> str:
        """Drop rows whose email is NULL, empty or n/a."""
        rows = current()
        kept = [r for r in rows if r["email"].strip().lower() not in BAD_EMAILS]
        _write(out, kept)
        return f"dropped {len(rows) - len(kept)} rows"

    @tool
    def dedupe() -> str:
        """Keep the first row of each order_id."""
        rows = current()
        first = {r["order_id"]: r for r in reversed(rows)}
        kept = [r for r in rows if first[r["order_id"]] is r]
        _write(out, kept)
        return f"removed {len(rows) - len(kept)} duplicates"

    @tool
    def validate_row(row: int) -> str:
        """Ask the legacy validator about one row. (It answers "ok" and changes nothing.)"""
        return "ok"

    return [read_rows, fix_dates, drop_rows_without_email, dedupe, validate_row]


def fingerprint(workdir: Path) -> Callable[[RunContext], str]:
    """State for no-progress detection: the output file's content."""

    def state(ctx: RunContext) -> str:
        out = workdir / "orders_clean.csv"
        return hashlib.sha256(out.read_bytes()).hexdigest() if out.exists() else "absent"

    return state


def verifier(workdir: Path) -> Verifier:
    def csv_is_clean(ctx: RunContext) -> list[str]:
        return check_output(workdir)

    return csv_is_clean


def make_agent(model: Model, workdir: Path, budget: Budget | None = None, **options: object) -> Agent:
    """The CSV agent over `workdir` (which must hold orders.csv)."""
    return Agent(
        name="csv-cleaner",
        model=model,
        instructions=INSTRUCTIONS,
        tools=tools_for(workdir),
        verifiers=[verifier(workdir)],
        budget=budget or Budget(max_turns=15, max_seconds=300),
        task_type=TASK_TYPE,
        fingerprint=fingerprint(workdir),
        **options,  # type: ignore[arg-type]
    )
