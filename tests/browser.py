"""Debian's Chromium, headless, driven by Playwright: the `page` fixture (registered in conftest.py)
that the inbox and review page tests use. Never a browser Playwright downloads."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

CHROMIUM = "/usr/bin/chromium"
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
]
# How long a page action or an `expect` waits for its condition (Playwright's defaults, 30 s and
# 5 s, are not what Chromium takes to render a page on a loaded machine of 2 cores).
PATIENCE_MS = 60_000


@pytest.fixture
def page() -> Iterator[object]:
    """A new page of a headless Chromium started for the test."""
    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} is missing: apt-get install -y chromium", pytrace=False)
    from playwright.sync_api import expect, sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        try:
            page = browser.new_page()
            page.set_default_timeout(PATIENCE_MS)
            expect.set_options(timeout=PATIENCE_MS)
            yield page
        finally:
            expect.set_options(timeout=5_000)  # Playwright's own default, for whatever runs next
            browser.close()
