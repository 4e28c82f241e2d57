"""red40: `demo --list --json` and `eval --list --json` print JSON lines, as --json says, not the table."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent.cli.main import main


@pytest.mark.parametrize(
    ("args", "first"),
    [
        (["demo", "--list", "--json"], {"name": "csv/clean", "agent": "csv-cleaner", "expect": "success"}),
        (
            ["eval", "--list", "--json", "csv/clean"],
            {"name": "csv/clean", "agent": "csv-cleaner", "fixture": "dirty_orders", "expected": ["success"]},
        ),
    ],
)
def test_a_list_under_json_is_json_lines(
    args: list[str], first: dict[str, object], capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: each printed its table under --json too, which no JSON reader takes."""
    assert main(args) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert rows[0] == first
    if args[0] == "demo":
        follow = next(r for r in rows if r["name"] == "invoice/which-one")
        assert follow == {
            "name": "invoice/which-one",
            "agent": "invoice-downloader",
            "expect": "need_help",
            "then": "answer",
            "expect_after": "success",
        }


@pytest.mark.parametrize("command", [["demo", "csv/clean"], ["worker", "--temporal", "127.0.0.1:1"]])
def test_a_metrics_address_without_a_port_is_refused(
    command: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: `endstate demo --metrics-addr 0.0.0.0` (a container's address, the port forgotten) ran
    with no /metrics served and no word of it."""
    assert main([*command, "--metrics-addr", "0.0.0.0"]) == 2
    assert "--metrics-addr 0.0.0.0 serves /metrics only with --metrics-port PORT" in capsys.readouterr().err


@pytest.mark.parametrize("command", [["eval", "csv/clean"], ["demo", "csv/clean"], ["doctor"]])
def test_an_empty_model_is_a_usage_error(command: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    """Before: `endstate eval --model "$MODEL"` with MODEL unset ran the scripted models offline (a CI
    gate passed without a call to Claude), `demo` likewise, and `doctor` checked the default model."""
    with pytest.raises(SystemExit) as exit_:
        main([*command, "--model", ""])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert "argument --model: must name a model, such as claude-sonnet-5-5 (it is empty)" in err


def test_an_empty_case_name_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: `endstate eval "$CASE"` with CASE unset loaded every YAML file under the working folder
    as cases (the repository's alertmanager.yml among them), not the shipped cases or the one meant."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "other.yaml").write_text("cases:\n  - name: x\n")
    assert main(["eval", ""]) == 2
    assert "a case name or path is empty (an unset variable?)" in capsys.readouterr().err


@pytest.mark.parametrize(
    "args",
    [
        ["runs", "--store", ""],
        ["start", "csv-cleaner", "Clean it", "--scenario", "csv/clean", "--catalog", ""],
        ["runs", "--temporal", ""],
        ["review", "--store", ""],
        ["review", "promote", "r1", "--out", ""],
        ["limits", "suggest", "--jsonl", ""],
        ["limits", "suggest", "--prometheus", " "],
        ["serve", "--host", ""],
        ["serve", "--token-file", ""],
        ["serve", "--cases-dir", ""],
        ["eval", "--catalog", "", "csv/clean"],
    ],
)
def test_an_empty_option_value_is_a_usage_error(args: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    """Before: each fell back to its default without a word: `--temporal "$T"` with T unset ran on a
    local store, `--host ""` listened on every interface, `--jsonl ""` read the run store."""
    with pytest.raises(SystemExit) as exit_:
        main(args)
    flag = next(a for a in args if a.startswith("--") and args[args.index(a) + 1].strip() == "")
    assert exit_.value.code == 2
    assert f"argument {flag}: must not be empty (an unset variable?)" in capsys.readouterr().err


def test_serve_variables_set_but_empty_are_their_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    """$ENDSTATE_HOST set but empty listened on every interface; $ENDSTATE_PORT and
    $ENDSTATE_READ_AUTH so refused to start, where the other variables read empty as unset."""
    from agent.cli.main import build_parser

    for name in ("ENDSTATE_HOST", "ENDSTATE_PORT", "ENDSTATE_READ_AUTH"):
        monkeypatch.setenv(name, "")
    args = build_parser().parse_args(["serve"])
    assert (args.host, args.port, args.read_auth) == ("127.0.0.1", 8000, "auto")
