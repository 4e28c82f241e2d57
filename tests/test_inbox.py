"""The help inbox in real headless Chromium (Debian's, driven by Playwright; no browser download)."""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from html import unescape
from pathlib import Path

import httpx
import pytest
from test_runner_agents import MARKUP, counter_state, env_with_tests
from test_service_support import TOKEN, Server, wait_status

pytestmark = pytest.mark.slow


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    with Server(str(tmp_path / "runs.db"), tmp_path) as s:
        yield s


def _start(server: Server, agent: str, scenario: str) -> str:
    with server.client() as api:
        run_id: str = api.post(
            "/runs", json={"agent": agent, "task": "t", "state": {"scenario": scenario}}
        ).json()["run_id"]
        wait_status(api, run_id, "waiting")
    return run_id


def test_the_inbox_lists_waiting_runs_and_answers_approves_and_denies_behind_the_token(
    server: Server, page: object
) -> None:
    from playwright.sync_api import Page, expect

    assert isinstance(page, Page)
    question = _start(server, "invoice-downloader", "invoice/which-one")
    push = _start(server, "ci-fixer", "ci/approved-push")
    denied = _start(server, "ci-fixer", "ci/approved-push")

    page.goto(f"{server.url}/inbox")
    expect(page.locator("#count")).to_have_text("3")
    item = page.locator(f"#run-{question}")
    expect(item.locator(".agent")).to_have_text("invoice-downloader")
    expect(item.locator(".question")).to_contain_text("Which one should I download?")
    expect(item.locator(".times")).to_contain_text("deadline")
    expect(page.locator(f"#run-{push} .call code")).to_have_text("push")
    expect(page.locator(f"#run-{push} pre.arguments")).to_contain_text('"branch": "fix/add-cents"')
    expect(page.locator("form.answer")).to_have_count(0)  # no forms before signing in

    page.fill("input[name=token]", "not-the-token-at-all")
    page.click("form.login button")
    expect(page.locator(".error")).to_have_text("That token is not valid.")
    expect(page.locator("form.answer")).to_have_count(0)

    page.fill("input[name=token]", TOKEN)
    page.click("form.login button")
    expect(page.locator(".notice")).to_have_text("Signed in.")

    item.locator("textarea[name=answer]").fill("INV-0913, the corrected one.")
    item.locator("form.answer button").click()
    expect(page.locator(".notice")).to_contain_text(f"Answered run {question}")
    page.locator(f"#run-{push} form.approve button").click()
    expect(page.locator(".notice")).to_contain_text(f"Approved run {push}")
    page.locator(f"#run-{denied} input[name=reason]").fill("not on a Friday")
    page.locator(f"#run-{denied} form.deny button").click()
    expect(page.locator(".notice")).to_contain_text(f"Denied run {denied}")

    with server.client() as api:
        assert wait_status(api, question, "finished")["stop_reason"] == "success"
        approved = wait_status(api, push, "finished")
        after_denial = wait_status(api, denied, "finished")
    assert "push x1" in approved["summary"]  # the approved call ran
    assert "push" not in after_denial["summary"] and after_denial["segments"] == 2  # the denied one never did
    page.goto(f"{server.url}/inbox")
    expect(page.locator("#count")).to_have_text("0")
    expect(page.locator(".empty")).to_be_visible()


def test_a_form_post_without_the_cookie_is_refused_and_changes_nothing(server: Server, page: object) -> None:
    from playwright.sync_api import Page

    assert isinstance(page, Page)
    run_id = _start(server, "invoice-downloader", "invoice/which-one")
    response = page.request.post(f"{server.url}/inbox/{run_id}/answer", form={"answer": "INV-0912"})
    assert response.status == 401 and "Sign in with the service token first" in response.text()
    with server.client() as api:
        assert api.get(f"/runs/{run_id}").json()["status"] == "waiting"


def _signed_in(server: Server) -> httpx.Client:
    client = httpx.Client(base_url=server.url, timeout=30)
    response = client.post("/inbox/login", data={"token": TOKEN})
    assert response.status_code == 303 and "endstate_inbox" in client.cookies
    return client


def test_a_cross_site_form_post_is_refused_even_with_the_cookie(server: Server) -> None:
    run_id = _start(server, "invoice-downloader", "invoice/which-one")
    with contextlib.closing(_signed_in(server)) as browser:
        for headers in (
            {"Origin": "null"},
            {"Sec-Fetch-Site": "cross-site"},
            {"Origin": "http://evil.example"},
        ):
            refused = browser.post(f"/inbox/{run_id}/answer", data={"answer": "INV-0912"}, headers=headers)
            assert refused.status_code == 403 and "cross-site" in refused.text, (headers, refused.text)
        with server.client() as api:
            assert api.get(f"/runs/{run_id}").json()["status"] == "waiting"
        same = {"Origin": server.url, "Sec-Fetch-Site": "same-origin"}
        answered = browser.post(f"/inbox/{run_id}/answer", data={"answer": "INV-0913"}, headers=same)
        assert answered.status_code == 303


@pytest.mark.parametrize("form", [{"answer": "   \n "}, {"reason": "no answer field"}])
def test_a_blank_or_missing_answer_from_the_inbox_is_refused_and_the_run_still_waits(
    server: Server, form: dict[str, str]
) -> None:
    """The API refuses a blank answer; the inbox's form (the textarea's `required` lets spaces
    through, and a hand-made post leaves the field out) answered the question with it, spent."""
    run_id = _start(server, "invoice-downloader", "invoice/which-one")
    same = {"Origin": server.url, "Sec-Fetch-Site": "same-origin"}
    with contextlib.closing(_signed_in(server)) as browser:
        refused = browser.post(f"/inbox/{run_id}/answer", data=form, headers=same)
    assert refused.status_code == 400 and "Write an answer first" in refused.text, refused.text
    assert "text/html" in refused.headers["content-type"]  # the inbox page, saying so
    with server.client() as api:
        assert api.get(f"/runs/{run_id}").json()["status"] == "waiting"


def test_the_inbox_may_not_be_framed_or_run_scripts(server: Server) -> None:
    page = httpx.get(f"{server.url}/inbox", timeout=30)
    policy = page.headers["content-security-policy"]
    assert (
        "frame-ancestors 'none'" in policy
        and "script-src 'none'" in policy
        and "form-action 'self'" in policy
    )
    assert page.headers["x-frame-options"] == "DENY" and page.headers["x-content-type-options"] == "nosniff"


def test_markup_from_the_model_is_shown_as_text_never_run(tmp_path: Path, page: object) -> None:
    from playwright.sync_api import Page, expect

    assert isinstance(page, Page)
    body = {"agent": "counter", "task": "<b>task</b>", "state": counter_state(tmp_path / "q", "markup")}
    with Server(str(tmp_path / "runs.db"), tmp_path, catalog="test_runner_agents:catalog") as server:
        with server.client() as api:
            run_id = api.post("/runs", json=body).json()["run_id"]
            wait_status(api, run_id, "waiting")
            page.goto(f"{server.url}/inbox")
            expect(page.locator(f"#run-{run_id} .question")).to_have_text(MARKUP)
            expect(page.locator(f"#run-{run_id} .task")).to_have_text("<b>task</b>")
            api.post(f"/runs/{run_id}/answer", json={"answer": "go on"})
            wait_status(api, run_id, "waiting")
            page.goto(f"{server.url}/inbox")
            expect(page.locator(f"#run-{run_id} pre.arguments")).to_contain_text(MARKUP.replace('"', '\\"'))
        assert page.title().startswith("Endstate help inbox")
        assert page.locator("script, img").count() == 0


# -- the states an on-call person meets, each checked in Chromium and kept as a screenshot -----------


@pytest.fixture(scope="session")
def shots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where the screenshots go: $ENDSTATE_INBOX_SCREENSHOTS when set (to look at them), else a tmp folder."""
    chosen = os.environ.get("ENDSTATE_INBOX_SCREENSHOTS")
    folder = Path(chosen) if chosen else tmp_path_factory.mktemp("inbox-screenshots")
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _shot(page: object, shots: Path, name: str) -> None:
    from playwright.sync_api import Page

    assert isinstance(page, Page)
    path = shots / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def _sign_in(page: object, server: Server) -> None:
    from playwright.sync_api import Page, expect

    assert isinstance(page, Page)
    page.goto(f"{server.url}/inbox")
    page.fill("input[name=token]", TOKEN)
    page.click("form.login button")
    expect(page.locator(".notice")).to_have_text("Signed in.")


def test_signed_out_the_inbox_says_where_the_token_comes_from(
    tmp_path: Path, page: object, shots: Path
) -> None:
    from playwright.sync_api import Page, expect

    assert isinstance(page, Page)
    with Server(str(tmp_path / "runs.db"), tmp_path, "--read-auth", "token") as server:
        _start(server, "invoice-downloader", "invoice/which-one")
        page.goto(f"{server.url}/inbox")
        expect(page.locator(".error")).to_contain_text("Sign in with the service token")
        help_text = page.locator(".token-help")
        for where in ("$ENDSTATE_TOKEN", "--token-file", "$ENDSTATE_TOKEN_FILE", ".endstate/token"):
            expect(help_text).to_contain_text(where)
        expect(page.locator(".run")).to_have_count(0)  # reads need the token here: nothing shown
        expect(page.locator("meta[http-equiv=refresh]")).to_have_attribute("content", "30; url=/inbox")
        _shot(page, shots, "1-signed-out")
        _sign_in(page, server)
        expect(page.locator(".run")).to_have_count(1)


def test_a_question_shows_what_the_agent_did_before_asking(server: Server, page: object, shots: Path) -> None:
    from playwright.sync_api import Page, expect

    assert isinstance(page, Page)
    run_id = _start(server, "invoice-downloader", "invoice/which-one")
    _sign_in(page, server)
    item = page.locator(f"#run-{run_id}")
    expect(item.locator(".question")).to_contain_text("Which one should I download?")
    expect(item.locator(".before .summary")).to_contain_text("Stopped: need_help after 2 turns")
    expect(item.locator(".steps li")).to_have_count(1)
    expect(item.locator(".steps .tool")).to_have_text("list_invoices")
    expect(item.locator(".steps .args")).to_have_text('{"month": "2026-09"}')
    expect(item.locator(".steps .result")).to_contain_text("INV-0913")
    expect(item.locator(".call")).to_have_count(0)  # a question, not an approval
    expect(item.locator("form.answer .effect")).to_contain_text("the agent gets your answer")
    _shot(page, shots, "2-question-with-context")


def test_an_approval_previews_the_diff_the_push_would_publish(
    server: Server, page: object, shots: Path
) -> None:
    from playwright.sync_api import Page, expect

    assert isinstance(page, Page)
    run_id = _start(server, "ci-fixer", "ci/approved-push")
    _sign_in(page, server)
    item = page.locator(f"#run-{run_id}")
    expect(item.locator(".call code")).to_have_text("push")
    preview = item.locator("pre.preview")
    expect(preview).to_contain_text("Push to fix/add-cents, publishing:")
    expect(preview).to_contain_text("--- a/calc/money.py")
    expect(preview).to_contain_text("-    return a - b")
    expect(preview).to_contain_text("+    return a + b")
    expect(item.locator(".steps .tool")).to_have_text(["read_logs", "read_file", "edit_file", "run_tests"])
    expect(item.locator(".steps li").nth(3).locator(".result")).to_contain_text("exit 0")
    expect(item.locator("form.approve .effect")).to_have_text(
        "the call runs as shown, then the agent continues."
    )
    expect(item.locator("form.deny .effect")).to_contain_text(
        "the agent is told it was denied, with your reason"
    )
    _shot(page, shots, "3-approval-with-preview")


def test_an_expired_request_shows_as_expired_without_buttons(
    tmp_path: Path, page: object, shots: Path
) -> None:
    from playwright.sync_api import Page, expect

    assert isinstance(page, Page)
    # no sweep while the test looks: the request stays waiting past its deadline (wait_seconds=0)
    with Server(str(tmp_path / "runs.db"), tmp_path, "--sweep-interval", "3600") as server:
        expired = _start(server, "ci-fixer", "ci/unanswered-push")
        open_one = _start(server, "ci-fixer", "ci/approved-push")
        _sign_in(page, server)
        item = page.locator(f"#run-{expired}")
        expect(item).to_have_class("run expired")
        expect(item.locator(".expired-note")).to_contain_text("Expired")
        expect(item.locator(".expired-note")).to_contain_text("no answer is taken any more")
        expect(item.locator("form, button")).to_have_count(0)
        expect(
            page.locator(f"#run-{open_one} form.approve button")
        ).to_be_visible()  # signed in: others have them
        _shot(page, shots, "4-expired-without-buttons")
        with server.client() as api:
            assert api.post(f"/runs/{expired}/approve").status_code == 409  # and the API agrees
            [item_json] = [p for p in api.get("/pending").json()["pending"] if p["run_id"] == expired]
            assert item_json["expired"] is True


def test_the_inbox_filters_by_agent_and_task_type_with_links(
    server: Server, page: object, shots: Path
) -> None:
    from playwright.sync_api import Page, expect

    assert isinstance(page, Page)
    question = _start(server, "invoice-downloader", "invoice/which-one")
    pushes = [_start(server, "ci-fixer", "ci/approved-push") for _ in range(2)]
    _sign_in(page, server)
    expect(page.locator("#count")).to_have_text("3")
    page.click(".filter-agent a:text('ci-fixer (2)')")
    expect(page.locator("#count")).to_have_text("2")
    assert page.url.endswith("/inbox?agent=ci-fixer")
    expect(page.locator(".run")).to_have_count(2)
    expect(page.locator(f"#run-{question}")).to_have_count(0)
    expect(page.locator(".filter-agent a[aria-current=page]")).to_have_text("ci-fixer (2)")
    expect(page.locator("meta[http-equiv=refresh]")).to_have_attribute(
        "content", "30; url=/inbox?agent=ci-fixer"
    )  # the refresh keeps the filter
    _shot(page, shots, "5-filtered-by-agent")
    page.locator(f"#run-{pushes[0]} form.approve button").click()  # acting keeps the filter too
    expect(page.locator(".notice")).to_contain_text(f"Approved run {pushes[0]}")
    assert "agent=ci-fixer" in page.url
    page.click(".filter-task_type a:text('invoice_download (1)')")
    expect(page.locator(".run")).to_have_count(0)  # ci-fixer runs of task type invoice: none
    page.click(".filter-agent a:text('all')")
    expect(page.locator(".run")).to_have_count(1)
    expect(page.locator(f"#run-{question}")).to_have_count(1)
    with server.client() as api:
        only = api.get("/pending", params={"agent": "ci-fixer", "task_type": "fix_ci"}).json()
    assert [p["run_id"] for p in only["pending"]] == [pushes[1]] and only["total"] == 1


def test_the_inbox_pages_oldest_first(tmp_path: Path, page: object, shots: Path) -> None:
    from playwright.sync_api import Page, expect

    assert isinstance(page, Page)
    with Server(str(tmp_path / "runs.db"), tmp_path, "--page-size", "2") as server:
        started = [_start(server, "invoice-downloader", "invoice/which-one") for _ in range(5)]
        _sign_in(page, server)
        seen: list[str] = []
        for number, first, last in ((1, 1, 2), (2, 3, 4), (3, 5, 5)):
            expect(page.locator("#count")).to_have_text("5")
            expect(page.locator(".pages")).to_contain_text(f"Runs {first}-{last} of 5, oldest first")
            seen += [
                str(page.locator(".run").nth(i).get_attribute("data-run-id")) for i in range(last - first + 1)
            ]
            if number == 2:
                _shot(page, shots, "6-page-2-of-3")
            if number < 3:
                page.click(".pages a[rel=next]")
        expect(page.locator(".pages a[rel=next]")).to_have_count(0)
        page.click(".pages a[rel=prev]")
        expect(page.locator(".pages")).to_contain_text("Runs 3-4 of 5")
    assert seen == started  # started one after another: oldest first across the pages


# -- the review queue in the inbox: one state per test, each kept as a screenshot ---------------------


def _finish(server: Server, agent: str, scenario: str) -> str:
    with server.client() as api:
        run_id: str = api.post(
            "/runs", json={"agent": agent, "task": f"{scenario} task", "state": {"scenario": scenario}}
        ).json()["run_id"]
        wait_status(api, run_id, "finished")
    return run_id


def _labels_offered(item: object) -> list[str]:
    from playwright.sync_api import Locator

    assert isinstance(item, Locator)
    radios = item.locator("input[name=label]")
    return [str(radios.nth(i).get_attribute("value")) for i in range(radios.count())]


def test_the_review_queue_shows_what_each_run_did_oldest_first_with_filters(
    server: Server, page: object, shots: Path
) -> None:
    from playwright.sync_api import Page, expect

    assert isinstance(page, Page)
    offline = _finish(server, "invoice-downloader", "invoice/portal-offline")
    same_page = _finish(server, "csv-cleaner", "csv/same-page")
    cut_off = _finish(server, "researcher", "research/one-more-source")
    _sign_in(page, server)
    page.click(".views a:text('To review')")  # from the pending list
    assert page.url.endswith("/inbox/review")
    expect(page.locator("#count")).to_have_text("3")
    expect(page.locator(".views a[aria-current=page]")).to_have_text("To review")
    assert [page.locator(".run").nth(i).get_attribute("data-run-id") for i in range(3)] == [
        offline, same_page, cut_off,
    ]  # fmt: skip  # oldest first
    gave_up = page.locator(f"#run-{offline}")
    expect(gave_up.locator(".stop")).to_contain_text("Stopped: gave_up after 3 turns")
    expect(gave_up.locator(".cause")).to_contain_text("The supplier portal refuses connections")
    expect(gave_up.locator(".steps .tool")).to_have_text(["list_invoices", "list_invoices"])
    expect(gave_up.locator(".steps .result.error").first).to_contain_text("PortalOffline")
    expect(page.locator(f"#run-{same_page} .cause")).to_contain_text("read_rows called 3 times")
    limit = page.locator(f"#run-{cut_off}")
    expect(limit.locator(".stop")).to_contain_text("Stopped: limit (turns) after 25 turns")
    expect(limit.locator(".did h3")).to_have_text("What it did: the last 5 tool calls")
    expect(limit.locator(".steps .args").first).to_contain_text("instant payments source")
    expect(limit.locator(".cause")).to_have_text("Cause: its turns budget ran out")
    assert _labels_offered(gave_up) == ["correct_give_up", "should_have_succeeded", "fine"]
    assert _labels_offered(limit) == ["correct_give_up", "should_have_succeeded", "limit_too_low", "fine"]
    expect(limit.locator("label:has(input[value=limit_too_low]) .label-effect")).to_contain_text(
        "limits suggest puts that ceiling above this run"
    )
    _shot(page, shots, "7-review-queue")

    page.click(".filter-agent a:text('csv-cleaner (1)')")
    assert page.url.endswith("/inbox/review?agent=csv-cleaner")
    expect(page.locator("#count")).to_have_text("1")
    expect(page.locator(".run")).to_have_count(1)
    page.click(".filter-agent a:text('all')")
    expect(page.locator(".run")).to_have_count(3)
    page.click(".views a:text('Waiting for a person')")  # and back
    assert page.url.endswith("/inbox")
    expect(page.locator("h1")).to_contain_text("Runs waiting for a person")


def test_the_review_queue_pages_oldest_first(tmp_path: Path, page: object) -> None:
    from playwright.sync_api import Page, expect

    assert isinstance(page, Page)
    with Server(str(tmp_path / "runs.db"), tmp_path, "--page-size", "2") as server:
        started = [_finish(server, "invoice-downloader", "invoice/portal-offline") for _ in range(3)]
        page.goto(f"{server.url}/inbox/review")
        expect(page.locator(".pages")).to_contain_text("Runs 1-2 of 3, oldest first")
        first = [page.locator(".run").nth(i).get_attribute("data-run-id") for i in range(2)]
        page.click(".pages a[rel=next]")
        expect(page.locator(".pages")).to_contain_text("Runs 3-3 of 3")
        assert [*first, page.locator(".run").get_attribute("data-run-id")] == started


def test_a_review_page_past_the_last_says_so_not_that_nothing_is_left(server: Server) -> None:
    _finish(server, "invoice-downloader", "invoice/portal-offline")
    shown = httpx.get(f"{server.url}/inbox/review?page=5", timeout=30).text
    assert "Nothing to review" not in shown
    assert 'No run on page 5: the queue holds 1; go to <a href="/inbox/review">the first page</a>.' in shown
    labelled = httpx.get(f"{server.url}/inbox/review/labelled?page=3", timeout=30).text
    assert "No run is labelled yet" not in labelled
    assert 'No labels on page 3; go to <a href="/inbox/review/labelled">the first page</a>.' in labelled


def test_an_inbox_page_past_the_last_says_so_not_that_nobody_waits(server: Server) -> None:
    _start(server, "invoice-downloader", "invoice/which-one")
    shown = httpx.get(f"{server.url}/inbox?page=4", timeout=30).text
    assert "No run is waiting for a person." not in shown
    assert 'No run on page 4: 1 waiting; go to <a href="/inbox">the first page</a>.' in shown
    first = httpx.get(f"{server.url}/inbox", timeout=30).text
    assert "past-last" not in first and 'data-run-id="' in first


def test_an_empty_review_queue_says_so(server: Server, page: object, shots: Path) -> None:
    from playwright.sync_api import Page, expect

    assert isinstance(page, Page)
    _start(server, "invoice-downloader", "invoice/which-one")  # waiting for a person: not for review
    _sign_in(page, server)
    page.goto(f"{server.url}/inbox/review")
    expect(page.locator("#count")).to_have_text("0")
    expect(page.locator(".empty")).to_have_text("Nothing to review: every run that needs a look is labelled.")
    expect(page.locator(".run")).to_have_count(0)
    expect(page.locator(".intro")).to_contain_text("endstate review")
    _shot(page, shots, "8-review-empty")


def test_a_label_records_who_gave_it_and_takes_the_run_out_of_the_queue(
    server: Server, page: object, shots: Path, tmp_path: Path
) -> None:
    import yaml
    from playwright.sync_api import Page, expect

    from agent.durable.store import open_store

    assert isinstance(page, Page)
    offline = _finish(server, "invoice-downloader", "invoice/portal-offline")
    same_page = _finish(server, "csv-cleaner", "csv/same-page")
    _sign_in(page, server)
    page.goto(f"{server.url}/inbox/review")
    item = page.locator(f"#run-{offline}")
    item.locator("input[value=correct_give_up]").check()
    item.locator("input[name=note]").fill("the portal really was down")
    item.locator("input[name=by]").fill("Ana On-Call")
    item.locator("form.label button").click()
    expect(page.locator(".notice").first).to_have_text(
        f"Labelled run {offline} correct_give_up (by Ana On-Call); it left the queue."
    )
    expect(page.locator("#count")).to_have_text("1")
    expect(page.locator(f"#run-{offline}")).to_have_count(0)
    expect(page.locator(f"#run-{same_page} input[name=by]")).to_have_value("Ana On-Call")  # remembered

    page.click(".notice.next a")  # to the run's page: its labels and its eval case
    expect(page.locator(".labels-given li")).to_contain_text("correct_give_up")
    expect(page.locator(".labels-given .labelled-by")).to_contain_text("by Ana On-Call")
    expect(page.locator(".labels-given .note")).to_have_text("the portal really was down")
    expect(page.locator("form.label legend")).to_have_text("Label it again (the new label replaces the last)")
    expect(page.locator("pre.case-yaml")).to_contain_text("expect: gave_up")
    expect(page.locator("pre.case-yaml")).to_contain_text("fixture: portal_offline")
    expect(page.locator(".no-cases-dir")).to_contain_text("--cases-dir DIR")  # this service has none
    expect(page.locator("form.promote")).to_have_count(0)
    download = page.request.get(f"{server.url}/inbox/review/runs/{offline}/case.yaml")
    assert download.status == 200
    assert download.headers["content-disposition"] == f'attachment; filename="{offline}.yaml"'
    [case] = yaml.safe_load(download.text())["cases"]
    assert case["name"] == f"review/{offline}" and case["expect"] == "gave_up"

    page.click(".views a:text('Labelled')")
    row = page.locator(f"tr[data-run-id='{offline}']")
    expect(row.locator(".label")).to_have_text("correct_give_up")
    expect(row.locator(".by")).to_have_text("Ana On-Call")
    expect(row.locator(".case")).to_have_text("not promoted")
    _shot(page, shots, "9-labelled")
    store = open_store(str(tmp_path / "runs.db"))
    try:
        [given] = store.reviews()
    finally:
        store.close()
    assert (given.run_id, given.label, given.by, given.note) == (
        offline, "correct_give_up", "Ana On-Call", "the portal really was down",
    )  # fmt: skip


def test_promote_writes_the_case_into_the_cases_dir_once_and_eval_passes_it(
    tmp_path: Path, page: object, shots: Path
) -> None:
    from playwright.sync_api import Page, expect

    assert isinstance(page, Page)
    cases = tmp_path / "evals" / "promoted"
    with Server(str(tmp_path / "runs.db"), tmp_path, "--cases-dir", str(cases)) as server:
        offline = _finish(server, "invoice-downloader", "invoice/portal-offline")
        _sign_in(page, server)
        page.goto(f"{server.url}/inbox/review/runs/{offline}")
        expect(page.locator(".case .case-note")).to_contain_text("Label the run first")
        page.locator("input[value=correct_give_up]").check()
        page.locator("input[name=by]").fill("Bo")
        page.locator("form.label button").click()
        page.click(".notice.next a")
        expect(page.locator("form.promote .effect")).to_contain_text(f"{cases / offline}.yaml")
        page.locator("form.promote button").click()
        expect(page.locator(".notice")).to_contain_text(
            f"Wrote {cases / offline}.yaml: case 'review/{offline}'"
        )
        expect(page.locator(".promoted")).to_contain_text(f"Promoted: {cases / offline}.yaml")
        expect(page.locator("form.promote")).to_have_count(0)
        _shot(page, shots, "10-promoted")
        written = (cases / f"{offline}.yaml").read_text()

        again = page.request.post(f"{server.url}/inbox/review/runs/{offline}/promote", form={"promote": "1"})
        assert again.status == 409 and "exists already" in again.text()
        assert (cases / f"{offline}.yaml").read_text() == written  # never overwritten
        page.goto(f"{server.url}/inbox/review/labelled")
        expect(page.locator(f"tr[data-run-id='{offline}'] .case")).to_have_text("promoted")

    evaluated = subprocess.run(  # its own process: Playwright's loop runs in this thread
        [sys.executable, "-m", "agent.cli", "eval", str(cases), "--no-progress"],
        capture_output=True, text=True, timeout=300, env=env_with_tests(),
    )  # fmt: skip
    assert evaluated.returncode == 0, evaluated.stdout + evaluated.stderr
    assert "PASSED: 1 of 1 cases met their expectations." in evaluated.stdout


def test_label_and_promote_are_refused_without_the_token_and_change_nothing(
    tmp_path: Path, page: object, shots: Path
) -> None:
    from playwright.sync_api import Page, expect

    from agent.durable.store import open_store

    assert isinstance(page, Page)
    cases = tmp_path / "cases"
    with Server(str(tmp_path / "runs.db"), tmp_path, "--cases-dir", str(cases)) as server:
        offline = _finish(server, "invoice-downloader", "invoice/portal-offline")
        page.goto(f"{server.url}/inbox/review")
        expect(page.locator(f"#run-{offline} .sign-in-to-label")).to_have_text("Sign in to label.")
        expect(page.locator("form.label")).to_have_count(0)
        label = {"label": "correct_give_up", "by": "mallory"}
        refused = page.request.post(f"{server.url}/inbox/review/runs/{offline}/label", form=label)
        assert refused.status == 401 and "Sign in with the service token first" in refused.text()
        refused = page.request.post(f"{server.url}/inbox/review/runs/{offline}/promote", form={"p": "1"})
        assert refused.status == 401

        _sign_in(page, server)  # a form shown to a signed-in person, posted after the cookie is gone
        page.goto(f"{server.url}/inbox/review")
        page.locator("input[value=correct_give_up]").check()
        page.locator("input[name=by]").fill("mallory")
        page.context.clear_cookies()
        page.locator("form.label button").click()
        expect(page.locator("p.error")).to_have_text("Sign in with the service token first.")
        expect(page.locator("#count")).to_have_text("1")
        _shot(page, shots, "11-label-refused-without-token")

        with contextlib.closing(_signed_in(server)) as browser:
            for path, form in (("label", label), ("promote", {"p": "1"})):
                cross = browser.post(
                    f"/inbox/review/runs/{offline}/{path}",
                    data=form,
                    headers={"Origin": "http://evil.example"},
                )
                assert cross.status_code == 403 and "cross-site" in cross.text
    store = open_store(str(tmp_path / "runs.db"))
    try:
        assert store.reviews() == []
    finally:
        store.close()
    assert not cases.exists()


def test_a_success_is_offered_the_labels_for_a_success_and_refused_the_others(
    server: Server, tmp_path: Path
) -> None:
    """A success did not stop early: "correct give-up" (whose case expected gave_up) and "should
    have succeeded" are no labels for it. The form does not offer them; posted anyway, they are
    refused with 422 naming the labels that fit, and nothing is stored; false_success is taken."""
    import re

    from agent.durable.store import open_store

    done = _finish(server, "csv-cleaner", "csv/clean")
    with contextlib.closing(_signed_in(server)) as browser:
        page = browser.get(f"/inbox/review/runs/{done}").text
        assert re.findall(r'name="label" value="(\w+)"', page) == ["false_success", "fine"]
        for label in ("correct_give_up", "should_have_succeeded"):
            refused = browser.post(f"/inbox/review/runs/{done}/label", data={"label": label, "by": "ana"})
            assert refused.status_code == 422, refused.text
            assert (
                f"{label} is a label for runs that did not succeed; for a run that stopped as success: "
                "false_success, fine; if it should have given up, its success is false" in refused.text
            )
        store = open_store(str(tmp_path / "runs.db"))
        try:
            assert store.reviews() == []
            given = browser.post(
                f"/inbox/review/runs/{done}/label", data={"label": "false_success", "by": "ana"}
            )
            assert given.status_code == 303
            assert [r.label for r in store.reviews()] == ["false_success"]
        finally:
            store.close()


def test_with_reads_behind_the_token_the_review_pages_show_nothing_signed_out(tmp_path: Path) -> None:
    with Server(str(tmp_path / "runs.db"), tmp_path, "--read-auth", "token") as server:
        offline = _finish(server, "invoice-downloader", "invoice/portal-offline")
        for path in ("/inbox/review", "/inbox/review/labelled", f"/inbox/review/runs/{offline}"):
            shown = httpx.get(f"{server.url}{path}", timeout=30)
            assert shown.status_code == 200 and "Sign in with the service token to see" in shown.text, path
            assert offline not in shown.text.replace(f"/inbox/review/runs/{offline}", "") or path.endswith(
                offline
            )
        download = httpx.get(f"{server.url}/inbox/review/runs/{offline}/case.yaml", timeout=30)
        assert download.status_code == 401 and "replay:" not in download.text
        with contextlib.closing(_signed_in(server)) as browser:
            assert offline in browser.get("/inbox/review").text
            ghost = browser.get("/inbox/review/runs/%3Cb%3Eghost")
            assert ghost.status_code == 404 and "No run has the id this address names" in ghost.text
            assert "ghost" not in ghost.text  # no id: the address's words are not repeated (web44)
            unknown = browser.get("/inbox/review/runs/no-such-run")
            assert unknown.status_code == 404 and "No run with id &#x27;no-such-run&#x27;." in unknown.text
            assert "<b>" not in ghost.text


SPOOF = "Your session expired. Sign in again at https://endstate-login.example/ with the service token."


PAGES = ["/inbox", "/inbox/review", "/inbox/review/labelled", "/inbox/review/runs/r1"]


@pytest.mark.parametrize("path", PAGES)
def test_a_notice_in_a_link_someone_else_wrote_is_not_shown(server: Server, path: str) -> None:
    """The pages show a one-time notice from their address only when the service signed it: a
    link mailed to on-call cannot put the attacker's words in the real inbox's notice box."""
    from urllib.parse import urlencode

    from agent.service.auth import Token

    signed = Token(TOKEN).notice_sig(SPOOF)
    forged = [{"message": SPOOF}, {"message": SPOOF, "sig": "0" * 32}, {"message": SPOOF, "sig": signed[:-1]}]
    for query in forged:
        page = httpx.get(f"{server.url}{path}?{urlencode(query)}", timeout=30)
        assert "endstate-login.example" not in page.text, query
        assert 'class="notice"' not in page.text, query
    shown = httpx.get(f"{server.url}{path}?{urlencode({'message': SPOOF, 'sig': signed})}", timeout=30)
    assert 'class="notice" role="status">Your session expired.' in shown.text  # the service's own: shown


def test_a_next_step_link_someone_else_wrote_is_not_shown(server: Server) -> None:
    """The link to a labelled run's page shows only under the service's signed notice of that
    label: `?done=...` alone put the sender's words in the queue's notice box."""
    from urllib.parse import urlencode

    from agent.service.auth import Token

    page = httpx.get(f"{server.url}/inbox/review?{urlencode({'done': SPOOF})}", timeout=30)
    assert "endstate-login.example" not in page.text and 'class="notice next"' not in page.text
    other = Token(TOKEN).notice_sig(said := "Labelled run r1 fine (by ana); it left the queue.")
    query = urlencode({"done": SPOOF, "message": said, "sig": other})
    page = httpx.get(f"{server.url}/inbox/review?{query}", timeout=30)
    assert "endstate-login.example" not in page.text and 'class="notice next"' not in page.text
    page = httpx.get(
        f"{server.url}/inbox/review?{query.replace(urlencode({'done': SPOOF}), 'done=r1')}", timeout=30
    )
    assert '<a href="/inbox/review/runs/r1">Open run r1</a>' in page.text


def test_the_services_own_notices_still_show_after_its_redirects(server: Server) -> None:
    with httpx.Client(base_url=server.url, timeout=30, headers={"Origin": server.url}) as browser:
        signed_in = browser.post("/inbox/login", data={"token": TOKEN}, follow_redirects=True)
    assert signed_in.status_code == 200 and 'class="notice" role="status">Signed in.</p>' in signed_in.text
    assert "sig=" in str(signed_in.url)


def _kept(html: str) -> list[str]:
    return [unescape(t) for t in re.findall(r'<pre class="kept-text">(.*?)</pre>', html, re.S)]


def test_an_answer_refused_because_someone_else_answered_first_is_shown_back_not_lost(
    server: Server,
) -> None:
    """Two people answer at once: the second's page said only that the run moved on, and what they
    had written was gone (and the error too, at the page's next refresh)."""
    run_id = _start(server, "invoice-downloader", "invoice/which-one")
    same = {"Origin": server.url, "Sec-Fetch-Site": "same-origin"}
    mine = "The corrected one, <INV-0913>: finance confirmed it on the 14th."
    with contextlib.closing(_signed_in(server)) as first, contextlib.closing(_signed_in(server)) as second:
        read = {"segments": re.findall(r'name="segments" value="(\d+)"', first.get("/inbox").text)[0]}
        taken = first.post(f"/inbox/{run_id}/answer", data={"answer": "INV-0913"} | read, headers=same)
        assert taken.is_redirect
        late = second.post(f"/inbox/{run_id}/answer", data={"answer": mine} | read, headers=same)
    assert late.status_code == 409 and "moved on" in late.text
    assert _kept(late.text) == [mine]  # escaped as text, whole
    assert 'http-equiv="refresh"' not in late.text  # it stays until the person has copied it


def test_a_deny_reason_refused_past_the_deadline_or_after_the_session_ended_is_shown_back(
    tmp_path: Path,
) -> None:
    with Server(str(tmp_path / "runs.db"), tmp_path, "--sweep-interval", "3600") as server:
        expired = _start(server, "ci-fixer", "ci/unanswered-push")  # past its deadline at once
        same = {"Origin": server.url, "Sec-Fetch-Site": "same-origin"}
        reason = "not on a Friday: the release freeze started at noon"
        with contextlib.closing(_signed_in(server)) as browser:
            late = browser.post(f"/inbox/{expired}/deny", data={"reason": reason}, headers=same)
        assert late.status_code == 409 and "deadline passed" in late.text
        assert _kept(late.text) == [reason]
        with httpx.Client(base_url=server.url, timeout=30) as signed_out:  # a 12-hour session ended
            answer = "INV-0913, as finance said"
            refused = signed_out.post(f"/inbox/{expired}/answer", data={"answer": answer}, headers=same)
            assert refused.status_code == 401 and _kept(refused.text) == [answer]
            approve = signed_out.post(f"/inbox/{expired}/approve", data={}, headers=same)
            assert approve.status_code == 401 and _kept(approve.text) == []


def test_a_labels_note_refused_after_the_session_ended_or_without_a_name_is_shown_back(
    server: Server,
) -> None:
    """A reviewer's note (why the run was right to give up) was gone when the label was refused."""
    offline = _finish(server, "invoice-downloader", "invoice/portal-offline")
    same = {"Origin": server.url, "Sec-Fetch-Site": "same-origin"}
    note = "Portal down since 02:10; <vendor> confirmed a 4-hour outage."
    label = {"label": "correct_give_up", "note": note}
    to = f"/inbox/review/runs/{offline}/label"
    with httpx.Client(base_url=server.url, timeout=30) as signed_out:  # the 12-hour session ended
        refused = signed_out.post(to, data=label | {"by": "ana"}, headers=same)
    assert refused.status_code == 401 and _kept(refused.text) == [note]
    with contextlib.closing(_signed_in(server)) as browser:
        nameless = browser.post(to, data=label | {"by": " "}, headers=same)
        assert nameless.status_code == 400 and _kept(nameless.text) == [note]
        assert f'id="run-{offline}"' in browser.get("/inbox/review").text  # still to review
