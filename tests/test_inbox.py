"""The help inbox in real headless Chromium (Debian's, driven by Playwright; no browser download)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
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
