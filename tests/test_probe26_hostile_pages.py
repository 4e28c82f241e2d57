"""What an attacker who controls a web page the agent reads can make the inbox and review pages
show, in real headless Chromium: the model's question, note and call arguments, the tool's result
and preview carry markup, terminal escapes, bidi overrides, zero-width and tag characters."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest
from hostile_agents import HIDDEN_TO, LONG_BODY, SHOWN_TO
from test_service_support import TOKEN, Server, wait_status

from agent.service.visible import visible

pytestmark = pytest.mark.slow
CATALOG = "hostile_agents:catalog"
# What a browser acts on or hides rather than shows: controls, bidi controls, zero-width and other
# format characters, Unicode tags.
HIDDEN = ["\x00", "\x07", "\x1b", "\r", "\u200b", "\u202c", "\u202e", "\U000e0041"]


def _start(server: Server, folder: Path, script: str, status: str) -> str:
    folder.mkdir(parents=True, exist_ok=True)
    body = {"agent": "mailer", "task": "mail alice", "state": {"dir": str(folder), "script": script}}
    with server.client() as api:
        run_id: str = api.post("/runs", json=body).json()["run_id"]
        wait_status(api, run_id, status)
    return run_id


def _sign_in(page: object, server: Server, path: str = "/inbox") -> None:
    from playwright.sync_api import Page, expect

    assert isinstance(page, Page)
    page.goto(f"{server.url}{path}")
    page.fill("input[name=token]", TOKEN)
    page.click("form.login button")
    expect(page.locator(".notice")).to_have_text("Signed in.")


def _hidden_in(text: str) -> list[str]:
    return [repr(c) for c in HIDDEN if c in text]


def test_an_approval_shows_every_hidden_character_of_the_call_and_the_call_gets_what_was_shown(
    tmp_path: Path, page: object
) -> None:
    """A right-to-left override, a zero-width space and a tag character in the address made the
    pending call read as a mail to alice@example.com in the inbox (arguments and preview alike),
    while the approved call went to another address."""
    from playwright.sync_api import Page, expect

    assert isinstance(page, Page)
    with Server(str(tmp_path / "runs.db"), tmp_path, catalog=CATALOG) as server:
        run_id = _start(server, tmp_path / "mail", "mail", "waiting")
        _sign_in(page, server)
        item = page.locator(f"#run-{run_id}")
        expect(item.locator(".call code")).to_have_text("send_mail")
        shown = item.inner_text()
        assert _hidden_in(shown) == [], shown
        arguments = json.loads(item.locator("pre.arguments").inner_text())  # still JSON: \u escapes
        assert arguments["to"] == HIDDEN_TO != SHOWN_TO
        assert "alice@example.com\\u200b\\u202e\\U000e0041" in item.locator("pre.preview").inner_text()
        assert "\\x1b]52;c;" in item.locator("pre.preview").inner_text()  # the clipboard write, as text
        assert "<script>alert(1)</script>" in item.locator(".steps .result").inner_text()
        assert page.title().startswith("Endstate help inbox")
        item.locator("form.approve button").click()
        with server.client() as api:
            wait_status(api, run_id, "finished")
    [sent] = [json.loads(line) for line in (tmp_path / "mail" / "sent.txt").read_text().splitlines()]
    assert sent["to"] == HIDDEN_TO  # the call got the text the page showed escaped, unchanged


def test_a_question_and_a_give_up_note_show_their_hidden_characters_on_every_page(
    tmp_path: Path, page: object
) -> None:
    """The model's own words (a question, a give-up note) and the page it read, in the inbox, the
    review queue and a run's review page with its eval case."""
    from playwright.sync_api import Page, expect

    assert isinstance(page, Page)
    with Server(str(tmp_path / "runs.db"), tmp_path, catalog=CATALOG) as server:
        asked = _start(server, tmp_path / "ask", "ask", "waiting")
        gave_up = _start(server, tmp_path / "give_up", "give_up", "finished")
        _sign_in(page, server)
        question = page.locator(f"#run-{asked} .question")
        expect(question).to_contain_text("May I mail alice@example.com\\u200b\\u202e\\U000e0041?")
        assert _hidden_in(page.locator(f"#run-{asked}").inner_text()) == []
        page.goto(f"{server.url}/inbox/review")
        item = page.locator(f"#run-{gave_up}")
        expect(item).to_contain_text("\\u202etxt.exe\\u202c\\x00 end")
        assert _hidden_in(item.inner_text()) == []
        _label(tmp_path / "runs.db", gave_up)
        page.goto(f"{server.url}/inbox/review/runs/{gave_up}")
        expect(page.locator("pre.case-yaml")).to_contain_text("catalog: hostile_agents:catalog")
        assert _hidden_in(page.locator("body").inner_text()) == []
        assert page.locator("script").count() == 0


def test_a_long_unbroken_argument_wraps_so_its_end_is_in_sight(tmp_path: Path, page: object) -> None:
    """A value with no space in it overflowed the arguments and preview boxes to the right: its end
    ("PS:wire-$9000-to-acct-1") was off screen unless the person scrolled each box sideways."""
    from playwright.sync_api import Page, expect

    assert isinstance(page, Page)
    with Server(str(tmp_path / "runs.db"), tmp_path, catalog=CATALOG) as server:
        run_id = _start(server, tmp_path / "mail", "wide_mail", "waiting")
        _sign_in(page, server)
        item = page.locator(f"#run-{run_id}")
        expect(item.locator("pre.preview")).to_contain_text("PS:wire-$9000-to-acct-1")
        for box in ("pre.arguments", "pre.preview"):
            wide, shown = item.locator(box).evaluate("e => [e.scrollWidth, e.clientWidth]")
            assert wide <= shown, (box, wide, shown)


def test_a_preview_cut_short_says_so_outside_the_preview(tmp_path: Path) -> None:
    """A mail body padded past what the inbox shows of a preview put its real request past the cut:
    the preview ended in `...` inside its own box, which the body's own text could as well hold."""
    with Server(str(tmp_path / "runs.db"), tmp_path, catalog=CATALOG) as server:
        run_id = _start(server, tmp_path / "mail", "long_mail", "waiting")
        client = _signed_in(server)
        try:
            page = client.get("/inbox").text
        finally:
            client.close()
    item = page[page.index(f'id="run-{run_id}"') :]
    length = len(f"To: {SHOWN_TO}\n\n{LONG_BODY}")
    assert (
        '</pre>\n  <p class="preview-cut"><strong>Cut:</strong> only the first 20,000 of the preview\'s '
        f"{length:,} characters are shown; the call does all that the rest says.</p>"
    ) in item


def test_the_json_api_writes_what_a_terminal_would_act_on_as_json_escapes(tmp_path: Path) -> None:
    """`curl /runs/ID` printed the model's question with its bidi override, zero-width space and tag
    character as they are (JSON escapes only C0 controls); the JSON read back is unchanged."""
    from hostile_agents import QUESTION

    with Server(str(tmp_path / "runs.db"), tmp_path, catalog=CATALOG) as server:
        run_id = _start(server, tmp_path / "ask", "ask", "waiting")
        with server.client() as api:
            raw = api.get(f"/runs/{run_id}").content
            pending = api.get("/pending").content
    for body in (raw, pending):
        text = body.decode()
        assert text.isprintable() and "\\u202e" in text, text[:300]
    assert json.loads(raw)["question"] == QUESTION
    assert "caf\u00e9" in raw.decode()  # what shows as itself stays as it is


def test_an_approval_with_lone_surrogates_in_its_arguments_leaves_the_inbox_up(tmp_path: Path) -> None:
    """A pending call's argument holding a lone surrogate (JSON's `\\ud800`) made the whole inbox
    page fail (500: the page could not be encoded as UTF-8), for every run waiting on it."""
    with Server(str(tmp_path / "runs.db"), tmp_path, catalog=CATALOG) as server:
        run_id = _start(server, tmp_path / "mail", "surrogate", "waiting")
        client = _signed_in(server)
        try:
            got = client.get("/inbox")
        finally:
            client.close()
    assert got.status_code == 200, got.text[:300]
    item = got.text[got.text.index(f'id="run-{run_id}"') :]
    assert "&quot;to&quot;: &quot;bob@example.com\\ud800&quot;" in item
    assert "To: bob@example.com\\ud800" in item  # the preview


def _signed_in(server: Server) -> httpx.Client:
    client = httpx.Client(base_url=server.url, timeout=30)
    assert client.post("/inbox/login", data={"token": TOKEN}).status_code == 303
    return client


def _label(store_path: Path, run_id: str) -> None:
    from agent.durable import review
    from agent.durable.store import open_store

    store = open_store(str(store_path))
    try:
        review.label(store, run_id, "correct_give_up", "", by="probe")
    finally:
        store.close()


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("plain text, caf\u00e9 \U0001f600\nnext\tline", "plain text, caf\u00e9 \U0001f600\nnext\tline"),
        ("a\u202eb\u2066c\u2069", "a\\u202eb\\u2066c\\u2069"),
        ("\x1b[2J\r\x00\x7f\x85", "\\x1b[2J\\x0d\\x00\\x7f\\x85"),
        ("zero\u200bwidth\u00adsoft\ufeffbom\u2028", "zero\\u200bwidth\\xadsoft\\ufeffbom\\u2028"),
        ("tag\U000e0041\U000e007f", "tag\\U000e0041\\U000e007f"),
        ("x\ufe0f\U000e0100", "x\\ufe0f\\U000e0100"),  # variation selectors carry hidden text
        ("lone\ud800", "lone\\ud800"),
        ("nbsp\u00a0", "nbsp\\xa0"),
    ],
)
def test_visible_writes_what_a_page_would_not_show_as_escapes(text: str, shown: str) -> None:
    assert visible(text) == shown


def test_a_runs_line_says_when_it_cut_the_models_words_and_where_the_rest_is() -> None:
    """`endstate start`, `approve` and the others printed the first 200 characters of the question
    and nothing more: an approval's arguments past them (padded by the model) were not there, and
    nothing said so; an output read as complete."""
    from agent.cli.runs import result_line
    from agent.result import RunResult, StopReason
    from agent.stops import PendingAction, Suspension

    question = 'Approve the call wire({"memo": "' + "x" * 300 + '", "to": "attacker"})?'
    pending = PendingAction("c1", "wire", {"memo": "x" * 300, "to": "attacker"})
    asked = RunResult(
        run_id="r1", agent="a", task_type="t", reason=StopReason.NEED_HELP, note=question,
        suspension=Suspension(question=question, deadline=2e9, suspended_at=0.0, pending=pending),
    )  # fmt: skip
    first, then = result_line(asked).splitlines()
    assert first == (
        f"run r1: need_help after 0 turns. {question[:200]}... (cut at 200 of {len(question):,} characters; "
        "`endstate pending` shows all of it)"
    )
    assert then == '    -> endstate approve r1   or   endstate deny r1 "why"'
    done = RunResult(run_id="r2", agent="a", task_type="t", reason=StopReason.SUCCESS, output="y" * 201)
    assert result_line(done).endswith("y... (cut at 200 of 201 characters; --json shows all of it)")
    short = RunResult(run_id="r3", agent="a", task_type="t", reason=StopReason.SUCCESS, output="y" * 200)
    assert result_line(short).endswith(". " + "y" * 200)
