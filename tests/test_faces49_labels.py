"""faces49: a review label is refused alike by `endstate review label`, the review page and the Python
API, in the same words, and is never kept without a name.

Before: `endstate review label RUN fine --by "  "` (and `review.label` without `by`) kept a label under
no name, printed as "labelled fine by ", where the page refuses a label without one; and the page
refused a note too long with "Say who you are (your name...)", though the name was given.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_faces49_replies import Faces

from agent.cli import _help
from agent.cli.main import main
from agent.durable import review
from agent.durable.review import NOTE_CHARS, ReviewError


@pytest.fixture
def faces(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Faces]:
    monkeypatch.setenv("ENDSTATE_WORLDS", str(tmp_path / "worlds"))
    monkeypatch.setattr(_help.getpass, "getuser", lambda: "carol")
    made = Faces(tmp_path)
    made.waiting("done")
    asyncio.run(made.runner.drive(made.runner.claim("done", "INV-0913")))
    yield made
    made.close()


def _page_label(faces: Faces, **form: str) -> tuple[int, str]:
    """The review page's answer to a label form: its status and the error it shows."""
    to = "/inbox/review/runs/done/label"
    shown = faces.api.post(to, data=form, headers={"Origin": "http://127.0.0.1:8000"}, follow_redirects=False)
    error = re.search(r'class="error" role="status">([^<]*)<', shown.text)
    return shown.status_code, error.group(1).replace("&#x27;", "'") if error else ""


@pytest.mark.parametrize("by", ["", "   "])
def test_a_label_without_a_name_is_refused_on_every_face_and_nothing_is_kept(
    faces: Faces, by: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(ReviewError, match="say who gives the label") as python:
        review.label(faces.store, "done", "fine", by=by)
    assert main(["review", "label", "done", "fine", "--by", by, "--store", faces.url]) == 2
    assert capsys.readouterr().err.strip() == f"endstate: {python.value}"
    status, error = _page_label(faces, label="fine", by=by)
    assert status == 400 and "Say who you are" in error
    assert faces.store.reviews() == []
    assert main(["review", "label", "done", "fine", "--store", faces.url]) == 0  # no --by: the user
    assert [r.by for r in faces.store.reviews()] == ["carol"]


def test_a_note_too_long_is_refused_in_the_same_words_by_the_page_and_the_command(
    faces: Faces, capsys: pytest.CaptureFixture[str]
) -> None:
    note = "n" * (NOTE_CHARS + 1)
    assert main(["review", "label", "done", "fine", "--note", note, "--by", "ana", "--store", faces.url]) == 2
    said = capsys.readouterr().err.strip().removeprefix("endstate: ")
    assert said.startswith(f"the note is {NOTE_CHARS + 1} characters long")
    assert _page_label(faces, label="fine", by="ana", note=note) == (400, said)
    assert faces.store.reviews() == []
