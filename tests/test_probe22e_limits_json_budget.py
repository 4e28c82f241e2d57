"""`endstate limits suggest --json`: the suggested ceilings go straight into a `Budget`.

Turns and tokens were written as floats (`"suggested": 12.0`), and `Budget(max_turns=12.0)` is a
`ConfigError` ("counts whole turns: give an int"), so a script that read the JSON and built the
budget it suggests failed. Whole counts are now JSON integers; seconds and cost stay numbers.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent import Budget
from agent.cli.main import main

ARG = {"turns": "max_turns", "seconds": "max_seconds", "tokens": "max_tokens", "cost": "max_cost_usd"}


def test_suggested_ceilings_make_a_budget(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_ENDPOINT", raising=False)
    assert main(["demo", "--json", "csv/clean", "research/seed-trace"]) == 0
    (tmp_path / "runs.jsonl").write_text(capsys.readouterr().out)
    assert main(["limits", "suggest", "--jsonl", str(tmp_path / "runs.jsonl"), "--json"]) == 0
    suggestions = json.loads(capsys.readouterr().out)
    assert {s["task_type"] for s in suggestions} == {"csv_clean", "research"}
    for s in suggestions:
        ceilings = s["ceilings"]
        for kind in ("turns", "tokens"):
            for field in ("suggested", "p95", "longest"):
                assert type(ceilings[kind][field]) is int, (kind, field, ceilings[kind])
        budget = Budget(**{ARG[kind]: c["suggested"] for kind, c in ceilings.items()})
        assert budget.max_turns == ceilings["turns"]["suggested"] >= ceilings["turns"]["longest"]
