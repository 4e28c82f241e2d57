"""The README and the runbooks, held to the code they describe.

- Every `endstate ...` command they show names a command that exists, with options it takes.
- Every metric, alert and environment variable they name exists.
- "No password is ever printed": the commands a CLI line tells you to run next (`endstate pending`,
  `runs`, `review`) carried the store URL as it was given, password and all.
"""

from __future__ import annotations

from pathlib import Path

import pg
import pytest

from agent.cli.main import main

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
RUNBOOKS = sorted((ROOT / "docs" / "runbooks").glob("*.md"))


# -- no password in a printed command -------------------------------------------------------------


def test_the_next_commands_printed_hold_no_password(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`endstate pending --store postgresql://app:PASSWORD@...` printed `-> endstate answer ID --store
    postgresql://app:PASSWORD@... "your answer"`, and `runs` and `review` their hints likewise: the
    password went to the terminal, its scrollback and any log of it. They now show `app:***@`, as
    every other line of the CLI shows the store."""
    monkeypatch.setenv("ENDSTATE_WORLDS", str(tmp_path / "worlds"))
    plain = pg.shared_server().new_database()  # trust auth: the password is taken and not checked
    store = plain.replace("postgresql://postgres@", "postgresql://postgres:s3cret-pw@")
    assert store != plain
    argv = ["--store", store]
    for run_id, scenario in (("asks", "invoice/which-one"), ("gone", "invoice/portal-offline")):
        started = ["start", "invoice-downloader", "Get it", "--scenario", scenario, "--run-id", run_id]
        assert main([*started, *argv]) == 0
    for command in (["pending"], ["runs"], ["review"], ["review", "label", "gone", "correct_give_up"]):
        assert main([*command, *argv]) == 0
    said = capsys.readouterr().out
    assert "--store 'postgresql://postgres:***@127.0.0.1" in said
    assert "s3cret-pw" not in said
