"""red40b: a run id or a tool name with a letter outside ASCII is refused saying ASCII: the messages said
"letters", and `café` is made of letters."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent import tool
from agent.cli.main import main
from agent.errors import ConfigError


def test_a_run_id_outside_ascii_is_refused_saying_ascii(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: "run id 'café' must be 1-64 letters, digits, ...", which 'café' is."""
    argv = ["start", "csv-cleaner", "Clean", "--scenario", "csv/clean", "--store", str(tmp_path / "r.db")]
    assert main([*argv, "--run-id", "café"]) == 2
    err = capsys.readouterr().err
    assert "run id 'café' must be 1-64 ASCII letters, digits, '_', '-' or '.', not starting with '.'" in err


def test_a_tool_name_outside_ascii_is_refused_saying_ascii() -> None:
    """Before: "1 to 64 letters, digits, _ or -", which 'café' is."""

    def cafe() -> str:
        """Order a coffee."""
        return "ok"

    with pytest.raises(ConfigError, match=r"1 to 64 ASCII letters, digits, _ or -"):
        tool(name="café")(cafe)
