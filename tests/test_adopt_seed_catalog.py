"""`endstate start my-agent ...` in a shell where neither `--catalog` nor `$ENDSTATE_CATALOG` names the
team's catalog (a new terminal, a CI job without the variable): the CLI falls back to the seed
examples, and said only "no agent named 'ticket-triage' in the catalog; known: ci-fixer, ...", which
read as if the team's own catalog lacked the agent. It now says which catalog that was and how to
name theirs."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.cli.main import main


@pytest.fixture(autouse=True)
def no_catalog_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ENDSTATE_CATALOG", raising=False)
    monkeypatch.setenv("OTEL_SDK_DISABLED", "true")


def test_an_agent_missing_from_the_seed_catalog_says_to_name_yours(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["start", "ticket-triage", "Triage T-1", "--store", str(tmp_path / "runs.db")]) == 2
    said = capsys.readouterr().err
    assert "no agent named 'ticket-triage' in the seed examples' catalog" in said
    assert "--catalog module:attr" in said and "$ENDSTATE_CATALOG" in said
    assert "known: ci-fixer, csv-cleaner, invoice-downloader, researcher" in said


def test_an_agent_missing_from_a_catalog_named_says_only_what_it_has(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ENDSTATE_CATALOG", "test_runner_agents:catalog")
    assert main(["start", "ticket-triage", "Triage T-1", "--store", str(tmp_path / "runs.db")]) == 2
    said = capsys.readouterr().err
    assert "no agent named 'ticket-triage' in the catalog; known: configured-counter, counter" in said
    assert "seed" not in said and "--catalog" not in said
