"""The seed agents' checks cover the whole goal of their task, not only part of it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent.context import CallRecord, RunContext
from agent.examples import csv_clean, fix_ci, invoice, research
from agent.tools import execute


def ctx(note: str = "", calls: list[CallRecord] | None = None) -> RunContext:
    return RunContext("r1", "a", "t", "t", calls=list(calls or []), note=note)


def run_tool(tools, name: str, **args) -> str:
    import asyncio

    [t] = [t for t in tools if t.name == name]
    return asyncio.run(execute(t, args, ctx())).text


# -- fix CI: tests pass, linter quiet, the tested code pushed -----------------------------------


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    repo = fix_ci.make_world(tmp_path / "repo")
    (repo / "calc/money.py").write_text((repo / "calc/money.py").read_text().replace("a - b", "a + b"))
    return repo


def test_tests_passing_without_a_push_is_not_done(repo: Path) -> None:
    failures = fix_ci.verifier(repo)(ctx())
    assert len(failures) == 1 and "not pushed" in failures[0]


def test_tests_passing_and_pushed_is_done(repo: Path) -> None:
    assert run_tool(fix_ci.tools_for(repo), "push", branch="fix") == "pushed to fix"
    assert fix_ci.verifier(repo)(ctx()) == []


def test_a_change_after_the_push_needs_another_push(repo: Path) -> None:
    run_tool(fix_ci.tools_for(repo), "push", branch="fix")
    (repo / "calc/money.py").write_text((repo / "calc/money.py").read_text() + "\n# later\n")
    assert any("not pushed" in f for f in fix_ci.verifier(repo)(ctx()))


def test_a_linter_complaint_is_not_done(repo: Path) -> None:
    (repo / "calc/extra.py").write_text("import os\n" if fix_ci.lint_command()[2] == "ruff" else "def (:\n")
    run_tool(fix_ci.tools_for(repo), "push", branch="fix")
    failures = fix_ci.verifier(repo)(ctx())
    assert [f for f in failures if "extra.py" in f], failures


# -- CSV: no order lost or changed on the way ---------------------------------------------------


def test_dropping_every_row_is_not_a_clean_file(tmp_path: Path) -> None:
    csv_clean.make_world(tmp_path)
    (tmp_path / "orders_clean.csv").write_text("order_id,order_date,email,amount\n")
    failures = csv_clean.check_output(tmp_path)
    assert any("missing" in f and "1001" in f for f in failures), failures


def test_a_changed_date_or_amount_is_not_clean(tmp_path: Path) -> None:
    tools = csv_clean.tools_for(csv_clean.make_world(tmp_path))
    for name in ("fix_dates", "drop_rows_without_email", "dedupe"):
        run_tool(tools, name)
    assert csv_clean.check_output(tmp_path) == []
    out = tmp_path / "orders_clean.csv"
    out.write_text(out.read_text().replace("2026-03-10", "1999-01-01").replace("42.00", "4200.00"))
    failures = csv_clean.check_output(tmp_path)
    assert any("1007" in f for f in failures) and any("1005" in f for f in failures), failures


# -- invoice: exactly the September invoice, as the portal has it -------------------------------


def test_an_invented_or_extra_invoice_is_not_done(tmp_path: Path) -> None:
    invoice.make_world(tmp_path, online=True)
    check = invoice.verifier(tmp_path)
    (tmp_path / "invoices/INV-0913.json").write_text(json.dumps({"id": "INV-0913", "amount": 1.0}))
    assert any("INV-0913" in f for f in check(ctx()))
    tools = invoice.tools_for(tmp_path)
    run_tool(tools, "download_invoice", invoice_id="INV-0913")
    assert check(ctx()) == []
    run_tool(tools, "download_invoice", invoice_id="INV-0912")
    assert any("one" in f for f in check(ctx()))


# -- research: every cited page was read ----------------------------------------------------------


def test_a_report_citing_pages_it_never_read_is_not_done() -> None:
    corpus = research.Corpus()
    try:
        paths = ["central-bank/instant-payments-2026", "fintech-weekly/instant-share"]
        paths.append("euro-stats/transfers-q2")
        urls = [corpus.url(p) for p in paths]
        note = "About 31%. Sources: " + "; ".join(urls)
        read = [CallRecord("read_page", {"url": u}, "text") for u in urls[:2]]
        failures = research.verifier(ctx(note, read))
        assert any("never read" in f and urls[2] in f for f in failures), failures
        read.append(CallRecord("read_page", {"url": urls[2]}, "text"))
        assert research.verifier(ctx(note, read)) == []
    finally:
        corpus.close()


@pytest.mark.parametrize(
    "spellings", [["127.1", "2130706433", "0x7f.1"], ["localhost", "LOCALHOST.", "127.0.0.1"]]
)
def test_one_page_cited_under_several_spellings_of_its_host_is_one_source(spellings: list[str]) -> None:
    """127.1, 2130706433 and 0x7f.1 all open 127.0.0.1, and each counted as a publisher of its own:
    one page read and cited three ways passed "three independent sources" (a false success)."""
    corpus = research.Corpus()
    try:
        port = corpus.base_url.rsplit(":", 1)[1]
        urls = [f"http://{host}:{port}/central-bank/instant-payments-2026" for host in spellings]
        read = [CallRecord("read_page", {"url": u}, "text") for u in urls]
        failures = research.verifier(ctx("About 31%. Sources: " + " ".join(urls), read))
        assert "1 valid independent sources of 3 required; 2 missing" in failures
    finally:
        corpus.close()


@pytest.mark.parametrize(
    ("url", "source"),
    [
        ("https://www.ECB.europa.eu/press/x", "ecb.europa.eu"),
        ("https://ecb.europa.eu./stats", "ecb.europa.eu"),
        ("http://[::1]:8080/fintech-weekly/a", "fintech-weekly"),
        ("https://203.0.113.7/report", "203.0.113.7"),
    ],
)
def test_the_publisher_of_a_link_is_its_site_however_spelled(url: str, source: str) -> None:
    assert research.publisher(url) == source
