"""red40b: `endstate review promote` refuses to write over a case file promoted before, as the inbox's
Promote does, naming the file; `--force` replaces it."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_review import cli, play

from agent.durable.store import open_store


def test_promote_keeps_a_case_there_already_unless_forced(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: a second promote (another label, a typo in --out's place) wrote over the case, and the
    edits made to it were lost without a word."""
    store_path, out = tmp_path / "runs.db", tmp_path / "cases"
    store = open_store(str(store_path))
    try:
        assert (
            play(store, tmp_path, "invoice-downloader", "invoice/portal-offline", "offline").reason
            == "gave_up"
        )
    finally:
        store.close()
    assert cli(capsys, "review", "label", "offline", "correct_give_up", "--store", str(store_path))[0] == 0
    promote = ("review", "promote", "offline", "--out", str(out), "--store", str(store_path))
    first = cli(capsys, *promote)
    assert first[0] == 0, first[1]
    case = out / "offline.yaml"
    case.write_text("# edited by hand\n" + case.read_text())
    edited = case.read_text()

    code, said = cli(capsys, *promote)
    assert code == 2 and f"{case} exists already" in said and "--force" in said, said
    assert case.read_text() == edited

    code, said = cli(capsys, *promote, "--force")
    assert code == 0 and f"wrote {case}" in said, said
    assert "# edited by hand" not in case.read_text()
