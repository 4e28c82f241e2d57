"""svc42: the commands that only read runs refuse the options of the commands that run agents.

Before, `endstate runs` and `endstate pending` took `--catalog` and `--lease` (shared by every store
command) and ignored them: `endstate pending --catalog myteam.agents:catalog` listed every waiting run
of the store, not the catalog's, without a word. Now either option is a usage error (exit 2) that
says the command runs no agent; the commands that do still take them.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.cli.main import main


@pytest.mark.parametrize("command", ["runs", "pending"])
@pytest.mark.parametrize("option", [["--catalog", "myteam.agents:catalog"], ["--lease", "5"]])
def test_a_reading_command_refuses_an_option_it_would_ignore(
    command: str, option: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = tmp_path / "runs.db"
    assert main(["runs", "--store", str(store)]) == 2  # no store there: nothing made
    with pytest.raises(SystemExit) as exit_:
        main([command, "--store", str(store), *option])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert f"{option[0]} is not taken: `endstate {command}` only reads runs" in err
    assert not store.exists()


def test_a_command_that_runs_agents_still_takes_them(tmp_path: Path) -> None:
    store = str(tmp_path / "runs.db")
    start = ["start", "csv-cleaner", "Clean it", "--scenario", "csv/clean", "--store", store]
    assert main([*start, "--catalog", "agent.examples.scenarios:example_catalog", "--lease", "5"]) == 0
    assert main(["runs", "--store", store]) == 0
