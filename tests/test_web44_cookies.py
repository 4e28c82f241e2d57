"""The inbox's cookies behind a TLS proxy: Secure when the browser reached the page over https.
A real `endstate serve`, real HTTP."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from test_service_support import TOKEN, Server, wait_status

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    tmp = tmp_path_factory.mktemp("web44-cookies")
    with Server(str(tmp / "runs.db"), tmp) as s:
        yield s


def _sign_in(server: Server, headers: dict[str, str]) -> httpx.Response:
    with httpx.Client(base_url=server.url, timeout=30) as client:
        response = client.post("/inbox/login", data={"token": TOKEN}, headers=headers)
    assert response.status_code == 303, response.text
    return response


def _cookie(response: httpx.Response, name: str) -> list[str]:
    """The attributes of the `Set-Cookie` of `name`, lower-cased."""
    found = [c for c in response.headers.get_list("set-cookie") if c.startswith(f"{name}=")]
    assert len(found) == 1, response.headers.get_list("set-cookie")
    return [part.strip().lower() for part in found[0].split(";")]


def test_a_sign_in_through_a_tls_proxy_gets_a_secure_cookie(server: Server) -> None:
    """Behind a TLS proxy on another host, the service sees plain http: the sign-in cookie was set
    without `Secure`, so the browser sent it to any `http://` address of the inbox's host (a link,
    a network attacker's redirect) in clear. The browser's `Origin` says the page was https."""
    host = server.url.removeprefix("http://")
    proxied = _cookie(_sign_in(server, {"Origin": f"https://{host}"}), "endstate_inbox")
    assert "secure" in proxied and "httponly" in proxied and "samesite=strict" in proxied
    by_referer = _cookie(_sign_in(server, {"Referer": f"https://{host}/inbox"}), "endstate_inbox")
    assert "secure" in by_referer
    local_proxy = {"X-Forwarded-Proto": "https"}  # a proxy on loopback: uvicorn trusts its header
    assert "secure" in _cookie(_sign_in(server, local_proxy), "endstate_inbox")
    plain = _cookie(_sign_in(server, {"Origin": f"http://{host}"}), "endstate_inbox")
    assert "secure" not in plain and "httponly" in plain  # over plain http a Secure cookie is not kept


def _run(server: Server, scenario: str, status: str) -> str:
    with server.client() as api:
        body = {"agent": "invoice-downloader", "task": "t", "state": {"scenario": scenario}}
        run_id: str = api.post("/runs", json=body).json()["run_id"]
        wait_status(api, run_id, status)
    return run_id


def test_the_reviewer_name_cookie_is_secure_through_a_tls_proxy_too(tmp_path: Path) -> None:
    """The name remembered after an answer or a label followed the sign-in's rule."""
    with Server(str(tmp_path / "runs.db"), tmp_path) as server:
        waiting = _run(server, "invoice/which-one", "waiting")
        gave_up = _run(server, "invoice/portal-offline", "finished")
        headers = {"Origin": f"https://{server.url.removeprefix('http://')}"}
        signed_in = _sign_in(server, headers).headers["set-cookie"].split(";")[0]
        # the browser talks https to the proxy, which sends the cookie on: here, by hand
        sent = headers | {"Cookie": signed_in}
        with httpx.Client(base_url=server.url, timeout=30, headers=sent) as browser:
            answered = browser.post(f"/inbox/{waiting}/answer", data={"answer": "INV-0913", "by": "ana"})
            label = {"label": "correct_give_up", "by": "bo", "note": ""}
            labelled = browser.post(f"/inbox/review/runs/{gave_up}/label", data=label)
        for response in (answered, labelled):
            assert response.status_code == 303, response.text
            assert "secure" in _cookie(response, "endstate_reviewer")


def test_a_plain_http_page_cannot_post_to_the_inbox_reached_over_https(server: Server) -> None:
    """Behind a proxy that says the request came over https, a form from `http://` and the same
    host name (a network attacker's page; an older browser sends the cookie and no Sec-Fetch-Site)
    was taken as same-origin: only the host was compared."""
    host = server.url.removeprefix("http://")
    tls = {"X-Forwarded-Proto": "https"}  # a TLS proxy on loopback (uvicorn trusts its header)
    with httpx.Client(base_url=server.url, timeout=30) as client:
        for sent in ({"Origin": f"http://{host}"}, {"Referer": f"http://{host}/inbox"}):
            refused = client.post("/inbox/login", data={"token": TOKEN}, headers=tls | sent)
            assert refused.status_code == 403 and "cross-site" in refused.text, sent
            assert "set-cookie" not in refused.headers
        taken = client.post(
            "/inbox/login", data={"token": TOKEN}, headers=tls | {"Origin": f"https://{host}"}
        )
        assert taken.status_code == 303 and "secure" in _cookie(taken, "endstate_inbox")
