"""A run waiting for a person shows its trace as the review pages show a finished run's: its id on the
inbox's card, linked with `serve --trace-url`, and a `trace ID` line under it in `endstate pending`.
Before, the person deciding an approval saw no way to what the run did before it asked but the
inbox's last steps (review53 added the trace to finished runs only)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from test_journal49_pending import SAME, _article, _block
from test_service_defences import AUTH, Build, build  # noqa: F401 - the fixture

from agent.cli.main import main

TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
ODD = 'a"b<c>&d'
TEMPLATE = "https://tempo.example.com/trace/{trace_id}?from=inbox&x=1"


def traced(db: Path, trace_id: str) -> str:
    """Gives the store's one waiting run `trace_id` (as a run with telemetry on records it); its id."""
    with sqlite3.connect(db) as conn:
        (run_id,) = conn.execute("SELECT run_id FROM endstate_runs WHERE status = 'waiting'").fetchone()
        conn.execute("UPDATE endstate_runs SET trace_id = ? WHERE run_id = ?", (trace_id, run_id))
    return str(run_id)


@pytest.mark.parametrize(
    ("trace_id", "shown", "href"),
    [
        (TRACE, TRACE, f"https://tempo.example.com/trace/{TRACE}?from=inbox&amp;x=1"),
        (
            ODD,
            "a&quot;b&lt;c&gt;&amp;d",
            "https://tempo.example.com/trace/a%22b%3Cc%3E%26d?from=inbox&amp;x=1",
        ),
    ],
)
def test_the_inbox_card_of_a_waiting_run_shows_its_trace_linked(
    build: Build,  # noqa: F811
    tmp_path: Path,
    trace_id: str,
    shown: str,
    href: str,
) -> None:
    client = build(runs=1, trace_url=TEMPLATE)
    run_id = traced(tmp_path / "runs.db", trace_id)
    card = _article(client.get("/inbox", headers=AUTH | SAME).text, run_id)
    assert f'<code class="trace-id">{shown}</code>' in card
    assert f'href="{href}"' in card and "Open the trace" in card


def test_without_a_template_the_card_shows_the_id_and_no_link_and_without_an_id_neither(
    build: Build,  # noqa: F811
    tmp_path: Path,
) -> None:
    client = build(runs=1)
    card = _article(client.get("/inbox", headers=AUTH | SAME).text, traced(tmp_path / "runs.db", ""))
    assert "trace-id" not in card and "Open the trace" not in card
    run_id = traced(tmp_path / "runs.db", TRACE)
    card = _article(client.get("/inbox", headers=AUTH | SAME).text, run_id)
    assert f'<code class="trace-id">{TRACE}</code>' in card and "Open the trace" not in card


def test_endstate_pending_prints_the_trace_of_a_waiting_run(
    build: Build,  # noqa: F811
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    build(runs=1)
    run_id = traced(tmp_path / "runs.db", TRACE)
    assert main(["pending", "--store", str(tmp_path / "runs.db")]) == 0
    assert f"\n    trace {TRACE}\n" in _block(capsys.readouterr().out, run_id) + "\n"
