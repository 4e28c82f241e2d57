"""The help inbox in real headless Chromium (Debian's, driven by Playwright; no browser download)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from test_runner_agents import MARKUP, counter_state
from test_service_support import TOKEN, Server, wait_status

pytestmark = pytest.mark.slow
CHROMIUM = "/usr/bin/chromium"
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
]


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    with Server(str(tmp_path / "runs.db"), tmp_path) as s:
        yield s


@pytest.fixture
def page() -> Iterator[object]:
    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} is missing: apt-get install -y chromium", pytrace=False)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        try:
            yield browser.new_page()
        finally:
            browser.close()


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
    expect(page.locator(f"#run-{push} pre")).to_contain_text('"branch": "fix/add-cents"')
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
            expect(page.locator(f"#run-{run_id} pre")).to_contain_text(MARKUP.replace('"', '\\"'))
        assert page.title().startswith("Endstate help inbox")
        assert page.locator("script, img").count() == 0
