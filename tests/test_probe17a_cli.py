"""probe17a: the `endstate` commands refuse what `POST /runs` refuses, in one line and exit code 2."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.cli.main import main


@pytest.mark.parametrize("where", [[], ["--temporal", "127.0.0.1:1"]])
def test_an_empty_run_id_is_refused_not_taken_as_none(
    where: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # `endstate start AGENT TASK --run-id "$KEY"` with KEY unset started a run under a new random id,
    # so a script's retry started another run each time; `POST /runs` refuses an empty run_id (400),
    # "a client's retry key went missing". Refused before anything is stored or any server is asked.
    store = tmp_path / "runs.db"
    code = main(["start", "csv-cleaner", "clean", "--run-id", "", "--store", str(store), *where])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "--run-id must not be empty" in err
    assert not store.exists()
