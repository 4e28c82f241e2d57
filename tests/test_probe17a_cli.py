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


@pytest.mark.parametrize(
    ("argv", "what"),
    [
        (["start", "csv-cleaner", "clean \udcff"], "the task"),
        (["start", "csv-cleaner", "clean", "--task-type", "\udcff"], "--task-type"),
        (["answer", "some-run", "INV-\udcff"], "the answer"),
        (["deny", "some-run", "no \udcff"], "the reason"),
    ],
)
@pytest.mark.parametrize("where", [[], ["--temporal", "127.0.0.1:1"]])
def test_text_that_is_not_utf8_is_refused_in_one_line(
    argv: list[str], what: str, where: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # A task or an answer typed in a terminal whose bytes are not UTF-8 reaches Python as lone
    # surrogates: the store took it as it was (the run stored, the answer given; a model API cannot be
    # sent it), while `POST /runs` and the answers refuse it (400), as `--state` did already.
    store = tmp_path / "runs.db"
    code = main([*argv, "--store", str(store), *where])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1
    assert f"{what} holds bytes that are not UTF-8" in err
    assert not store.exists()


def test_serve_over_temporal_keeps_the_settings_that_apply_to_it() -> None:
    # `endstate serve --temporal ... --page-size 10 --ready-timeout 7` took both options and served
    # inbox pages of 50 and a /readyz that gave Temporal 3 s: the service was built without them.
    from agent.cli.main import build_parser
    from agent.service.auth import Token
    from agent.temporal.service import served

    argv = ["serve", "--temporal", "127.0.0.1:7233", "--page-size", "10", "--ready-timeout", "7"]
    args = build_parser().parse_args([*argv, "--body-timeout", "4", "--allowed-host", "inbox.example"])
    service = served(args, object(), Token("test-token-0123456789abcdef"), None)  # type: ignore[arg-type]
    assert (service.page_size, service.ready_timeout, service.body_timeout) == (10, 7.0, 4.0)
    assert "inbox.example" in service.allowed_hosts and service.sweep_interval == 3600.0
