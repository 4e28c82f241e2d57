"""who43: the HTTP API and the CLI name who answers (`by`, `--by`), and say whose answer won.

Before, a body with `by` was a 400 (an unknown field), `endstate answer` took no `--by`, and the
run kept no name; a second answer's 409 said the run moved on, not who moved it.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from test_service_defences import AUTH, Build, build  # noqa: F401 (the fixture)

from agent.cli import _help
from agent.cli.main import main
from agent.durable.store import RunStatus, open_store


def _settled(api: Any, run_id: str) -> dict[str, Any]:
    """The run once its resumed segment ended (the service drives it in the background)."""
    for _ in range(400):  # claimed before the 202: running until the segment ends
        shown = api.get(f"/runs/{run_id}", headers=AUTH).json()
        if shown["status"] != "running":
            return dict(shown)
        time.sleep(0.05)
    raise AssertionError(f"run {run_id} did not settle: {shown}")


def test_an_answer_over_http_keeps_its_name_and_the_late_one_is_told(build: Build) -> None:  # noqa: F811
    api = build(runs=1)
    store = api.app.state.service.runner.store  # type: ignore[attr-defined]
    run_id = store.list_runs(RunStatus.WAITING)[0].run_id
    body = {"answer": "INV-0913", "segments": 1, "by": "ana"}
    assert api.post(f"/runs/{run_id}/answer", json=body, headers=AUTH).status_code == 202
    shown = _settled(api, run_id)
    assert (shown["last_answer_by"], shown["last_answer_kind"], shown["last_answer"]) == (
        "ana",
        "answer",
        "INV-0913",
    )
    late = api.post(f"/runs/{run_id}/answer", json=body | {"by": "bo"}, headers=AUTH)
    assert late.status_code == 409
    assert "answered by ana at " in late.json()["error"] and "answer 'INV-0913'" in late.json()["error"]
    again = api.post(f"/runs/{run_id}/answer", json={"answer": "x"}, headers=AUTH)
    assert again.status_code == 409 and "answered by ana at " in again.json()["error"]


@pytest.mark.parametrize("by", ["x" * 101, "ana\r\nX-Admin: yes", 7, ["ana"]])
def test_a_bad_name_over_http_is_a_400_and_the_run_still_waits(build: Build, by: Any) -> None:  # noqa: F811
    api = build(runs=1)
    store = api.app.state.service.runner.store  # type: ignore[attr-defined]
    run_id = store.list_runs(RunStatus.WAITING)[0].run_id
    response = api.post(f"/runs/{run_id}/answer", json={"answer": "INV-0913", "by": by}, headers=AUTH)
    assert response.status_code == 400 and response.json()["error"].startswith("'by': "), response.text
    assert store.get(run_id).status is RunStatus.WAITING


def test_an_answer_without_by_over_http_still_works(build: Build) -> None:  # noqa: F811
    api = build(runs=1)
    store = api.app.state.service.runner.store  # type: ignore[attr-defined]
    run_id = store.list_runs(RunStatus.WAITING)[0].run_id
    assert api.post(f"/runs/{run_id}/answer", json={"answer": "INV-0913"}, headers=AUTH).status_code == 202
    shown = _settled(api, run_id)
    assert shown["last_answer_by"] is None and shown["last_answer_kind"] == "answer"


def _start(tmp_path: Path, run_id: str, scenario: str, agent: str) -> str:
    store = str(tmp_path / "runs.db")
    assert main(["start", agent, "Go", "--scenario", scenario, "--run-id", run_id, "--store", store]) == 0
    return store


def test_answer_approve_and_deny_take_by_and_default_to_the_user(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("ENDSTATE_WORLDS", str(tmp_path / "worlds"))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(_help.getpass, "getuser", lambda: "carol")
    store = _start(tmp_path, "asks", "invoice/which-one", "invoice-downloader")
    _start(tmp_path, "pushes", "ci/approved-push", "ci-fixer")
    _start(tmp_path, "denied", "ci/approved-push", "ci-fixer")
    assert main(["answer", "asks", "INV-0913", "--by", "ana", "--store", store]) == 0
    assert main(["approve", "pushes", "--store", store]) == 0
    assert main(["deny", "denied", "not today", "--by", "dan", "--store", store]) == 0
    capsys.readouterr()
    opened = open_store(store)
    try:
        kept = {r.run_id: (r.last_answer_by, r.last_answer_kind, r.last_answer) for r in opened.list_runs()}
    finally:
        opened.close()
    assert kept == {
        "asks": ("ana", "answer", "INV-0913"),
        "pushes": ("carol", "approved", None),
        "denied": ("dan", "denied", "not today"),
    }
    assert main(["answer", "asks", "INV-0914", "--by", "bo", "--store", store]) == 2
    assert "answered by ana at " in capsys.readouterr().err


def test_a_bad_by_on_the_command_line_is_refused_before_anything_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("ENDSTATE_WORLDS", str(tmp_path / "worlds"))
    monkeypatch.chdir(tmp_path)
    store = _start(tmp_path, "asks", "invoice/which-one", "invoice-downloader")
    capsys.readouterr()
    assert main(["answer", "asks", "INV-0913", "--by", "ana\x1b[2J", "--store", store]) == 2
    assert "control or invisible characters" in capsys.readouterr().err
    opened = open_store(store)
    try:
        assert opened.get("asks").status is RunStatus.WAITING  # type: ignore[union-attr]
    finally:
        opened.close()


def test_the_pending_list_says_who_answered_a_waiting_run_last() -> None:
    from agent.durable.store import RunRecord
    from agent.service.app import pending_item

    record = RunRecord(
        "r1", "a", "t", "t", RunStatus.WAITING, {}, 0.0, 0.0,
        last_answer_by="ana", last_answer_at=5.0, last_answer_kind="answer", last_answer="EU",
    )  # fmt: skip
    shown = pending_item(record, 10.0)
    assert (shown["last_answer_by"], shown["last_answer_at"]) == ("ana", 5.0)
    assert (shown["last_answer_kind"], shown["last_answer"]) == ("answer", "EU")
