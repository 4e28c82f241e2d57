"""`ENDSTATE_SHUTDOWN_GRACE`, as the README and `--help` name it.

A value that is no number (`ten`) made every command that runs agents (`start`, `answer`,
`resume`, `recover`, `audit`, ...) a Python traceback; a negative or `nan` one was taken. It is
now a one-line error, exit 2, before any store is opened or made. And `endstate serve --help`
listed the variable though `serve` never reads it (it takes `--grace`): it no longer does.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.cli.main import build_parser, main


@pytest.mark.parametrize("value", ["ten", "-5", "nan", "inf", "1e300"])
def test_a_bad_grace_is_a_usage_error_that_makes_nothing(
    value: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("ENDSTATE_SHUTDOWN_GRACE", value)
    monkeypatch.setenv("ENDSTATE_WORLDS", str(tmp_path / "worlds"))
    store = tmp_path / "runs.db"
    code = main(
        ["start", "csv-cleaner", "Clean orders.csv", "--store", str(store), "--scenario", "csv/clean"]
    )
    err = capsys.readouterr().err
    assert code == 2
    assert "ENDSTATE_SHUTDOWN_GRACE" in err and repr(value) in err and len(err.strip().splitlines()) == 1
    assert not store.exists()


@pytest.mark.parametrize("value", ["", "0", "2.5"])
def test_a_good_or_empty_grace_runs(
    value: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("ENDSTATE_SHUTDOWN_GRACE", value)
    monkeypatch.setenv("ENDSTATE_WORLDS", str(tmp_path / "worlds"))
    store = str(tmp_path / "runs.db")
    assert (
        main(["start", "csv-cleaner", "Clean orders.csv", "--store", store, "--scenario", "csv/clean"]) == 0
    )
    assert "success" in capsys.readouterr().out


def help_of(prog: str) -> str:
    parser = build_parser()
    sub = next(a for a in parser._actions if a.choices and "serve" in a.choices)  # type: ignore[operator]
    return str(sub.choices[prog].format_help())  # type: ignore[index]


def test_serve_help_names_only_what_serve_reads() -> None:
    serve = help_of("serve")
    assert "ENDSTATE_SHUTDOWN_GRACE" not in serve
    assert "--grace" in serve
    for command in ("start", "resume", "recover"):  # these read it
        assert "ENDSTATE_SHUTDOWN_GRACE" in help_of(command)
