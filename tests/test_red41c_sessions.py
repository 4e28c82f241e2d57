"""The inbox's sign-in cookie: it ends at sign-out and after a shift, and only this token makes one.

Before, the cookie was one fixed value derived from the token, the same for every person and every
sign-in, with no expiry: "Sign out" only asked the browser to forget it, so a copy (a shared machine,
a proxy's log, another local web server on the same host, which gets the host's cookies whatever its
port) approved calls for as long as the token was not changed. Now each sign-in gets a cookie of its
own, signed with the token and dated: it stops working at sign-out (on this service process) and
`SESSION_SECONDS` after sign-in (on every one).
"""

from __future__ import annotations

import hashlib
import hmac
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient
from test_service_defences import LOCAL, TOKEN
from test_store import lease, suspended

from agent.durable.runner import Runner
from agent.durable.store import NewRun, Outcome, RunStore, open_store
from agent.examples.scenarios import example_catalog
from agent.service.app import Service, create_app
from agent.service.auth import COOKIE, SESSION_SECONDS, Token

SAME_ORIGIN = {"Origin": LOCAL, "Sec-Fetch-Site": "same-origin"}


@pytest.fixture
def served(tmp_path: Path, make_agent: Any) -> Iterator[tuple[TestClient, RunStore]]:
    """The service over a store where run `r1` waits for approval of a call."""
    store = open_store(str(tmp_path / "runs.db"))
    store.create(NewRun("r1", "ci-fixer", "pay", "fix_ci", {}), lease(), time.time())
    store.record("r1", Outcome.of(suspended(make_agent)), lease(), time.time())
    service = Service(Runner(store, example_catalog(tmp_path / "worlds")), Token(TOKEN), sweep_interval=3600)
    try:
        with TestClient(create_app(service), base_url=LOCAL, follow_redirects=False) as client:
            yield client, store
    finally:
        store.close()


def _with(cookie: str, client: TestClient) -> dict[str, str]:
    """The headers of a request that carries `cookie` alone (the client's jar emptied)."""
    client.cookies.clear()
    return {"Cookie": f"{COOKIE}={cookie}"}


def _is_signed_in(client: TestClient, cookie: str) -> bool:
    page = client.get("/inbox", headers=_with(cookie, client)).text
    return 'class="logout"' in page and 'class="approve"' in page


def _approve(client: TestClient, cookie: str) -> int:
    form = {"segments": "1"}
    response = client.post("/inbox/r1/approve", data=form, headers=SAME_ORIGIN | _with(cookie, client))
    return response.status_code


def _sign_in(client: TestClient) -> str:
    response = client.post("/inbox/login", data={"token": TOKEN}, headers=SAME_ORIGIN)
    assert response.status_code == 303
    cookie: str = response.cookies[COOKIE]
    return cookie


def test_a_cookie_kept_after_sign_out_signs_no_one_in(served: tuple[TestClient, RunStore]) -> None:
    client, store = served
    kept = _sign_in(client)
    assert _is_signed_in(client, kept)
    out = client.post("/inbox/logout", headers=SAME_ORIGIN | _with(kept, client))
    assert out.status_code == 303

    assert not _is_signed_in(client, kept)  # was still signed in: the cookie never changed
    assert _approve(client, kept) == 401
    record = store.get("r1")
    assert record is not None and record.status == "waiting"

    again = _sign_in(client)  # a new sign-in works, with a cookie of its own
    assert again != kept and _is_signed_in(client, again)


def test_each_sign_in_has_its_own_cookie_that_lasts_a_shift(served: tuple[TestClient, RunStore]) -> None:
    client, _ = served
    response = client.post("/inbox/login", data={"token": TOKEN}, headers=SAME_ORIGIN)
    said = response.headers["set-cookie"]
    assert f"Max-Age={SESSION_SECONDS}" in said and "HttpOnly" in said and "SameSite=strict" in said
    first, second = _sign_in(client), _sign_in(client)
    assert first != second and TOKEN not in first
    assert _is_signed_in(client, first) and _is_signed_in(client, second)


def test_an_old_a_foreign_or_a_forged_cookie_signs_no_one_in(served: tuple[TestClient, RunStore]) -> None:
    client, store = served
    now = time.time()
    token = Token(TOKEN)
    fresh = token.session_cookie(now - 60)
    _, session, sig = fresh.split(".")
    old_style = hmac.new(TOKEN.encode(), b"endstate-inbox-session", hashlib.sha256).hexdigest()  # before
    refused = {
        "past its shift": token.session_cookie(now - SESSION_SECONDS - 5),
        "another token's": Token("another-token-0123456789").session_cookie(now),
        "its date moved on": f"{int(now)}.{session}.{sig}",
        "the one fixed cookie of before": old_style,
        "not a cookie of ours": "1.2.3",
    }
    assert _is_signed_in(client, fresh)
    for why, cookie in refused.items():
        assert not _is_signed_in(client, cookie), why
        assert _approve(client, cookie) == 401, why
    record = store.get("r1")
    assert record is not None and record.status == "waiting"


def test_the_tokens_cookie_value_is_a_fresh_session_cookie(served: tuple[TestClient, RunStore]) -> None:
    """`Token.cookie_value` (what a sign-in sets) is kept for the code that forged one: each read is a
    new session's cookie that signs in, which `accepts_cookie` takes and another token does not."""
    client, _ = served
    token = Token(TOKEN)
    first, second = token.cookie_value, token.cookie_value
    assert first != second and _is_signed_in(client, first)
    assert token.accepts_cookie(first) and not Token("another-token-0123456789").accepts_cookie(first)
