"""red40: `demo --list --json` and `eval --list --json` print JSON lines, as --json says, not the table."""

from __future__ import annotations

import json

import pytest

from agent.cli.main import main


@pytest.mark.parametrize(
    ("args", "first"),
    [
        (["demo", "--list", "--json"], {"name": "csv/clean", "agent": "csv-cleaner", "expect": "success"}),
        (
            ["eval", "--list", "--json", "csv/clean"],
            {"name": "csv/clean", "agent": "csv-cleaner", "fixture": "dirty_orders", "expected": ["success"]},
        ),
    ],
)
def test_a_list_under_json_is_json_lines(
    args: list[str], first: dict[str, object], capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: each printed its table under --json too, which no JSON reader takes."""
    assert main(args) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert rows[0] == first
    if args[0] == "demo":
        follow = next(r for r in rows if r["name"] == "invoice/which-one")
        assert follow == {
            "name": "invoice/which-one",
            "agent": "invoice-downloader",
            "expect": "need_help",
            "then": "answer",
            "expect_after": "success",
        }
