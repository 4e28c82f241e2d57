"""faces49: the same reply to a waiting run is taken, or refused, alike on every face over a store (the
Python runner, `endstate`, the JSON API, the inbox), and leaves the same record.

Before: an answer the inbox's own textarea takes (20,000 characters; 8,000 in Chinese) was a raw JSON 413
(its form, percent-encoded, passed the API's 64 KiB), the answer lost; a denial the API was sent with a
blank reason was kept as that blank ('' where the other faces keep none), and a blank reason of spaces was
given to the model as "Denied by a person: ." on every face; the runner took an approval given with text,
which the model never reads, and kept that text as what the approval said.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient
from test_service_defences import AUTH, LOCAL, TOKEN

from agent.cli import _help
from agent.cli.main import main
from agent.durable.runner import AnswerError, Runner
from agent.durable.store import RunRecord, RunStatus, RunStore, open_store
from agent.errors import ConfigError
from agent.examples.scenarios import example_catalog
from agent.journal import Result
from agent.service.app import Service, create_app
from agent.service.auth import COOKIE, Token

QUESTION = ("invoice-downloader", "invoice/which-one")
APPROVAL = ("ci-fixer", "ci/approved-push")
SAME_ORIGIN = {"Origin": LOCAL}
ANSWER_CHARS = 20_000  # what the inbox's answer box takes (its maxlength)


class Faces:
    """One SQLite store with runs waiting for a person, and every face over it."""

    def __init__(self, tmp: Path) -> None:
        self.url = str(tmp / "runs.db")
        self.store = open_store(self.url)
        # the Python face: a runner of its own (a runner is used from one event loop at a time, and the
        # service's drives its runs on the app's)
        self.runner = Runner(self.store, example_catalog(tmp / "worlds"))
        self.served = Runner(self.store, example_catalog(tmp / "worlds"))
        service = Service(self.served, Token(TOKEN), sweep_interval=3600)
        self.api = TestClient(create_app(service), base_url=LOCAL, raise_server_exceptions=False)
        self.api.__enter__()
        self.api.cookies.set(COOKIE, Token(TOKEN).cookie_value)  # signed in to the inbox

    def waiting(self, run_id: str, kind: tuple[str, str] = QUESTION) -> str:
        agent, scenario = kind
        asyncio.run(self.runner.start(agent, "Go", state={"scenario": scenario}, run_id=run_id))
        assert self.record(run_id).status is RunStatus.WAITING
        return run_id

    def record(self, run_id: str) -> RunRecord:
        found = self.store.get(run_id)
        assert found is not None
        return found

    def settled(self, run_id: str) -> RunRecord:
        """The run once the segment the service drives in the background has ended."""
        for _ in range(600):
            if (found := self.record(run_id)).status is not RunStatus.RUNNING:
                return found
            time.sleep(0.05)
        raise AssertionError(f"run {run_id} did not settle")

    def inbox(self, run_id: str, action: str, **form: str) -> Any:
        path = f"/inbox/{run_id}/{action}"
        return self.api.post(path, data=form, headers=SAME_ORIGIN, follow_redirects=False)

    def close(self) -> None:
        self.api.__exit__(None, None, None)
        self.runner.catalog.close()
        self.served.catalog.close()
        self.store.close()


def faces_over(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Faces]:
    """Every face over a new store in `tmp_path`, the CLI's user "carol"; closed after (a fixture's body)."""
    monkeypatch.setenv("ENDSTATE_WORLDS", str(tmp_path / "worlds"))
    monkeypatch.setattr(_help.getpass, "getuser", lambda: "carol")
    made = Faces(tmp_path)
    yield made
    made.close()


@pytest.fixture
def faces(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Faces]:
    yield from faces_over(tmp_path, monkeypatch)


def _answered(record: RunRecord) -> tuple[str | None, str | None]:
    return record.last_answer_kind, record.last_answer


# -- the inbox takes every answer its own page lets a person write ----------------------------------


def test_an_answer_as_long_as_the_inbox_page_takes_is_taken_in_any_script(faces: Faces) -> None:
    answer = "答" * 8_000  # 24 KB of UTF-8, 72 KB once the form is percent-encoded
    faces.waiting("q")
    sent = faces.inbox("q", "answer", answer=answer, segments="1")
    assert sent.status_code == 303, sent.text[:300]
    assert _answered(faces.settled("q")) == ("answer", answer)


def test_a_longer_answer_than_the_inbox_takes_is_a_page_that_says_so_and_shows_it_back(faces: Faces) -> None:
    answer = "x" * (ANSWER_CHARS + 1)
    faces.waiting("q")
    refused = faces.inbox("q", "answer", answer=answer, segments="1")
    assert refused.status_code == 400 and "text/html" in refused.headers["content-type"]
    assert f"at most {ANSWER_CHARS:,} characters" in refused.text and answer in refused.text
    assert faces.record("q").status is RunStatus.WAITING


def test_a_form_too_large_to_read_is_an_inbox_page_not_json_and_changes_nothing(faces: Faces) -> None:
    faces.waiting("q")
    refused = faces.inbox("q", "answer", answer="答" * 30_000, segments="1")
    assert refused.status_code == 413 and "text/html" in refused.headers["content-type"], refused.text[:300]
    assert "Send a shorter answer" in refused.text
    assert faces.record("q").status is RunStatus.WAITING


# -- a blank denial reason is no reason, on every face ------------------------------------------------


def test_a_blank_denial_reason_is_kept_as_no_reason_on_every_face(faces: Faces) -> None:
    for run_id in ("cli", "cli-spaces", "api", "api-spaces", "inbox-spaces", "runner-spaces"):
        faces.waiting(run_id, APPROVAL)
    assert main(["deny", "cli", "", "--store", faces.url]) == 0
    assert main(["deny", "cli-spaces", "   ", "--store", faces.url]) == 0
    assert faces.api.post("/runs/api/deny", json={"reason": ""}, headers=AUTH).status_code == 202
    assert faces.api.post("/runs/api-spaces/deny", json={"reason": "  "}, headers=AUTH).status_code == 202
    assert faces.inbox("inbox-spaces", "deny", reason="  ", segments="1").status_code == 303
    asyncio.run(faces.runner.drive(faces.runner.claim("runner-spaces", "  ", approved=False)))
    for run_id in ("cli", "cli-spaces", "api", "api-spaces", "inbox-spaces", "runner-spaces"):
        assert _answered(faces.settled(run_id)) == ("denied", None), run_id
        told = _denial_told(faces.store, run_id)
        assert told.startswith("Denied by a person: no reason given."), (run_id, told)


def _denial_told(store: RunStore, run_id: str) -> str:
    """What the model was told of the denial: the result of the call that waited."""
    snap = store.snapshot(run_id)
    assert snap is not None
    results = [e.text for e in snap.journal if isinstance(e, Result) and e.text.startswith("Denied")]
    assert len(results) == 1, results
    return results[0]


# -- an approval carries no text ----------------------------------------------------------------------


def test_an_approval_given_with_text_is_refused_by_the_runner_as_the_other_faces_refuse_it(
    faces: Faces,
) -> None:
    faces.waiting("a", APPROVAL)
    with pytest.raises(AnswerError, match="an approval carries no text"):
        faces.runner.claim("a", "yes, push it", approved=True)
    with pytest.raises(AnswerError, match="an approval carries no text"):
        faces.runner.claim("a", "\u200b", approved=True)  # no blank: a person cannot see it, the model can
    assert faces.record("a").status is RunStatus.WAITING
    refused = faces.api.post("/runs/a/approve", json={"answer": "yes, push it"}, headers=AUTH)
    assert refused.status_code == 400 and faces.record("a").status is RunStatus.WAITING
    asyncio.run(faces.runner.drive(faces.runner.claim("a", " ", approved=True)))  # blank: no text
    assert _answered(faces.record("a")) == ("approved", None)


def test_a_reply_form_with_a_count_that_is_no_number_is_an_inbox_page_not_json(faces: Faces) -> None:
    faces.waiting("q")
    refused = faces.inbox("q", "answer", answer="INV-0913", segments="two")
    assert refused.status_code == 400 and "text/html" in refused.headers["content-type"], refused.text[:300]
    assert "segments must be a whole number" in refused.text and "INV-0913" in refused.text  # shown back
    assert faces.record("q").status is RunStatus.WAITING


# -- a start's empty run id is no id, on every face -----------------------------------------------


def test_an_empty_run_id_is_refused_by_the_runner_as_by_the_command_and_the_api(
    faces: Faces, capsys: pytest.CaptureFixture[str]
) -> None:
    agent, scenario = QUESTION
    with pytest.raises(ConfigError, match="run_id must not be empty"):
        faces.runner.begin(agent, "Go", state={"scenario": scenario}, run_id="")
    assert main(["start", agent, "Go", "--run-id", "", "--store", faces.url]) == 2
    assert "--run-id must not be empty" in capsys.readouterr().err
    refused = faces.api.post("/runs", json={"agent": agent, "task": "Go", "run_id": ""}, headers=AUTH)
    assert refused.status_code == 400 and "'run_id' must not be empty" in refused.json()["error"]
    assert faces.store.list_runs() == []


@pytest.mark.parametrize("segments", [True, "1", 1.0, -1])
def test_a_count_read_that_is_no_whole_number_is_refused_by_the_runner_as_by_the_api(
    faces: Faces, segments: Any
) -> None:
    faces.waiting("q")
    with pytest.raises(AnswerError, match=r"segments must be the run's segments count as read \(a whole"):
        faces.runner.claim("q", "INV-0913", segments=segments)
    sent = faces.api.post("/runs/q/answer", json={"answer": "INV-0913", "segments": segments}, headers=AUTH)
    assert sent.status_code == 400 and "'segments' must be the run's segments count" in sent.json()["error"]
    assert faces.record("q").status is RunStatus.WAITING
