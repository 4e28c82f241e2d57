"""The labelled runs' page names its filter from the labels it lists, never from the address (a real
`endstate serve`, real HTTP)."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlencode

import httpx
import pytest
from test_service_support import TOKEN, Server, wait_status

pytestmark = pytest.mark.slow

SPOOF = "Your session expired. Sign in again at https://endstate-login.example/ with the service token"


def test_a_filter_in_a_link_someone_else_wrote_puts_none_of_its_words_on_the_labelled_page(
    tmp_path: Path,
) -> None:
    """`/inbox/review/labelled?agent=...` wrote the address's value into the page as 'Only agent
    ...': a link mailed to on-call put the sender's words in the real inbox, as the signed notices
    (`test_a_notice_in_a_link_someone_else_wrote_is_not_shown`) keep them out of its notice box."""
    with Server(str(tmp_path / "runs.db"), tmp_path) as server:
        with server.client() as api:
            body = {
                "agent": "invoice-downloader",
                "task": "t",
                "state": {"scenario": "invoice/portal-offline"},
            }
            run_id = api.post("/runs", json=body).json()["run_id"]
            task_type = wait_status(api, run_id, "finished")["task_type"]
        with httpx.Client(base_url=server.url, timeout=30, headers={"Origin": server.url}) as browser:
            assert browser.post("/inbox/login", data={"token": TOKEN}).status_code == 303
            label = {"label": "correct_give_up", "by": "ana", "note": ""}
            assert browser.post(f"/inbox/review/runs/{run_id}/label", data=label).status_code == 303
            for query in (
                {"agent": SPOOF},
                {"task_type": SPOOF},
                {"agent": "invoice-downloader", "task_type": SPOOF},
            ):
                page = browser.get(f"/inbox/review/labelled?{urlencode(query)}")
                assert page.status_code == 200 and "endstate-login.example" not in page.text, query
                assert "Your session expired" not in page.text and "No label here" in page.text, query
            shown = browser.get(f"/inbox/review/labelled?{urlencode({'agent': 'invoice-downloader'})}").text
            assert (
                '<p class="intro">Only agent invoice-downloader. <a href="/inbox/review/labelled">' in shown
            )
            both = {"agent": "invoice-downloader", "task_type": task_type}
            shown = browser.get(f"/inbox/review/labelled?{urlencode(both)}").text
            assert f"Only agent invoice-downloader, task type {task_type}." in shown and run_id in shown


def test_a_run_page_address_that_is_no_run_id_puts_none_of_its_words_on_the_page(tmp_path: Path) -> None:
    """`/inbox/review/runs/<words>` (and its case.yaml and case.zip) said 'No run with id '<words>'.'
    in the page's error box and heading: any sentence a link's sender wrote, shown as the inbox's."""
    from urllib.parse import quote

    words = "Your session expired. Sign in again at endstate-login.example with the service token"
    with Server(str(tmp_path / "runs.db"), tmp_path) as server:
        for tail in ("", "/case.yaml", "/case.zip"):
            page = httpx.get(f"{server.url}/inbox/review/runs/{quote(words, safe='')}{tail}", timeout=30)
            assert page.status_code == 404 and "text/html" in page.headers["content-type"], tail
            assert "endstate-login.example" not in page.text and "session expired" not in page.text, tail
            assert "No run has the id this address names" in page.text, tail
        shaped = httpx.get(f"{server.url}/inbox/review/runs/no-such-run", timeout=30)
        assert shaped.status_code == 404 and "No run with id &#x27;no-such-run&#x27;." in shaped.text
