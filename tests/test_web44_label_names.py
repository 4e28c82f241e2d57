"""A review label's name is checked as an answer's is: one line of plain text (a real `endstate
serve`, real HTTP; and the CLI against the same store)."""

from __future__ import annotations

import contextlib
import re
from html import unescape
from pathlib import Path

import httpx
import pytest
from test_service_support import TOKEN, Server, endstate, wait_status

pytestmark = pytest.mark.slow

HIDDEN = ["ana\nbo", "ana\x1b[2J", "ana\u202eob", "ana\u200b"]  # a line break, an escape, bidi, zero-width


def test_a_label_whose_name_holds_control_or_invisible_characters_is_refused(tmp_path: Path) -> None:
    """An answer's name with a line break, an escape or a bidi mark is a 400; a label's was stored,
    and shown to the next reviewer as the name of who labelled the run."""
    with Server(str(tmp_path / "runs.db"), tmp_path) as server:
        with server.client() as api:
            state = {"scenario": "invoice/portal-offline"}
            body = {"agent": "invoice-downloader", "task": "t", "state": state}
            run_id = api.post("/runs", json=body).json()["run_id"]
            wait_status(api, run_id, "finished")
        same = {"Origin": server.url}
        note = "portal down since 02:10"
        with contextlib.closing(httpx.Client(base_url=server.url, timeout=30, headers=same)) as browser:
            assert browser.post("/inbox/login", data={"token": TOKEN}).status_code == 303
            to = f"/inbox/review/runs/{run_id}/label"
            for name in HIDDEN:
                form = {"label": "correct_give_up", "note": note, "by": name}
                refused = browser.post(to, data=form)
                assert refused.status_code == 400, (name, refused.status_code)
                assert "control or invisible characters" in unescape(refused.text)
                kept = re.findall(r'<pre class="kept-text">(.*?)</pre>', refused.text, re.S)
                assert [unescape(k) for k in kept] == [note]  # the note is shown back, not lost
            assert browser.get(f"/inbox/review/runs/{run_id}").text.count("Not labelled yet") == 1
            taken = browser.post(to, data={"label": "correct_give_up", "note": note, "by": " ana "})
            assert taken.status_code == 303
        cli = endstate("review", "label", run_id, "fine", "--by", "bo\nana", store=server.store)
        assert cli.returncode == 2 and "control or invisible characters" in cli.stderr, cli.stderr
        shown = httpx.get(f"{server.url}/inbox/review/runs/{run_id}", timeout=30).text
        assert shown.count('class="labelled-by"') == 1 and 'class="labelled-by">by ana,' in shown
