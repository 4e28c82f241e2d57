"""red53: an inbox address refused (`inbox.error_page`) echoes what was asked for: the path, a stop
reason. Whatever a link carries (markup, an escape, a bidi override) is shown as text, never as the
page's own, and the page keeps the inbox's headers (no caching, nosniff, no script). Tried and held;
no test said so."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from test_faces49_replies import Faces, faces_over


@pytest.fixture
def faces(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Faces]:
    yield from faces_over(tmp_path, monkeypatch)


@pytest.mark.parametrize(
    ("address", "status", "shown"),
    [
        ("/inbox/review?reason=%22%3E%3Cimg%20src=x%20onerror=alert(1)%3E", 400, "&quot;&gt;&lt;img src=x"),
        ("/inbox/%3Cscript%3Ealert(1)%3C/script%3E", 405, "/inbox/&lt;script&gt;alert(1)&lt;/script&gt;"),
        ("/inbox/%3Cb%3E%E2%80%AEfdp.exe%1b%5B2J", 404, "/inbox/&lt;b&gt;\\u202efdp.exe\\x1b[2J"),
    ],
)
def test_what_a_refused_address_echoes_is_text_on_a_page_with_the_inboxs_headers(
    faces: Faces, address: str, status: int, shown: str
) -> None:
    page = faces.api.get(address)
    assert page.status_code == status
    assert shown in page.text
    for raw in ("<img", "<script", "<b>", "\u202e", "\x1b"):
        assert raw not in page.text
    assert page.headers["content-type"].startswith("text/html")
    assert page.headers["cache-control"] == "no-store"
    assert page.headers["x-content-type-options"] == "nosniff"
    assert "script-src 'none'" in page.headers["content-security-policy"]
