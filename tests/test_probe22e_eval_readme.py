"""agent/evals/README.md shows what `endstate eval` prints: a new user compares, line by line.

The `--break-verifiers` block said "False successes:  4" and named four cases after
`ci/denied-push` joined the shipped cases, whose run (its push denied) claims success with
verifiers removed: the real output names five. These tests hold both shown outputs to the
command's, so the text cannot drift again. A shown line ending in "..." is a prefix.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from agent.cli.main import main
from agent.evals.case import load_cases

README = Path(__file__).resolve().parents[1] / "agent" / "evals" / "README.md"


def shown_block(starts_with: str) -> list[str]:
    """The lines of the README's fenced block whose first line starts with `starts_with`."""
    blocks: list[list[str]] = []
    inside = False
    for line in README.read_text().splitlines():
        if line.startswith("```"):
            inside = not inside
            if inside:
                blocks.append([])
        elif inside:
            blocks[-1].append(line.rstrip())
    for block in blocks:
        if block and block[0].startswith(starts_with):
            return [line for line in block if line.strip()]
    raise AssertionError(f"no block starting {starts_with!r} in {README}")


def shown_lines_in(shown: list[str], printed: list[str]) -> list[str]:
    """The shown lines that the printed output lacks (in order)."""
    missing, at = [], 0
    for line in shown:
        prefix = line[:-3].rstrip() if line.endswith("...") else None
        for i in range(at, len(printed)):
            if printed[i] == line or (prefix is not None and printed[i].startswith(prefix)):
                at = i + 1
                break
        else:
            missing.append(line)
    return missing


def eval_output(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, list[str]]:
    code = main(["eval", "--no-progress", *argv])
    return code, [line.rstrip() for line in capsys.readouterr().out.splitlines() if line.strip()]


@pytest.fixture(autouse=True)
def in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_ENDPOINT", raising=False)


def test_first_run_prints_what_the_readme_shows(capsys: pytest.CaptureFixture[str]) -> None:
    code, printed = eval_output(capsys)
    assert code == 0
    assert shown_lines_in(shown_block("endstate eval: 17 cases"), printed) == []


def test_break_verifiers_prints_what_the_readme_shows(capsys: pytest.CaptureFixture[str]) -> None:
    code, printed = eval_output(capsys, "--break-verifiers")
    assert code == 1  # "exits 1", as the README says
    assert shown_lines_in(shown_block("False successes:"), printed) == []


def test_the_model_verdict_shown_counts_the_shipped_offline_only_cases() -> None:
    """ "PASSED: 12 of 12 ..., 5 skipped." was written when five shipped cases were offline only;
    two are (csv/shutdown, ci/api-down), so `--model` runs 15 and skips 2."""
    shown = re.search(
        r"PASSED: (\d+) of (\d+) cases met their expectations, (\d+) skipped\.", README.read_text()
    )
    assert shown, "the README shows the verdict of an eval with --model"
    cases = load_cases()
    skipped = sum(c.offline_only for c in cases)
    assert (int(shown[1]), int(shown[2]), int(shown[3])) == (
        len(cases) - skipped,
        len(cases) - skipped,
        skipped,
    )
