"""A review label's name (`by`) and note are capped on every face: Python, the CLI and the inbox form.

The labeller's name had no cap in `review.label` (a 10 MB name was stored and shown on every page of
the run); the inbox took names of up to 200 characters where an answerer's may have 100; a note
past the inbox's 2,000 characters was stored from the CLI.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterator
from html import unescape
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from agent.cli.main import main
from agent.durable import review
from agent.durable.runner import Runner
from agent.durable.store import RunStore, open_store
from agent.durable.store.base import ANSWERER_CHARS
from agent.examples.scenarios import example_catalog
from agent.service.app import Service, create_app
from agent.service.auth import Token

TOKEN = "test-token-0123456789abcdef"
LOCAL = "http://127.0.0.1:8000"
RUN = "gave-up"


@pytest.fixture
def store_path(tmp_path: Path) -> Iterator[Path]:
    """A store holding one finished run (`RUN`, a give-up), to label."""
    path = tmp_path / "runs.db"
    store = open_store(str(path))
    catalog = example_catalog(tmp_path / "worlds")
    try:
        state = {"scenario": "invoice/portal-offline"}
        asyncio.run(Runner(store, catalog).start("invoice-downloader", "t", state=state, run_id=RUN))
    finally:
        catalog.close()
        store.close()
    yield path


@pytest.fixture
def store(store_path: Path) -> Iterator[RunStore]:
    opened = open_store(str(store_path))
    yield opened
    opened.close()


@pytest.mark.parametrize("length", [ANSWERER_CHARS + 1, 10 * 1024 * 1024])
def test_a_labellers_name_past_the_answerers_cap_is_refused_in_python(store: RunStore, length: int) -> None:
    with pytest.raises(review.ReviewError) as refused:
        review.label(store, RUN, "correct_give_up", by="a" * length)
    said = str(refused.value)
    assert f"{length} characters" in said and f"at most {ANSWERER_CHARS}" in said and "shorter" in said
    assert len(said) < 400  # the name is not repeated back
    assert store.reviews() == []
    taken = review.label(store, RUN, "correct_give_up", by=" " + "a" * ANSWERER_CHARS + " ")
    assert taken.by == "a" * ANSWERER_CHARS


def test_a_note_past_its_cap_is_refused_in_python(store: RunStore) -> None:
    with pytest.raises(review.ReviewError, match=rf"at most {review.NOTE_CHARS}"):
        review.label(store, RUN, "correct_give_up", note="n" * (review.NOTE_CHARS + 1), by="ana")
    assert store.reviews() == []


def test_the_cli_refuses_a_long_name_or_note_in_one_line(
    store_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    where = ("--store", str(store_path))
    long_name = ("--by", "b" * (ANSWERER_CHARS + 1))
    assert main(["review", "label", RUN, "fine", *where, *long_name]) == 2
    err = capsys.readouterr().err
    assert f"labeller's name is {ANSWERER_CHARS + 1} characters long; at most {ANSWERER_CHARS}" in err
    assert "Traceback" not in err
    assert main(["review", "label", RUN, "fine", *where, "--note", "n" * (review.NOTE_CHARS + 1)]) == 2
    err = capsys.readouterr().err
    assert f"note is {review.NOTE_CHARS + 1} characters long; at most {review.NOTE_CHARS}" in err
    opened = open_store(str(store_path))
    try:
        assert opened.reviews() == []
    finally:
        opened.close()


def test_the_inbox_form_takes_names_as_long_as_an_answerers_and_no_longer(
    store_path: Path, tmp_path: Path
) -> None:
    store = open_store(str(store_path))
    runner = Runner(store, example_catalog(tmp_path / "worlds"))
    service = Service(runner, Token(TOKEN), sweep_interval=3600)
    try:
        with TestClient(create_app(service), base_url=LOCAL, headers={"Origin": LOCAL}) as browser:
            signed_in = browser.post("/inbox/login", data={"token": TOKEN}, follow_redirects=False)
            assert signed_in.status_code == 303
            to = f"/inbox/review/runs/{RUN}/label"
            form = {"label": "correct_give_up", "note": "portal down", "by": "c" * (ANSWERER_CHARS + 1)}
            refused = browser.post(to, data=form, follow_redirects=False)
            assert refused.status_code == 400
            assert f"at most {ANSWERER_CHARS} characters" in unescape(refused.text)
            assert store.reviews() == []
            field = re.search(r'<input name="by"[^>]*maxlength="(\d+)"', refused.text)
            assert field and int(field.group(1)) == ANSWERER_CHARS
            form["by"] = "c" * ANSWERER_CHARS
            assert browser.post(to, data=form, follow_redirects=False).status_code == 303
            assert [r.by for r in store.reviews()] == ["c" * ANSWERER_CHARS]
    finally:
        runner.catalog.close()
        store.close()
