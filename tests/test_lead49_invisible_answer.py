"""An answer that shows nothing is no answer, whatever face it comes through.

An answer of blanks was refused everywhere (the one check, `journal.reply_problem`), but one of a
zero-width space, a control character or a variation selector was taken: the run went on with a
"person's answer" that nobody can read, and the person asked saw nothing to correct.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_faces49_replies import QUESTION, SAME_ORIGIN, Faces, faces_over
from test_service_defences import AUTH

from agent import Agent, Answer, SnapshotError, StopReason
from agent.cli.main import main
from agent.durable.runner import AnswerError
from agent.durable.store import RunStatus
from agent.models.scripted import ScriptedModel, finish

NOTHING_SHOWN = ["\u200b", "\u200b \u200d", "\x00", "\ufe0f\u2060", " \u200b\t"]


def _agent() -> Agent:
    steps = [[finish("need_help", "Which invoice?")], [finish("done", "paid")]]
    return Agent(name="payer", model=ScriptedModel(steps))


@pytest.mark.parametrize("text", NOTHING_SHOWN)
def test_the_library_refuses_an_answer_that_shows_nothing(text: str) -> None:
    asked = _agent().run("pay it")
    assert asked.reason is StopReason.NEED_HELP and asked.snapshot is not None
    with pytest.raises(SnapshotError, match="waits for an answer to 'Which invoice\\?': give one"):
        _agent().resume(asked.snapshot, Answer(text))
    assert _agent().resume(asked.snapshot, Answer("\u200bINV-7")).reason is StopReason.SUCCESS


@pytest.fixture
def faces(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Faces]:
    yield from faces_over(tmp_path, monkeypatch)


@pytest.mark.parametrize("text", ["\u200b", "\x00\u200d"])
def test_every_face_over_a_store_refuses_it_and_the_run_still_waits(faces: Faces, text: str) -> None:
    run_id = faces.waiting("q", QUESTION)
    with pytest.raises(AnswerError, match="give one"):
        asyncio.run(faces.runner.resume(run_id, text))
    refused = faces.api.post(f"/runs/{run_id}/answer", json={"answer": text, "segments": 1}, headers=AUTH)
    assert 400 <= refused.status_code < 500, refused.text
    page = faces.api.post(
        f"/inbox/{run_id}/answer", data={"answer": text, "segments": "1"}, headers=SAME_ORIGIN
    )
    assert page.status_code >= 400, page.text[:300]
    if "\x00" not in text:  # a command line cannot carry a NUL
        assert main(["answer", run_id, text, "--store", faces.url]) == 2
    record = faces.record(run_id)
    assert record.status is RunStatus.WAITING and record.last_answer is None
