"""The service's responses as a browser meets them: what each says about its content and caching.
A real `endstate serve`, real HTTP."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from test_service_support import TOKEN, Server

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    tmp = tmp_path_factory.mktemp("web44")
    with Server(str(tmp / "runs.db"), tmp) as s:
        yield s


_TOKEN = {"Authorization": f"Bearer {TOKEN}"}
REQUESTS = [  # (method, path, headers): reads, errors of each kind, the open paths, a refused host
    ("GET", "/runs", {}),
    ("GET", "/runs/no-such-run", {}),
    ("GET", "/pending", {}),
    ("GET", "/nope/%3Cscript%3Ealert(1)%3C%2Fscript%3E", {}),  # 404 whose error echoes the path
    ("DELETE", "/runs", {}),  # 405
    ("POST", "/runs", {}),  # 401
    ("POST", "/runs", _TOKEN),  # 400: no body
    ("GET", "/runs", {"Host": "evil.example"}),  # 421
    ("GET", "/metrics", {}),
    ("GET", "/healthz", {}),
    ("GET", "/readyz", {}),
    ("GET", "/inbox", {}),
]


def test_every_response_says_nosniff_and_run_data_is_not_cached(server: Server) -> None:
    """A JSON error that echoes `<script>` from the path was served without `nosniff`, and runs'
    data (`/runs`, `/pending`) without any cache directive: a browser or proxy could keep it."""
    with httpx.Client(base_url=server.url, timeout=30) as client:
        for method, path, headers in REQUESTS:
            response = client.request(method, path, headers=headers)
            said = (method, path, response.status_code)
            assert response.headers.get("x-content-type-options") == "nosniff", said
            assert response.headers.get("cache-control") == "no-store", said
            assert len(response.headers.get_list("x-content-type-options")) == 1, said  # the inbox's own


def test_a_request_without_a_valid_token_is_told_which_scheme_to_use(server: Server) -> None:
    """A 401 of the API came without `WWW-Authenticate`, which RFC 6750 (and RFC 9110 for any 401)
    requires: a client could not tell it needs a bearer token, nor that the one it sent was wrong."""
    with httpx.Client(base_url=server.url, timeout=30) as client:
        for method, path in (("POST", "/runs"), ("POST", "/runs/r1/answer"), ("POST", "/runs/r1/resume")):
            missing = client.request(method, path)
            assert (
                missing.status_code == 401
                and missing.headers["www-authenticate"] == 'Bearer realm="endstate"'
            )
            wrong = client.request(method, path, headers={"Authorization": "Bearer not-the-token-0123456789"})
            assert wrong.status_code == 401
            assert wrong.headers["www-authenticate"] == 'Bearer realm="endstate", error="invalid_token"'
