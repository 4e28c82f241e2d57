"""audits52: the false-success runbook lists the audits with `endstate audit --list`, not with SQL
against the store's tables, and the README names the listing beside `endstate audit`.

Before: its "Check first" step 1 had the person on call open the store with sqlite3 or psql and
write a SELECT against `endstate_audits`."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RUNBOOK = ROOT / "docs" / "runbooks" / "EndstateFalseSuccessShareHigh.md"


def test_the_runbooks_first_check_lists_the_false_successes_with_the_cli() -> None:
    text = RUNBOOK.read_text()
    first = text[text.index("## Check first") : text.index("\n2. ")]
    assert "endstate audit --list --outcome false_success --agent AGENT --task-type TASK_TYPE" in first
    assert "endstate_audits" not in text and "SELECT" not in text and "psql" not in text


def test_the_readme_names_the_listing_beside_endstate_audit() -> None:
    lines = (ROOT / "README.md").read_text().splitlines()
    at = lines.index("endstate audit                           # make the success audits that are due")
    assert lines[at + 1].startswith("endstate audit --list --outcome false_success")
