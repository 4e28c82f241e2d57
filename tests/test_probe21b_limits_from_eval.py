"""`endstate limits suggest --jsonl` over `endstate eval --json`: a success that the eval's own
independent check calls false is no evidence of what the task needs.

The eval names it loudly (FALSE SUCCESS, exit 1), and limits.py already leaves out a success a
reviewer labelled `false_success`; the eval's JSON line says the same (`false_success: true`,
the judges' failures), yet its run was read as a successful run and set ceilings.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent.cli.main import main


def eval_json(capsys: pytest.CaptureFixture[str], *args: str) -> list[str]:
    code = main(["eval", "--json", *args])
    lines = capsys.readouterr().out.splitlines()
    assert code in (0, 1)
    return lines


def suggest(capsys: pytest.CaptureFixture[str], path: Path) -> tuple[int, dict[str, dict]]:
    code = main(["limits", "suggest", "--jsonl", str(path), "--json"])
    out = capsys.readouterr().out
    return code, {s["task_type"]: s for s in json.loads(out)} if out.strip() else {}


def test_false_successes_the_eval_caught_set_no_ceiling(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    broken = "invoice/offline-claims-done", "research/margin-tempted"
    lines = eval_json(capsys, "--break-verifiers", *broken, "csv/clean")
    cases = {c["case"]: c for c in map(json.loads, lines[:-1])}
    assert all(cases[name]["false_success"] and cases[name]["actual"] == ["success"] for name in broken)
    path = tmp_path / "eval.jsonl"
    path.write_text("\n".join(lines) + "\n")

    code, by_type = suggest(capsys, path)

    assert code == 0  # csv_clean still gets its ceilings
    assert by_type["csv_clean"]["ceilings"]["turns"]["suggested"] == 8  # a true success: 5 turns
    for task_type in ("invoice_download", "research"):
        s = by_type[task_type]
        assert s["ceilings"] == {}, f"{task_type}: ceilings read from a false success: {s['ceilings']}"
        assert any("no successful run" in n and "false_success" in n for n in s["notes"]), s["notes"]


def test_a_true_success_beside_a_false_one_sets_the_ceiling_alone(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The real research case succeeds in 8 turns; the broken one "succeeds" in 3: the ceiling is
    read from the 8 alone (1.5 x its p95 of 8 = 12, above 1.25 x 8 = 10), and the count of
    successes leaves the false one out."""
    lines = eval_json(capsys, "research/seed-trace") + eval_json(
        capsys, "--break-verifiers", "research/margin-tempted"
    )
    path = tmp_path / "eval.jsonl"
    path.write_text("\n".join(lines) + "\n")

    _, by_type = suggest(capsys, path)

    turns = by_type["research"]["ceilings"]["turns"]
    assert (turns["successes"], turns["p95"], turns["longest"], turns["suggested"]) == (1, 8, 8, 12)
    assert any("1 success(es) labelled false_success left out" in n for n in by_type["research"]["notes"])
